"""The sessions pane: the folder's earlier sessions, newest first, the current one marked (``●``); activating
one resumes it (``session_activated``). The rows come from ``presenters.session_rows`` over
``EngineClient.list_sessions``.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtWidgets import QFrame, QLabel, QListView, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from desktop_agent.ui.window.presenters import SessionRow

translate = QCoreApplication.translate


class SessionsPane(QWidget):
    """Title and list (``list`` is the ``QListWidget``, object name ``sessionList``)."""

    session_activated = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("sessionPane")
        self.list = QListWidget()
        self.list.setObjectName("sessionList")
        self.list.setAccessibleName(translate("MainWindow", "Sessions in this folder"))
        self.list.setFrameShape(QFrame.Shape.NoFrame)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        # a narrow pane (900 px windows) wraps a long title instead of scrolling the list sideways
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setResizeMode(QListView.ResizeMode.Adjust)
        self.list.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.title = QLabel(translate("MainWindow", "Sessions"))
        self.title.setObjectName("paneTitle")
        self.title.setContentsMargins(16, 8, 8, 8)
        layout.addWidget(self.title)
        layout.addWidget(self.list, 1)
        self.list.itemActivated.connect(self._activated)

    def clear(self) -> None:
        self.list.clear()
        self._current_title = None

    _current_title: str | None = None

    def current_title(self) -> str | None:
        """The title of the row marked current (the session's first prompt), if it has one."""
        return self._current_title

    def show_rows(self, rows: list[SessionRow]) -> None:
        """The rows of an open folder (a hint when there are none)."""
        self.list.clear()
        self._current_title = next((r.title for r in rows if r.current), None)
        if not rows:
            hint = QListWidgetItem(translate("MainWindow", "No earlier sessions\nin this folder"))
            hint.setFlags(Qt.ItemFlag.NoItemFlags)
            self.list.addItem(hint)
        for row in rows:
            title = row.title if row.title is not None else translate("MainWindow", "(new session)")
            item = QListWidgetItem(f"{'● ' if row.current else ''}{title[:48]}\n{row.when}")
            item.setData(Qt.ItemDataRole.UserRole, row.session_id)
            item.setToolTip(f"{title}\n{row.message_count} messages · {row.session_id}")
            self.list.addItem(item)
            if row.current:
                self.list.setCurrentItem(item)

    def _activated(self, item: QListWidgetItem) -> None:
        sid = item.data(Qt.ItemDataRole.UserRole)
        if sid:
            self.session_activated.emit(str(sid))
