"""The main window: sessions | conversation + prompt | changes, toolbar, menus and status bar — the layout and the
wiring. It is composed of part objects, each with its own state, that reach it through ``host_protocol.WindowHost``:
``folders`` (opening folders and sessions), ``toolbar`` (mode and model boxes, Stop), ``banners`` (status bar, title,
banners, MCP servers), ``rewind`` and ``worktree_actions``. Beside it: ``sidebar`` (sessions list), ``find`` (find
bar), ``modes`` (the mode names and the bypass question), ``presenters`` (their decisions, without Qt).

All agent work goes through ``AgentController``, and the engine only through ``desktop_agent.client``; this module
wires the controller's signals to the views (each ``AgentEvent`` once to ``ConversationView.handle_event``, whose
presenter renders it; the changes panel and the status bar from the rest) and keeps the window state (geometry,
splitter sizes, last folder, recent folders) in QSettings. Async actions (opening a folder after the trust question,
resuming a session) run as tasks on the qasync loop; dialogs are shown with ``open()``, never ``exec()``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
import weakref
from typing import Any, Callable

from PySide6.QtCore import QByteArray, QCoreApplication, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence, QPalette
from PySide6.QtWidgets import (
    QApplication, QLabel, QMainWindow, QMessageBox, QSplitter, QStackedWidget, QStatusBar,
    QVBoxLayout, QWidget,
)

from desktop_agent.ui import icons
from desktop_agent.ui.changes.panel import DiffPanel
from desktop_agent.ui.conversation.view import ConversationView
from desktop_agent.ui.first_paint import after_first_paint
from desktop_agent.ui.highlight import colors, is_dark
from desktop_agent.ui.window.away import watch_away
from desktop_agent.ui.window.background import in_background, is_active, review_in_window, watch_activation
from desktop_agent.ui.window.banners import APP, WindowBanners
from desktop_agent.ui.window.controller import IDLE, AgentController
from desktop_agent.ui.window.demo import TOUR_PROMPTS, prepare_demo_project
from desktop_agent.ui.window.find import FindBar
from desktop_agent.ui.window.folders import WindowFolders
from desktop_agent.ui.window.host_protocol import WindowHost
from desktop_agent.ui.mode_labels import MODES, mode_label
from desktop_agent.ui.modes import BYPASS, default_mode_setting
from desktop_agent.ui.window.presenters import RETRYING, STOPPING, STREAMING, TOOL, WAITING, home, token_text
from desktop_agent.ui.window.live import LiveSession, since_text
from desktop_agent.ui.window.message_queue import MessageQueue
from desktop_agent.ui.window.questions import PromptQueue
from desktop_agent.ui.window.prompt import PromptEdit
from desktop_agent.ui.window.rewind import WindowRewind
from desktop_agent.ui.window.sidebar import InboxRow, LiveRow, SessionsPane
from desktop_agent.ui.window.toolbar import WindowToolbar
from desktop_agent.ui.window.worktree_actions import WorktreeActions
from desktop_agent.client.local import discard_empty_transcript as discard_if_empty

log = logging.getLogger(__name__)

ORG = "desktop-agent"
GIL_SWITCH_S = 0.001  # the interpreter's thread switch interval while a window is open (``sys.setswitchinterval``)


def _triggers(action: QAction, slot: Callable[[], object]) -> QAction:
    """``action`` with ``slot`` connected to its ``triggered`` (the ``triggered=`` keyword, spelled so the type checker
    sees it)."""
    action.triggered.connect(slot)
    return action


def _loop_running() -> bool:
    try:
        return asyncio.get_event_loop().is_running()
    except RuntimeError:
        return False


class MainWindow(WindowHost, QMainWindow):
    """The product window. ``client_factory`` (tests) builds the model client of an in-process session."""

    folder_opened = Signal(str)
    history_shown = Signal(str)  # a resumed transcript is on screen (the session may still be loading)
    _icons_dark: bool | None = None  # the palette the icons were drawn for

    windows: "weakref.WeakSet[MainWindow]" = weakref.WeakSet()  # this app's windows (their inboxes are one)

    def __init__(self, *, controller: AgentController | None = None, client_factory: Callable[[], Any] | None = None,
                 demo: bool = False, settings: QSettings | None = None, session_kwargs: dict[str, Any] | None = None,
                 executor: str | None = None, executor_path: str | None = None, client: Any = None):
        super().__init__()
        MainWindow.windows.add(self)
        self.setObjectName("mainWindow")
        # worker threads (a transcript parsed, a session built) hand the GIL to the Qt thread after 1 ms, not 5: a
        # repaint re-enters Python a dozen times, and 5 ms waits add up to frames of 60 ms
        sys.setswitchinterval(min(sys.getswitchinterval(), GIL_SWITCH_S))
        self.demo = demo
        self.client_factory = client_factory
        self.session_kwargs = dict(session_kwargs or {})
        # where sessions run (``--executor``; else Settings' "Run sessions"): inprocess, process, claude
        self.executor_override, self.executor_path_override = executor, executor_path
        self.qsettings = settings or QSettings(ORG, "desktop-agent")
        # the window's questions, one dialog at a time, shared by its sessions: those of the session in view open by
        # themselves, the others wait in the inbox (``ui.window.sessions``)
        self.questions = controller.questions if controller is not None else PromptQueue(self)
        self.questions.scope = lambda key: key[0] == self.live.session_id or not self.live.session_id
        self.lives: list[LiveSession] = []  # the sessions open in this window, in the order they were opened
        # the window's part objects: each holds its own state and reaches the window through its ``window``
        self.folders: WindowFolders = WindowFolders(self)
        self.rewind: WindowRewind = WindowRewind(self)
        self.banners: WindowBanners = WindowBanners(self)
        self.worktree_actions = WorktreeActions(self)
        self._first_controller = controller or AgentController(self, window=self, questions=self.questions,
                                                               client=client)
        self.pages = QStackedWidget()  # one conversation page per live session (``LiveSession.page``)
        self.pages.setObjectName("conversationPages")
        self.panels = QStackedWidget()  # one changes panel per live session
        self.panels.setObjectName("changesPanels")
        self.live = self._new_live(self._first_controller)
        self.open_task = None  # the members the window's parts use are typed in ``host_protocol.WindowHost``
        self.restart_task = None  # "Restart session" (an executor process)
        self.trust_box = None
        self.stop_question = None  # "Stop the running turn?" while it is open (folders.stop_running_turn)
        self.settings_dialog: Any = None
        self._model_name = ""
        self.permission_mode = "default"  # the mode in force (bypass only after its confirmation)
        self._saved_default_mode: str | None = None
        self._saved_model = ""  # the Settings model when Settings opened
        self.wanted_folder = None  # the folder asked for whose session could not open yet
        self._history_stats = None
        self.network_view: Any = None  # the Network view (ui/window/network_view.py), built when first shown
        self._had_session = False  # a later new session starts in Settings' default mode
        self._close_task: asyncio.Task | None = None  # SessionEnd before the window closes
        self.attach_task = None  # the background host's other sessions coming back
        self.drop_task = None  # an unstarted session left for another, closing
        self.delete_dialog: Any = None  # "Delete this session?" while it is open
        self.rename_dialog: Any = None
        self._build()
        self._wire()
        self._restore_state()
        if not demo and "permission_mode" not in self.session_kwargs:
            first = default_mode_setting()  # bypass only through its question (ui/main.py asks at launch)
            if first != BYPASS:
                self.permission_mode = first
                self.toolbar.select_mode(first)
        self.banners.update_title()
        self.banners.show_empty()
        self.banners.set_status_view(IDLE, "")

    # ----- construction ------------------------------------------------------------------------
    def _build(self) -> None:
        self.setWindowTitle(APP)
        try:
            from PySide6.QtGui import QIcon

            from desktop_agent.resources import app_icon_path

            self.setWindowIcon(QIcon(str(app_icon_path())))
        except Exception:
            pass

        self.toolbar: WindowToolbar = WindowToolbar(self)  # the bar, the mode and model boxes, Stop

        # Panes.
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        self.splitter.setChildrenCollapsible(True)
        self.sessions_pane = SessionsPane()
        self.side, self.sessions, self.sessions_title = self.sessions_pane, self.sessions_pane.list, \
            self.sessions_pane.title


        center = QWidget()
        center.setObjectName("conversationPane")
        center_layout = QVBoxLayout(center)
        center_layout.setContentsMargins(0, 0, 0, 0)
        center_layout.setSpacing(0)
        center_layout.addWidget(self.pages, 1)
        self.find_bar = FindBar(self.conversation)
        self.find_edit, self.find_count = self.find_bar.edit, self.find_bar.count
        self.find_prev_button, self.find_next_button = self.find_bar.prev_button, self.find_bar.next_button
        self.find_close_button = self.find_bar.close_button
        center_layout.addWidget(self.find_bar)
        prompt_row = QVBoxLayout()
        prompt_row.setContentsMargins(16, 8, 16, 8)
        prompt_row.setSpacing(4)
        self.prompt = PromptEdit()
        self.prompt.setPlaceholderText(self.tr("Ask for a change…   (Enter to send, Shift+Enter for a new line)"))
        prompt_row.addWidget(self.prompt)
        center_layout.addLayout(prompt_row)

        self.splitter.addWidget(self.side)
        self.splitter.addWidget(center)
        self.splitter.addWidget(self.panels)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setStretchFactor(2, 2)
        self.splitter.setSizes([200, 620, 460])
        self.setCentralWidget(self.splitter)

        # Status bar.
        self.status = QStatusBar()
        self.status.setObjectName("statusBar")
        self.status.setSizeGripEnabled(False)
        self.setStatusBar(self.status)
        self.status_label = QLabel()
        self.status_label.setObjectName("statusLabel")
        self.status_label.setContentsMargins(8, 0, 8, 0)
        self.status_label.setAccessibleName(self.tr("Agent status"))
        self.usage_label = QLabel()
        self.usage_label.setObjectName("muted")
        self.usage_label.setContentsMargins(8, 0, 8, 0)
        self.status.addWidget(self.status_label, 1)
        self.status.addPermanentWidget(self.usage_label)

        self._build_menus()
        self._apply_icons()

    def _build_menus(self) -> None:
        mb = self.menuBar()
        file_menu = mb.addMenu(self.tr("&File"))
        self.open_action = _triggers(QAction(self.tr("&Open Folder…"), self,
                                             shortcut=QKeySequence(QKeySequence.StandardKey.Open)),
                                   self.folders.choose_folder)
        file_menu.addAction(self.open_action)
        self.recent_menu = file_menu.addMenu(self.tr("Open &Recent"))
        self.new_action = _triggers(QAction(self.tr("&New Session"), self,
                                            shortcut=QKeySequence(QKeySequence.StandardKey.New)),
                                  self.folders.new_session)
        file_menu.addAction(self.new_action)
        self.new_window_action = _triggers(QAction(self.tr("New &Window"), self, shortcut=QKeySequence("Ctrl+Shift+W")),
                                           self.new_window)
        file_menu.addAction(self.new_window_action)
        self.new_worktree_action = _triggers(QAction(self.tr("New Session in &Worktree…"), self),
                                             self.worktree_actions.new_worktree_session)
        file_menu.addAction(self.new_worktree_action)
        self.review_action = _triggers(QAction(self.tr("&Review Worktree Changes…"), self),
                                       self.worktree_actions.review_worktree)
        file_menu.addAction(self.review_action)
        self.restore_worktree_action = _triggers(QAction(self.tr("Restore &Worktree…"), self),
                                                 self.worktree_actions.restore_worktree)
        file_menu.addAction(self.restore_worktree_action)
        file_menu.addSeparator()
        file_menu.addAction(_triggers(QAction(self.tr("&Quit"), self,
                                              shortcut=QKeySequence(QKeySequence.StandardKey.Quit)), self.close))

        edit_menu = mb.addMenu(self.tr("&Edit"))
        self.find_action = _triggers(QAction(self.tr("&Find in Conversation…"), self,
                                             shortcut=QKeySequence(QKeySequence.StandardKey.Find)), self.show_find)
        edit_menu.addAction(self.find_action)
        self.focus_prompt_action = _triggers(QAction(self.tr("Focus &Prompt"), self, shortcut=QKeySequence("Ctrl+L")),
                                             lambda: self.prompt.setFocus())
        edit_menu.addAction(self.focus_prompt_action)
        edit_menu.addSeparator()
        self.settings_action = _triggers(QAction(self.tr("&Settings…"), self, shortcut=QKeySequence("Ctrl+,")),
                                         lambda: self.show_settings(False))
        self.settings_action.setMenuRole(QAction.MenuRole.PreferencesRole)
        edit_menu.addAction(self.settings_action)

        view_menu = mb.addMenu(self.tr("&View"))
        self.toggle_sessions = QAction(self.tr("&Sessions Pane"), self, checkable=True, checked=True,
                                       shortcut=QKeySequence("Ctrl+Shift+S"))
        self.toggle_sessions.toggled.connect(self.side.setVisible)
        view_menu.addAction(self.toggle_sessions)
        self.toggle_changes = QAction(self.tr("&Changes Pane"), self, checkable=True, checked=True,
                                      shortcut=QKeySequence("Ctrl+Shift+D"))
        self.toggle_changes.toggled.connect(self.panels.setVisible)
        view_menu.addAction(self.toggle_changes)
        view_menu.addSeparator()
        self.servers_action = _triggers(QAction(self.tr("MCP &Servers…"), self,
                                                shortcut=QKeySequence("Ctrl+Shift+E")), self.banners.show_servers)
        view_menu.addAction(self.servers_action)
        self.network_action = _triggers(QAction(self.tr("&Network…"), self, shortcut=QKeySequence("Ctrl+Shift+N")),
                                        self.show_network)
        view_menu.addAction(self.network_action)

        session_menu = mb.addMenu(self.tr("&Session"))
        self.send_action = _triggers(QAction(self.tr("Se&nd"), self), lambda: self.send(self.prompt.toPlainText()))
        self.send_action.setShortcut(QKeySequence("Ctrl+Return"))
        session_menu.addAction(self.send_action)
        self.stop_action = _triggers(QAction(self.tr("&Stop"), self, shortcut=QKeySequence(Qt.Key.Key_Escape)),
                                     self.stop)
        self.stop_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.stop_action.setEnabled(False)
        session_menu.addAction(self.stop_action)
        self.next_question_action = _triggers(QAction(self.tr("Next &Waiting Question"), self,
                                                      shortcut=QKeySequence("Ctrl+I")), self.next_question)
        session_menu.addAction(self.next_question_action)
        self.cycle_mode_action = _triggers(QAction(self.tr("&Cycle Permission Mode"), self,
                                                   shortcut=QKeySequence("Ctrl+Shift+M")), self.toolbar.cycle_mode)
        session_menu.addAction(self.cycle_mode_action)
        mode_menu = session_menu.addMenu(self.tr("Permission &Mode"))
        self.mode_group = QActionGroup(self)
        for i, (mode, label) in enumerate(MODES):
            act = QAction(mode_label(label), self, checkable=True)
            act.setData(mode)
            act.triggered.connect(lambda _=False, mode=mode: self.toolbar.request_mode(mode))
            self.mode_group.addAction(act)
            mode_menu.addAction(act)

        help_menu = mb.addMenu(self.tr("&Help"))
        help_menu.addAction(_triggers(QAction(self.tr("Take the Offline &Tour"), self), self.start_tour))
        help_menu.addAction(_triggers(QAction(self.tr("&Keyboard Shortcuts"), self), self.show_shortcuts))
        help_menu.addAction(_triggers(QAction(self.tr("&About Desktop Agent"), self), self.show_about))
        self.toolbar.stop_button.setDefaultAction(self.stop_action)
        self.stop_action.setText(self.tr("Stop  Esc"))

    def _apply_icons(self) -> None:
        self._icons_dark = is_dark(self)
        fg = self.palette().color(QPalette.ColorRole.ButtonText)
        stop_icon = icons.icon("stop", colors(is_dark(self)).error)
        # disabled: muted, not red (in the dark palette the generated disabled icon still looked live)
        for size in (16, 32):
            stop_icon.addPixmap(icons.pixmap("stop", colors(is_dark(self)).muted, size), stop_icon.Mode.Disabled)
        self.stop_action.setIcon(stop_icon)
        self.open_action.setIcon(icons.icon("folder", fg))
        self.new_action.setIcon(icons.icon("plus", fg))
        self.settings_action.setIcon(icons.icon("settings", fg))
        c = colors(is_dark(self))
        self.toolbar.tour_label.setStyleSheet(
            f"QLabel#tourLabel {{ color: {c.accent}; border: 1px solid {c.accent}; border-radius: 4px; "
            f"padding: 2px 8px; margin-left: 8px; font-weight: 600; }}")
        self.sessions_title.setStyleSheet(f"color: {c.muted}; font-weight: 600;")
        self.toolbar.stop_button.setStyleSheet(f"QToolButton#stopButton:disabled {{ color: {c.muted}; }}")
        self.toolbar.style_badges(c)
        for live in self.lives:
            live.diff_panel.title.setStyleSheet("font-weight: 600;")

    # ----- live sessions (ui/window/live.py) -----------------------------------------------------
    @property
    def controller(self) -> AgentController:
        """The controller of the session in view."""
        return self.live.controller

    @property
    def conversation(self) -> ConversationView:
        return self.live.conversation

    @property
    def diff_panel(self) -> DiffPanel:
        return self.live.diff_panel

    @property
    def message_queue(self) -> MessageQueue:
        return self.live.message_queue

    @property
    def folder(self) -> str | None:
        return self.live.folder

    @folder.setter
    def folder(self, value: str | None) -> None:
        self.live.folder = value

    def _new_live(self, controller: AgentController | None = None) -> LiveSession:
        """A new live session (its page and changes panel added, not shown): its controller shares this window's
        question queue and in-process host."""
        if controller is None:
            shared = self.lives[0].controller.client if self.lives else None
            controller = AgentController(self, window=self, questions=self.questions,
                                         client=shared if shared is not None and shared.kind == "inprocess" else None)
        controller.window = self
        live = LiveSession(self, controller, lambda text: self._send_queued(live, text))
        self.lives.append(live)
        self.pages.addWidget(live.page)
        self.panels.addWidget(live.diff_panel)
        live.diff_panel.title.setStyleSheet("font-weight: 600;")
        if live.folder is None and self.lives[:-1]:
            live.folder = self.lives[-2].folder
        if hasattr(self, "prompt"):  # built: wire it now (the first one is wired by ``_wire``)
            self._wire_live(live)
        return live

    def _send_queued(self, live: LiveSession, text: str) -> bool:
        sent = live.controller.submit(text) is not None
        if sent:
            self._sessions_timer.start()
        return sent

    def _wire_live(self, live: LiveSession) -> None:
        """One session's controller to its own page and panel (always: a session out of view renders too), and to
        the window's status bar, title and toolbar (only while it is in view)."""
        c, conversation, panel = live.controller, live.conversation, live.diff_panel

        def shown(fn: Callable[..., Any]) -> Callable[..., Any]:
            return lambda *args: fn(*args) if live is self.live else None

        c.user_prompt.connect(conversation.add_user)
        c.agent_event.connect(conversation.handle_event)  # every AgentEvent: the conversation presenter
        c.tool_finished.connect(lambda e: self._on_tool_finished(e, live))  # the changes panel (after the card)
        c.permission_requested.connect(lambda r: self._on_permission_requested(r, live))
        c.permission_resolved.connect(lambda e: self._on_permission_resolved(e, live))
        c.notice.connect(lambda kind, text: conversation.add_banner("notice", text))
        c.status_changed.connect(shown(self.banners.set_status_view))
        c.usage_changed.connect(shown(self._on_usage))
        c.busy_changed.connect(lambda busy: self._on_busy(busy, live))
        c.notifier = self.banners.notify
        c.reviewer = lambda request_id: review_in_window(self, live, request_id)  # the background host's Review
        c.session_changed.connect(lambda _s: self._start_desktop_notifications())
        c.session_changed.connect(lambda _s: watch_activation(self, live))  # the host notifies while inactive
        c.session_changed.connect(lambda _s: self.questions.rescope())
        c.turn_finished.connect(shown(lambda _e: self.banners.refresh_servers()))  # MCP states after each turn
        c.tool_finished.connect(shown(lambda e: self.banners.refresh_servers()
                                      if str(e.name).startswith("mcp__") else None))
        c.session_changed.connect(shown(lambda _s: self.banners.refresh_servers()))
        panel.recorder = lambda entry: self._record_entry(entry, live)  # a revert or redo, in the transcript
        conversation.card_selected.connect(panel.select_tool)
        conversation.banner_action.connect(self.banners.on_banner_action)
        panel.change_selected.connect(lambda tid: conversation.select_card(tid, scroll=True))
        self.rewind.wire(live)  # checkpoint markers, "Rewind…", "Undo restore"
        live.changed.connect(self._sessions_changed)

    # ----- the Running list and the inbox (sidebar) ----------------------------------------------
    @staticmethod
    def app_windows() -> "list[MainWindow]":
        """This app's windows that are still there (a closed window leaves the set as it closes)."""
        import shiboken6

        return [w for w in list(MainWindow.windows) if shiboken6.isValid(w)]

    _questions_seen = 0

    def _questions_changed(self, count: int) -> None:
        """A question queued for a session out of view opens no dialog: while the window is not active, the taskbar
        says so (the host's notifier sends the desktop notification)."""
        if count > self._questions_seen and not self.isActiveWindow() and self.questions.current_key is None:
            QApplication.alert(self, 0)
        self._questions_seen = count
        self._sessions_changed()

    def _sessions_changed(self) -> None:
        """A session's state, title or questions changed: every window of the app redraws its sidebar (soon)."""
        for win in self.app_windows():
            timer = getattr(win, "_sidebar_timer", None)
            if timer is not None:
                timer.start()

    def _render_sidebar(self) -> None:
        now = time.time()
        rows: list[LiveRow] = []
        inbox: list[tuple[float, InboxRow]] = []
        from desktop_agent.ui.dialogs.permission import target_of

        for win in [self] + [w for w in self.app_windows() if w is not self]:
            for live in win.lives:
                if live.controller.session is None and not live.opening and live is not win.live:
                    continue
                where = self._where(live)
                if win is not self:
                    where += " · " + self.tr("another window")
                rows.append(LiveRow(live, live.title, live.label(now), where, live is self.live, live.number))
                sid = live.session_id
                for q in win.questions.entries():
                    if q.info is None or not sid or q.key[0] != sid:
                        continue
                    inbox.append((q.asked_at, InboxRow(
                        q.key, live, q.info.tool_name, target_of(q.info), live.title, where,
                        since_text(now - q.asked_at), q.showing and win is self)))
        rows.sort(key=lambda r: r.number)
        self.sessions_pane.show_live(rows)
        self.sessions_pane.show_inbox([row for _t, row in sorted(inbox, key=lambda pair: pair[0])])
        ticking = len(rows) > 1 or bool(inbox)
        if ticking and not self._clock.isActive():
            self._clock.start()
        elif not ticking:
            self._clock.stop()

    def _where(self, live: LiveSession) -> str:
        """Where a session runs, short: "worktree <name>" or the folder's name (the whole path in the tooltip)."""
        if live.worktree is not None:
            return self.tr("worktree {0}").format(live.worktree.slug)
        folder = live.folder or ""
        return os.path.basename(folder.rstrip(os.sep)) or home(folder)

    def _window_of(self, live: LiveSession) -> "MainWindow | None":
        return next((w for w in self.app_windows() if live in w.lives), None)

    def _on_live_activated(self, live: Any) -> None:
        win = self._window_of(live)
        if win is None:
            return
        if win is not self:
            win.showNormal()
            win.raise_()
            win.activateWindow()
        win.show_live(live)

    def answer_from_inbox(self, key: Any, live: Any) -> bool:
        """An inbox row: its session comes into view (in the window that holds it, raised) and its dialog up — one
        dialog at a time: one showing for another question goes back to the inbox unanswered."""
        win = self._window_of(live)
        if win is None:
            return False
        self._on_live_activated(live)
        return win.questions.front(tuple(key))

    def next_question(self) -> bool:
        """Session ▸ Next Waiting Question (Ctrl+I): the inbox's oldest question, its session in view, its dialog up
        (the keyboard's way to the inbox)."""
        if QApplication.activeModalWidget() is not None:
            return False  # a dialog is up: it is answered first
        rows = self.sessions_pane.inbox_rows
        if not rows:
            self._render_sidebar()
            rows = self.sessions_pane.inbox_rows
        return bool(rows) and self.answer_from_inbox(rows[0].key, rows[0].ref)

    def _on_live_action(self, action: str, live: Any) -> None:
        win = self._window_of(live)
        if win is None:
            return
        if action == "rename":
            def renamed(name: str) -> None:
                live.rename(name)
                if live.session_id:
                    asyncio.ensure_future(win.session_action("rename", live.session_id, name))

            self._ask_name(live.title, renamed)
        elif action == "close":
            asyncio.ensure_future(win.close_live(live))
        elif action == "review" and live.worktree is not None:
            asyncio.ensure_future(win.worktree_actions.review(live.folder or ""))
        elif action == "archive_worktree" and live.worktree is not None:
            self.archive_task = asyncio.ensure_future(win.worktree_actions.archive_worktree(live))

    def _ask_name(self, current: str, done: Callable[[str], object]) -> None:
        from PySide6.QtWidgets import QInputDialog

        dlg = QInputDialog(self)
        dlg.setObjectName("renameDialog")
        dlg.setWindowTitle(self.tr("Rename Session"))
        dlg.setLabelText(self.tr("Name:"))
        dlg.setTextValue(current)
        dlg.textValueSelected.connect(done)
        self.rename_dialog = dlg
        dlg.open()

    async def session_action(self, action: str, sid: str, name: str | None = None) -> bool:
        """The Earlier list's Rename… (``name`` given: no question), Archive, Unarchive and Delete… (a question
        first; a session open here is closed first; its transcript moves to the data directory's trash)."""
        client = self.controller.client
        if action == "rename" and name is None:
            current = self.folders.session_names
            title = (current.names.get(sid) if current is not None else None) or ""
            self._ask_name(title, lambda text: asyncio.ensure_future(self.session_action("rename", sid, text)))
            return False
        try:
            if action == "rename":
                await client.rename_session(sid, name or "")
                live = self.folders.live_of(sid)
                if live is not None:
                    live.rename(name or "")
            elif action in ("archive", "unarchive"):
                await client.archive_session(sid, action == "archive")
            elif action == "delete":
                if not await self._confirm_delete(sid):
                    return False
                live = self.folders.live_of(sid)
                if live is not None and not await self.close_live(live):
                    return False
                where = await client.delete_session(self.folder or "", sid)
                self.status.showMessage(self.tr("Session deleted (its transcript is in {0}).").format(home(where)),
                                        8000)
        except Exception as exc:
            log.exception("session action %s failed", action)
            self.status.showMessage(self.tr("Could not change the session: {0}").format(exc), 8000)
            return False
        self.folders.refresh_sessions(self._session_id())
        return True

    async def _confirm_delete(self, sid: str) -> bool:
        from desktop_agent.ui.dialogs.confirm import GuardedConfirm

        dialog = GuardedConfirm(
            name="deleteSession", title=self.tr("Delete this session?"),
            message=self.tr("Its transcript moves to the trash folder of Desktop Agent's data directory; the files "
                            "it changed stay as they are."),
            no_text=self.tr("Cancel"), yes_text=self.tr("Delete"), parent=self)
        self.delete_dialog = dialog
        try:
            return bool(await dialog.ask())
        finally:
            self.delete_dialog = None

    async def close_live(self, live: LiveSession) -> bool:
        """Close one session (its view goes; the others run on): a running turn asks "Stop the running turn?"
        first; a background-host session is left running there. False when the person kept it."""
        if live not in self.lives:
            return False
        if live.controller.busy:
            self.show_live(live)
            if not await self.folders.stop_running_turn(live.folder or "", None, closing=True):
                return False
        await self.folders.end_live(live)
        if live not in self.lives:
            return True
        if len(self.lives) == 1:  # the window always shows a session: an empty one on the same folder
            self._new_live().folder = live.folder
        if live is self.live:
            self.show_live(next(other for other in reversed(self.lives) if other is not live))
        self._forget(live)
        return True

    async def _drop(self, live: LiveSession) -> None:
        """Close a session that never started (out of view; its empty transcript goes)."""
        if live is self.live or not live.unstarted:
            return
        await self.folders.end_live(live)
        if live in self.lives and live is not self.live:
            self._forget(live)

    def _forget(self, live: LiveSession) -> None:
        """A closed session out of the window: its page and panel go (it is not the one in view)."""
        self.lives.remove(live)
        self.pages.removeWidget(live.page)
        self.panels.removeWidget(live.diff_panel)
        live.page.deleteLater()
        live.diff_panel.deleteLater()
        live.deleteLater()
        self._sessions_changed()

    def new_window(self) -> "MainWindow":
        """File ▸ New Window: another window on the same host (its sessions and inbox are this app's too), on this
        window's folder."""
        win = MainWindow(client_factory=self.client_factory, settings=self.qsettings,
                         session_kwargs=self.session_kwargs, executor=self.executor_override,
                         executor_path=self.executor_path_override, demo=self.demo,
                         client=self.lives[0].controller.client if self.lives else None)
        win.show()
        self._new_windows = getattr(self, "_new_windows", []) + [win]
        if self.folder:
            win.folders.open_folder_soon(self.folder)
        return win

    def show_live(self, live: LiveSession) -> None:
        """Bring ``live`` into view: its page and panel, its status, usage, mode and model; its questions may open
        (the others' wait in the inbox). Nothing of the session left is stopped."""
        if live not in self.lives:
            return
        self.find_bar.close_bar()
        left, self.live = self.live, live
        if left is not live and left.unstarted:  # a new session left before its first prompt: it goes
            self.drop_task = asyncio.ensure_future(self._drop(left)) if _loop_running() else None
        self.pages.setCurrentWidget(live.page)
        self.panels.setCurrentWidget(live.diff_panel)
        self.find_bar.conversation = live.conversation
        c = live.controller
        self.banners.set_status_view(c.status, c.status_detail)
        self._on_usage(c.tokens, c.cost)
        self.stop_action.setEnabled(c.busy)
        session = c.session
        if session is not None:
            mode = session.permission_mode or self.permission_mode
            self.permission_mode = mode
            self.toolbar.select_mode(mode)
            self.toolbar.show_model(session.model or "", enabled=True)
        self.questions.rescope()
        self._sessions_changed()
        self.folders.refresh_sessions(self._session_id())
        self.banners.update_title()

    def _wire(self) -> None:
        self._wire_live(self.live)
        self.prompt.submitted.connect(self.send)
        self.toolbar.mode_combo.currentIndexChanged.connect(self.toolbar.on_mode_changed)
        self.sessions_pane.session_activated.connect(self.folders.on_session_activated)
        self.sessions_pane.live_activated.connect(self._on_live_activated)
        self.sessions_pane.live_action.connect(self._on_live_action)
        self.sessions_pane.session_action.connect(lambda action, sid: asyncio.ensure_future(
            self.session_action(action, sid)))
        self.sessions_pane.show_archived.toggled.connect(lambda _on: self.folders.refresh_sessions(self._session_id()))
        self.sessions_pane.question_activated.connect(self.answer_from_inbox)
        self.questions.changed.connect(self._questions_changed)
        self._sidebar_timer = QTimer(self)  # the Running list and the inbox, redrawn once per burst of changes
        self._sidebar_timer.setSingleShot(True)
        self._sidebar_timer.setInterval(0)
        self._sidebar_timer.timeout.connect(self._render_sidebar)
        self._clock = QTimer(self)  # "Working · 12 s": the times move on
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._render_sidebar)  # runs only while the sidebar shows a time
        self.find_bar.closed.connect(self.prompt.setFocus)
        self._sessions_timer = QTimer(self)
        self._sessions_timer.setSingleShot(True)
        self._sessions_timer.setInterval(300)
        self._sessions_timer.timeout.connect(lambda: self.folders.refresh_sessions(self._session_id()))
        self.sandbox_task: asyncio.Task | None = None  # the probe below, once the loop runs
        after_first_paint((self, self.conversation.viewport()), self._probe_sandbox)  # nothing the first frame shows

    def _probe_sandbox(self) -> None:
        """Bubblewrap cannot start: say so, once. The probe starts a process: on a worker thread, from the loop."""
        if _loop_running():
            self.sandbox_task = asyncio.ensure_future(self._sandbox_banner())

    async def _sandbox_banner(self) -> None:
        try:
            text = await self.controller.client.sandbox_warning()
        except Exception:
            log.exception("could not probe the shell sandbox")
            return
        if text:
            self.conversation.add_banner("error", text, key="sandbox")

    # ----- state -------------------------------------------------------------------------------
    def _restore_state(self) -> None:
        geo = self.qsettings.value("window/geometry")
        if isinstance(geo, (QByteArray, bytes)) and geo:
            self.restoreGeometry(geo)
        else:
            self.resize(1280, 800)
        split = self.qsettings.value("window/splitter")
        if isinstance(split, (QByteArray, bytes)) and split:
            self.splitter.restoreState(split)
        self.recent_menu.aboutToShow.connect(self._refresh_recent)  # read lazily: keeps start-up light

    def save_state(self) -> None:
        self.qsettings.setValue("window/geometry", self.saveGeometry())
        self.qsettings.setValue("window/splitter", self.splitter.saveState())
        if self.folder and not self.demo:
            self.qsettings.setValue("session/lastFolder", self.folder)
        self.qsettings.sync()

    def last_folder(self) -> str | None:
        value = self.qsettings.value("session/lastFolder")
        return str(value) if value and os.path.isdir(str(value)) else None

    def _recent(self) -> list[str]:
        try:
            from desktop_agent.config import AppSettings

            return [f for f in AppSettings.load().recent_folders if os.path.isdir(f)]
        except Exception:
            return []

    def _add_recent(self, folder: str) -> None:
        if self.demo:
            return
        try:
            from desktop_agent.config import AppSettings

            s = AppSettings.load()
            s.add_recent_folder(folder)
            s.save()
        except Exception:
            log.exception("could not save recent folders")
        self._refresh_recent()

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        folders = self._recent()
        for f in folders:
            act = self.recent_menu.addAction(home(f))
            act.triggered.connect(lambda _=False, f=f: self.folders.open_folder_soon(f))
        if not folders:
            self.recent_menu.addAction(self.tr("(no recent folders)")).setEnabled(False)

    def _start_desktop_notifications(self) -> None:
        """Once, for the host in this process: notifications with Review / Deny / Allow once for questions that wait
        while the window — with its own dialogs — is not active (``client.HostClient.notifications``: a client of
        the host's inbox); sent when it goes inactive, withdrawn when it comes back (``ui.window.away``)."""
        if getattr(self, "_notifications_task", None) is not None or self.demo:
            return
        client = self.controller.client
        start = getattr(client, "notifications", None)
        if start is None or not _loop_running():
            return

        async def run() -> None:
            notifier = await start(review=lambda _q: self._review_from_notification(),
                                   window_active=lambda: is_active(self))  # its own dialog focused counts
            self.controller.desktop_notifier = notifier
            if notifier is not None:
                self._away_watch = watch_away(self, notifier)  # notified when it goes inactive, withdrawn back
                if not is_active(self):
                    await notifier.remind()  # a question asked while the notifier was starting
            from desktop_agent.ui.dialogs.phone import phone_switch_saved

            if await asyncio.to_thread(phone_switch_saved):  # "Answer from my phone" was left on: served again
                await self._phone_switched(None, True)

        self._notifications_task = asyncio.ensure_future(run())

    def _review_from_notification(self) -> None:
        """A notification's Review: the window comes forward; the question's dialog is the queue's (focus-safe)."""
        self.showNormal()
        self.raise_()
        self.activateWindow()

    def closeEvent(self, event) -> None:  # noqa: N802
        self.save_state()
        open_lives = [live for live in self.lives if live.controller.session is not None]
        if open_lives and _loop_running():
            # SessionEnd (prompt_input_exit) first, on the loop that still runs; then close for real
            event.ignore()
            if self._close_task is None:
                leaving = any(in_background(live.controller.session) for live in open_lives)
                self.status.showMessage(self.tr("Leaving the session running in the background host…") if leaving
                                        else self.tr("Closing the session…"))
                self._close_task = asyncio.ensure_future(self.folders.end_then_close())
            return
        for live in self.lives:
            c = live.controller
            if in_background(c.session):
                pass  # no loop left: the connection ends with this process, the session runs on in the host
            elif c.busy:
                c.stop()
            elif c.session is not None and not self.demo:
                discard_if_empty(c.session.state.transcript_path)  # no loop left to ask the host
        MainWindow.windows.discard(self)
        super().closeEvent(event)

    # ----- sending -----------------------------------------------------------------------------
    def send(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        if self.controller.session is None:
            if self.open_task is not None and not self.open_task.done():
                self.status.showMessage(self.tr("Still opening the folder — one moment…"), 3000)
                return
            if self.wanted_folder and "setup" in self.conversation.banners:
                self.conversation.add_banner(  # the set-up problem, said again (replacing itself)
                    self.conversation.banners["setup"].kind, self.conversation.banners["setup"].text_plain,
                    self.conversation.banners["setup"].links, key="setup")
                return
            self.conversation.add_banner("error", self.tr("Open a folder first (File ▸ Open Folder…, Ctrl+O)."),
                                         key="setup")
            return
        if self.controller.busy:  # queued under the conversation, sent when the turn ends
            self.prompt.remember(text)
            self.prompt.clear()
            self.message_queue.add(text)
            return
        self.prompt.remember(text)
        self.prompt.clear()
        if self.controller.submit(text) is not None:
            self._sessions_timer.start()  # the new prompt is on disk now: show it in the sessions list

    def stop(self) -> None:
        if self.find_edit.hasFocus():
            self.close_find()
            return
        self.stop_turn()

    def stop_turn(self) -> None:
        """Interrupt the running turn: the conversation marks what was cut short as stopped, not failed."""
        if self.controller.busy:
            self.conversation.stop_requested()
        self.controller.stop()

    def doing_text(self) -> str:
        """What the agent is doing now, as the end of "Right now it is …" (the stop question)."""
        status, detail = self.controller.status, self.controller.status_detail
        if status == TOOL and detail:
            return self.tr("running {0}").format(detail)
        return {
            TOOL: self.tr("running a tool"), STREAMING: self.tr("writing its reply"),
            WAITING: self.tr("waiting for your approval of {0}").format(detail) if detail
            else self.tr("waiting for your approval"),
            RETRYING: self.tr("waiting to retry a request"), STOPPING: self.tr("stopping"),
        }.get(status, self.tr("thinking"))

    # ----- controller signals: the changes panel (the conversation has rendered the event) -------
    def _on_tool_finished(self, e: Any, live: LiveSession) -> None:
        if e.name == "Bash" and live is self.live:  # a host the proxy refused: a banner offers to allow it
            from desktop_agent.ui.window.network_view import check_refusals

            check_refusals(self)
        change = live.diff_panel.on_tool_finished(e.tool_use_id, e.name, e.is_error, e.data,
                                                  live.controller.turn_index, e.content)
        if change is not None:
            live.diff_panel.select_tool(e.tool_use_id, expand=False)

    def _on_permission_requested(self, request: Any, live: LiveSession) -> None:
        if live.diff_panel.on_permission_requested(request, live.controller.turn_index) is not None:
            live.diff_panel.select_tool(request.tool_use_id, expand=False)
            live.conversation.select_card(request.tool_use_id)

    def _on_permission_resolved(self, event: Any, live: LiveSession) -> None:
        live.diff_panel.on_permission_resolved(event.tool_use_id, event.reply.behavior == "allow",
                                               bool(event.reply.updated_input))
        for update in event.reply.updated_permissions:  # the person picked a mode switch in the dialog: show it
            if live is self.live and update.type == "setMode" and update.mode \
                    and update.mode != "bypassPermissions" and update.destination == "session":
                self.permission_mode = update.mode
                self.toolbar.select_mode(update.mode)

    def _on_usage(self, tokens: int, cost: float) -> None:
        self.usage_label.setText(self.tr("{0} tokens · ${1:.2f}").format(token_text(tokens), cost))

    def _on_busy(self, busy: bool, live: LiveSession) -> None:
        if live is not self.live:
            if not busy:
                self.folders.refresh_sessions(current=self._session_id())
            return
        self.stop_action.setEnabled(busy)
        if not busy:
            model = self.controller.session.model if self.controller.session is not None else ""
            if model and not self._model_name:  # an executor says its model with its first turn
                self.toolbar.show_model(model, enabled=True)
            self.folders.refresh_sessions(current=self._session_id())
            if QApplication.activeModalWidget() is None:
                self.prompt.setFocus()

    # ----- find ----------------------------------------------------------------------------------
    def show_network(self) -> Any:
        """View ▸ Network… (Ctrl+Shift+N): the current session's requests through the egress proxy."""
        from desktop_agent.ui.window.network_view import show_network

        return show_network(self)

    def show_find(self) -> None:
        """Ctrl+F: the find bar (match count, every match marked, Enter/Shift+Enter step, Esc closes)."""
        self.find_bar.open_bar()

    def close_find(self) -> None:
        self.find_bar.close_bar()

    def _record_entry(self, entry: dict[str, Any], live: LiveSession | None = None) -> None:
        session = (live or self.live).controller.session
        if session is None:
            raise RuntimeError("no session to record the revert in")
        from desktop_agent.client.session import ProtocolSession  # protocol models: loaded after the first paint
        from desktop_agent.protocol.control import RecordRequest

        if isinstance(session, ProtocolSession):
            session.request_threadsafe(RecordRequest(entry=entry))
        else:
            raise RuntimeError("this session records no revert")

    def _session_id(self) -> str | None:
        return self.controller.session.session_id if self.controller.session is not None else None

    def show_settings(self, first_run: bool = False) -> Any:
        from desktop_agent.ui.dialogs.settings import SettingsDialog

        dlg = SettingsDialog(self, first_run=first_run)
        self._saved_default_mode = dlg.model_mode()
        self._saved_model = dlg.settings.model or ""
        dlg.tour_requested.connect(self.start_tour)
        dlg.saved.connect(self._on_settings_saved)
        phone = getattr(self, "phone_server", None)
        dlg.phone.switch.setChecked(phone is not None)
        dlg.phone.set_access(phone)
        dlg.phone.enabled_changed.connect(lambda on: asyncio.ensure_future(self._phone_switched(dlg.phone, on)))
        self.settings_dialog = dlg
        dlg.open()
        return dlg

    async def _phone_switched(self, section: Any, on: bool) -> None:
        """Settings → "Answer from my phone": the host's phone page (``client.HostClient.phone``, HTTPS on the LAN,
        pairing confirmed here in a focus-safe dialog) started or stopped, and the switch saved: off by default; left
        on, it starts again with the first session of the next launch (``section``: None then)."""
        from desktop_agent.ui.dialogs.phone import save_phone_switch

        server = getattr(self, "phone_server", None)
        if not on:
            self.phone_server = None
            if section is not None:
                section.set_access(None)
            if server is not None:
                await server.stop()
            await asyncio.to_thread(save_phone_switch, False)
            return
        start = getattr(self.controller.client, "phone", None)
        if server is not None or start is None:
            if start is None:
                self.status.showMessage(self.tr("The phone page needs the sessions to run in this window."), 6000)
            return
        from desktop_agent.ui.dialogs.phone import confirm_pairing
        from desktop_agent.util import dirs

        try:
            self.phone_server = await start(str(dirs.state_dir() / "remote"), confirm_pairing(self))
        except Exception as exc:
            if section is not None:
                section.switch.setChecked(False)
            self.status.showMessage(self.tr("The phone page could not start: {0}").format(exc), 8000)
            return
        if section is not None:
            section.set_access(self.phone_server)
        await asyncio.to_thread(save_phone_switch, True)

    def _on_settings_saved(self) -> None:
        self.status.showMessage(self.tr("Settings saved."), 3000)
        dlg = self.settings_dialog
        default = dlg.model_mode() if dlg is not None else None
        if default and default != self._saved_default_mode:  # a new default applies here too (confirmed there)
            self._saved_default_mode = default
            self.toolbar.apply_mode(default)
        model = (dlg.settings.model or "") if dlg is not None else ""
        started = self.controller.busy or not self.live.unstarted
        if model and model != self._saved_model and started and self.controller.session is not None:
            self._saved_model = model  # a session that has run keeps running: its next request takes the model
            self.controller.set_model(model)  # (an executor: set_model)
            self.toolbar.show_model(model, enabled=True)
        folder = self.folder or self.wanted_folder
        if folder and not started and not self.demo:  # a session not started yet (or none) opens with the settings
            self.folders.open_folder_soon(folder)  # e.g. first run: the folder from the command line, now with a key
        elif not folder:
            self.conversation.remove_banner("setup")
            self.banners.show_empty()

    def start_tour(self) -> None:
        self._tour_window = start_tour_window()

    def show_shortcuts(self) -> None:
        box = QMessageBox(self)
        box.setWindowTitle(self.tr("Keyboard Shortcuts"))
        rows = [("Enter", self.tr("Send")), ("Shift+Enter", self.tr("New line")),
                ("↑", self.tr("Recall last prompt")),
                ("Esc", self.tr("Stop the agent / Deny in the dialog")), ("Ctrl+O", self.tr("Open folder")),
                ("Ctrl+N", self.tr("New session")), ("Ctrl+,", self.tr("Settings")),
                ("Ctrl+Shift+M", self.tr("Cycle permission mode")), ("Ctrl+F", self.tr("Find in conversation")),
                ("Ctrl+I", self.tr("Next waiting question (inbox)")),
                ("Ctrl+Shift+E", self.tr("MCP servers")),
                ("Ctrl+L", self.tr("Focus the prompt"))]
        box.setText("<table>" + "".join(f"<tr><td><b>{k}</b>&nbsp;&nbsp;</td><td>{v}</td></tr>" for k, v in rows)
                    + "</table>")
        box.open()

    def show_about(self) -> None:
        from desktop_agent import __version__

        box = QMessageBox(self)
        box.setWindowTitle(self.tr("About Desktop Agent"))
        box.setText(self.tr("<b>Desktop Agent</b> {0}<br/>A desktop coding agent: review every diff, allow or deny "
                            "every write.").format(__version__))
        box.open()

    def resizeEvent(self, event) -> None:  # noqa: N802
        """Narrow windows (900 px) give the sessions pane's width to the conversation."""
        super().resizeEvent(event)
        self._fit_narrow()

    def showEvent(self, event) -> None:  # noqa: N802 - a window resized before it was shown
        super().showEvent(event)
        self._fit_narrow()

    def _fit_narrow(self) -> None:
        self.toolbar.fit(self.width() < 1000)
        if self.width() < 1000 and self.side.isVisible():
            sizes = self.splitter.sizes()
            if len(sizes) == 3 and sizes[0] > 140:
                extra = sizes[0] - 140
                self.splitter.setSizes([140, sizes[1] + extra, sizes[2]])

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and self._icons_dark != is_dark(self):
            self._apply_icons()


def start_tour_window(show: bool = True) -> MainWindow:
    """Open a tour window (its own MainWindow) on a fresh copy of the sample project (``ui.window.demo``); the
    scripted model is the in-process client's ``script="tour"`` (``client.tour``)."""
    folder = prepare_demo_project()
    win = MainWindow(demo=True, session_kwargs={"trusted": True, "script": "tour"})
    win.toolbar.tour_action.setVisible(True)
    win.toolbar.tour_label.setVisible(True)
    prompts = list(TOUR_PROMPTS)

    def prefill() -> None:
        if prompts and not win.prompt.toPlainText():
            win.prompt.setPlainText(prompts.pop(0))
            win.prompt.moveCursor(win.prompt.textCursor().MoveOperation.End)

    def opened(_f: str) -> None:
        win.toolbar.show_model(QCoreApplication.translate("MainWindow", "scripted (offline tour)"), enabled=False)
        prefill()

    win.folder_opened.connect(opened)
    win.controller.turn_finished.connect(lambda _e: prefill())
    if show:
        win.show()
    win.folders.open_folder_soon(folder)
    return win
