"""One session in the host (``host.server``) and the clients attached to it.

``HostedSession.run_turn`` drives a turn of its ``AgentSession`` and writes its lines: the Claude-Code-compatible ones
(``system``, ``assistant``, ``user``, ``stream_event``, ``result``) to every client exactly as the CLI always did, and
to the clients that asked (``Client.agent_events``) each ``AgentEvent`` as one lossless ``agent_event`` line instead
of the ``assistant``/``user``/``stream_event`` copies (SPEC App. D.1). ``HostPrompter`` puts each question in the
inbox and sends it to every attached client; ``answer`` takes a client's reply (the first wins; a refused one gets an
error ``control_response``, App. D.2); ``control`` answers a client's control requests about the session.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol, assert_never

from desktop_agent import __version__
from desktop_agent.core.permission import PermissionReply, PermissionRequest
from desktop_agent.host.connections import Connection, ControlChannel, register_sdk_hooks
from desktop_agent.host.inbox import OUTCOME_ERRORS, Inbox, InboxEvent
from desktop_agent.protocol import WireModel
from desktop_agent.protocol.control import (
    ApplyFlagSettingsRequest, ControlCancelRequest, ControlRequest, ControlResponse, EndSessionRequest, ErrorBody,
    GetContextUsageRequest, HistoryRequest, InitializeRequest, InterruptRequest, McpReconnectRequest,
    McpRestartRequest, McpServersRequest, McpStatusRequest, McpToggleRequest, RecordRequest, RetryNowRequest,
    AllowHostRequest, RewindRequest,
    RewindFilesRequest, SeedReadStateRequest, SessionInfo, SetModelRequest, SetPermissionModeRequest, UpdateSettingsRequest, unsupported,
)
from desktop_agent.protocol.permission import reply_from_wire, request_to_wire
from desktop_agent.protocol.stream_json import (
    AgentEventLine, AssistantLine, PermissionDenial, ResultLine, StreamEventLine, SystemInit, SystemLine,
    SystemStatus, UserLine,
)

if TYPE_CHECKING:
    from desktop_agent.app.host_requests import FlagLayer
    from desktop_agent.app.session import AgentSession
    from desktop_agent.core.events import AgentEvent

log = logging.getLogger(__name__)

_HOST_REQUESTS = (McpStatusRequest, McpToggleRequest, McpReconnectRequest, GetContextUsageRequest,
                  ApplyFlagSettingsRequest, UpdateSettingsRequest, SeedReadStateRequest, RewindFilesRequest)
# the compatible data lines an agent_event client does not need (the events carry the same, losslessly)
_EVENT_COPIES = (AssistantLine, UserLine, StreamEventLine)

RESULT_SUBTYPES = {
    "completed": "success", "stop_hook_prevented": "success", "hook_stopped": "success",
    "max_turns": "error_max_turns", "aborted_streaming": "error_during_execution",
    "aborted_tools": "error_during_execution", "model_error": "error_during_execution",
    "prompt_blocked": "error_during_execution", "tool_deferred": "success",
}
# TurnFinished.reason → the ``terminal_reason`` of the result line (the reference's names; ours match but one).
TERMINAL_REASONS = {"prompt_blocked": "hook_stopped"}



def api_key_source() -> str:
    """Where the API key comes from (reads the config file and perhaps the keyring: not on the loop's thread)."""
    from desktop_agent.config import find_api_key

    key, source = find_api_key()
    if not key and os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        source = "ANTHROPIC_AUTH_TOKEN"
    return {"credentials": "config file"}.get(source, source)


class SessionOwner(Protocol):
    """What a hosted session needs of its host (``host.server.Host``): the inbox, and ending a session."""

    inbox: Inbox

    async def end_session(self, session_id: str, reason: str | None = "other", *,
                          discard_if_empty: bool = False) -> bool: ...


# ------------------------------------------------------------------------------------------- clients


@dataclass(eq=False)
class Client:
    """One attached connection: its session, whether it gets ``agent_event`` lines, whether its window is active,
    its channel for the host's own requests (hook callbacks, Review)."""

    connection: Connection
    name: str
    verbose: bool = False
    warn: Callable[[str], None] = log.info
    session: HostedSession | None = None
    agent_events: bool = False
    active: bool = True  # its window is the active one (``desktop_agent_client_active``; never told: active)
    channel: ControlChannel = field(init=False)

    def __post_init__(self) -> None:
        self.channel = ControlChannel(self.connection, verbose=self.verbose, warn=self.warn)

    def line(self, message: WireModel) -> None:
        self.connection.line(message)


@dataclass
class ServeConfig:
    """How a session's lines are written: ``out_format`` (``stream-json``: every line; ``json``/``text``: none but
    the result, which the CLI writes itself), ``asks`` (questions go to the clients: ``--permission-prompt-tool
    stdio`` or any host client; otherwise an ask is denied with its own message), ``lone`` (the CLI: no client left
    means no one can answer, so an ask is denied instead of waiting for one to attach)."""

    out_format: str = "stream-json"  # stream-json, json or text
    asks: bool = True
    lone: bool = False
    verbose: bool = False
    replay_user_messages: bool = False  # --replay-user-messages: each prompt goes back out with its uuid (D.3)


# ------------------------------------------------------------------------------------------- prompter


class HostPrompter:
    """The engine's ``PermissionPrompter`` for one hosted session: the inbox and every attached client."""

    def __init__(self, hosted: HostedSession):
        self.hosted = hosted

    @property
    def waits(self) -> bool:
        """Only a prompter some client answers waits (and so raises a ``permission_prompt`` Notification)."""
        return self.hosted.config.asks

    async def ask(self, request: PermissionRequest) -> PermissionReply:
        hosted = self.hosted
        if not hosted.config.asks:
            return PermissionReply(behavior="deny", message=request.message or "Permission required")
        if hosted.config.lone and not any(not c.channel.closed for c in hosted.clients):
            return PermissionReply(behavior="deny",
                                   message="Permission request failed: stdin is closed: no one can answer")
        inbox = hosted.host.inbox
        question = inbox.ask(hosted.session_id, request, folder=hosted.session.cwd, title=hosted.title)
        wire = ControlRequest(request_id=request.request_id, request=request_to_wire(request))
        for client in list(hosted.clients):
            client.line(wire)
        reply = await inbox.wait(question)  # withdrawn → CancelledError; the subscriber tells the clients
        if reply.interrupt:
            asyncio.get_running_loop().call_soon(hosted.interrupt)
        return reply


# ------------------------------------------------------------------------------------- hosted session


class HostedSession:
    """One ``AgentSession`` in the host and the clients attached to it."""

    def __init__(self, host: SessionOwner, session: AgentSession, *, config: ServeConfig | None = None, title: str = "",
                 queue: asyncio.Queue[UserLine | None] | None = None, flag_layer: FlagLayer | None = None,
                 key_source: str | None = None):
        self.host = host
        self.session = session
        self.config = config or ServeConfig()
        self.title = title
        self.clients: list[Client] = []
        self.queue: asyncio.Queue[UserLine | None] = queue if queue is not None else asyncio.Queue()
        self.prompter = HostPrompter(self)
        self.flag_layer = flag_layer
        self.launch_init: InitializeRequest | None = None  # --await-initialize: what was read at launch
        self.interrupted = False
        self.last_ok = True
        self.busy = False
        self._emitted: set[str] = set()
        self._key_source = key_source  # read off the loop's thread when the host built the session
        self._runner: asyncio.Task[None] | None = None
        self._unsubscribe = host.inbox.subscribe(self._on_inbox)
        self._mode_told = session.permission_mode
        self.on_result: Callable[[ResultLine], None] | None = None  # the CLI writes json/text results itself
        self.fit_prompter()

    @property
    def session_id(self) -> str:
        return str(self.session.session_id)

    def fit_prompter(self) -> None:
        """Without clients to ask an ask is denied; but when PermissionRequest hooks exist the engine must run them
        first, which it does only with no prompter at all."""
        if not self.config.asks and self.session.has_hooks("PermissionRequest"):
            self.session.set_prompter(None)
        else:
            self.session.set_prompter(self.prompter)

    def info(self) -> SessionInfo:
        s = self.session
        return SessionInfo(session_id=self.session_id, cwd=s.cwd, model=s.model or "",
                           permissionMode=s.permission_mode, transcript_path=str(s.transcript_path or ""),
                           manages_mcp=s.mcp is not None, busy=self.busy,
                           pending=len(self.host.inbox.pending(self.session_id)))

    # ----- clients
    def attach(self, client: Client, *, agent_events: bool | None = None) -> None:
        if agent_events is not None:
            client.agent_events = agent_events
        client.session = self
        if client not in self.clients:
            self.clients.append(client)

    def detach(self, client: Client) -> None:
        if client in self.clients:
            self.clients.remove(client)
        client.channel.close()
        if client.session is self:
            client.session = None

    def resend_pending(self, client: Client) -> None:
        """Every pending question of this session, to a client that just attached."""
        for question in self.host.inbox.pending(self.session_id):
            client.line(ControlRequest(request_id=question.request_id, request=request_to_wire(question.request)))

    def _on_inbox(self, event: InboxEvent) -> None:
        if event.question.session_id != self.session_id or event.kind == "asked":
            return
        cancel = ControlCancelRequest(request_id=event.question.request_id)
        for client in list(self.clients):
            if event.kind == "withdrawn" or client.name != event.source:
                client.line(cancel)

    # ----- lines
    def broadcast(self, line: WireModel) -> None:
        """A compatible data line to every client (``stream-json`` output only)."""
        if self.config.out_format != "stream-json":
            return
        for client in list(self.clients):
            if not (client.agent_events and isinstance(line, _EVENT_COPIES)):
                client.line(line)

    def event(self, event: AgentEvent) -> None:
        """One ``AgentEvent``, exactly, to the clients that asked for them (and a ``status`` line when the engine
        changed the permission mode itself: a dialog's mode switch, plan mode's exit)."""
        line: AgentEventLine | None = None
        for client in self.clients:
            if client.agent_events:
                line = line or AgentEventLine.of(event)
                client.line(line)
        self.mode_check()

    def mode_check(self) -> None:
        mode = self.session.permission_mode
        if mode == self._mode_told:
            return
        self._mode_told = mode
        status = SystemStatus(permissionMode=mode, session_id=self.session_id, uuid=str(uuid.uuid4()))
        for client in self.clients:
            if client.agent_events:
                client.line(status)

    def init_line(self) -> SystemInit:
        s = self.session
        return SystemInit(
            cwd=s.cwd, session_id=s.session_id, tools=[t.name for t in s.tools],
            mcp_servers=[{"name": m["name"], "status": m["status"]} for m in s.mcp_status()], model=s.model,
            permissionMode=s.permission_mode, slash_commands=["compact"], apiKeySource=self.api_key_source(),
            output_style="default", agents=[], skills=[], plugins=[], claude_code_version=__version__,
            uuid=str(uuid.uuid4()),
        )

    def api_key_source(self) -> str:
        """Where the key came from, as the reference names it (``initialize``'s ``account``, ``system``/``init``);
        the host reads it on the worker thread that builds the session (it may ask the keyring)."""
        if self._key_source is None:
            self._key_source = api_key_source()
        return self._key_source

    def _on_entry(self, entry: dict[str, Any]) -> None:
        """A transcript entry the turn produced → an ``assistant`` / ``user`` line, in event order."""
        if self.config.out_format != "stream-json":
            return
        uid = entry.get("uuid")
        if uid == self.session.last_prompt_uuid or uid in self._emitted:
            return
        if uid:
            self._emitted.add(uid)
        kind = entry.get("type")
        sid = self.session.session_id
        if kind == "assistant":
            msg = dict(entry.get("message") or {})
            msg.setdefault("type", "message")
            msg.setdefault("id", f"msg_{uid}")
            msg.setdefault("model", self.session.model)
            msg.setdefault("stop_reason", None)
            msg.setdefault("stop_sequence", None)
            msg.setdefault("usage", {})
            self.broadcast(AssistantLine(message=msg, session_id=sid, uuid=uid))
        elif kind == "user" and not entry.get("isMeta") and not entry.get("isCompactSummary"):
            msg = entry.get("message") or {}
            self.broadcast(UserLine(message={"role": "user", "content": msg.get("content")}, session_id=sid,
                                    uuid=uid, tool_use_result=entry.get("toolUseResult")))

    # ----- turns
    def interrupt(self) -> None:
        self.interrupted = True
        self.session.interrupt()

    async def run_queue(self) -> None:
        """Run the queued user turns one after another until ``None`` (stdin or the host closing)."""
        while True:
            message = await self.queue.get()
            if message is None:
                return
            content = message.message.get("content")
            if content is None:
                continue
            await self.run_and_report(content, message.uuid)

    def start(self) -> None:
        """Run queued turns in the background (the host's sessions; the CLI awaits ``run_queue`` itself)."""
        if self._runner is None or self._runner.done():
            self._runner = asyncio.ensure_future(self.run_queue())

    async def run_and_report(self, content: Any, message_uuid: str | None = None) -> ResultLine:
        self.busy = True
        try:
            result = await self.run_turn(content, message_uuid)
        finally:
            self.busy = False
        if self.on_result is not None:
            self.on_result(result)
        else:
            for client in list(self.clients):
                client.line(result)
        return result

    async def run_compact(self, instructions: str | None) -> ResultLine:
        """``/compact [instructions]``: manual compaction instead of a model turn."""
        from desktop_agent.core.events import ErrorEvent, TurnFinished

        s = self.session
        self.broadcast(self.init_line())
        t0 = time.perf_counter()
        subtype, text, errors = "success", "Compacted. ", []
        try:
            event = await s.compact(instructions or None)
            self.event(event)
            self.broadcast(self._compact_boundary("manual", event.pre_tokens))
            self.event(TurnFinished(reason="completed", result_text=text))
        except Exception as exc:
            subtype, text, errors = "error_during_execution", "", [f"Error during compaction: {exc}"]
            self.event(ErrorEvent(message=errors[0], kind="internal"))
            self.event(TurnFinished(reason="model_error", error=errors[0]))
        self.last_ok = subtype == "success"
        return ResultLine(
            subtype=subtype, is_error=subtype != "success", duration_ms=int((time.perf_counter() - t0) * 1000),
            duration_api_ms=0, num_turns=0, result=text, stop_reason=None, session_id=s.session_id,
            total_cost_usd=round(s.total_cost_usd, 8), usage=_usage_dict({}), modelUsage={}, permission_denials=[],
            uuid=str(uuid.uuid4()), errors=errors or None)

    def _compact_boundary(self, trigger: str, pre_tokens: int) -> SystemLine:
        return SystemLine.model_validate({  # compact_metadata: an extra field, after the declared ones
            "subtype": "compact_boundary", "session_id": self.session.session_id, "uuid": str(uuid.uuid4()),
            "compact_metadata": {"trigger": trigger, "pre_tokens": pre_tokens}})

    def _replay_prompt(self, content: Any) -> None:
        """``--replay-user-messages``: the prompt as a ``user`` line with the uuid its transcript entry got."""
        uid = self.session.last_prompt_uuid
        if uid is None or uid in self._emitted or not self.session.store.contains(uid):
            return
        self._emitted.add(uid)
        self.broadcast(UserLine(message={"role": "user", "content": content}, session_id=self.session.session_id,
                                uuid=uid))

    async def run_turn(self, content: Any, message_uuid: str | None = None) -> ResultLine:
        from desktop_agent.core.events import (
            AssistantBlock, AssistantMessage, Compacted, ErrorEvent, PermissionRequested, PermissionResolved,
            RequestStarted, RetryWaiting, StreamEvent, StreamFallback, TextDelta, ThinkingDelta, ToolCallFinished,
            ToolCallProgress, ToolCallStarted, TurnFinished, TurnStarted, Usage, UserMessage,
        )

        s = self.session
        if isinstance(content, str) and (content.strip() == "/compact" or content.strip().startswith("/compact ")):
            return await self.run_compact(content.strip()[len("/compact"):].strip())
        self.interrupted = False
        denials: list[PermissionDenial] = []
        inputs: dict[str, Any] = {}
        await s.start_mcp()  # system/init lists the servers' states and tools
        self.broadcast(self.init_line())
        t0 = time.perf_counter()
        finished: TurnFinished | None = None
        errors: list[str] = []
        user_messages = 0
        warn = self.clients[0].warn if self.clients else log.info
        # the prompt's id: the host's (an SDKUserMessage's ``uuid``) or a new one; with --replay-user-messages the
        # prompt goes back out with it, so a host can name it in rewind_files (App. D.3)
        message_uuid = message_uuid or str(uuid.uuid4())
        stream = s.submit(content, uuid=message_uuid)
        replay = self.config.replay_user_messages
        try:
            async for event in stream:
                if replay and not isinstance(event, Compacted) and s.last_prompt_uuid is not None:
                    replay = False  # the prompt's entry exists now (a blocked prompt has none: nothing goes out)
                    self._replay_prompt(content)
                self.event(event)
                match event:
                    case AssistantBlock():
                        # One ``assistant`` line per finished block, written before the loop starts its call.
                        self.broadcast(AssistantLine(message=event.message, session_id=s.session_id,
                                                     uuid=str(uuid.uuid4())))
                    case AssistantMessage():
                        self._emitted.add(str(event.message.get("uuid")))  # its blocks went out one by one
                    case UserMessage():
                        user_messages += 1
                        self._on_entry(event.message)
                    case Compacted():
                        self.broadcast(self._compact_boundary("auto", event.pre_tokens))
                    case StreamEvent():
                        self.broadcast(StreamEventLine(event=event.event, session_id=s.session_id,
                                                       uuid=str(uuid.uuid4())))
                    case ErrorEvent():
                        errors.append(event.message)
                        if self.config.verbose:
                            warn(f"error: {event.message}")
                    case RetryWaiting():
                        if self.config.verbose:
                            warn(f"retrying in {event.delay_s:.1f}s (attempt {event.attempt}/{event.max_attempts}): "
                                 f"{event.error}")
                    case ToolCallStarted():
                        inputs[event.tool_use_id] = event.input
                    case ToolCallFinished():
                        if event.denied:
                            denials.append(PermissionDenial(tool_name=event.name, tool_use_id=event.tool_use_id,
                                                            tool_input=inputs.get(event.tool_use_id, {})))
                    case TurnFinished():
                        finished = event
                    case (TurnStarted() | RequestStarted() | TextDelta() | ThinkingDelta() | ToolCallProgress()
                          | PermissionRequested() | PermissionResolved() | StreamFallback() | Usage()):
                        pass  # not part of stream-json (deltas go out as stream_event lines when asked for)
                    case _:
                        assert_never(event)
        finally:
            if isinstance(stream, AsyncGenerator):  # end the turn's generator here, not at garbage collection
                await stream.aclose()
        reason = finished.reason if finished else "model_error"
        subtype = RESULT_SUBTYPES.get(reason, "error_during_execution")
        if self.interrupted and subtype == "success":
            subtype = "error_during_execution"
        stop_reason = None
        for m in reversed(s.messages):
            if m.get("type") == "assistant":
                stop_reason = (m.get("message") or {}).get("stop_reason")
                break
        deferred = s.pending_deferred.wire() if reason == "tool_deferred" and s.pending_deferred else None
        if deferred is not None:
            stop_reason = "tool_deferred"  # the call waits for --resume (SPEC D.6)
        if finished is not None and finished.error:
            errors.append(finished.error)
        if subtype == "error_max_turns" and s.max_turns:
            errors.insert(0, f"Reached maximum number of turns ({s.max_turns})")  # the reference's text
        if finished is None:
            self.event(TurnFinished(reason="model_error", error="the turn ended without finishing"))
        self.last_ok = subtype == "success"
        return ResultLine(
            subtype=subtype, is_error=subtype != "success", duration_ms=int((time.perf_counter() - t0) * 1000),
            duration_api_ms=int(finished.duration_api_ms) if finished else 0,
            # As the reference counts: the prompt plus each user message the turn wrote (one per tool_result,
            # interruption notices included), not the number of API requests.
            num_turns=1 + user_messages if finished else 0,
            result="" if deferred else (finished.result_text if finished else "") or "", stop_reason=stop_reason,
            deferred_tool_use=deferred,
            session_id=s.session_id, terminal_reason=TERMINAL_REASONS.get(reason, reason),
            total_cost_usd=round(s.total_cost_usd, 8), usage=_usage_dict(finished.usage if finished else {}),
            modelUsage={}, permission_denials=denials, uuid=str(uuid.uuid4()),
            errors=None if subtype == "success" else list(dict.fromkeys(errors)) or [reason])

    # ----- control requests of an attached client
    def _initialize_prompt(self, request: InitializeRequest) -> None:
        """``initialize``'s ``systemPrompt`` / ``appendSystemPrompt`` (the TypeScript SDK sends them there, not as
        flags): a string or a list of parts, replacing what the flags said."""
        custom, append = request.systemPrompt, request.appendSystemPrompt
        if custom is None and append is None:
            return

        def text(value: Any) -> str:
            return "".join(str(v) for v in value) if isinstance(value, list) else str(value)

        self.session.set_system_prompt(text(custom) if custom is not None else None,
                                       text(append) if append is not None else None)

    def _applied(self, request: InitializeRequest) -> dict[str, bool]:
        """``mcp_servers_applied`` / ``settings_applied`` / ``disallowed_tools_applied`` for what ``request``
        carries: true when it is what this process read at launch (``--await-initialize``); a repeated or late
        ``initialize`` loads nothing (the SDK then ends the session rather than run without them)."""
        launch = self.launch_init
        out: dict[str, bool] = {}
        for name, key in (("mcpServers", "mcp_servers_applied"), ("settings", "settings_applied"),
                          ("disallowedTools", "disallowed_tools_applied")):
            value = getattr(request, name)
            if value is not None:
                out[key] = launch is not None and getattr(launch, name) == value
        return out

    def _status_line(self) -> None:
        self.broadcast(SystemStatus(permissionMode=self.session.permission_mode, session_id=self.session_id,
                                    uuid=str(uuid.uuid4())))

    async def control(self, client: Client, message: ControlRequest) -> None:
        """Answer one control request of ``client`` about this session (the reply to it alone)."""
        request_id, request = message.request_id, message.request
        response: dict[str, Any] | None
        try:
            if isinstance(request, InitializeRequest):
                if request.hooks:
                    register_sdk_hooks(self.session.hook_runner(), client.channel, request.hooks)
                    self.fit_prompter()
                if isinstance(request.desktopAgent, dict) and request.desktopAgent.get("agentEvents") is True:
                    client.agent_events = True
                response = {
                    "commands": [{"name": "compact", "description": "Summarize the conversation so far",
                                  "argumentHint": ""}],
                    "output_style": "default", "available_output_styles": ["default"],
                    "agents": [],
                    "models": [{"value": self.session.model, "displayName": self.session.model,
                                "description": "The session's model"}],
                    "account": {"apiKeySource": self.api_key_source()}, "pid": os.getpid(), "hooks_applied": True,
                    "claude_code_version": __version__, **self._applied(request),
                }
                self._initialize_prompt(request)
            elif isinstance(request, InterruptRequest):
                self.interrupt()
                client.line(ControlResponse.success(request_id))  # the reference's reply has no ``response``
                return
            elif isinstance(request, SetPermissionModeRequest):
                self.session.set_permission_mode(request.mode)
                self._mode_told = self.session.permission_mode
                client.line(ControlResponse.success(request_id, {"mode": self.session.permission_mode}))
                self._status_line()
                return
            elif isinstance(request, SetModelRequest):
                self.session.set_model(request.model or None)
                response = {}
            elif isinstance(request, _HOST_REQUESTS):
                from desktop_agent.host.controls import answer

                if self.flag_layer is None:
                    from desktop_agent.app.host_requests import FlagLayer

                    self.flag_layer = FlagLayer.of(None, self.session.cwd, [])
                response, mode_changed = await answer(self.session, self.flag_layer, request)
                if mode_changed:  # as after set_permission_mode: the reply, then the status line
                    client.line(ControlResponse.success(request_id, response))
                    self._status_line()
                    return
            elif isinstance(request, HistoryRequest):
                from desktop_agent.util.threads import in_thread

                response = {"entries": list(await in_thread(self.session.history))}
            elif isinstance(request, RecordRequest):
                from desktop_agent.util.threads import in_thread

                entry = request.entry
                await in_thread(lambda: self.session.record(entry))  # a write: never on the loop's thread
                response = {}
            elif isinstance(request, RetryNowRequest):
                event = getattr(self.session.client, "retry_now", None)
                retried = False
                if event is not None and not event.is_set():
                    event.set()
                    retried = True
                response = {"retried": retried}
            elif isinstance(request, AllowHostRequest):
                allow = getattr(self.session.ctx.sandbox, "allow_host_for_session", None)
                if allow is None:
                    raise ValueError("This session's commands have no network proxy (no sandbox, or no allow list)")
                allow(request.host)
                response = {}
            elif isinstance(request, RewindRequest):
                from desktop_agent.app.rewind import answer_window_rewind

                response = await answer_window_rewind(self.session, request.action, request.message_id,
                                                      request.restore_id, request.files, request.conversation,
                                                      request.tool_use_id, request.paths)
            elif isinstance(request, McpServersRequest):
                response = {"servers": list(self.session.mcp_status())}
            elif isinstance(request, McpRestartRequest):
                if self.session.mcp is None:
                    raise KeyError(f"Server not found: {request.serverName}")
                await self.session.mcp.restart(request.serverName)
                response = {}
            elif isinstance(request, EndSessionRequest):
                response = {"discarded": await self.host.end_session(self.session_id, request.reason,
                                                                     discard_if_empty=request.discard_if_empty)}
            else:
                raise ValueError(unsupported(request.subtype))
        except Exception as exc:
            from desktop_agent.host.controls import error_text

            client.line(ControlResponse.failure(request_id, error_text(exc)))
            return
        client.line(ControlResponse.success(request_id, response))

    def answer(self, client: Client, message: ControlResponse) -> None:
        """A client's reply to a question of this session: the first wins; any other gets an error reply."""
        body = message.response
        if isinstance(body, ErrorBody):
            reply = PermissionReply(behavior="deny",
                                    message=f"Permission request failed: {body.error or 'control request failed'}")
            sha = None
        else:
            reply = reply_from_wire(body.response)
            raw_sha = (body.response or {}).get("input_sha256")
            sha = raw_sha if isinstance(raw_sha, str) else None
        outcome = self.host.inbox.answer(self.session_id, body.request_id, reply, source=client.name,
                                         input_sha256=sha)
        if outcome != "ok":
            if client.verbose:
                client.warn(f"refusing a control_response for request {body.request_id}: {OUTCOME_ERRORS[outcome]}")
            client.line(ControlResponse.failure(body.request_id, OUTCOME_ERRORS[outcome]))

    def fail_pending(self, message: str) -> None:
        """Every pending question of this session answered deny with ``message`` (the CLI's stdin closed)."""
        for question in self.host.inbox.pending(self.session_id):
            self.host.inbox.answer(self.session_id, question.request_id,
                                   PermissionReply(behavior="deny", message=f"Permission request failed: {message}"),
                                   source="host")

    async def close(self, reason: str | None = None) -> None:
        """End (SessionEnd hooks with ``reason``) or just close the session; its questions are withdrawn."""
        self._unsubscribe()
        self.host.inbox.withdraw_session(self.session_id)
        if self._runner is not None and not self._runner.done():
            self.queue.put_nowait(None)
        for client in list(self.clients):
            self.detach(client)
        if reason is not None:
            await self.session.end(reason)
        else:
            await self.session.aclose()


def _usage_dict(usage: dict[str, Any]) -> dict[str, Any]:
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    out: dict[str, Any] = {k: int(usage.get(k) or 0) for k in keys}
    for k, v in usage.items():
        out.setdefault(k, v)
    return out
