"""The question before something would stop a running turn (New Session, another folder, another session):
"Stop the running turn?" — which session, what the agent is doing now, and what happens after.

An ``AwaitableDialog[bool]``: True is "Stop the turn" (the caller stops it the way Stop does, then goes on),
False — Cancel, the default and focused button, Enter on it, Escape, closing it — keeps the turn running and
changes nothing. The Stop button has no mnemonic and is never the default, so a stray Return or letter
typed into the dialog cannot stop anything.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from desktop_agent.ui.dialogs.base import AwaitableDialog


class StopTurnDialog(AwaitableDialog[bool]):
    """``session``: the session's name (its first prompt); ``folder``: where it runs; ``doing``: what the agent
    is doing now ("running Bash"); ``then``: what follows a Stop ("start a new session")."""

    def __init__(self, session: str, folder: str, doing: str, then: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("stopTurnDialog")
        self.setWindowTitle(self.tr("Stop the running turn?"))
        self.setAccessibleName(self.windowTitle())
        root = QVBoxLayout(self)
        root.setContentsMargins(16, 16, 16, 16)
        root.setSpacing(8)
        head = self.tr("The agent is still working in the session \u201c{0}\u201d ({1}).").format(session, folder)
        now = self.tr("Right now it is {0}.").format(doing)
        after = self.tr("Stop interrupts the turn as the Stop button does \u2014 the conversation so far is kept "
                        "and you can come back to it from the sessions list \u2014 and then {0}. Cancel keeps it "
                        "running.").format(then)
        self.message = QLabel(f"<b>{html.escape(head)}</b><br/>{html.escape(now)}<br/><br/>{html.escape(after)}")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        root.addWidget(self.message)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.stop_button = QPushButton(self.tr("Stop the turn"))
        self.stop_button.setObjectName("stopTurnButton")
        self.stop_button.setAutoDefault(False)
        self.stop_button.clicked.connect(lambda: self._resolve(True, True))
        self.cancel_button = QPushButton(self.tr("&Cancel  Esc"))
        self.cancel_button.setObjectName("keepRunningButton")
        self.cancel_button.setDefault(True)
        self.cancel_button.clicked.connect(self.reject)
        for b in (self.stop_button, self.cancel_button):
            b.setMinimumHeight(32)
            buttons.addWidget(b)
        root.addLayout(buttons)
        self.setMinimumWidth(460)
        self.cancel_button.setFocus()

    def closed_value(self) -> bool:
        return False  # Escape, the close button, Cancel: keep running

    def accept(self) -> None:  # Enter: the default button (Cancel) answers, never Stop
        self.reject()


__all__ = ["StopTurnDialog"]
