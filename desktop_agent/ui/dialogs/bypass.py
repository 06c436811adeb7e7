"""The one question before bypassPermissions is entered: what Bypass means, in one sentence, and two
buttons — Cancel (Escape, the focus) and Turn on Bypass.

An ``AwaitableDialog[bool]`` with the permission dialog's focus-safe rules (``SafetyDelay``), so a key
typed for something else never turns it on: no mnemonic (a ``QMessageBox`` clicked "Turn on &Bypass"
on a bare ``b``), no default button, Enter and Space never turn it on (Space on the focused Cancel
cancels), keys typed before it was first ready go nowhere, and the button answers only once the
dialog has been the active window for the safety delay with no key and no click. Only a click on
"Turn on Bypass" then answers True; Escape, Cancel and closing it answer False. The texts keep the
``Modes`` translation context of the box it replaces. ``confirm_bypass`` is how the toolbar, the menu, Settings
and the command line ask it.
"""

from __future__ import annotations

import html
from typing import Callable

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QStyle, QVBoxLayout, QWidget

from desktop_agent.ui.dialogs.base import AwaitableDialog, GuardButton, SafetyDelay
from desktop_agent.ui.dialogs.permission import PermissionDialog  # its safety delay is the one delay


translate = QCoreApplication.translate  # literal strings in the "Modes" context, for lupdate


class BypassDialog(SafetyDelay, AwaitableDialog[bool]):
    safety_delay_ms: int | None = None  # None: the permission dialog's delay

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._init_delay()
        self.setObjectName("bypassConfirm")
        self.setWindowTitle(translate("Modes", "Turn on Bypass permissions?"))
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
            "Modes", "Bypass permissions: every tool runs without asking — edits, commands, reads outside the "
            "folder. Deny rules still apply. Turn it on?")))
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row.addWidget(self.message, 1)
        root.addLayout(row)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.no_button = GuardButton(translate("Modes", "Cancel  Esc"), self.input_ready)
        self.no_button.setObjectName("bypassNo")
        self.no_button.clicked.connect(lambda: self._guarded(self.reject))
        self.yes_button = GuardButton(translate("Modes", "Turn on Bypass"), self.input_ready, no_space=True)
        self.yes_button.setObjectName("bypassYes")
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


def confirm_bypass(parent: QWidget | None, done: Callable[[bool], None]) -> BypassDialog:
    """The one question before bypassPermissions is entered (toolbar, menu, Settings, command line), opened with
    ``open()`` (never taking the focus from another application); ``done(True)`` only for a click on "Turn on
    Bypass" once it is ready — Esc, Cancel, closing it and every key keep the old mode."""
    box = BypassDialog(parent)
    box.decided.connect(lambda yes: done(bool(yes)))
    box.open()
    return box


__all__ = ["BypassDialog", "confirm_bypass"]
