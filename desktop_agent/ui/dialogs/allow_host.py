"""The question before a refused host is allowed for the session (the Network view's "Allow for this session"):
which host, what it means, and two buttons — Cancel (Escape, the focus) and Allow. Built as the Bypass
confirmation is (``ui.dialogs.bypass``, whose rules follow):

An ``AwaitableDialog[bool]`` with the permission dialog's focus-safe rules (``SafetyDelay``), so a key
typed for something else never turns it on: no mnemonic (a ``QMessageBox`` clicked "Turn on &Bypass"
on a bare ``b``), no default button, Enter and Space never turn it on (Space on the focused Cancel
cancels), keys typed before it was first ready go nowhere, and the button answers only once the
dialog has been the active window for the safety delay with no key and no click. Only a click on
"Allow" then answers True; Escape, Cancel and closing it answer False. The texts keep the
``AllowHost`` translation context. ``confirm_allow_host`` is how the Network view asks it.
"""

from __future__ import annotations

import html
from typing import Callable

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QStyle, QVBoxLayout, QWidget

from desktop_agent.ui.dialogs.base import AwaitableDialog, GuardButton, SafetyDelay
from desktop_agent.ui.dialogs.permission import PermissionDialog  # its safety delay is the one delay


translate = QCoreApplication.translate  # literal strings in the "AllowHost" context, for lupdate


class AllowHostDialog(SafetyDelay, AwaitableDialog[bool]):
    safety_delay_ms: int | None = None  # None: the permission dialog's delay

    def __init__(self, host: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.host = host
        self._init_delay()
        self.setObjectName("allowHostConfirm")
        self.setWindowTitle(translate("AllowHost", "Allow this host for the session?"))
        self.setAccessibleName(self.windowTitle())
        root = QVBoxLayout(self)
        root.setContentsMargins(16, 16, 16, 16)
        root.setSpacing(8)
        row = QHBoxLayout()
        row.setSpacing(12)
        icon = QLabel()
        icon.setPixmap(self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning).pixmap(32, 32))
        row.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        self.message = QLabel(html.escape(translate(
            "AllowHost", "Sandboxed commands of this session may then connect to {0} (every port), through the "
            "proxy that logs each request, from the next command on. deniedDomains still apply. The settings "
            "are not changed.").format(host)))
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row.addWidget(self.message, 1)
        root.addLayout(row)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.no_button = GuardButton(translate("AllowHost", "Cancel  Esc"), self.input_ready)
        self.no_button.setObjectName("allowHostNo")
        self.no_button.clicked.connect(lambda: self._guarded(self.reject))
        self.yes_button = GuardButton(translate("AllowHost", "Allow"), self.input_ready, no_space=True)
        self.yes_button.setObjectName("allowHostYes")
        self.yes_button.clicked.connect(lambda: self._guarded(self._turn_on))
        for b in (self.no_button, self.yes_button):
            b.setMinimumHeight(32)
            buttons.addWidget(b)
        root.addLayout(buttons)
        self.resize(460, self.sizeHint().height())
        self.no_button.setFocus()

    def text(self) -> str:
        """The question, as plain text."""
        return html.unescape(self.message.text())

    # ----- the safety delay ------------------------------------------------------------------
    def delay_ms(self) -> int:
        return PermissionDialog.safety_delay_ms if self.safety_delay_ms is None else self.safety_delay_ms

    def fill_button(self) -> GuardButton:
        return self.yes_button

    # ----- answers ---------------------------------------------------------------------------
    def closed_value(self) -> bool:
        return False  # Esc, the close button, Cancel

    def _turn_on(self) -> None:
        self._resolve(True, True)

    def accept(self) -> None:  # never by a default button: only the button's click
        pass

    def keyPressEvent(self, event) -> None:  # noqa: N802
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            event.accept()
            if key == Qt.Key.Key_Space and self.focusWidget() is self.no_button and self.input_ready():
                self.reject()
            return  # Enter turns nothing on; Space only cancels
        if key == Qt.Key.Key_Escape:
            event.accept()
            self.reject()
            return
        super().keyPressEvent(event)


def confirm_allow_host(parent: QWidget | None, host: str, done: Callable[[bool], None]) -> AllowHostDialog:
    """Ask before ``host`` is allowed for the session, opened with ``open()`` (never taking the focus from another
    application); ``done(True)`` only for a click on Allow once it is ready."""
    box = AllowHostDialog(host, parent)
    box.decided.connect(lambda yes: done(bool(yes)))
    box.open()
    return box


__all__ = ["AllowHostDialog", "confirm_allow_host"]
