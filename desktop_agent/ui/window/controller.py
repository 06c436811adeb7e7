"""``AgentController``: the bridge between the engine's two seams and the Qt views.

It runs each turn as an asyncio task on the qasync loop, consumes the ``AgentEvent`` stream and
re-emits each event once on ``agent_event`` (the window connects it to ``ConversationView.handle_event``: the
conversation presenter renders every event, including the ones the controller makes itself on cancel, crash or
executor death), plus the few the changes panel follows as typed signals. It tracks the status (idle, thinking,
running a tool, waiting for approval, error), tokens and cost, and implements ``PermissionPrompter``: ``ask()`` queues
the question in ``questions`` (``PromptQueue``, keyed by ``(session_id, request_id)``): one modal
``PermissionDialog`` at a time, opened with ``open()`` and awaited — never a nested ``exec()`` loop — the others
waiting ("1 more waiting"). Interrupting the turn answers every queued question with a deny and closes the dialog.

The session is a ``client.SessionHandle`` (a ``ProtocolSession``): the engine host on this loop over the memory
transport (``inprocess``, the default) or, for ``open_session(executor="process" | "claude")``, an executor process
over a pipe — the window reaches the engine through ``client`` only. Questions reach ``ask()`` the same way and a withdrawn one cancels ``ask()``
(the dialog closes).
When that process dies the handle's ``ErrorEvent(kind="executor")`` (or ``on_exit`` between turns) is shown,
and ``restart_session()`` resumes the session in a new process.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication, QWidget

from desktop_agent.client import EngineClient, ExecutorKind, SessionHandle, SessionOptions, make_client
from desktop_agent.core import events as ev
from desktop_agent.core.permission import PermissionReply, PermissionRequest
from desktop_agent.ui.dialogs.permission import PermissionDialog
from desktop_agent.ui.window.background import is_active
from desktop_agent.ui.window.presenters import ERROR, IDLE, RETRYING, STOPPING, STREAMING, THINKING, TOOL, WAITING
from desktop_agent.ui.window.questions import PromptQueue


log = logging.getLogger(__name__)

USER_DENIED = "User denied via UI"



class AgentController(QObject):
    """Owns the session and the running turn; the views only listen to its signals."""

    waits = True  # as a PermissionPrompter: an ask waits for the person (Notification hooks fire)

    status_changed = Signal(str, str)  # status, detail (tool name, error text…)
    busy_changed = Signal(bool)
    user_prompt = Signal(str)
    agent_event = Signal(object)  # every AgentEvent once, the stream's and the controller's own: the conversation's
    tool_finished = Signal(object)  # ToolCallFinished (the changes panel, the MCP banners)
    permission_requested = Signal(object)  # PermissionRequest (the changes panel)
    permission_resolved = Signal(object)  # PermissionResolved (the changes panel)
    dialog_opened = Signal(object)  # PermissionDialog
    notice = Signal(str, str)  # kind (info), text: what the controller says that is no AgentEvent
    turn_finished = Signal(object)  # TurnFinished (after ``agent_event``; the MCP banners, the tour's next prompt)
    usage_changed = Signal(int, float)  # session tokens, session cost (USD)
    session_changed = Signal(object)  # the new session object

    def __init__(self, parent: QObject | None = None, *, window: QWidget | None = None,
                 questions: PromptQueue | None = None, client: EngineClient | None = None):
        super().__init__(parent)
        self.window = window
        self.session: SessionHandle | None = None
        self._client: EngineClient | None = client  # a window's sessions share its in-process host
        self.cwd: str | None = None
        self.status = IDLE
        self.status_detail = ""
        self.tokens = 0
        self.cost = 0.0
        self.base_tokens, self.base_cost = 0, 0.0  # a resumed session's usage before this window
        self.turn_index = 0
        self.last_prompt = ""  # the prompt of the running (or last) turn
        self.current_dialog: PermissionDialog | None = None  # the permission dialog showing now
        self.notifier: Callable[[str, str], None] | None = None
        self.desktop_notifier: Any = None  # host.notify.Notifier when a notification daemon is there
        # the background host's Review (its notification): request_id → whether the window shows that question
        self.reviewer: Callable[[str], bool] | None = None
        self._task: asyncio.Task | None = None
        # the window's questions, one dialog at a time: shared by the window's sessions (``ui.window.live``)
        self.questions = questions if questions is not None else PromptQueue(self)
        self.questions.shown.connect(self._dialog_shown)
        self.questions.changed.connect(self._questions_changed)
        self._asking = 0  # permission questions this controller is waiting on
        self._running_tools: set[str] = set()
        self._last_error: str = ""
        self._force_handle: asyncio.TimerHandle | None = None

    # ----- session ---------------------------------------------------------------------------
    @property
    def client(self) -> EngineClient:
        """The client of the current (or last) session; an in-process one until a session opens elsewhere. It
        also answers the folder questions (sessions, transcripts, trust, the sandbox)."""
        if self._client is None:
            self._client = make_client("inprocess")
        return self._client

    async def open_session(self, cwd: str, *, executor: ExecutorKind = "inprocess", executable: str | None = None,
                           attach: str | None = None, **kwargs: Any) -> SessionHandle:
        """Open a session on ``cwd`` through ``client`` with this controller as its prompter: the engine on this
        loop (``inprocess``, built on a worker thread so the window keeps painting) or an executor process
        (``process``, ``claude``). ``kwargs`` are ``SessionOptions`` fields; the rest (a model ``client`` for the
        tour and tests) go to the in-process engine only (an object cannot cross to a child process)."""
        known = set(SessionOptions.__dataclass_fields__) - {"prompter", "engine_kwargs"}
        options = SessionOptions(prompter=self, idle_notification=True, on_exit=self._executor_exited,
                                 on_review=self._review_requested,
                                 **{k: v for k, v in kwargs.items() if k in known})
        if executor == "inprocess":
            options.engine_kwargs = {k: v for k, v in kwargs.items() if k not in known}
        if executor == "host":  # the background host (Settings: keep sessions running), started on demand
            from desktop_agent.client.host_link import BackgroundClient

            background = self._client if isinstance(self._client, BackgroundClient) else BackgroundClient()
            handle = await (background.attach(attach, options) if attach else background.open(cwd, options))
            self._client = background
            self.set_session(handle, handle.state.cwd or cwd)
            return handle
        client = self.client if executor == "inprocess" and self.client.kind == "inprocess" \
            else make_client(executor, executable)
        handle = await client.open(cwd, options)
        self._client = client
        self.set_session(handle, cwd)
        return handle

    def set_session(self, session: SessionHandle, cwd: str | None = None) -> None:
        self.session = session
        self.cwd = cwd or session.state.cwd
        self.tokens, self.cost, self.turn_index = 0, 0.0, 0
        self.base_tokens, self.base_cost = 0, 0.0
        self.usage_changed.emit(0, 0.0)
        self._set_status(IDLE)
        self.session_changed.emit(session)

    async def end_session(self, reason: str, timeout: float = 10.0, *, discard_if_empty: bool = False) -> None:
        """SessionEnd for the current session (App. B §B.5: ``clear`` when another replaces it,
        ``prompt_input_exit`` when the window closes): a running turn is stopped and awaited (5 s at most),
        then ``session.end(reason)`` runs its hooks and closes it, within ``timeout`` seconds. The session
        is then no longer this controller's (nothing may write to a closed transcript)."""
        session = self.session
        if session is None:
            return
        task = self._task
        if task is not None and not task.done():
            self.stop()
            await asyncio.wait({task}, timeout=5.0)
        try:
            # an executor: SessionEnd runs in it as it exits; an empty session's transcript goes
            await asyncio.wait_for(session.end(reason, discard_if_empty=discard_if_empty), timeout)
        except Exception:  # a hook or a server that will not close must not keep the window open
            log.exception("SessionEnd (%s) failed", reason)
        finally:
            if self.session is session:
                self.session = None

    async def detach_session(self) -> None:
        """Leave the current session running in the background host (the window closes): its turn and questions
        go on there; this window's view of the turn ends and its dialogs close."""
        session = self.session
        if session is None:
            return
        from desktop_agent.client.session import ProtocolSession

        self.session = None
        if isinstance(session, ProtocolSession):
            await session.detach()
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=5.0)

    def _review_requested(self, session_id: str, request_id: str) -> bool:
        """The host's notification's Review of one of this session's questions (``reviewer``: the window)."""
        reviewer = self.reviewer
        return reviewer is not None and session_id == self._session_id() and bool(reviewer(request_id))

    def _executor_exited(self, message: str) -> None:
        """The executor died between turns (during a turn the handle's ErrorEvent says so)."""
        if not self.busy:
            self._last_error = message
            self.agent_event.emit(ev.ErrorEvent(message=message, kind="executor", retryable=True))
            self._set_status(ERROR, message)

    @property
    def can_restart(self) -> bool:
        """The session runs in an executor process that is gone: ``restart_session()`` resumes it."""
        session = self.session
        return session is not None and not session.state.alive

    async def restart_session(self) -> None:
        """A new executor process resuming this session (``--resume``); the conversation stays on screen."""
        session = self.session
        if session is None or self.busy:
            return
        self._set_status(THINKING, "restarting")
        try:
            await session.restart()
        except Exception as exc:
            self.agent_event.emit(ev.ErrorEvent(message=str(exc), kind="executor", retryable=True))
            self._set_status(ERROR, str(exc))
            raise
        self._last_error = ""
        self._set_status(IDLE)
        self.notice.emit("info", self.tr("Session restarted in a new process (pid {0})").format(
            session.state.pid or "?"))

    def set_usage_base(self, tokens: int, cost: float, turns: int = 0) -> None:
        """What a resumed session used before (from its transcript): the totals continue from it."""
        self.base_tokens, self.base_cost = int(tokens), float(cost)
        self.tokens, self.cost = self.base_tokens, self.base_cost
        self.turn_index = max(self.turn_index, turns)
        self.usage_changed.emit(self.tokens, self.cost)

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def turn(self) -> asyncio.Task | None:
        """The running turn's task (None when idle)."""
        return self._task if self.busy else None

    def set_permission_mode(self, mode: str) -> None:
        if self.session is not None:
            self.session.set_permission_mode(mode)

    def set_model(self, model: str) -> None:
        """The model of this session's next requests."""
        if self.session is not None:
            self.session.set_model(model)

    # ----- turns -----------------------------------------------------------------------------
    def submit(self, prompt: str) -> asyncio.Task | None:
        """Start a turn. Returns its task (tests await it); None when busy or without a session."""
        prompt = prompt.strip()
        if not prompt or self.session is None or self.busy:
            return None
        self.turn_index += 1
        self.last_prompt = prompt
        self.user_prompt.emit(prompt)
        self._task = asyncio.ensure_future(self._run_turn(prompt))
        self.busy_changed.emit(True)
        return self._task

    async def _run_turn(self, prompt: str) -> None:
        self._set_status(THINKING)
        finished = False
        try:
            session = self.session
            if session is None:  # closed before the turn's task ran: shown as an engine failure would be
                raise RuntimeError("the session closed before the turn started")
            async for event in session.submit(prompt):
                self.handle_event(event)
                if isinstance(event, ev.TurnFinished):
                    finished = True
        except asyncio.CancelledError:
            self._finished(ev.TurnFinished(reason="aborted_tools", error="cancelled"))
            finished = True
            self._set_status(IDLE)
            raise
        except Exception as exc:  # an engine bug: show it, keep the window usable
            log.exception("turn failed")
            self.agent_event.emit(ev.ErrorEvent(message=f"{type(exc).__name__}: {exc}", kind="internal"))
            self._set_status(ERROR, str(exc))
        finally:
            if self._force_handle is not None:  # no timer may outlive the turn
                self._force_handle.cancel()
                self._force_handle = None
            self._deny_questions()
            if not finished:
                self._finished(ev.TurnFinished(reason="completed"))
            if self.status not in (ERROR,):
                self._set_status(IDLE)
            self._running_tools.clear()
            self.busy_changed.emit(False)

    def stop(self) -> None:
        """Interrupt the running turn (Esc). An open permission dialog resolves as a deny."""
        if not self.busy:
            return
        self._set_status(STOPPING)
        self._deny_questions()
        if self.session is not None:
            try:
                self.session.interrupt()
            except Exception:  # pragma: no cover - defensive
                log.exception("interrupt failed")
        task = self._task

        def _force() -> None:  # the engine did not wind down in time: cancel the task itself
            if task is not None and not task.done():
                task.cancel()

        if self._force_handle is not None:
            self._force_handle.cancel()
        self._force_handle = asyncio.get_event_loop().call_later(3.0, _force)

    def retry_now(self) -> bool:
        """End the model client's current backoff wait early (the retry card's Retry now): a request to the host,
        answered on the loop; False without a session."""
        session = self.session
        if session is None:
            return False

        async def retry() -> None:
            try:
                from desktop_agent.protocol.control import RetryNowRequest  # after the first paint

                await session.request(RetryNowRequest())
            except Exception as exc:  # an executor that retries to itself (Claude Code)
                log.info("retry now: %s", exc)

        asyncio.ensure_future(retry())
        return True

    # ----- events ----------------------------------------------------------------------------
    def _finished(self, event: Any) -> None:
        """A TurnFinished the controller makes itself (the turn was cancelled, or ended without one)."""
        self.agent_event.emit(event)
        self.turn_finished.emit(event)

    def handle_event(self, event: Any) -> None:
        """One AgentEvent: to ``agent_event`` (the conversation), then the status, usage and typed signals (public so
        tests and replays can feed events)."""
        self.agent_event.emit(event)
        if isinstance(event, ev.TextDelta):
            if self.status not in (WAITING, STOPPING):
                self._set_status(STREAMING)
        elif isinstance(event, (ev.TurnStarted, ev.RequestStarted)):
            if self.status != STOPPING:
                self._set_status(THINKING)
        elif isinstance(event, ev.ToolCallStarted):
            self._running_tools.add(event.tool_use_id)
            if self.status not in (WAITING, STOPPING):
                self._set_status(TOOL, event.name)
        elif isinstance(event, ev.ToolCallFinished):
            self._running_tools.discard(event.tool_use_id)
            self.tool_finished.emit(event)
            if self.status not in (WAITING, STOPPING):
                self._set_status(TOOL if self._running_tools else THINKING)
        elif isinstance(event, ev.PermissionRequested):
            self.permission_requested.emit(event.request)
        elif isinstance(event, ev.PermissionResolved):
            self.permission_resolved.emit(event)
        elif isinstance(event, ev.Usage):
            if event.session_tokens or event.session_cost_usd:
                self.tokens = self.base_tokens + event.session_tokens
                self.cost = self.base_cost + event.session_cost_usd
            else:
                self.tokens += event.input_tokens + event.output_tokens + event.cache_read_input_tokens \
                    + event.cache_creation_input_tokens
                self.cost += event.cost_usd
            self.usage_changed.emit(self.tokens, self.cost)
        elif isinstance(event, ev.RetryWaiting):
            self._set_status(RETRYING, event.error)
        elif isinstance(event, ev.ErrorEvent):
            self._last_error = event.message
            self._set_status(ERROR, event.message)
        elif isinstance(event, ev.TurnFinished):
            if event.cost_usd and not self.cost:
                self.cost = event.cost_usd
                self.usage_changed.emit(self.tokens, self.cost)
            self.turn_finished.emit(event)
            if event.reason == "model_error":
                self._set_status(ERROR, event.error or self._last_error)
            elif self.status != ERROR:
                self._set_status(IDLE)

    # ----- PermissionPrompter ----------------------------------------------------------------
    async def ask(self, request: PermissionRequest) -> PermissionReply:
        """Queue the question (``questions``): its dialog opens when no other shows; the reply is its answer.
        Cancelled (withdrawn by the engine), it leaves the queue and its dialog, if showing, closes."""
        if self.status != WAITING:
            self._set_status(WAITING, request.tool_name)
        session_id = self._session_id()
        self._asking += 1
        try:
            return await self.questions.ask(
                (session_id, request.request_id), lambda: PermissionDialog(request, parent=self.window),
                stop_value=PermissionReply(behavior="deny", message=USER_DENIED, interrupt=True), info=request)
        finally:
            self._asking -= 1
            if not self._asking and self.status == WAITING:
                self._set_status(TOOL if self._running_tools else THINKING, request.tool_name)

    def _dialog_shown(self, dialog: Any) -> None:
        key = self.questions.current_key
        if not isinstance(dialog, PermissionDialog) or key is None or key[0] != self._session_id():
            return  # another session's question (the window's queue is shared)
        self.current_dialog = dialog
        self._set_status(WAITING, dialog.request.tool_name)
        self.dialog_opened.emit(dialog)
        self._announce(dialog.request)

    def _questions_changed(self, _count: int) -> None:
        if self.current_dialog is not None and self.questions.dialog is not self.current_dialog:
            self.current_dialog = None  # answered or withdrawn; the next one is announced by ``_dialog_shown``

    def _session_id(self) -> str:
        return self.session.session_id if self.session is not None else ""

    def _deny_questions(self) -> None:
        """Every queued permission question of this session answered deny (interrupt); its dialog closes."""
        self.questions.stop_session(self._session_id())

    def _announce(self, request: PermissionRequest) -> None:
        """When the window is not active: a taskbar alert and a desktop notification."""
        win = self.window
        if win is None or is_active(win):  # its own dialog having the focus is the window having it
            return
        QApplication.alert(win, 0)
        notifier = self.desktop_notifier
        if notifier is not None and getattr(notifier, "has_actions", False):
            return  # the host's notifier sends its own, with Review / Deny (/ Allow once)
        if getattr(getattr(self.session, "state", None), "executor", None) == "host":
            return  # the background host notifies it itself (``host.away``: this window told it it is inactive)
        if self.notifier is not None:
            target = request.file_path or request.input.get("file_path") or request.input.get("command") or ""
            self.notifier(self.tr("Desktop Agent is waiting for approval"),
                          self.tr("Allow {0}: {1}?").format(request.tool_name, target))

    # ----- status ----------------------------------------------------------------------------
    def _set_status(self, status: str, detail: str = "") -> None:
        if status == self.status and detail == self.status_detail:
            return
        self.status, self.status_detail = status, detail
        self.status_changed.emit(status, detail)
