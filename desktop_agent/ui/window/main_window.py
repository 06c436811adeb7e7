"""The main window: sessions | conversation + prompt | changes, toolbar, menus and status bar.

All agent work goes through ``AgentController``; this module only wires its signals to the views
and keeps the window state (geometry, splitter sizes, last folder, recent folders) in QSettings.
Async actions (opening a folder after the trust question, resuming a session) run as tasks on the
qasync loop; dialogs are shown with ``open()``, never ``exec()``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Callable

from PySide6.QtCore import QT_TRANSLATE_NOOP, QByteArray, QCoreApplication, QSettings, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QFontMetrics, QKeySequence, QPalette
from PySide6.QtWidgets import (
    QApplication, QComboBox, QFileDialog, QFrame, QHBoxLayout, QLabel, QLineEdit, QListWidget, QListWidgetItem,
    QMainWindow, QMessageBox, QPlainTextEdit, QSizePolicy, QSplitter, QStatusBar, QSystemTrayIcon, QToolBar,
    QToolButton, QVBoxLayout, QWidget,
)

from desktop_agent.model.client import SUGGESTED_MODELS
from desktop_agent.ui import icons
from desktop_agent.ui.window.controller import ERROR, IDLE, RETRYING, STOPPING, STREAMING, THINKING, TOOL, WAITING, AgentController
from desktop_agent.ui.conversation.view import ConversationView, is_dark
from desktop_agent.ui.changes.panel import DiffPanel
from desktop_agent.ui.highlight import colors

log = logging.getLogger(__name__)

# Labels are marked for lupdate with QT_TRANSLATE_NOOP and translated where shown (mode_label()).
MODES: list[tuple[str, str]] = [
    ("default", QT_TRANSLATE_NOOP("Modes", "Default")),
    ("acceptEdits", QT_TRANSLATE_NOOP("Modes", "Accept edits")),
    ("plan", QT_TRANSLATE_NOOP("Modes", "Plan")),
    ("bypassPermissions", QT_TRANSLATE_NOOP("Modes", "Bypass")),
    ("dontAsk", QT_TRANSLATE_NOOP("Modes", "Don't ask")),
]


def mode_label(label: str) -> str:
    return QCoreApplication.translate("Modes", label)


ORG, APP = "desktop-agent", "Desktop Agent"
BYPASS = "bypassPermissions"


def bypass_badge_text() -> str:
    return QCoreApplication.translate("Modes", "Bypass — nothing asks")


def confirm_bypass(parent: QWidget | None, done: Callable[[bool], None]) -> QMessageBox:
    """The one question before bypassPermissions is entered (toolbar, menu, Settings, command line).
    Opened with ``open()``; ``done(True)`` only for the explicit "Turn on" button — Esc, Cancel and
    closing the box keep the old mode. Cancel is the default button."""
    tr = lambda text: QCoreApplication.translate("Modes", text)  # noqa: E731
    box = QMessageBox(parent)
    box.setObjectName("bypassConfirm")
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle(tr("Turn on Bypass permissions?"))
    box.setText(tr("Bypass permissions: every tool runs without asking — edits, commands, reads outside the "
                   "folder. Deny rules still apply. Turn it on?"))
    yes = box.addButton(tr("Turn on &Bypass"), QMessageBox.ButtonRole.AcceptRole)
    yes.setObjectName("bypassYes")
    no = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(no)
    box.setEscapeButton(no)
    box.yes_button, box.no_button = yes, no  # type: ignore[attr-defined]
    box.finished.connect(lambda _r: done(box.clickedButton() is yes))
    box.open()
    return box


def default_mode_setting() -> str:
    """Settings' default permission mode (read without pydantic, as at start-up); ``manual`` is default."""
    from desktop_agent.ui.main import PERMISSION_MODES, _read_prefs

    mode = str(_read_prefs().get("default_permission_mode") or "default")
    mode = "default" if mode == "manual" else mode
    return mode if mode in PERMISSION_MODES else "default"


def _home(path: str) -> str:
    home = os.path.expanduser("~")
    if path and home not in ("", "/") and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home):]
    return path


def _read_history(folder: str, session_id: str) -> list[dict[str, Any]] | None:
    """A session's transcript for display, read without building the session (no model client)."""
    try:
        from desktop_agent.session.resume import history_for_display
        from desktop_agent.session.store import find_session, read_transcript

        path = find_session(session_id, folder)
        return history_for_display(read_transcript(path, full=True)) if path is not None else None
    except Exception:
        log.exception("could not read the transcript of %s", session_id)
        return None


def transcript_usage(entries: list[dict[str, Any]]) -> tuple[int, float]:
    """Tokens and cost of a transcript's model replies (each reply counted once, by message id)."""
    from desktop_agent.model.pricing import CostTracker

    tracker = CostTracker()
    seen: set[str] = set()
    for e in entries:
        if e.get("type") != "assistant":
            continue
        msg = e.get("message") or {}
        usage = msg.get("usage")
        mid = str(msg.get("id") or e.get("uuid") or id(e))
        if not isinstance(usage, dict) or mid in seen:
            continue
        seen.add(mid)
        tracker.add(str(msg.get("model") or ""), usage)
    return tracker.total_tokens, tracker.cost_usd


def _discard_if_empty(session: Any) -> bool:
    """Remove the file of a session that never got a message (opened, then left): a session exists
    from its first prompt, not from each launch."""
    path = getattr(session, "transcript_path", "") or ""
    if not path or not os.path.exists(path):
        return False
    try:
        from desktop_agent.session.store import count_transcript_messages, read_transcript

        if count_transcript_messages(read_transcript(path, full=True)) > 0:
            return False
        store = getattr(session, "store", None)
        if store is not None and hasattr(store, "close"):
            store.close()
        os.unlink(path)
        return True
    except Exception:
        log.exception("could not remove the empty session %s", path)
        return False


def _loop_running() -> bool:
    try:
        return asyncio.get_event_loop().is_running()
    except RuntimeError:
        return False


def prewarm_engine() -> None:
    """Import the engine and the API client on a worker thread, so opening a folder does not wait."""
    import threading

    def work() -> None:
        try:
            import desktop_agent.app.session  # noqa: F401
            import desktop_agent.model.anthropic_client  # noqa: F401
            import desktop_agent.tools.registry  # noqa: F401
        except Exception:
            pass

    threading.Thread(target=work, name="prewarm-engine", daemon=True).start()


class PromptEdit(QPlainTextEdit):
    """Enter sends, Shift+Enter inserts a newline, Up on the first line recalls the last prompt."""

    submitted = Signal(str)

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
        full = getattr(self, "_placeholder", "")
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


class MainWindow(QMainWindow):
    """The product window. ``client_factory`` (tour, tests) builds the model client for a session."""

    folder_opened = Signal(str)
    history_shown = Signal(str)  # a resumed transcript is on screen (the session may still be loading)

    def __init__(self, *, controller: AgentController | None = None, client_factory: Callable[[], Any] | None = None,
                 demo: bool = False, settings: QSettings | None = None, session_kwargs: dict[str, Any] | None = None,
                 executor: str | None = None, executor_path: str | None = None):
        super().__init__()
        self.setObjectName("mainWindow")
        self.demo = demo
        self.client_factory = client_factory
        self.session_kwargs = dict(session_kwargs or {})
        # where sessions run (``--executor``; else Settings' "Run sessions"): inprocess, process, claude
        self.executor_override, self.executor_path_override = executor, executor_path
        self.qsettings = settings or QSettings(ORG, "desktop-agent")
        self.controller = controller or AgentController(self, window=self)
        self.controller.window = self
        self.folder: str | None = None
        self.open_task: asyncio.Task | None = None
        self.restart_task: asyncio.Task | None = None  # "Restart session" (an executor process)
        self.trust_box: QMessageBox | None = None
        self.settings_dialog: Any = None
        self.tray: QSystemTrayIcon | None = None
        self._model_name = ""
        self.permission_mode = "default"  # the mode in force (bypass only after its confirmation)
        self.bypass_box: QMessageBox | None = None
        self._saved_default_mode: str | None = None
        self.wanted_folder: str | None = None  # the folder asked for whose session could not open yet
        self._history_stats: tuple[int, float, int] | None = None
        self.servers_view: Any = None  # the MCP Servers view, built when first shown
        self._restarting: set[str] = set()  # MCP servers whose restart is under way
        self._had_session = False  # a later new session starts in Settings' default mode
        self._close_task: asyncio.Task | None = None  # SessionEnd before the window closes
        self._build()
        self._wire()
        self._restore_state()
        if not demo and "permission_mode" not in self.session_kwargs:
            first = default_mode_setting()  # bypass only through its question (ui/main.py asks at launch)
            if first != BYPASS:
                self.permission_mode = first
                self._select_mode(first)
        self._update_title()
        self._show_empty()
        self._set_status_view(IDLE, "")

    # ----- construction ------------------------------------------------------------------------
    def _build(self) -> None:
        self.setWindowTitle(APP)
        try:
            from PySide6.QtGui import QIcon

            from desktop_agent.resources import app_icon_path

            self.setWindowIcon(QIcon(str(app_icon_path())))
        except Exception:
            pass

        # Toolbar: mode, model, (tour), stop.
        self.toolbar = QToolBar(self.tr("Main toolbar"))
        self.toolbar.setObjectName("mainToolbar")
        self.toolbar.setMovable(False)
        self.toolbar.setIconSize(QSize(16, 16))
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.toolbar)
        self.mode_combo = QComboBox()
        self.mode_combo.setObjectName("modeCombo")
        self.mode_combo.setAccessibleName(self.tr("Permission mode"))
        self.mode_combo.setToolTip(self.tr("Permission mode (Ctrl+Shift+M cycles)"))
        for mode, label in MODES:
            self.mode_combo.addItem(mode_label(label), mode)
        self._add_captioned(self.tr("Mode"), self.mode_combo, left=8)
        self.bypass_badge = QLabel(bypass_badge_text())
        self.bypass_badge.setObjectName("bypassBadge")
        self.bypass_badge.setAccessibleName(bypass_badge_text())
        self.bypass_badge.setToolTip(self.tr("Bypass permissions is on: tools run without asking. "
                                             "Pick another mode to turn it off."))
        self.bypass_action = self.toolbar.addWidget(self.bypass_badge)
        self.bypass_action.setVisible(False)
        self.model_combo = QComboBox()
        self.model_combo.setObjectName("modelCombo")
        self.model_combo.setEditable(True)
        self.model_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.model_combo.setMinimumContentsLength(18)
        self.model_combo.setAccessibleName(self.tr("Model"))
        self.model_combo.setToolTip(self.tr("The model of this session's next requests (the default is in Settings)"))
        self.model_combo.addItems(SUGGESTED_MODELS)
        self.model_combo.setEnabled(False)  # until a session is open
        self.model_combo.activated.connect(lambda _i: self._on_model_chosen())
        self.model_combo.lineEdit().editingFinished.connect(self._on_model_chosen)
        self._add_captioned(self.tr("M&odel"), self.model_combo, left=16)
        self.tour_label = QLabel(self.tr("Tour · scripted model, sample project"))
        self.tour_label.setObjectName("tourLabel")
        self.tour_label.setVisible(False)
        self.tour_action = self.toolbar.addWidget(self.tour_label)
        self.tour_action.setVisible(self.demo)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.toolbar.addWidget(spacer)
        self.stop_button = QToolButton()
        self.stop_button.setObjectName("stopButton")
        self.stop_button.setText(self.tr("Stop  Esc"))
        self.stop_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.stop_button.setAccessibleName(self.tr("Stop the agent"))
        self.stop_button.setEnabled(False)
        self.toolbar.addWidget(self.stop_button)

        # Panes.
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        self.splitter.setChildrenCollapsible(True)
        self.sessions = QListWidget()
        self.sessions.setObjectName("sessionList")
        self.sessions.setAccessibleName(self.tr("Sessions in this folder"))
        self.sessions.setFrameShape(QFrame.Shape.NoFrame)
        self.sessions.setTextElideMode(Qt.TextElideMode.ElideRight)
        side = QWidget()
        side.setObjectName("sessionPane")
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.setSpacing(0)
        self.sessions_title = QLabel(self.tr("Sessions"))
        self.sessions_title.setObjectName("paneTitle")
        self.sessions_title.setContentsMargins(16, 8, 8, 8)
        side_layout.addWidget(self.sessions_title)
        side_layout.addWidget(self.sessions, 1)
        self.side = side

        center = QWidget()
        center.setObjectName("conversationPane")
        center_layout = QVBoxLayout(center)
        center_layout.setContentsMargins(0, 0, 0, 0)
        center_layout.setSpacing(0)
        self.conversation = ConversationView()
        center_layout.addWidget(self.conversation, 1)
        self.find_bar = QWidget()
        self.find_bar.setObjectName("findBar")
        find_wrap = QHBoxLayout(self.find_bar)
        find_wrap.setContentsMargins(16, 4, 16, 4)
        find_wrap.setSpacing(8)
        self.find_edit = FindEdit()
        self.find_edit.setObjectName("findEdit")
        self.find_edit.setPlaceholderText(
            self.tr("Find in conversation (Enter: next, Shift+Enter: previous, Esc: close)"))
        self.find_edit.setAccessibleName(self.tr("Find in conversation"))
        self.find_edit.setClearButtonEnabled(True)
        find_wrap.addWidget(self.find_edit, 1)
        self.find_count = QLabel()
        self.find_count.setObjectName("findCount")
        self.find_count.setAccessibleName(self.tr("Matches"))
        find_wrap.addWidget(self.find_count)
        for attr, text, tip in (("find_prev_button", "↑", self.tr("Previous match (Shift+Enter)")),
                                ("find_next_button", "↓", self.tr("Next match (Enter)")),
                                ("find_close_button", "✕", self.tr("Close (Esc)"))):
            button = QToolButton()
            button.setText(text)
            button.setToolTip(tip)
            button.setAccessibleName(tip)
            button.setAutoRaise(True)
            find_wrap.addWidget(button)
            setattr(self, attr, button)
        self.find_bar.setVisible(False)
        center_layout.addWidget(self.find_bar)
        prompt_row = QVBoxLayout()
        prompt_row.setContentsMargins(16, 8, 16, 8)
        prompt_row.setSpacing(4)
        self.prompt = PromptEdit()
        self.prompt.setPlaceholderText(self.tr("Ask for a change…   (Enter to send, Shift+Enter for a new line)"))
        prompt_row.addWidget(self.prompt)
        center_layout.addLayout(prompt_row)

        self.diff_panel = DiffPanel()
        self.diff_panel.view.setObjectName("changesView")
        self.splitter.addWidget(side)
        self.splitter.addWidget(center)
        self.splitter.addWidget(self.diff_panel)
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
        self.open_action = QAction(self.tr("&Open Folder…"), self, shortcut=QKeySequence.StandardKey.Open,
                                   triggered=self.choose_folder)
        file_menu.addAction(self.open_action)
        self.recent_menu = file_menu.addMenu(self.tr("Open &Recent"))
        self.new_action = QAction(self.tr("&New Session"), self, shortcut=QKeySequence.StandardKey.New,
                                  triggered=self.new_session)
        file_menu.addAction(self.new_action)
        file_menu.addSeparator()
        file_menu.addAction(QAction(self.tr("&Quit"), self, shortcut=QKeySequence.StandardKey.Quit,
                                    triggered=self.close))

        edit_menu = mb.addMenu(self.tr("&Edit"))
        self.find_action = QAction(self.tr("&Find in Conversation…"), self, shortcut=QKeySequence.StandardKey.Find,
                                   triggered=self.show_find)
        edit_menu.addAction(self.find_action)
        self.focus_prompt_action = QAction(self.tr("Focus &Prompt"), self, shortcut=QKeySequence("Ctrl+L"),
                                           triggered=lambda: self.prompt.setFocus())
        edit_menu.addAction(self.focus_prompt_action)
        edit_menu.addSeparator()
        self.settings_action = QAction(self.tr("&Settings…"), self, shortcut=QKeySequence("Ctrl+,"),
                                       triggered=lambda: self.show_settings(False))
        self.settings_action.setMenuRole(QAction.MenuRole.PreferencesRole)
        edit_menu.addAction(self.settings_action)

        view_menu = mb.addMenu(self.tr("&View"))
        self.toggle_sessions = QAction(self.tr("&Sessions Pane"), self, checkable=True, checked=True,
                                       shortcut=QKeySequence("Ctrl+Shift+S"))
        self.toggle_sessions.toggled.connect(self.side.setVisible)
        view_menu.addAction(self.toggle_sessions)
        self.toggle_changes = QAction(self.tr("&Changes Pane"), self, checkable=True, checked=True,
                                      shortcut=QKeySequence("Ctrl+Shift+D"))
        self.toggle_changes.toggled.connect(self.diff_panel.setVisible)
        view_menu.addAction(self.toggle_changes)
        view_menu.addSeparator()
        self.servers_action = QAction(self.tr("MCP &Servers…"), self, shortcut=QKeySequence("Ctrl+Shift+E"),
                                      triggered=self.show_servers)
        view_menu.addAction(self.servers_action)

        session_menu = mb.addMenu(self.tr("&Session"))
        self.send_action = QAction(self.tr("Se&nd"), self, triggered=lambda: self.send(self.prompt.toPlainText()))
        self.send_action.setShortcut(QKeySequence("Ctrl+Return"))
        session_menu.addAction(self.send_action)
        self.stop_action = QAction(self.tr("&Stop"), self, shortcut=QKeySequence(Qt.Key.Key_Escape),
                                   triggered=self.stop)
        self.stop_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.stop_action.setEnabled(False)
        session_menu.addAction(self.stop_action)
        self.cycle_mode_action = QAction(self.tr("&Cycle Permission Mode"), self,
                                         shortcut=QKeySequence("Ctrl+Shift+M"), triggered=self.cycle_mode)
        session_menu.addAction(self.cycle_mode_action)
        mode_menu = session_menu.addMenu(self.tr("Permission &Mode"))
        self.mode_group = QActionGroup(self)
        for i, (mode, label) in enumerate(MODES):
            act = QAction(mode_label(label), self, checkable=True)
            act.setData(mode)
            act.triggered.connect(lambda _=False, mode=mode: self.request_mode(mode))
            self.mode_group.addAction(act)
            mode_menu.addAction(act)

        help_menu = mb.addMenu(self.tr("&Help"))
        help_menu.addAction(QAction(self.tr("Take the Offline &Tour"), self, triggered=self.start_tour))
        help_menu.addAction(QAction(self.tr("&Keyboard Shortcuts"), self, triggered=self.show_shortcuts))
        help_menu.addAction(QAction(self.tr("&About Desktop Agent"), self, triggered=self.show_about))
        self.stop_button.setDefaultAction(self.stop_action)
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
        self.tour_label.setStyleSheet(
            f"QLabel#tourLabel {{ color: {c.accent}; border: 1px solid {c.accent}; border-radius: 4px; "
            f"padding: 2px 8px; margin-left: 8px; font-weight: 600; }}")
        self.sessions_title.setStyleSheet(f"color: {c.muted}; font-weight: 600;")
        self.stop_button.setStyleSheet(f"QToolButton#stopButton:disabled {{ color: {c.muted}; }}")
        self.bypass_badge.setStyleSheet(
            f"QLabel#bypassBadge {{ color: #ffffff; background: {c.error}; border-radius: 4px; "
            f"padding: 2px 8px; margin-left: 8px; font-weight: 600; }}")
        self.diff_panel.title.setStyleSheet("font-weight: 600;")

    def _wire(self) -> None:
        c = self.controller
        c.user_prompt.connect(self.conversation.add_user)
        c.text_delta.connect(self.conversation.append_text)
        c.thinking_delta.connect(self.conversation.append_thinking)
        c.request_started.connect(lambda _t: self.conversation.close_text())
        c.tool_started.connect(lambda e: self.conversation.start_tool(e.tool_use_id, e.name, e.input))
        c.tool_progress.connect(self._on_progress)
        c.tool_finished.connect(self._on_tool_finished)
        c.permission_requested.connect(self._on_permission_requested)
        c.permission_resolved.connect(self._on_permission_resolved)
        c.error.connect(self._on_error)
        c.notice.connect(lambda kind, text: self.conversation.add_banner("notice", text))
        c.retry_waiting.connect(lambda e: self.conversation.show_retry(e.attempt, e.max_attempts, e.delay_s, e.error))
        # the request went through: the retry card says so
        c.text_delta.connect(lambda _t: self.conversation.retry_card is not None and self.conversation.retry_over())
        c.tool_started.connect(lambda _e: self.conversation.retry_card is not None and self.conversation.retry_over())
        c.turn_finished.connect(lambda e: self.conversation.end_turn(e.reason, e.error))
        c.status_changed.connect(self._set_status_view)
        c.usage_changed.connect(self._on_usage)
        c.busy_changed.connect(self._on_busy)
        c.notifier = self._notify
        c.turn_finished.connect(lambda _e: self.refresh_servers())  # MCP states after each turn
        c.tool_finished.connect(lambda e: str(e.name).startswith("mcp__") and self.refresh_servers())
        c.session_changed.connect(lambda _s: self.refresh_servers())
        self.prompt.submitted.connect(self.send)
        self.mode_combo.currentIndexChanged.connect(self._on_mode_changed)
        self.conversation.card_selected.connect(self.diff_panel.select_tool)
        self.conversation.banner_action.connect(self._on_banner_action)
        self.diff_panel.change_selected.connect(lambda tid: self.conversation.select_card(tid, scroll=True))
        self.sessions.itemActivated.connect(self._on_session_activated)
        self.find_edit.textChanged.connect(self._find_changed)
        self.find_edit.step.connect(self._find_step)
        self.find_edit.closed.connect(self.close_find)
        self.find_next_button.clicked.connect(lambda: self._find_step(1))
        self.find_prev_button.clicked.connect(lambda: self._find_step(-1))
        self.find_close_button.clicked.connect(self.close_find)
        self._find_matches: list[Any] = []
        self._find_index = -1
        self._sessions_timer = QTimer(self)
        self._sessions_timer.setSingleShot(True)
        self._sessions_timer.setInterval(300)
        self._sessions_timer.timeout.connect(
            lambda: self._refresh_sessions(getattr(self.controller.session, "session_id", None)))
        from desktop_agent.permissions.sandbox import sandbox_warning  # bubblewrap cannot start: say so, once

        sandbox_text = sandbox_warning()
        if sandbox_text:
            self.conversation.add_banner("error", sandbox_text, key="sandbox")

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
            act = self.recent_menu.addAction(_home(f))
            act.triggered.connect(lambda _=False, f=f: self.open_folder_soon(f))
        if not folders:
            self.recent_menu.addAction(self.tr("(no recent folders)")).setEnabled(False)

    def closeEvent(self, event) -> None:  # noqa: N802
        self.save_state()
        if self.controller.session is not None and _loop_running():
            # SessionEnd (prompt_input_exit) first, on the loop that still runs; then close for real
            event.ignore()
            if self._close_task is None:
                self.status.showMessage(self.tr("Closing the session…"))
                self._close_task = asyncio.ensure_future(self._end_then_close())
            return
        if self.controller.busy:
            self.controller.stop()
        elif self.controller.session is not None and not self.demo:
            _discard_if_empty(self.controller.session)
        super().closeEvent(event)

    async def _end_then_close(self) -> None:
        try:
            await self.end_session("prompt_input_exit")
        finally:
            self.close()

    async def end_session(self, reason: str) -> None:
        """SessionEnd for the current session (its hooks, then closing it); an empty session's file goes."""
        session = self.controller.session
        if session is None:
            return
        await self.controller.end_session(reason)
        if not self.demo:
            _discard_if_empty(session)

    # ----- folder and session ------------------------------------------------------------------
    def folder_dialog_start(self) -> str:
        """Where Open Folder starts: this window's folder, the one asked for, the last one, else the cwd."""
        for candidate in (self.folder, self.wanted_folder, self.last_folder(), os.getcwd()):
            if candidate and os.path.isdir(candidate):
                return candidate
        return os.path.expanduser("~")

    def choose_folder(self) -> None:
        dlg = QFileDialog(self, self.tr("Open Folder"), self.folder_dialog_start())
        dlg.setObjectName("folderDialog")
        self.folder_dialog = dlg
        dlg.setFileMode(QFileDialog.FileMode.Directory)
        dlg.setOption(QFileDialog.Option.ShowDirsOnly, True)
        dlg.fileSelected.connect(self.open_folder_soon)
        dlg.open()

    def open_folder_soon(self, folder: str, **kwargs: Any) -> asyncio.Task:
        self.open_task = asyncio.ensure_future(self.open_folder(folder, **kwargs))
        return self.open_task

    async def open_folder(self, folder: str, *, resume: str | None = None) -> bool:
        """Open ``folder``: the one-time trust question if its settings grant rules or run hooks, then
        a new (or resumed) session. Returns False when the user cancelled or the session failed."""
        folder = os.path.abspath(folder)
        self.wanted_folder = folder
        if self.controller.busy:
            self.controller.stop()
        trusted = await self._ask_trust(folder)
        if trusted is None:
            return False
        await self.end_session("clear")  # New Session, another folder or a listed session replaces it
        if not resume and self._had_session and not self.demo and "permission_mode" not in self.session_kwargs:
            fresh = default_mode_setting()  # a new session starts in Settings' default mode
            if fresh == BYPASS:
                self.request_mode(BYPASS)  # asks (unless bypass is on already)
            elif fresh != self.permission_mode:
                self.permission_mode = fresh
                self._select_mode(fresh)
        kwargs = dict(self.session_kwargs)
        if self.client_factory is not None:
            kwargs["client"] = self.client_factory()
        if resume:
            kwargs["resume"] = resume
        if trusted is False:
            kwargs["trusted"] = False
        kwargs.setdefault("permission_mode", self.permission_mode)  # session_kwargs (tests, tour) may set it
        chosen_before = self.permission_mode
        self.conversation.clear()
        self.diff_panel.clear()
        self._history_stats = None
        self.conversation.cwd = folder
        self.diff_panel.cwd = folder
        replayed = False
        if resume:  # show the transcript first (fast), while the session is built
            entries = _read_history(folder, resume)
            if entries is not None:
                self.replay_history(entries=entries)
                replayed = True
                self.history_shown.emit(folder)
                if self.isVisible():
                    await asyncio.sleep(0.03)  # let it paint before the session build competes for the GIL
        self.status.showMessage(self.tr("Opening {0}…").format(_home(folder)))
        kind, path = self.executor_choice()
        if kind != "inprocess":
            kwargs.update(executor=kind, executable=path)
        try:
            session = await self.controller.open_session(folder, **kwargs)
        except Exception as exc:
            self.status.clearMessage()
            self._session_failed(folder, exc)
            return False
        self.status.clearMessage()
        self.folder = folder
        self._had_session = True
        self.show_model(str(getattr(session, "model", "") or ""), enabled=True)
        # the mode asked for, unless the user picked another while the session was built
        want = self.permission_mode if self.permission_mode != chosen_before else str(kwargs["permission_mode"])
        if str(getattr(session, "permission_mode", want)) != want:
            try:
                self.controller.set_permission_mode(want)
            except Exception:
                log.exception("could not set the permission mode %s", want)
        mode = str(getattr(session, "permission_mode", None) or "default")
        if mode == BYPASS and want != BYPASS:  # never entered without its question
            self.controller.set_permission_mode("default")
            mode = "default"
        self.permission_mode = mode
        self._select_mode(mode)
        if resume and not replayed:
            self.replay_history(session)
        elif not resume:
            self._show_empty()
        if resume and self._history_stats is not None:  # totals and turn numbers continue from the transcript
            tokens, cost, turns = self._history_stats
            self.controller.set_usage_base(tokens, cost, turns)
        self._refresh_sessions(current=getattr(session, "session_id", None))
        self._add_recent(folder)
        self._update_title()
        self.save_state()
        self.prompt.setFocus()
        self.folder_opened.emit(folder)
        return True

    def executor_choice(self) -> tuple[str, str | None]:
        """Where this window's sessions run: the tour in this process; else ``--executor``, else Settings."""
        if self.demo:
            return "inprocess", None
        kind, path = self.executor_override, self.executor_path_override
        if kind is None or (kind == "claude" and not path):
            try:
                from desktop_agent.config import AppSettings

                prefs = AppSettings.load()
                kind = kind or str(prefs.executor or "inprocess")
                path = path or (prefs.claude_path if kind == "claude" else None)
            except Exception:
                log.exception("could not read the executor setting")
                kind = kind or "inprocess"
        if kind not in ("inprocess", "process", "claude"):
            kind = "inprocess"
        return kind, path or None

    def restart_session(self) -> asyncio.Task | None:
        """The banner's "Restart session": a new executor process resuming the session."""
        if not self.controller.can_restart:
            return None
        self.conversation.remove_banner("error:executor")

        async def go() -> None:
            try:
                await self.controller.restart_session()
            except Exception:
                log.exception("restarting the session failed")

        self.restart_task = asyncio.ensure_future(go())
        return self.restart_task

    def _session_failed(self, folder: str, exc: Exception) -> None:
        name = type(exc).__name__
        text = str(exc) or name
        log.warning("could not open a session in %s: %s: %s", folder, name, text)
        self.conversation.cwd = folder
        if name == "ConfigError" or "API key" in text:
            self.conversation.add_banner(
                "error", self.tr("No API key is set up, so the agent cannot talk to a model. {0} opens as soon "
                                 "as a key is saved.").format(_home(folder)),
                [("settings", self.tr("Open settings")), ("tour", self.tr("Take the offline tour"))], key="setup")
        else:
            self.conversation.add_banner("error", self.tr("Could not open the session: {0}").format(text),
                                         [("settings", self.tr("Open settings"))], key="setup")

    async def _ask_trust(self, folder: str) -> bool | None:
        """True/False for trusted, None when the user cancelled. Asked once per folder."""
        if self.demo:
            return True
        try:
            from desktop_agent.permissions import trust
        except Exception:
            return True
        try:
            if not trust.needs_trust_prompt(folder):
                return True
        except Exception:
            return True
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle(self.tr("Trust this folder?"))
        box.setText(self.tr("<b>Do you trust the files in {0}?</b>").format(_home(folder)))
        box.setInformativeText(self.tr(
            "Its .claude/settings.json grants permissions or runs hooks. Trusting the folder lets those allow "
            "rules apply; deny rules and hooks apply either way."))
        trust_btn = box.addButton(self.tr("&Trust folder"), QMessageBox.ButtonRole.AcceptRole)
        box.addButton(self.tr("Open &without trusting"), QMessageBox.ButtonRole.RejectRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(trust_btn)
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        box.finished.connect(lambda _r: fut.done() or fut.set_result(box.clickedButton()))
        self.trust_box = box
        box.open()
        clicked = await fut
        self.trust_box = None
        if clicked is cancel:
            return None
        if clicked is trust_btn:
            trust.set_trusted(folder, True)
            return True
        return False

    def new_session(self) -> None:
        if self.folder:
            self.open_folder_soon(self.folder)
        else:
            self.choose_folder()

    def _refresh_sessions(self, current: str | None = None) -> None:
        self.sessions.clear()
        if not self.folder:
            return
        try:
            from desktop_agent.app.session import AgentSession

            infos = AgentSession.list_sessions(self.folder)
        except Exception:
            infos = []
        import time as _time

        infos = [i for i in infos if i.message_count > 0 or i.session_id == current]  # no empty launches
        if not infos:
            hint = QListWidgetItem(self.tr("No earlier sessions\nin this folder"))
            hint.setFlags(Qt.ItemFlag.NoItemFlags)
            self.sessions.addItem(hint)
        for info in sorted(infos, key=lambda i: -i.mtime):
            when = _time.strftime("%d %b %H:%M", _time.localtime(info.mtime))
            title = (info.first_prompt or self.tr("(empty)")).strip().splitlines()[0] if info.first_prompt else \
                self.tr("(new session)")
            item = QListWidgetItem(f"{'● ' if info.session_id == current else ''}{title[:48]}\n{when}")
            item.setData(Qt.ItemDataRole.UserRole, info.session_id)
            item.setToolTip(f"{title}\n{info.message_count} messages · {info.session_id}")
            self.sessions.addItem(item)
            if info.session_id == current:
                self.sessions.setCurrentItem(item)

    def _on_session_activated(self, item: QListWidgetItem) -> None:
        sid = item.data(Qt.ItemDataRole.UserRole)
        if sid and self.folder and sid != getattr(self.controller.session, "session_id", None):
            self.open_folder_soon(self.folder, resume=sid)

    def replay_history(self, session: Any = None, entries: list[dict[str, Any]] | None = None) -> None:
        """Render a resumed transcript: prompts, text, tool cards with their results and +/− summaries
        (the newest part), and the changes panel rebuilt from the structured patches of every Edit and
        Write (``toolUseResult``); remembers its tokens, cost and turns for the status bar."""
        if entries is None:
            try:
                entries = session.history() if hasattr(session, "history") else list(session.messages)
            except Exception:
                entries = list(getattr(session, "messages", []))
        ops = self.conversation.history_ops(entries)
        self.conversation.replay(ops)
        turns = self._rebuild_changes(ops)
        try:
            tokens, cost = transcript_usage(entries)
        except Exception:
            log.exception("could not sum the transcript's usage")
            tokens, cost = 0, 0.0
        self._history_stats = (tokens, cost, turns)
        self.controller.set_usage_base(tokens, cost, turns)

    def _rebuild_changes(self, ops: list[tuple]) -> int:
        """Feed the changes panel the finished file changes of a transcript, as the live turn did.
        Returns the number of turns (user prompts)."""
        panel = self.diff_panel
        names: dict[str, str] = {}
        turn = 0
        panel.render = lambda: None  # type: ignore[method-assign]  # one render at the end, not one per change
        try:
            for op in ops:
                if op[0] == "user":
                    turn += 1
                elif op[0] == "tool":
                    names[op[1]] = op[2]
                elif op[0] == "result" and len(op) > 4 and op[4] is not None:
                    panel.on_tool_finished(op[1], names.get(op[1], ""), op[3], op[4], max(1, turn), op[2])
        finally:
            del panel.render
        panel.render()
        return turn

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
                    self.conversation.banners["setup"].actions, key="setup")
                return
            self.conversation.add_banner("error", self.tr("Open a folder first (File ▸ Open Folder…, Ctrl+O)."),
                                         key="setup")
            return
        if self.controller.busy:
            self.status.showMessage(self.tr("The agent is still working — press Esc to stop it first."), 4000)
            return
        self.prompt.remember(text)
        self.prompt.clear()
        if self.controller.submit(text) is not None:
            self._sessions_timer.start()  # the new prompt is on disk now: show it in the sessions list

    def stop(self) -> None:
        if self.find_edit.hasFocus():
            self.close_find()
            return
        if self.controller.busy:
            self.conversation.stop_requested()
        self.controller.stop()

    def cycle_mode(self) -> None:
        """Ctrl+Shift+M: the next mode, never bypassPermissions (that one only through its question)."""
        order = [m for m, _label in MODES if m != BYPASS]
        current = self.permission_mode
        if current in order:
            nxt = order[(order.index(current) + 1) % len(order)]
        else:  # leaving bypass: the mode after it in the list
            names = [m for m, _label in MODES]
            nxt = next((m for m in names[names.index(current) + 1:] + names if m != BYPASS), "default") \
                if current in names else "default"
        self.request_mode(nxt)

    def request_mode(self, mode: str) -> None:
        """Switch the permission mode from any control. bypassPermissions asks first; until the
        answer (and after a Cancel) the old mode stays in force and on screen."""
        if mode == self.permission_mode:
            self._select_mode(mode)
            return
        if mode != BYPASS:
            self._apply_mode(mode)
            return
        self._select_mode(self.permission_mode)  # the box shows the old mode while the question is open
        if self.bypass_box is not None and self.bypass_box.isVisible():
            return

        def done(yes: bool) -> None:
            self.bypass_box = None
            if yes:
                self._apply_mode(BYPASS)
            else:
                self.status.showMessage(self.tr("Bypass permissions stays off."), 3000)

        self.bypass_box = confirm_bypass(self, done)

    def _apply_mode(self, mode: str) -> None:
        try:
            self.controller.set_permission_mode(mode)
        except Exception as exc:
            self.status.showMessage(str(exc), 4000)
            self._select_mode(self.permission_mode)
            return
        actual = str(getattr(self.controller.session, "permission_mode", mode) or mode) \
            if self.controller.session is not None else mode
        if actual != mode:  # e.g. bypass disabled by the settings (disableBypassPermissionsMode)
            self.status.showMessage(self.tr("Permission mode {0} is not available here.").format(mode), 5000)
        self.permission_mode = actual
        self._select_mode(actual)
        self.status.showMessage(self.tr("Permission mode: {0}").format(self.mode_combo.currentText()), 3000)

    def _select_mode(self, mode: str) -> None:
        idx = self.mode_combo.findData(mode)
        if idx >= 0 and idx != self.mode_combo.currentIndex():
            self.mode_combo.blockSignals(True)
            self.mode_combo.setCurrentIndex(idx)
            self.mode_combo.blockSignals(False)
        for act in self.mode_group.actions():
            act.setChecked(act.data() == mode)
        bypass = mode == BYPASS and self.permission_mode == BYPASS
        if self.bypass_action.isVisible() != bypass:
            self.bypass_action.setVisible(bypass)
            self._update_title()

    def _add_captioned(self, caption: str, combo: QComboBox, left: int) -> None:
        """A muted caption (the combo's buddy, for its mnemonic) and the combo, on the toolbar."""
        label = QLabel(caption)
        label.setObjectName("muted")
        label.setContentsMargins(left, 0, 4, 0)
        label.setBuddy(combo)
        self.toolbar.addWidget(label)
        self.toolbar.addWidget(combo)

    def show_model(self, name: str, enabled: bool = True) -> None:
        """Put ``name`` in the model box without switching anything."""
        self._model_name = name
        self.model_combo.blockSignals(True)
        self.model_combo.setCurrentText(name)
        self.model_combo.blockSignals(False)
        self.model_combo.setEnabled(enabled)

    def _on_model_chosen(self) -> None:
        name = self.model_combo.currentText().strip()
        if not name:
            self.show_model(self._model_name, self.model_combo.isEnabled())
            return
        if name == self._model_name or self.controller.session is None:
            return
        self._model_name = name
        self.controller.set_model(name)
        self.status.showMessage(self.tr("Model for this session: {0}").format(name), 4000)

    def _on_mode_changed(self, index: int) -> None:
        mode = self.mode_combo.itemData(index)
        if mode:
            self.request_mode(str(mode))

    # ----- controller signals ------------------------------------------------------------------
    def _on_progress(self, event: Any) -> None:
        card = self.conversation.cards.get(event.tool_use_id)
        if card is not None and isinstance(event.data, (str, dict)):
            card.set_progress(event.data)  # a running command: its output tail and elapsed time

    def _on_tool_finished(self, e: Any) -> None:
        self.conversation.finish_tool(e.tool_use_id, e.name, e.content, e.is_error, e.data)
        change = self.diff_panel.on_tool_finished(e.tool_use_id, e.name, e.is_error, e.data,
                                                  self.controller.turn_index, e.content)
        if change is not None:
            self.diff_panel.select_tool(e.tool_use_id, expand=False)

    def _on_permission_requested(self, request: Any) -> None:
        self.conversation.tool_waiting(request.tool_use_id, request.tool_name, request.input)
        if self.diff_panel.on_permission_requested(request, self.controller.turn_index) is not None:
            self.diff_panel.select_tool(request.tool_use_id, expand=False)
            self.conversation.select_card(request.tool_use_id)

    def _on_permission_resolved(self, event: Any) -> None:
        allowed = event.reply.behavior == "allow"
        card = self.conversation.cards.get(event.tool_use_id)
        if card is not None and card.state == card.WAITING:
            self.conversation.tool_resumed(event.tool_use_id, allowed)
        self.diff_panel.on_permission_resolved(event.tool_use_id, allowed, bool(event.reply.updated_input))
        feedback = (getattr(event.reply, "feedback", None) or "").strip()
        if not allowed and feedback:  # what the user told the agent, where the conversation shows it
            name = card.name if card is not None else ""
            self.conversation.add_feedback(self.tr("You denied {0} and told the agent:").format(name), feedback)

    def _on_error(self, e: Any) -> None:
        if getattr(e, "kind", "") == "executor":  # the session's process is gone: say which, offer a restart
            self.conversation.add_banner(
                "error", e.message + " " + self.tr("The conversation is kept; Restart session resumes it in a "
                                                     "new process."),
                [("restart", self.tr("Restart session"))], key="error:executor")
            return
        actions = [("retry", self.tr("Retry the last message"))]
        if getattr(e, "kind", "") in ("auth", "model", "model_not_found", "connection"):
            actions.append(("settings", self.tr("Open settings")))
        self.conversation.add_banner("error", e.message, actions, key=f"error:{getattr(e, 'kind', '')}")

    def _on_banner_action(self, action: str) -> None:
        if action == "retry-now":
            self.controller.retry_now()
        elif action == "retry-cancel":
            self.stop()
        elif action == "settings":
            self.show_settings(False)
        elif action == "tour":
            self.start_tour()
        elif action == "servers":
            self.show_servers()
        elif action == "restart":
            self.restart_session()
        elif action == "retry" and self.prompt.history:
            self.send(self.prompt.history[-1])

    def _on_usage(self, tokens: int, cost: float) -> None:
        tok = f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)
        self.usage_label.setText(self.tr("{0} tokens · ${1:.2f}").format(tok, cost))

    def _on_busy(self, busy: bool) -> None:
        self.stop_action.setEnabled(busy)
        if not busy:
            model = str(getattr(self.controller.session, "model", "") or "")
            if model and not self._model_name:  # an executor says its model with its first turn
                self.show_model(model, enabled=True)
            self._refresh_sessions(current=getattr(self.controller.session, "session_id", None))
            if QApplication.activeModalWidget() is None:
                self.prompt.setFocus()

    def _set_status_view(self, status: str, detail: str) -> None:
        c = colors(is_dark(self))
        text = {
            IDLE: self.tr("Idle"), THINKING: self.tr("Thinking…"), STREAMING: self.tr("Responding…"),
            TOOL: self.tr("Running {0}…").format(detail) if detail else self.tr("Running a tool…"),
            WAITING: self.tr("Waiting for approval: {0}").format(detail) if detail else self.tr("Waiting for approval"),
            RETRYING: self.tr("Retrying: {0}").format(detail), ERROR: self.tr("Error: {0}").format(detail),
            STOPPING: self.tr("Stopping…"),
        }.get(status, status)
        dot = {IDLE: c.muted, ERROR: c.error, WAITING: c.accent}.get(status, c.added_fg)
        self.status_label.setText(f"<span style='color:{dot}'>●</span>&nbsp; {text}")
        self.status.setProperty("attention", "true" if status == WAITING else "false")
        self.status.style().unpolish(self.status)
        self.status.style().polish(self.status)
        if status == WAITING:
            self.status.setStyleSheet(f"QStatusBar#statusBar {{ background: {c.accent}; }} "
                                      f"QStatusBar#statusBar QLabel {{ color: #1f2328; font-weight: 600; }}")
        else:
            self.status.setStyleSheet("")
        self._update_title(waiting=status == WAITING)

    def _update_title(self, waiting: bool | None = None) -> None:
        if waiting is None:
            waiting = self.controller.status == WAITING
        parts = []
        if waiting:
            parts.append(self.tr("Waiting for approval"))
        if self.permission_mode == BYPASS:
            parts.append(bypass_badge_text())
        if self.folder:
            parts.append(_home(self.folder))
        if self.demo:
            parts.append(self.tr("Tour"))
        # The app name last, once: Qt appends the application display name to a title that does not
        # already end with it (the window manager showed "Desktop Agent — … — Desktop Agent").
        parts.append(APP)
        self.setWindowTitle(" — ".join(parts))

    def _notify(self, title: str, message: str) -> None:
        if not QSystemTrayIcon.isSystemTrayAvailable():
            return
        if self.tray is None:
            self.tray = QSystemTrayIcon(self.windowIcon(), self)
            self.tray.show()
        self.tray.showMessage(title, message, QSystemTrayIcon.MessageIcon.Information, 8000)

    # ----- misc actions ------------------------------------------------------------------------
    def _show_empty(self) -> None:
        c = colors(is_dark(self))
        # tr() outside f-strings: pyside6-lupdate does not look inside them.
        if self.folder is None:
            title = self.tr("Open a folder to start")
            lines = [self.tr("File ▸ Open Folder… (Ctrl+O), then ask for a change."),
                     self.tr("Every edit is shown as a diff and waits for your Allow.")]
        elif self.demo:
            title = self.tr("Welcome to the tour")
            lines = [self.tr("A scripted model works on a copy of a sample project."),
                     self.tr("Press Enter to send the prepared prompt, then review and allow each edit.")]
        else:
            title = self.tr("What should we change?")
            lines = [self.tr("Describe the change below and press Enter."),
                     self.tr("The agent reads freely; writes wait for your approval.")]
        html = (f"<p style='font-size:large'><b>{title}</b></p>"
                f"<p style='color:{c.muted}'>{'<br/>'.join(lines)}</p>")
        self.conversation.show_empty(html)

    def show_find(self) -> None:
        """Ctrl+F: the find bar (match count, every match marked, Enter/Shift+Enter step, Esc closes)."""
        self.find_bar.setVisible(True)
        self.find_edit.setFocus()
        self.find_edit.selectAll()
        self._find_changed(self.find_edit.text())

    def close_find(self) -> None:
        self.find_bar.setVisible(False)
        self.conversation.highlight_matches("", [], -1)
        self._find_matches, self._find_index = [], -1
        self.prompt.setFocus()

    def _find_changed(self, text: str) -> None:
        self._find_matches = self.conversation.find_matches(text) if text else []
        self._find_index = 0 if self._find_matches else -1
        self._show_find_state()

    def _find_step(self, delta: int) -> None:
        text = self.find_edit.text()
        self._find_matches = self.conversation.find_matches(text) if text else []  # the conversation may have grown
        n = len(self._find_matches)
        if not n:
            self._find_index = -1
        elif self._find_index < 0:
            self._find_index = 0 if delta > 0 else n - 1
        else:
            self._find_index = (self._find_index + delta) % n
        self._show_find_state()

    def _show_find_state(self) -> None:
        text, n = self.find_edit.text(), len(self._find_matches)
        if not text:
            self.find_count.setText("")
        elif n:
            self.find_count.setText(self.tr("{0} of {1}").format(self._find_index + 1, n))
        else:
            self.find_count.setText(self.tr("No matches"))
        c = colors(is_dark(self))
        self.find_count.setStyleSheet(f"color: {c.error if text and not n else c.muted};")
        self.find_prev_button.setEnabled(n > 1)
        self.find_next_button.setEnabled(n > 1)
        self.conversation.highlight_matches(text, self._find_matches, self._find_index)

    def show_servers(self) -> Any:
        """View ▸ MCP Servers… (Ctrl+Shift+E): the current session's servers, non-modal."""
        from desktop_agent.ui.window.servers_view import ServersView

        if self.servers_view is None:
            self.servers_view = ServersView(self)
            self.servers_view.restart_requested.connect(self.restart_server)
        self.refresh_servers()
        self.servers_view.show()
        self.servers_view.raise_()
        return self.servers_view

    def _mcp_status(self) -> list[dict[str, Any]]:
        session = self.controller.session
        try:
            return list(session.mcp_status()) if session is not None and hasattr(session, "mcp_status") else []
        except Exception:
            log.exception("could not read the MCP servers' states")
            return []

    def refresh_servers(self) -> None:
        """The Servers view and one keyed banner per failed server ("MCP server X failed: …")."""
        from desktop_agent.ui.window.servers_view import failed_banner_text

        servers = self._mcp_status()
        if self.servers_view is not None:
            self.servers_view.set_servers(servers, self._restarting)
        failed = {str(s.get("name")): s for s in servers
                  if s.get("status") == "failed" and s.get("name") not in self._restarting}
        for key in [k for k in self.conversation.banners if k.startswith("mcp:") and k[4:] not in failed]:
            self.conversation.remove_banner(key)
        for name, status in failed.items():
            text = failed_banner_text(status)
            old = self.conversation.banners.get(f"mcp:{name}")
            if old is None or old.text_plain != text:
                self.conversation.add_banner("error", text, [("servers", self.tr("Show MCP servers"))],
                                             key=f"mcp:{name}")

    def restart_server(self, name: str) -> asyncio.Task | None:
        """Restart one MCP server as a task on the loop (the Qt thread never waits for it)."""
        mcp = getattr(self.controller.session, "mcp", None)
        if mcp is None or name in self._restarting:
            return None
        self._restarting.add(name)
        self.refresh_servers()
        return asyncio.ensure_future(self._restart(mcp, name))

    async def _restart(self, mcp: Any, name: str) -> None:
        try:
            await mcp.restart(name)
        except Exception as exc:
            log.warning("could not restart the MCP server %s: %s", name, exc)
            self.status.showMessage(self.tr("Could not restart {0}: {1}").format(name, exc), 5000)
        finally:
            self._restarting.discard(name)
            self.refresh_servers()

    def show_settings(self, first_run: bool = False) -> Any:
        from desktop_agent.ui.dialogs.settings import SettingsDialog

        dlg = SettingsDialog(self, first_run=first_run)
        self._saved_default_mode = dlg.model_mode()
        dlg.tour_requested.connect(self.start_tour)
        dlg.saved.connect(self._on_settings_saved)
        self.settings_dialog = dlg
        dlg.open()
        return dlg

    def _on_settings_saved(self) -> None:
        self.status.showMessage(self.tr("Settings saved."), 3000)
        dlg = self.settings_dialog
        default = dlg.model_mode() if dlg is not None else None
        if default and default != self._saved_default_mode:  # a new default applies here too (confirmed there)
            self._saved_default_mode = default
            self._apply_mode(default)
        folder = self.folder or self.wanted_folder
        if folder and not self.controller.busy and not self.demo:
            self.open_folder_soon(folder)  # e.g. first run: the folder from the command line, now with a key
        elif not folder:
            self.conversation.remove_banner("setup")
            self._show_empty()

    def start_tour(self) -> None:
        from desktop_agent.ui.window.demo import start_tour_window

        self._tour_window = start_tour_window()

    def show_shortcuts(self) -> None:
        box = QMessageBox(self)
        box.setWindowTitle(self.tr("Keyboard Shortcuts"))
        rows = [("Enter", self.tr("Send")), ("Shift+Enter", self.tr("New line")), ("↑", self.tr("Recall last prompt")),
                ("Esc", self.tr("Stop the agent / Deny in the dialog")), ("Ctrl+O", self.tr("Open folder")),
                ("Ctrl+N", self.tr("New session")), ("Ctrl+,", self.tr("Settings")),
                ("Ctrl+Shift+M", self.tr("Cycle permission mode")), ("Ctrl+F", self.tr("Find in conversation")),
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
        if self.width() < 1000 and self.side.isVisible():
            sizes = self.splitter.sizes()
            if len(sizes) == 3 and sizes[0] > 140:
                extra = sizes[0] - 140
                self.splitter.setSizes([140, sizes[1] + extra, sizes[2]])

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and getattr(self, "_icons_dark", None) != is_dark(self):
            self._apply_icons()
