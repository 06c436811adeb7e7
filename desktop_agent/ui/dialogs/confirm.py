"""The focus-safe yes/no question (``GuardedConfirm``) that the Bypass confirmation, "Allow this host for the
session" and a phone's pairing are: a sentence, optionally a widget under it, and two buttons — the safe one
(Escape, the focus) and the one that says yes.

An ``AwaitableDialog[bool]`` with the permission dialog's focus-safe rules (``SafetyDelay``), so a key typed for
something else never says yes: no mnemonic, no default button, Enter and Space never say yes (Space on the focused
safe button answers no), keys typed before it was first ready go nowhere, and the yes button answers only once the
dialog has been the active window for the safety delay with no key and no click. Only a click on it then answers
True; Escape, the safe button and closing it answer False. Callers pass texts already translated in their own
context (lupdate reads the literals there).
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QStyle, QVBoxLayout, QWidget

from desktop_agent.ui.dialogs.base import AwaitableDialog, GuardButton, SafetyDelay
from desktop_agent.ui.dialogs.permission import PermissionDialog  # its safety delay is the one delay


class GuardedConfirm(SafetyDelay, AwaitableDialog[bool]):
    safety_delay_ms: int | None = None  # None: the permission dialog's delay

    def __init__(self, *, name: str, title: str, message: str, no_text: str, yes_text: str,
                 icon: QStyle.StandardPixmap = QStyle.StandardPixmap.SP_MessageBoxWarning, width: int = 460,
                 below: QWidget | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self._init_delay()
        self.setObjectName(f"{name}Confirm")
        self.setWindowTitle(title)
        self.setAccessibleName(title)
        root = QVBoxLayout(self)
        root.setContentsMargins(16, 16, 16, 16)
        root.setSpacing(8)
        row = QHBoxLayout()
        row.setSpacing(12)
        picture = QLabel()
        picture.setPixmap(self.style().standardIcon(icon).pixmap(32, 32))
        row.addWidget(picture, 0, Qt.AlignmentFlag.AlignTop)
        self.message = QLabel(html.escape(message))
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row.addWidget(self.message, 1)
        root.addLayout(row)
        if below is not None:
            root.addWidget(below)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.no_button = GuardButton(no_text, self.input_ready)
        self.no_button.setObjectName(f"{name}No")
        self.no_button.clicked.connect(lambda: self._guarded(self.reject))
        self.yes_button = GuardButton(yes_text, self.input_ready, no_space=True)
        self.yes_button.setObjectName(f"{name}Yes")
        self.yes_button.clicked.connect(lambda: self._guarded(self._turn_on))
        for b in (self.no_button, self.yes_button):
            b.setMinimumHeight(32)
            buttons.addWidget(b)
        root.addLayout(buttons)
        self.resize(width, self.sizeHint().height())
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
        return False  # Esc, the close button, the safe button

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
            return  # Enter says nothing; Space only answers no
        if key == Qt.Key.Key_Escape:
            event.accept()
            self.reject()
            return
        super().keyPressEvent(event)


__all__ = ["GuardedConfirm"]
