"""``LiveSession``: one open session of a window (issue 24) — its ``AgentController``, its conversation page (the
``ConversationView`` and the messages queued under it), its changes panel, its folder (a worktree for a worktree
session) and the state the sidebar shows: **Working**, **Needs you (n)**, **Done**, **Failed**, **Stopped** (or
**New** before its first prompt), with the time it entered that state.

A window holds any number of them (``MainWindow.lives``) and shows one (``MainWindow.live``): switching only swaps
the pages in view, so every other session's turn runs on, its events rendered into its own page as they come.
Their controllers share the window's ``PromptQueue`` (one dialog at a time) and the window's engine client (one host
in this process, ``client.hosts.HostClient``). The state is decided without widgets in ``session_state``.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, Callable

from PySide6.QtCore import QCoreApplication, QObject, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from desktop_agent.ui.changes.panel import DiffPanel
from desktop_agent.ui.window.background import in_background
from desktop_agent.ui.conversation.view import ConversationView
from desktop_agent.ui.window.controller import AgentController
from desktop_agent.ui.window.message_queue import MessageQueue
from desktop_agent.ui.window.presenters import ERROR

translate = QCoreApplication.translate

NEW, WORKING, DONE, FAILED, STOPPED = "new", "working", "done", "failed", "stopped"
STOPPED_REASONS = {"aborted_streaming", "aborted_tools", "hook_stopped", "stop_hook_prevented"}
_ids = itertools.count(1)


def session_state(busy: bool, status: str, last_reason: str | None, started: bool) -> str:
    """The base state (without the questions): Working while a turn runs; after it, Failed (an error), Stopped (the
    person stopped it, or a hook did) or Done; New before the first prompt."""
    if busy:
        return WORKING
    if status == ERROR:
        return FAILED
    if last_reason in STOPPED_REASONS:
        return STOPPED
    return DONE if started else NEW


def state_label(state: str, waiting: int) -> str:
    """What the sidebar says of a session: "Needs you (n)" wins over the base state."""
    if waiting:
        return translate("MainWindow", "Needs you ({0})").format(waiting)
    return {
        NEW: translate("MainWindow", "New"), WORKING: translate("MainWindow", "Working"),
        DONE: translate("MainWindow", "Done"), FAILED: translate("MainWindow", "Failed"),
        STOPPED: translate("MainWindow", "Stopped"),
    }[state]


def since_text(seconds: float) -> str:
    """How long a session has been in its state: "now", "42 s", "5 min", "2 h"."""
    s = max(0, int(seconds))
    if s < 5:
        return translate("MainWindow", "now")
    if s < 60:
        return translate("MainWindow", "{0} s").format(s)
    if s < 3600:
        return translate("MainWindow", "{0} min").format(s // 60)
    return translate("MainWindow", "{0} h").format(s // 3600)


class LiveSession(QObject):
    """One session open in a window. ``changed`` fires when its state, title or waiting count changes."""

    changed = Signal()

    def __init__(self, window: Any, controller: AgentController, send: Callable[[str], bool]):
        super().__init__(window)
        self.window = window
        self.number = next(_ids)  # the order it was opened in (stable across renames)
        self.controller = controller
        self.folder: str | None = None
        self.name = ""  # the person's name for it (Rename); else its first prompt
        self.first_prompt = ""
        self.last_reason: str | None = None
        self.state = NEW
        self.since = time.time()
        self.opening = False  # its session is being opened (``folders.open_folder``)
        self.worktree: Any = None  # ``session.worktrees.Worktree`` when its folder is one of our worktrees
        self.page = QWidget()
        self.page.setObjectName("conversationPage")
        layout = QVBoxLayout(self.page)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.conversation = ConversationView()
        layout.addWidget(self.conversation, 1)
        # typed while the agent works; sent as the turn ends
        self.message_queue = MessageQueue(controller, lambda text: bool(send(text)))
        layout.addWidget(self.message_queue)
        self.diff_panel = DiffPanel()
        self.diff_panel.view.setObjectName("changesView")
        self.busy = False  # as ``busy_changed`` last said (the controller's task is not done yet when it says False)
        controller.busy_changed.connect(self._busy_changed)
        controller.status_changed.connect(self._status_changed)  # bound methods: gone with this object
        controller.turn_finished.connect(self._turn_finished)
        controller.user_prompt.connect(self._prompted)
        controller.questions.changed.connect(self._questions_changed)

    # ----- what the sidebar shows --------------------------------------------------------------
    @property
    def session_id(self) -> str:
        session = self.controller.session
        return session.session_id if session is not None else ""

    @property
    def title(self) -> str:
        text = self.name or (self.first_prompt.strip().splitlines()[0] if self.first_prompt.strip() else "")
        return text or translate("MainWindow", "(new session)")

    @property
    def waiting(self) -> int:
        """Permission questions of this session in the window's queue."""
        sid = self.session_id
        return sum(1 for q in self.controller.questions.entries() if q.key[0] == sid and q.info is not None) \
            if sid else 0

    @property
    def unstarted(self) -> bool:
        """No prompt yet, nothing running, nothing asked, not being opened: leaving it loses nothing."""
        c = self.controller
        return not self.first_prompt and c.turn_index == 0 and not self.busy and not c.busy and not self.opening \
            and not self.waiting and not in_background(c.session)

    def label(self, now: float | None = None) -> str:
        return f"{state_label(self.state, self.waiting)} · {since_text((now or time.time()) - self.since)}"

    def rename(self, name: str) -> None:
        self.name = name.strip()
        self.changed.emit()

    # ----- state ---------------------------------------------------------------------------------
    def _prompted(self, text: str) -> None:
        if not self.first_prompt:
            self.first_prompt = text
        self.last_reason = None
        self._update()

    def _turn_finished(self, event: Any) -> None:
        self.last_reason = str(getattr(event, "reason", "") or "") or None
        self._update()

    def resumed(self, first_prompt: str | None) -> None:
        """A resumed session: its title is its first prompt, and it has run before."""
        if first_prompt and not self.first_prompt:
            self.first_prompt = first_prompt
        self.last_reason = self.last_reason or "completed"
        self._update()

    def _status_changed(self, _status: str, _detail: str) -> None:
        self._update()

    def _questions_changed(self, _count: int) -> None:
        self.changed.emit()

    def _busy_changed(self, busy: bool) -> None:
        self.busy = busy
        self._update()

    def _update(self) -> None:
        c = self.controller
        state = session_state(self.busy, c.status, self.last_reason, bool(self.first_prompt) or c.turn_index > 0)
        if state != self.state:
            self.state, self.since = state, time.time()
        self.changed.emit()


__all__ = ["LiveSession", "session_state", "state_label", "since_text", "NEW", "WORKING", "DONE", "FAILED",
           "STOPPED"]
