"""The sessions pane, top to bottom (issue 24):

- **Inbox** (``inbox``, shown while a question waits): every pending question of every session of this app's
  windows, oldest first — the tool and its key argument, the session, its folder or worktree, the time waiting;
  activating one brings its session into view and its dialog up (``question_activated``).
- **Running** (``live_list``): the sessions open in the windows, each with its state and the time in it (``Working``,
  ``Needs you (n)``, ``Done``, ``Failed``, ``Stopped``) and its folder; the one in view is marked ``●``; activating
  one shows it (``live_activated``); its context menu: Rename…, Close Session and, in a worktree, Review Changes…
  and Archive Worktree (``live_action``).
- **Earlier** (``list``): the folder's earlier sessions, newest first, the current one marked (``●``); activating
  one resumes it (``session_activated``). The rows come from ``presenters.session_rows`` over
  ``EngineClient.list_sessions``; its context menu: Rename…, Archive / Unarchive, Delete… (``session_action``);
  "Show archived" lists the archived ones too.
- A filter line over both session lists (title, folder).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QCoreApplication, QPoint, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QCheckBox, QFrame, QHBoxLayout, QLabel, QLineEdit, QListView, QListWidget, QListWidgetItem, QMenu, QVBoxLayout, QWidget,
)

from desktop_agent.ui.window.presenters import SessionRow


@dataclass(frozen=True)
class LiveRow:
    """One row of the Running list: ``ref`` is what activating it hands back (the window's live session)."""

    ref: Any
    title: str
    label: str  # "Working · 12 s"
    where: str  # the folder (or worktree), ~-shortened; "another window" appended when it is not this window's
    current: bool
    number: int


@dataclass(frozen=True)
class InboxRow:
    """One pending question of the inbox."""

    key: tuple[str, str]
    ref: Any  # the live session it belongs to
    tool: str
    target: str  # the command, the file, the key argument
    session: str
    where: str
    waiting: str
    showing: bool


def _fit(widget: QListWidget, cap: int) -> None:
    """A list as tall as its rows (at most ``cap`` px; it scrolls beyond), so the lists below keep their room."""
    rows = sum(widget.sizeHintForRow(i) for i in range(widget.count()))
    widget.setFixedHeight(min(cap, rows + 2 * widget.frameWidth() + 4))


def _list(name: str, accessible: str) -> QListWidget:
    widget = QListWidget()
    widget.setObjectName(name)
    widget.setAccessibleName(accessible)
    widget.setFrameShape(QFrame.Shape.NoFrame)
    widget.setTextElideMode(Qt.TextElideMode.ElideRight)
    # a narrow pane (900 px windows) wraps a long title instead of scrolling the list sideways
    widget.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    widget.setResizeMode(QListView.ResizeMode.Adjust)
    widget.setWordWrap(True)
    return widget

translate = QCoreApplication.translate


class SessionsPane(QWidget):
    """Title and list (``list`` is the ``QListWidget``, object name ``sessionList``)."""

    session_activated = Signal(str)
    live_activated = Signal(object)  # a LiveRow's ref
    live_action = Signal(str, object)  # "rename" | "close" | "review" | "archive_worktree", a LiveRow's ref
    session_action = Signal(str, str)  # "rename" | "archive" | "unarchive" | "delete", an earlier session's id
    question_activated = Signal(object, object)  # an InboxRow's key, its ref

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("sessionPane")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)

        def heading(text: str, name: str) -> QLabel:
            label = QLabel(text)
            label.setObjectName(name)
            label.setContentsMargins(16, 8, 8, 4)
            layout.addWidget(label)
            return label

        self.filter = QLineEdit()
        self.filter.setObjectName("sessionFilter")
        self.filter.setPlaceholderText(translate("MainWindow", "Filter sessions"))
        self.filter.setAccessibleName(translate("MainWindow", "Filter sessions"))
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(lambda _t: self._apply_filter())
        self.show_archived = QCheckBox(translate("MainWindow", "Show archived"))
        self.show_archived.setObjectName("showArchived")
        self.inbox_title = heading(translate("MainWindow", "Inbox"), "inboxTitle")
        self.inbox = _list("inboxList", translate("MainWindow", "Questions waiting for you"))
        layout.addWidget(self.inbox)
        self.live_title = heading(translate("MainWindow", "Running"), "liveTitle")
        self.live_list = _list("liveSessions", translate("MainWindow", "Open sessions"))
        self.live_list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.live_list.customContextMenuRequested.connect(self._live_menu)
        layout.addWidget(self.live_list)
        self.title = heading(translate("MainWindow", "Sessions"), "paneTitle")
        self.list = _list("sessionList", translate("MainWindow", "Sessions in this folder"))
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._session_menu)
        layout.addWidget(self.list, 1)
        archived_row = QHBoxLayout()
        archived_row.setContentsMargins(12, 4, 8, 8)
        archived_row.addWidget(self.show_archived)
        layout.addLayout(archived_row)
        layout.insertWidget(0, self.filter)
        self.filter.setContentsMargins(8, 8, 8, 0)
        self.list.itemActivated.connect(self._activated)
        self.live_list.itemActivated.connect(
            lambda item: self.live_activated.emit(item.data(Qt.ItemDataRole.UserRole)))
        self.live_list.itemClicked.connect(
            lambda item: self.live_activated.emit(item.data(Qt.ItemDataRole.UserRole)))
        self.inbox.itemActivated.connect(self._question)
        self.inbox.itemClicked.connect(self._question)
        self.live_rows: list[LiveRow] = []
        self.inbox_rows: list[InboxRow] = []
        self.show_inbox([])
        self.show_live([])

    # ----- the inbox and the running sessions ------------------------------------------------------
    def show_inbox(self, rows: list[InboxRow]) -> None:
        self.inbox_rows = rows
        self.inbox.clear()
        for row in rows:
            target = row.target if len(row.target) <= 40 else "…" + row.target[-39:]
            item = QListWidgetItem(f"{'▶ ' if row.showing else ''}{row.tool} {target}\n{row.session[:40]}\n"
                                   f"{row.where} · {row.waiting}")
            item.setData(Qt.ItemDataRole.UserRole, row.key)
            item.setToolTip(f"{row.tool}: {row.target}\n{row.session}\n{row.where}")
            self.inbox.addItem(item)
        _fit(self.inbox, 260)
        self.inbox_title.setText(translate("MainWindow", "Inbox ({0})").format(len(rows)))
        self.inbox_title.setVisible(bool(rows))
        self.inbox.setVisible(bool(rows))

    def show_live(self, rows: list[LiveRow]) -> None:
        self.live_rows = rows
        self.live_list.clear()
        for row in rows:
            item = QListWidgetItem(f"{'● ' if row.current else ''}{row.title[:48]}\n{row.label}\n{row.where}")
            item.setData(Qt.ItemDataRole.UserRole, row.ref)
            item.setToolTip(f"{row.title}\n{row.label}\n{row.where}")
            if row.current:
                font = QFont(item.font())
                font.setBold(True)
                item.setFont(font)
            self.live_list.addItem(item)
            if row.current:
                self.live_list.setCurrentItem(item)
        _fit(self.live_list, 330)
        self.live_title.setVisible(len(rows) > 1)
        self.live_list.setVisible(len(rows) > 1)
        self._apply_filter()

    def _question(self, item: QListWidgetItem) -> None:
        key = item.data(Qt.ItemDataRole.UserRole)
        row = next((r for r in self.inbox_rows if r.key == tuple(key)), None) if key else None
        if row is not None:
            self.question_activated.emit(row.key, row.ref)

    def _live_menu(self, pos: QPoint) -> None:
        item = self.live_list.itemAt(pos)
        if item is None:
            return
        ref = item.data(Qt.ItemDataRole.UserRole)
        menu = QMenu(self)
        menu.addAction(translate("MainWindow", "Rename…"), lambda: self.live_action.emit("rename", ref))
        menu.addAction(translate("MainWindow", "Close Session"), lambda: self.live_action.emit("close", ref))
        if getattr(ref, "worktree", None):
            menu.addSeparator()
            menu.addAction(translate("MainWindow", "Review Changes…"), lambda: self.live_action.emit("review", ref))
            menu.addAction(translate("MainWindow", "Archive Worktree"),
                           lambda: self.live_action.emit("archive_worktree", ref))
        self._menu = menu
        menu.popup(self.live_list.viewport().mapToGlobal(pos))

    def _session_menu(self, pos: QPoint) -> None:
        item = self.list.itemAt(pos)
        if item is None:
            return
        sid = item.data(Qt.ItemDataRole.UserRole)
        if not sid:
            return
        sid = str(sid)
        archived = bool(item.data(Qt.ItemDataRole.UserRole + 1))
        menu = QMenu(self)
        menu.addAction(translate("MainWindow", "Rename…"), lambda: self.session_action.emit("rename", sid))
        if archived:
            menu.addAction(translate("MainWindow", "Unarchive"), lambda: self.session_action.emit("unarchive", sid))
        else:
            menu.addAction(translate("MainWindow", "Archive"), lambda: self.session_action.emit("archive", sid))
        menu.addAction(translate("MainWindow", "Delete…"), lambda: self.session_action.emit("delete", sid))
        self._menu = menu
        menu.popup(self.list.viewport().mapToGlobal(pos))

    def _apply_filter(self) -> None:
        needle = self.filter.text().strip().lower()
        for widget in (self.live_list, self.list):
            for i in range(widget.count()):
                item = widget.item(i)
                item.setHidden(bool(needle) and needle not in item.text().lower()
                               and needle not in (item.toolTip() or "").lower())

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
            when = row.when + (" · " + translate("MainWindow", "archived") if row.archived else "")
            item = QListWidgetItem(f"{'● ' if row.current else ''}{title[:48]}\n{when}")
            item.setData(Qt.ItemDataRole.UserRole, row.session_id)
            item.setData(Qt.ItemDataRole.UserRole + 1, row.archived)
            item.setToolTip(f"{title}\n{row.message_count} messages · {row.session_id}")
            self.list.addItem(item)
            if row.current:
                self.list.setCurrentItem(item)
        self._apply_filter()

    def _activated(self, item: QListWidgetItem) -> None:
        sid = item.data(Qt.ItemDataRole.UserRole)
        if sid:
            self.session_activated.emit(str(sid))
