"""The question before a refused host is allowed for the session (the Network view's "Allow for this session"):
which host, what it means, and two buttons — Cancel (Escape, the focus) and Allow: a ``GuardedConfirm``
(``ui.dialogs.confirm``: its focus-safe rules), so only a deliberate click on "Allow" once it is ready answers
True; Escape, Cancel and closing it answer False. The texts keep the
``AllowHost`` translation context. ``confirm_allow_host`` is how the Network view asks it.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QWidget

from desktop_agent.ui.dialogs.confirm import GuardedConfirm


translate = QCoreApplication.translate  # literal strings in the "AllowHost" context, for lupdate


class AllowHostDialog(GuardedConfirm):
    def __init__(self, host: str, parent: QWidget | None = None):
        super().__init__(
            name="allowHost", title=translate("AllowHost", "Allow this host for the session?"),
            message=translate(
                "AllowHost", "Sandboxed commands of this session may then connect to {0} (every port), through the "
                "proxy that logs each request, from the next command on. deniedDomains still apply. The settings "
                "are not changed.").format(host),
            no_text=translate("AllowHost", "Cancel  Esc"), yes_text=translate("AllowHost", "Allow"), parent=parent)
        self.host = host


def confirm_allow_host(parent: QWidget | None, host: str, done: Callable[[bool], None]) -> AllowHostDialog:
    """Ask before ``host`` is allowed for the session, opened with ``open()`` (never taking the focus from another
    application); ``done(True)`` only for a click on Allow once it is ready."""
    box = AllowHostDialog(host, parent)
    box.decided.connect(lambda yes: done(bool(yes)))
    box.open()
    return box


__all__ = ["AllowHostDialog", "confirm_allow_host"]
