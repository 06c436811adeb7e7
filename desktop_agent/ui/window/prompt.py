"""The prompt box (Enter sends, Shift+Enter a new line, Up/Down recall earlier prompts) and the find bar's field
(Enter next, Shift+Enter previous, Esc closes)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLineEdit, QPlainTextEdit, QWidget


class PromptEdit(QPlainTextEdit):
    """Enter sends, Shift+Enter inserts a newline, Up on the first line recalls the last prompt."""

    submitted = Signal(str)
    _placeholder = ""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("promptEdit")
        self.setAccessibleName(self.tr("Prompt"))
        self.setTabChangesFocus(True)
        self.history: list[str] = []
        self._hist_pos = 0
        self.document().contentsChanged.connect(self._fit)
        self._fit()

    def keyPressEvent(self, event) -> None:  # noqa: N802
        key, mods = event.key(), event.modifiers()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (mods & Qt.KeyboardModifier.ShiftModifier):
            text = self.toPlainText()
            if text.strip():
                self.submitted.emit(text)
            event.accept()
            return
        if key == Qt.Key.Key_Up and self.history and self.textCursor().blockNumber() == 0:
            if not self.toPlainText() or self._hist_pos < len(self.history):
                self._hist_pos = max(0, (self._hist_pos if self.toPlainText() else len(self.history)) - 1)
                self.setPlainText(self.history[self._hist_pos])
                self.moveCursor(self.textCursor().MoveOperation.End)
                event.accept()
                return
        if key == Qt.Key.Key_Down and self.history and self._hist_pos < len(self.history) and \
                self.textCursor().blockNumber() == self.document().blockCount() - 1:
            self._hist_pos += 1
            self.setPlainText(self.history[self._hist_pos] if self._hist_pos < len(self.history) else "")
            self.moveCursor(self.textCursor().MoveOperation.End)
            event.accept()
            return
        super().keyPressEvent(event)

    def setPlaceholderText(self, text: str) -> None:  # noqa: N802
        self._placeholder = text
        self._fit_placeholder()

    def _fit_placeholder(self) -> None:
        """The long hint when it fits on the one line, else its first part (a wrapped placeholder was
        clipped by the one-line box at 900 px)."""
        full = self._placeholder
        fm = QFontMetrics(self.font())
        short = full.split("   (")[0] if "   (" in full else full
        fits = fm.horizontalAdvance(full) <= self.viewport().width() - 2 * int(self.document().documentMargin()) - 4
        super().setPlaceholderText(full if fits else short)

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._fit_placeholder()

    def remember(self, text: str) -> None:
        if text and (not self.history or self.history[-1] != text):
            self.history.append(text)
        self._hist_pos = len(self.history)

    def _fit(self) -> None:
        lines = max(1, min(8, int(self.document().size().height())))
        fm = QFontMetrics(self.font())
        self.setFixedHeight(lines * fm.lineSpacing() + 2 * int(self.document().documentMargin()) + 12)


class FindEdit(QLineEdit):
    """The find bar's field: Enter next, Shift+Enter previous, Esc closes (whatever else is going on)."""

    step = Signal(int)
    closed = Signal()

    def keyPressEvent(self, event) -> None:  # noqa: N802
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.step.emit(-1 if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else 1)
            event.accept()
            return
        if key == Qt.Key.Key_Escape:
            self.closed.emit()
            event.accept()
            return
        super().keyPressEvent(event)

    def event(self, e) -> bool:  # Esc must reach keyPressEvent even when Stop (Esc) is enabled
        if e.type() == e.Type.ShortcutOverride and e.key() == Qt.Key.Key_Escape:
            e.accept()
            return True
        return super().event(e)
