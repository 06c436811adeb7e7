"""The find bar under the conversation (Ctrl+F): the match count, every match marked, Enter/Shift+Enter step
(``presenters.find_index``), Esc closes (``closed``: the window gives the prompt its focus back)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QCoreApplication, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget

from desktop_agent.ui.conversation.view import ConversationView
from desktop_agent.ui.highlight import colors, is_dark
from desktop_agent.ui.window.presenters import find_index
from desktop_agent.ui.window.prompt import FindEdit

translate = QCoreApplication.translate


class FindBar(QWidget):
    """Searches ``conversation``; hidden until ``open_bar()``."""

    closed = Signal()

    def __init__(self, conversation: ConversationView, parent: QWidget | None = None):
        super().__init__(parent)
        self.conversation = conversation
        self.setObjectName("findBar")
        wrap = QHBoxLayout(self)
        wrap.setContentsMargins(16, 4, 16, 4)
        wrap.setSpacing(8)
        self.edit = FindEdit()
        self.edit.setObjectName("findEdit")
        self.edit.setPlaceholderText(
            translate("MainWindow", "Find in conversation (Enter: next, Shift+Enter: previous, Esc: close)"))
        self.edit.setAccessibleName(translate("MainWindow", "Find in conversation"))
        self.edit.setClearButtonEnabled(True)
        wrap.addWidget(self.edit, 1)
        self.count = QLabel()
        self.count.setObjectName("findCount")
        self.count.setAccessibleName(translate("MainWindow", "Matches"))
        wrap.addWidget(self.count)
        buttons = []
        for text, tip in (("↑", translate("MainWindow", "Previous match (Shift+Enter)")),
                          ("↓", translate("MainWindow", "Next match (Enter)")),
                          ("✕", translate("MainWindow", "Close (Esc)"))):
            button = QToolButton()
            button.setText(text)
            button.setToolTip(tip)
            button.setAccessibleName(tip)
            button.setAutoRaise(True)
            wrap.addWidget(button)
            buttons.append(button)
        self.prev_button, self.next_button, self.close_button = buttons
        self.setVisible(False)
        self.matches: list[Any] = []
        self.index = -1
        self.edit.textChanged.connect(self._changed)
        self.edit.step.connect(self.step)
        self.edit.closed.connect(self.close_bar)
        self.next_button.clicked.connect(lambda: self.step(1))
        self.prev_button.clicked.connect(lambda: self.step(-1))
        self.close_button.clicked.connect(self.close_bar)

    def open_bar(self) -> None:
        self.setVisible(True)
        self.edit.setFocus()
        self.edit.selectAll()
        self._changed(self.edit.text())

    def close_bar(self) -> None:
        self.setVisible(False)
        self.conversation.highlight_matches("", [], -1)
        self.matches, self.index = [], -1
        self.closed.emit()

    def _changed(self, text: str) -> None:
        self.matches = self.conversation.find_matches(text) if text else []
        self.index = 0 if self.matches else -1
        self._show_state()

    def step(self, delta: int) -> None:
        text = self.edit.text()
        self.matches = self.conversation.find_matches(text) if text else []  # the conversation may have grown
        self.index = find_index(self.index, len(self.matches), delta)
        self._show_state()

    def _show_state(self) -> None:
        text, n = self.edit.text(), len(self.matches)
        if not text:
            self.count.setText("")
        elif n:
            self.count.setText(translate("MainWindow", "{0} of {1}").format(self.index + 1, n))
        else:
            self.count.setText(translate("MainWindow", "No matches"))
        c = colors(is_dark(self))
        self.count.setStyleSheet(f"color: {c.error if text and not n else c.muted};")
        self.prev_button.setEnabled(n > 1)
        self.next_button.setEnabled(n > 1)
        self.conversation.highlight_matches(text, self.matches, self.index)
