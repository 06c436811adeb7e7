"""Messages typed while the agent works: queued under the conversation and sent, in order, when the turn ends.

``MessageQueue`` is the strip between the conversation and the prompt box (UI guide, "Queued messages"): one greyed
row per queued message (``queued · sent when this turn ends``) with **Edit** and **Cancel**. Edit turns the row into
a small editor in place (Enter saves, Shift+Enter a new line, Esc puts the text back as it was); Cancel removes it.

When the running turn ends by itself the first queued message is sent as the next turn (``send``, the window's own
send path), the next one when that turn ends, and so on — one message per turn, in the order they were typed (as
Claude Code and Cursor do). A turn the person stopped (Esc), one that ended in an error, or a session replaced by
another does not send anything: the queue is *held* and its header says so, with **Send now** to go on. A row being
edited is never sent half-edited: the queue waits for the edit to be saved or put back.

It listens to the ``AgentController`` itself (``busy_changed``, ``status_changed``, ``session_changed``), so the
window only creates it, puts it in the layout and calls ``add(text)`` instead of refusing a prompt.
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from desktop_agent.ui.highlight import colors, is_dark
from desktop_agent.ui.window.presenters import ERROR, STOPPING
from desktop_agent.ui.window.prompt import PromptEdit


class _QueuedEditor(PromptEdit):
    """The editor of a queued message: Enter saves, Esc puts the text back (and never stops the turn)."""

    escaped = Signal()

    def event(self, e) -> bool:  # Esc is the window's Stop shortcut: here it belongs to the editor
        if e.type() == e.Type.ShortcutOverride and e.key() == Qt.Key.Key_Escape:
            e.accept()
            return True
        return super().event(e)

    def keyPressEvent(self, event) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Escape:
            self.escaped.emit()
            event.accept()
            return
        super().keyPressEvent(event)


class QueuedRow(QFrame):
    """One queued message: its text (greyed), Edit and Cancel; while edited, an editor with Save."""

    cancel_clicked = Signal(object)
    edit_finished = Signal(object)

    def __init__(self, text: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.text = text
        self.editing = False
        self.setObjectName("queuedRow")
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 2, 4, 2)
        row.setSpacing(8)
        self.label = QLabel()
        self.label.setObjectName("queuedText")
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setEnabled(False)  # greyed: not sent yet
        self.editor = _QueuedEditor()
        self.editor.setObjectName("queuedEditor")
        self.editor.setAccessibleName(self.tr("Edit the queued message"))
        self.editor.setVisible(False)
        self.editor.submitted.connect(lambda _t: self.finish_edit(True))
        self.editor.escaped.connect(lambda: self.finish_edit(False))
        row.addWidget(self.label, 1)
        row.addWidget(self.editor, 1)
        self.edit_button = QToolButton()
        self.edit_button.setText(self.tr("Edit"))
        self.edit_button.setObjectName("queuedEdit")
        self.edit_button.setAccessibleName(self.tr("Edit the queued message"))
        self.edit_button.setAutoRaise(True)
        self.edit_button.clicked.connect(self._edit_or_save)
        self.cancel_button = QToolButton()
        self.cancel_button.setText(self.tr("Cancel"))
        self.cancel_button.setObjectName("queuedCancel")
        self.cancel_button.setAccessibleName(self.tr("Remove the queued message"))
        self.cancel_button.setAutoRaise(True)
        self.cancel_button.clicked.connect(lambda: self.cancel_clicked.emit(self))
        row.addWidget(self.edit_button, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(self.cancel_button, 0, Qt.AlignmentFlag.AlignTop)
        self._show_text()

    def _show_text(self) -> None:
        pal = self.label.palette()  # greyed in both palettes (a disabled label looked live in the dark one)
        muted = QColor(colors(is_dark(self)).muted)
        for group in (QPalette.ColorGroup.Disabled, QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
            pal.setColor(group, QPalette.ColorRole.WindowText, muted)
        self.label.setPalette(pal)
        self.label.setText(self.text)
        self.label.setToolTip(self.text)
        self.setAccessibleName(self.tr("Queued message: {0}").format(self.text))

    def _edit_or_save(self) -> None:
        if self.editing:
            self.finish_edit(True)
        else:
            self.start_edit()

    def start_edit(self) -> None:
        """The row becomes an editor with the message in it (Enter saves, Esc puts it back)."""
        self.editing = True
        self.editor.setPlainText(self.text)
        self.editor.moveCursor(self.editor.textCursor().MoveOperation.End)
        self.label.setVisible(False)
        self.editor.setVisible(True)
        self.edit_button.setText(self.tr("Save"))
        self.editor.setFocus()

    def finish_edit(self, save: bool) -> None:
        if not self.editing:
            return
        new = self.editor.toPlainText().strip()
        if save and new:
            self.text = new
        self.editing = False
        self.editor.setVisible(False)
        self.label.setVisible(True)
        self.edit_button.setText(self.tr("Edit"))
        self._show_text()
        self.edit_finished.emit(self)


class MessageQueue(QWidget):
    """The queued messages of the current session, sent one per turn end, in order."""

    changed = Signal()  # a message was queued, edited, removed or sent

    def __init__(self, controller: Any, send: Callable[[str], object], parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self._send = send
        self.rows: list[QueuedRow] = []
        self.held = False  # the turn was stopped or failed: wait for Send now
        self._stopping = False
        self.setObjectName("messageQueue")
        self.setAccessibleName(self.tr("Queued messages"))
        root = QVBoxLayout(self)
        root.setContentsMargins(16, 4, 16, 0)
        root.setSpacing(2)
        head = QHBoxLayout()
        head.setSpacing(8)
        self.header = QLabel()
        self.header.setObjectName("muted")
        self.header.setWordWrap(True)
        head.addWidget(self.header, 1)
        self.send_now_button = QToolButton()
        self.send_now_button.setText(self.tr("Send &now"))
        self.send_now_button.setObjectName("queuedSendNow")
        self.send_now_button.setAutoRaise(True)
        self.send_now_button.clicked.connect(self.send_now)
        head.addWidget(self.send_now_button)
        root.addLayout(head)
        self.rows_layout = QVBoxLayout()
        self.rows_layout.setSpacing(0)
        root.addLayout(self.rows_layout)
        controller.busy_changed.connect(self._on_busy)
        controller.status_changed.connect(self._on_status)
        controller.session_changed.connect(lambda _s: self._hold())
        self._refresh()

    # ----- what the window calls ---------------------------------------------------------------
    def add(self, text: str) -> QueuedRow:
        """Queue ``text`` (typed while the agent works)."""
        row = QueuedRow(text)
        row.cancel_clicked.connect(self.cancel)
        row.edit_finished.connect(lambda _r: self._after_edit())
        self.rows.append(row)
        self.rows_layout.addWidget(row)
        self._refresh()
        return row

    def texts(self) -> list[str]:
        return [r.text for r in self.rows]

    def cancel(self, row: QueuedRow) -> None:
        if row in self.rows:
            self.rows.remove(row)
            self.rows_layout.removeWidget(row)
            row.deleteLater()
            self._refresh()

    def clear(self) -> None:
        for row in list(self.rows):
            self.cancel(row)

    def send_now(self) -> None:
        """Go on after a hold: the first message now (when idle), the rest at the ends of the turns that follow."""
        self.held = False
        self._drain()

    # ----- the controller's signals ------------------------------------------------------------
    def _on_status(self, status: str, _detail: str) -> None:
        if status == STOPPING:
            self._stopping = True

    def _on_busy(self, busy: bool) -> None:
        if busy:
            self._stopping = False
            return
        if self._stopping or self.controller.status == ERROR:
            self._stopping = False
            self._hold()
            return
        # busy_changed(False) comes from inside the turn's task: send once that task is done
        QTimer.singleShot(0, self._drain)

    def _hold(self) -> None:
        if self.rows:
            self.held = True
            self._refresh()

    def _after_edit(self) -> None:
        self._refresh()
        if not self.controller.busy:
            QTimer.singleShot(0, self._drain)

    def _drain(self) -> None:
        """Send the first queued message if the agent is idle and nothing holds the queue."""
        if self.held or not self.rows or self.controller.busy or self.controller.session is None:
            self._refresh()
            return
        first = self.rows[0]
        if first.editing:  # sent once the edit is saved or put back
            self._refresh()
            return
        self.rows.pop(0)
        self.rows_layout.removeWidget(first)
        first.deleteLater()
        self._refresh()
        self._send(first.text)

    def _refresh(self) -> None:
        n = len(self.rows)
        self.setVisible(n > 0)
        if self.held:
            self.header.setText(self.tr("{0} queued · held (the turn did not finish): Send now to go on").format(n))
        else:
            self.header.setText(self.tr("{0} queued · sent when this turn ends").format(n))
        self.send_now_button.setVisible(self.held)
        self.changed.emit()


__all__ = ["MessageQueue", "QueuedRow"]
