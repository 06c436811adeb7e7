"""The one question before bypassPermissions is entered: what Bypass means, in one sentence, and two
buttons — Cancel (Escape, the focus) and Turn on Bypass.

A ``GuardedConfirm`` (``ui.dialogs.confirm``: the permission dialog's focus-safe rules), so a key typed for
something else never turns it on — no mnemonic (a ``QMessageBox`` clicked "Turn on &Bypass" on a bare ``b``), no
default button, Enter and Space never turn it on. Only a click on "Turn on Bypass" once it is ready answers True; Escape, Cancel and closing it answer False. The texts keep the
``Modes`` translation context of the box it replaces. ``confirm_bypass`` is how the toolbar, the menu, Settings
and the command line ask it.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QWidget

from desktop_agent.ui.dialogs.confirm import GuardedConfirm


translate = QCoreApplication.translate  # literal strings in the "Modes" context, for lupdate


class BypassDialog(GuardedConfirm):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(
            name="bypass", title=translate("Modes", "Turn on Bypass permissions?"),
            message=translate("Modes", "Bypass permissions: every tool runs without asking — edits, commands, reads "
                                       "outside the folder. Deny rules still apply. Turn it on?"),
            no_text=translate("Modes", "Cancel  Esc"), yes_text=translate("Modes", "Turn on Bypass"), parent=parent)


def confirm_bypass(parent: QWidget | None, done: Callable[[bool], None]) -> BypassDialog:
    """The one question before bypassPermissions is entered (toolbar, menu, Settings, command line), opened with
    ``open()`` (never taking the focus from another application); ``done(True)`` only for a click on "Turn on
    Bypass" once it is ready — Esc, Cancel, closing it and every key keep the old mode."""
    box = BypassDialog(parent)
    box.decided.connect(lambda yes: done(bool(yes)))
    box.open()
    return box


__all__ = ["BypassDialog", "confirm_bypass"]
