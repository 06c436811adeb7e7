"""``ProtocolSession``: the one ``SessionHandle``, over any ``client.transports.Transport`` (DESIGN.md §1).

It speaks ``desktop_agent.protocol`` to an engine host: the host in this process (memory), the background host
(unix socket), or an executor child (pipe: our CLI, or Claude Code). With our host — every transport but Claude
Code's pipe — the session asks for the lossless ``agent_event`` lines (``desktop_agent_open`` or ``initialize``'s
``desktopAgent``) and yields the engine's own ``AgentEvent``s; from Claude Code it translates the compatible lines
(``client.lines.LineTranslator``) and makes the permission events itself.

A ``can_use_tool`` request is the host's question: it is asked of the front end's ``PermissionPrompter``
(``SessionOptions.prompter``; without one, ``answer(request_id, reply)`` answers it) and the reply goes back as the
``control_response`` (``protocol.permission``). The host's ``control_cancel_request`` — an interrupt, another
client answered first, the executor withdrew it — cancels that ask (the dialog closes). With our host,
``set_client_active(active)`` tells it whether the window is active (told again after a reconnect: the background
host notifies the questions of a session whose windows are all inactive), and the host's ``desktop_agent_review``
(Review on its notification) is ``SessionOptions.on_review(session_id, request_id)`` — the window raises itself on
that question. When the other side ends,
the running turn gets an ``ErrorEvent`` naming it and its exit status and a ``TurnFinished``; ``restart()`` reaches
the session again (a new executor with ``--resume``, or the host's session reattached or resumed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Awaitable, Callable, Literal

from desktop_agent.client import claude_code
from desktop_agent.client.base import (
    Ack, ClientError, ExecutorDied, ExecutorKind, HandleState, SessionOptions,
)
from desktop_agent.client.lines import LineTranslator, with_computed_patch
from desktop_agent.client.transports import Transport
from desktop_agent.core.events import (
    Compacted, ErrorEvent, PermissionRequested, PermissionResolved, ToolCallFinished, TurnFinished,
)
from desktop_agent.core.permission import PERMISSION_MODES, PermissionReply, PermissionRequest
from desktop_agent.host.connections import Malformed
from desktop_agent.protocol import WireModel, stream_json
from desktop_agent.protocol.control import (
    AttachSessionRequest, CanUseToolRequest, ClientActiveRequest, ControlCancelRequest, ControlRequest, ControlResponse,
    EndSessionRequest, HistoryRequest, HookCallbackRequest, InitializeRequest, InterruptRequest, McpReconnectRequest,
    McpRestartRequest, McpServersRequest, OpenSessionRequest, RecordRequest, RetryNowRequest, ReviewRequest, SessionInfo,
    SessionSettings, SetModelRequest, SetPermissionModeRequest,
)
from desktop_agent.protocol.permission import reply_to_wire, request_from_wire
from desktop_agent.protocol.stream_json import AgentEventLine, ResultLine, UserLine
from desktop_agent.util.threads import in_thread

log = logging.getLogger(__name__)

Speaks = Literal["host", "executor"]  # desktop_agent_open / attach (our host), or initialize (an executor child)
Connect = Callable[[str | None], Awaitable[Transport]]  # resume id → a new transport


def settings_of(options: SessionOptions) -> SessionSettings:
    return SessionSettings(
        permission_mode=options.permission_mode, model=options.model, resume=options.resume,
        session_id=options.session_id, trusted=options.trusted, allowed_tools=list(options.allowed_tools),
        disallowed_tools=list(options.disallowed_tools), add_dirs=list(options.add_dirs),
        max_turns=options.max_turns, system_prompt=options.system_prompt,
        append_system_prompt=options.append_system_prompt, script=options.script,
        idle_notification=options.idle_notification)


class _Turn:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.finished = asyncio.Event()
        self.abandoned = False


@dataclass
class _Ask:
    request: PermissionRequest
    answer: asyncio.Future[PermissionReply]
    task: asyncio.Task[None] | None = None
    prompt: asyncio.Task[PermissionReply] | None = field(default=None, repr=False)


class ProtocolSession:
    """A ``SessionHandle`` over one transport (a new one after ``restart()``)."""

    def __init__(self, transport: Transport, cwd: str, options: SessionOptions, *, speaks: Speaks,
                 executor: ExecutorKind, connect: Connect | None = None, claude: bool = False,
                 startup_timeout_s: float = 60.0):
        self.transport = transport
        self.options = options
        self.speaks: Speaks = speaks
        self.executor: ExecutorKind = executor
        self.claude = claude
        self.agent_events = not claude
        self.startup_timeout_s = startup_timeout_s
        self._connect = connect
        self._cwd = cwd
        self._session_id = options.session_id or options.resume or (str(uuid.uuid4()) if speaks == "executor" else "")
        self._model = options.model or ""
        self._mode: str = options.permission_mode or "default"
        self._transcript = ""
        self._manages_mcp = False
        self._mcp: list[dict[str, Any]] = []
        self.init_info: dict[str, Any] = {}
        self.returncode: int | None = None
        self.exit_message = ""
        self.on_exit: Callable[[str], None] | None = options.on_exit
        self.client_active: bool | None = None  # what the host was last told (None: nothing; the host says active)
        self._alive = False
        self._closing = False
        self._started_once = False
        self._reader: asyncio.Task[None] | None = None
        self._controls: dict[str, asyncio.Future[Any]] = {}
        self._asks: dict[str, _Ask] = {}
        self._resolved: set[str] = set()
        self._turn: _Turn | None = None
        self._translator = LineTranslator(cwd)
        self._rejections = claude_code.Rejections()  # Claude Code: told through our PostToolUse hook
        self._interrupted = False
        self._retrying = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.refusals: list[tuple[str, str]] = []  # (request_id, why) of answers the host refused

    # ----- SessionHandle state
    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def model(self) -> str:
        return self._model

    @property
    def permission_mode(self) -> str:
        return self._mode

    @property
    def state(self) -> HandleState:
        return HandleState(cwd=self._cwd, transcript_path=self.transcript_path, executor=self.executor,
                           alive=self._alive, pid=self.transport.pid, manages_mcp=self._manages_mcp,
                           mcp_servers=list(self._mcp))

    # the same, one by one (tests and the window's status texts)
    @property
    def cwd(self) -> str:
        return self._cwd

    @property
    def alive(self) -> bool:
        return self._alive

    @property
    def pid(self) -> int | None:
        return self.transport.pid

    @property
    def manages_mcp(self) -> bool:
        return self._manages_mcp

    @property
    def transcript_path(self) -> str:
        if self._transcript or self.claude:
            return self._transcript
        from desktop_agent.session.store import find_session

        path = find_session(self._session_id, self._cwd)
        return str(path) if path else ""

    @property
    def pending_questions(self) -> list[PermissionRequest]:
        return [a.request for a in self._asks.values()]

    # ----- start, restart, end
    async def start(self, resume: str | None = None, *, attach: bool = False) -> None:
        """Reach the session: open (or attach to) it in our host, or initialize the executor child."""
        self._loop = asyncio.get_running_loop()
        self._alive = True
        self.returncode, self.exit_message = None, ""
        self._translator = LineTranslator(self._cwd)
        self._reader = asyncio.ensure_future(self._read(self.transport))
        try:
            if self.speaks == "host":
                request: Any
                if attach:
                    request = AttachSessionRequest(session_id=self._session_id)
                else:
                    settings = settings_of(self.options)
                    if resume:
                        settings.resume, settings.session_id = resume, None
                    request = OpenSessionRequest(folder=self._cwd, settings=settings)
                    if self.options.engine_kwargs and self.transport.kind == "memory":
                        request.engine_kwargs = self.options.engine_kwargs  # objects: in process only
                response = await asyncio.wait_for(self._control(request), self.startup_timeout_s)
                info = SessionInfo.model_validate(response or {})
                self._session_id, self._cwd = info.session_id, info.cwd
                self._model, self._mode = info.model or self._model, info.permissionMode or self._mode
                self._transcript, self._manages_mcp = info.transcript_path, info.manages_mcp
                if self.client_active is False:  # a new connection (a reconnect) counts as active until told
                    await self._tell_active(False)
                if self._manages_mcp:
                    await self._refresh_mcp()
            else:
                hooks = claude_code.POST_EDIT_HOOKS if self.claude else None
                init = InitializeRequest(hooks=hooks, desktopAgent=None if self.claude else {"agentEvents": True})
                response = await asyncio.wait_for(self._control(init), self.startup_timeout_s)
                self.init_info = response or {}
        except asyncio.TimeoutError:
            await self._abandon()
            raise ClientError(f"{self.transport.name} did not answer within {self.startup_timeout_s:.0f} s") from None
        except ExecutorDied:
            await self._wait_reader()
            raise self.transport.death() from None
        self._started_once = True

    async def restart(self) -> None:
        """Reach the session again: a new executor with ``--resume <session_id>`` (a session that never wrote its
        transcript starts again under its id), or our host's session reattached (resumed when the host lost it)."""
        if self._connect is None:
            raise ClientError("this session cannot be restarted")
        if self._alive:
            self._closing = True  # an exit we asked for: no ErrorEvent, no on_exit
            try:
                await self._stop_transport()
            finally:
                self._closing = False
        self._turn = None
        if self.speaks == "host":
            # Our host is the one inbox: what it sends again on the new connection is pending there still (an answer
            # that reached it is not sent again). The questions closed here with the old connection were closed
            # for this window only, so they are asked again rather than taken for ones already answered.
            self._resolved.clear()
            self.transport = await self._connect(None)
            try:
                await self.start(attach=True)
            except ClientError:
                await self._stop_transport()
                self.transport = await self._connect(None)
                await self.start(resume=self._session_id)
            return
        self.transport = await self._connect(self._session_id)
        try:
            await self.start()
        except ExecutorDied:
            if self.claude or self.transcript_path:
                raise
            self.transport = await self._connect(None)
            await self.start()

    async def end(self, reason: str | None = "other", *, discard_if_empty: bool = False) -> bool:
        """SessionEnd hooks with ``reason`` (None: none), then close; with ``discard_if_empty`` the transcript of a
        session that never got a message goes. True when it went."""
        self._closing = True
        self._withdraw_all()
        discarded = False
        if self.speaks == "host" and self._alive:
            try:
                response = await asyncio.wait_for(self._control(EndSessionRequest(
                    reason=reason, discard_if_empty=discard_if_empty)), 30)
                discarded = bool((response or {}).get("discarded"))
            except (ClientError, asyncio.TimeoutError):
                log.warning("the host did not end session %s", self._session_id)
        await self._stop_transport()
        if discard_if_empty and self.speaks == "executor" and not self.claude:
            from desktop_agent.host.server import discard_empty_transcript

            discarded = await in_thread(lambda: discard_empty_transcript(self.transcript_path))
        return discarded

    async def close(self) -> None:
        await self.end(None)

    async def detach(self) -> None:
        """Leave the session running in the host (the background host: the window closes, the session stays)."""
        self._closing = True
        self._withdraw_all()
        await self._stop_transport()

    async def _stop_transport(self) -> None:
        await self.transport.close()
        await self._wait_reader()
        self._alive = False

    async def _abandon(self) -> None:
        kill = getattr(self.transport, "kill", None)
        if kill is not None:
            await kill()
        await self.transport.close()

    async def _wait_reader(self) -> None:
        task = self._reader
        if task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(task), 5)

    # ----- requests
    def _send(self, message: WireModel) -> None:
        if not self._alive:
            raise self.transport.death()
        self.transport.send(message)

    def _control(self, request: Any) -> asyncio.Future[Any]:
        message = ControlRequest(request=request)
        loop = self._loop or asyncio.get_running_loop()  # the loop it started on (a Qt handler may call outside it)
        future: asyncio.Future[Any] = loop.create_future()
        self._controls[message.request_id] = future
        future.add_done_callback(lambda f: f.cancelled() or f.exception())  # nobody may await it (interrupt)
        try:
            self._send(message)
        except ExecutorDied as exc:
            self._controls.pop(message.request_id, None)
            future.set_exception(exc)
        return future

    async def request(self, request: WireModel) -> dict[str, Any]:
        """One control request about this session (``protocol.control``: ``HistoryRequest``, ``RecordRequest``,
        ``RetryNowRequest``, ``McpStatusRequest``, ``McpReconnectRequest``, …); its response object, or
        ``ClientError`` with the host's refusal. Claude Code's transcript is read here; it records nothing of ours."""
        if self.claude:
            if isinstance(request, HistoryRequest):
                return {"entries": await in_thread(lambda: claude_code.history(self._cwd, self._session_id) or [])}
            if isinstance(request, (RecordRequest, RetryNowRequest)):
                raise ClientError("Claude Code writes its own transcript and retries to itself")
        response = await self._control(request)
        if isinstance(request, (McpReconnectRequest, McpRestartRequest)) and self._manages_mcp:
            await self._refresh_mcp()
        return response or {}

    def request_threadsafe(self, request: WireModel, timeout: float = 30.0) -> dict[str, Any]:
        """``request`` from a worker thread (the changes panel records a revert there): waits for the reply."""
        loop = self._loop
        if loop is None:
            raise ClientError("the session is not started")
        return asyncio.run_coroutine_threadsafe(self.request(request), loop).result(timeout)

    async def set_client_active(self, active: bool) -> None:
        """Tell our host whether this session's window is active (``desktop_agent_client_active``); an executor
        child is told nothing."""
        if self.client_active is active:
            return
        self.client_active = active
        if self.speaks == "host" and self._alive:
            await self._tell_active(active)

    async def _tell_active(self, active: bool) -> None:
        try:
            await asyncio.wait_for(self._control(ClientActiveRequest(active=active)), 10)
        except (ClientError, asyncio.TimeoutError, ConnectionError) as exc:
            log.info("the host was not told the window is %s: %s", "active" if active else "inactive", exc)

    async def _refresh_mcp(self) -> None:
        try:
            response = await asyncio.wait_for(self._control(McpServersRequest()), 30)
        except (ClientError, asyncio.TimeoutError, ConnectionError):
            return
        self._mcp = [s for s in (response or {}).get("servers") or [] if isinstance(s, dict)]

    # ----- reading
    def _emit(self, event: Any) -> None:
        if self._turn is not None:
            self._turn.queue.put_nowait(event)

    async def _read(self, transport: Transport) -> None:
        try:
            while True:
                message = await transport.receive()
                if message is None:
                    break
                self._on_message(message)
        except asyncio.CancelledError:
            raise
        except Exception:  # a failure here ends the session visibly: no request may wait for a reader that is gone
            log.exception("reading from %s failed", transport.name)
        if transport is self.transport:
            self._on_exit()

    def _on_message(self, line: WireModel | Malformed) -> None:
        if isinstance(line, Malformed):
            self._emit(ErrorEvent(message=f"{self.transport.name} wrote a line this window cannot read: "
                                          f"{line.error}", kind="protocol"))
            return
        if isinstance(line, ControlResponse):
            future = self._controls.pop(line.request_id, None)
            if future is not None and not future.done():
                body = line.response
                if body.subtype == "error":
                    future.set_exception(ClientError(body.error or "control request failed"))
                else:
                    future.set_result(body.response)
            elif line.response.subtype == "error":  # our answer refused (App. D.2: another client answered first)
                log.info("the host refused an answer: %s", line.response.error)
                self.refusals.append((line.request_id, line.response.error))
            return
        if isinstance(line, ControlRequest):
            self._on_control_request(line)
            return
        if isinstance(line, ControlCancelRequest):
            ask = self._asks.get(line.request_id)
            if ask is not None:  # withdrawn now, resolved as a deny before any later line is read
                self._cancel_ask(line.request_id, ask)
            return
        if isinstance(line, stream_json.SystemInit):
            self._session_id = line.session_id or self._session_id
            self._model = line.model or self._model
            self._mode = line.permissionMode or self._mode
        elif isinstance(line, stream_json.SystemLine) and line.permission_mode:
            self._mode = line.permission_mode
        if isinstance(line, AgentEventLine):
            event = line.agent_event()
            if isinstance(event, PermissionRequested):  # answerable by id from now on (it may come before the ask)
                self._pending_ask(event.request.request_id, event.request)
            elif isinstance(event, PermissionResolved):
                ask = self._asks.get(event.request_id)
                if ask is not None and ask.task is None:  # decided without us (a hook, another client)
                    self._asks.pop(event.request_id, None)
            self._emit(event)
            return
        if self.agent_events:
            return  # the compatible copies of what the events said
        finished = isinstance(line, ResultLine)
        for event in self._translator.translate(line, interrupted=self._interrupted):
            if isinstance(event, ToolCallFinished):
                fields = self._rejections.result_fields(event.tool_use_id, event.is_error)
                if fields:  # what our own Edit/Write put in their data: the changes panel marks those hunks ✗
                    event = event.model_copy(update={"data": {**(event.data or {}), **fields}})
            self._emit(event)
        if finished and self._turn is not None:
            self._turn.finished.set()
            self._turn = None

    def _on_control_request(self, message: ControlRequest) -> None:
        request = message.request
        if isinstance(request, CanUseToolRequest):
            known = self._asks.get(message.request_id)
            if (known is not None and known.task is not None) or message.request_id in self._resolved:
                return  # sent again (we attached again): it is being asked already
            ask = self._pending_ask(message.request_id, request_from_wire(message.request_id, request, self._cwd))
            ask.task = asyncio.ensure_future(self._ask(message.request_id, ask, request))
            return
        if isinstance(request, ReviewRequest) and self.speaks == "host":
            review = self.options.on_review
            try:
                shown = review is not None and bool(review(request.session_id, request.request_id))
            except Exception:
                log.exception("Review of %s failed", request.request_id)
                shown = False
            with contextlib.suppress(ExecutorDied):
                self._send(ControlResponse.success(message.request_id, {}) if shown else
                           ControlResponse.failure(message.request_id, "This window cannot show that question"))
            return
        if isinstance(request, HookCallbackRequest):
            try:
                output = self._rejections.hook_output(request.callback_id, request.input, request.tool_use_id)
            except KeyError:
                output = None
            if output is not None:
                with contextlib.suppress(ExecutorDied):
                    self._send(ControlResponse.success(message.request_id, output))
                return
        # an unknown hook callback and anything else: an error reply, never a hang
        with contextlib.suppress(ExecutorDied):
            self._send(ControlResponse.failure(message.request_id, f"unsupported control request: "
                                                                   f"{request.subtype}"))

    async def _ask(self, request_id: str, ask: _Ask, wire: CanUseToolRequest) -> None:
        request = ask.request
        if self.claude:  # "Allow for session" adds the rule for this call, not a mode
            request = claude_code.narrow_suggestions(request)
        try:
            if request.structured_patch is None:
                request = await in_thread(lambda: with_computed_patch(request))
            ask.request = request
            if not self.agent_events:  # our host's engine says it in its own events
                self._emit(PermissionRequested(request=request))
            prompter = self.options.prompter
            if prompter is not None and not ask.answer.done():
                ask.prompt = asyncio.ensure_future(prompter.ask(request))
                done, _ = await asyncio.wait({ask.prompt, ask.answer}, return_when=asyncio.FIRST_COMPLETED)
                if ask.answer.done():
                    ask.prompt.cancel()  # answered by id: the dialog closes
                else:
                    try:
                        ask.answer.set_result(ask.prompt.result())
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:  # a front end bug must not allow: deny, saying why
                        ask.answer.set_result(PermissionReply(behavior="deny",
                                                              message=f"Permission request failed: {exc}"))
            reply = await ask.answer
        except asyncio.CancelledError:  # withdrawn by the host (or it died): a deny
            if ask.prompt is not None:
                ask.prompt.cancel()
            if self._asks.get(request_id) is ask:  # else ``_cancel_ask`` closed it (and it may be asked anew)
                self._asks.pop(request_id, None)
                self._resolve_cancelled(request_id, wire.tool_use_id)
            return
        self._asks.pop(request_id, None)
        if request_id in self._resolved:  # already resolved (the executor died meanwhile)
            return
        self._resolved.add(request_id)
        if reply.behavior == "deny":
            self._translator.denied.add(wire.tool_use_id)
        else:
            self._rejections.record(wire.tool_use_id, reply.rejected_hunks, reply.total_hunks)
            for update in reply.updated_permissions:  # the person picked the mode switch itself
                if update.type == "setMode" and update.mode and update.destination == "session":
                    self._mode = update.mode
        try:
            self._send(ControlResponse.success(request_id, reply_to_wire(reply, request.input).to_wire()))
        except ExecutorDied:
            return
        if not self.agent_events:
            self._emit(PermissionResolved(request_id=request_id, tool_use_id=wire.tool_use_id, reply=reply,
                                          decided_by="user"))

    def _pending_ask(self, request_id: str, request: PermissionRequest) -> _Ask:
        ask = self._asks.get(request_id)
        if ask is None:
            ask = self._asks[request_id] = _Ask(request=request, answer=asyncio.get_running_loop().create_future())
        return ask

    def answer(self, request_id: str, reply: PermissionReply) -> bool:
        """Answer a pending question by id (the first answer wins; False when it is not pending here)."""
        ask = self._asks.get(request_id)
        if ask is None or ask.answer.done():
            return False
        ask.answer.set_result(reply)
        return True

    def _cancel_ask(self, request_id: str, ask: _Ask) -> None:
        if ask.prompt is not None:
            ask.prompt.cancel()
        if ask.task is not None:
            ask.task.cancel()
        self._asks.pop(request_id, None)
        self._resolve_cancelled(request_id, ask.request.tool_use_id)

    def _resolve_cancelled(self, request_id: str, tool_use_id: str) -> None:
        if request_id in self._resolved:
            return
        self._resolved.add(request_id)
        if not self.agent_events or not self._alive:
            self._emit(PermissionResolved(request_id=request_id, tool_use_id=tool_use_id, decided_by="cancel",
                                          reply=PermissionReply(behavior="deny", message="User denied via UI")))

    def _withdraw_all(self) -> None:
        for request_id, ask in list(self._asks.items()):
            self._cancel_ask(request_id, ask)

    def _on_exit(self) -> None:
        self._alive = False
        died = self.transport.death()
        self.returncode = died.returncode
        self.exit_message = died.describe()
        self._withdraw_all()
        for future in self._controls.values():
            if not future.done():
                future.set_exception(died)
        self._controls.clear()
        turn = self._turn
        if turn is None and not self._closing and self._started_once and self.on_exit is not None:
            try:
                self.on_exit(self.exit_message)
            except Exception:  # a front end's callback must not break the reader
                log.exception("on_exit failed")
        if turn is not None:
            if not self._closing:
                turn.queue.put_nowait(ErrorEvent(message=self.exit_message, kind="executor", retryable=True))
            turn.queue.put_nowait(TurnFinished(reason="model_error", error=self.exit_message))
            turn.finished.set()
            self._turn = None

    # ----- turns
    async def submit(self, prompt: str | list[dict[str, Any]]) -> AsyncIterator[Any]:
        """Send one user turn and yield its events up to and including its ``TurnFinished``."""
        previous = self._turn
        if previous is not None:
            if not previous.abandoned:
                raise RuntimeError("a turn is already running")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(previous.finished.wait(), 10)
        turn = _Turn()
        self._turn = turn
        self._interrupted = False
        try:
            self._send(UserLine.prompt(prompt))
        except ExecutorDied as exc:
            self._turn = None
            yield ErrorEvent(message=self.exit_message or exc.describe(), kind="executor", retryable=True)
            yield TurnFinished(reason="model_error", error=self.exit_message or exc.describe())
            return
        finished = False
        try:
            while True:
                event = await turn.queue.get()
                if self._manages_mcp and self._alive and (
                        isinstance(event, TurnFinished)
                        or (isinstance(event, ToolCallFinished) and event.name.startswith("mcp__"))):
                    await self._refresh_mcp()  # the servers' states as the window shows them after this
                if isinstance(event, TurnFinished) and self.agent_events:
                    turn.finished.set()
                    if self._turn is turn:
                        self._turn = None
                self._retrying = type(event).__name__ == "RetryWaiting"
                yield event
                if isinstance(event, TurnFinished):
                    finished = True
                    return
        finally:
            if not finished:  # the consumer left early: stop the turn, drop its remaining events
                turn.abandoned = True
                if self._turn is turn and self._alive:
                    self.interrupt()

    def interrupt(self) -> None:
        """Stop the running turn (its tools get the rejection result); its questions are withdrawn."""
        if not self._alive:
            return
        self._interrupted = True
        self._control(InterruptRequest())

    def set_permission_mode(self, mode: str) -> Ack:
        if mode == "manual":
            mode = "default"
        if mode not in PERMISSION_MODES:
            raise ValueError(f"unknown permission mode: {mode}")
        self._mode = mode
        self.options.permission_mode = mode  # a restart keeps it
        return Ack(self._control(SetPermissionModeRequest(mode=mode)) if self._alive else None)

    def set_model(self, model: str | None) -> Ack:
        self._model = (model or "").strip() or self._model
        self.options.model = self._model or None
        return Ack(self._control(SetModelRequest(model=model)) if self._alive else None)

    @property
    def retrying(self) -> bool:
        """The last event was a ``RetryWaiting`` (the retry card's Retry now can end the wait)."""
        return self._retrying

    async def compact(self, instructions: str | None = None) -> Compacted:
        prompt = "/compact" + (f" {instructions}" if instructions else "")
        compacted: Compacted | None = None
        error = ""
        async for event in self.submit(prompt):
            if isinstance(event, Compacted):
                compacted = event
            elif isinstance(event, ErrorEvent):
                error = event.message
            elif isinstance(event, TurnFinished) and event.error:
                error = error or event.error
        if compacted is None:
            raise ClientError(error or "the session did not compact")
        return compacted
