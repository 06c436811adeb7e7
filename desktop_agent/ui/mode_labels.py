"""How the window names the permission modes (``MODES``, translated where shown; the Bypass and Don't ask badges of
the toolbar and the window title) and the one question before bypassPermissions is entered (``confirm_bypass``, a
focus-safe ``BypassDialog``: the toolbar, the menu, Settings and the command line ask it). The modes themselves and
their rules are ``ui.modes`` (no Qt).
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication
from PySide6.QtWidgets import QWidget

from desktop_agent.ui.dialogs.bypass import BypassDialog

# Labels are marked for lupdate with QT_TRANSLATE_NOOP and translated where shown (mode_label()).
MODES: list[tuple[str, str]] = [
    ("default", QT_TRANSLATE_NOOP("Modes", "Default")),
    ("acceptEdits", QT_TRANSLATE_NOOP("Modes", "Accept edits")),
    ("plan", QT_TRANSLATE_NOOP("Modes", "Plan")),
    ("bypassPermissions", QT_TRANSLATE_NOOP("Modes", "Bypass")),
    ("dontAsk", QT_TRANSLATE_NOOP("Modes", "Don't ask — deny anything not allowed")),
]


def mode_label(label: str) -> str:
    return QCoreApplication.translate("Modes", label)


def bypass_badge_text() -> str:
    return QCoreApplication.translate("Modes", "Bypass — nothing asks")


def dont_ask_badge_text() -> str:
    return QCoreApplication.translate("Modes", "Don't ask — denies anything not allowed")


def confirm_bypass(parent: QWidget | None, done: Callable[[bool], None]) -> BypassDialog:
    """The one question before bypassPermissions is entered (toolbar, menu, Settings, command line): a
    focus-safe ``BypassDialog`` (ui/dialogs/bypass.py), opened with ``open()``; ``done(True)`` only for a
    click on "Turn on Bypass" once it is ready — Esc, Cancel, closing it and every key keep the old mode."""
    box = BypassDialog(parent)
    box.decided.connect(lambda yes: done(bool(yes)))
    box.open()
    return box
