"""The headless run (``-p``): one session, its events as stream-json / json / text, control requests from stdin.

``HeadlessRun`` builds the ``AgentSession`` from the parsed ``Options``, writes ``system``/``init``, the
``assistant``/``user`` lines as the transcript grows (``stream_event`` lines with ``--include-partial-messages``)
and one ``result`` per turn, and answers the host's control requests (``initialize``, ``interrupt``,
``set_permission_mode``, ``set_model``, and App. D.5's ``mcp_status``, ``mcp_toggle``, ``mcp_reconnect``,
``get_context_usage``, ``apply_flag_settings``, ``update_settings``, ``seed_read_state`` through ``cli.controls``;
any other subtype gets the error ``Unsupported control request: <subtype>``). With ``--await-initialize`` (and
stream-json input) the session is built only once the host's ``initialize`` arrives, from its ``mcpServers``,
``settings`` and ``disallowedTools`` as well as the flags (the SDK keeps server credentials off the command line);
its reply says so (``mcp_servers_applied``, ``settings_applied``, ``disallowed_tools_applied``), and stdin lines
sent before it are taken after it. ``/compact [instructions]`` as a prompt compacts the
session instead of calling the model. ``run_headless(opts)`` is the program's entry (exit code 0 when the last
turn succeeded, 1 otherwise, 2 for a missing prompt or a settings source that cannot be read — ``SettingsError``, named
with its file and position; the settings' other warnings, each invalid entry with its file, go to stderr at start).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, assert_never

from desktop_agent import __version__
from desktop_agent.cli.argv import Options, eprint
from desktop_agent.cli.stdio import (
    ControlChannel, DenyingPrompter, Output, StdinReader, StdioPrompter, register_sdk_hooks,
)
from desktop_agent.protocol import ProtocolError, WireModel, decode
from desktop_agent.protocol.control import (
    ApplyFlagSettingsRequest, ControlCancelRequest, ControlRequest, ControlResponse, GetContextUsageRequest,
    InitializeRequest, InterruptRequest, McpReconnectRequest, McpStatusRequest, McpToggleRequest, RewindFilesRequest,
    SeedReadStateRequest, SetModelRequest, SetPermissionModeRequest, UpdateSettingsRequest, unsupported,
)
from desktop_agent.protocol.stream_json import (
    AssistantLine, PermissionDenial, ResultLine, StreamEventLine, SystemInit, SystemLine, SystemStatus, UnknownLine,
    UserLine,
)

if TYPE_CHECKING:
    from desktop_agent.app.host_requests import FlagLayer
    from desktop_agent.app.session import AgentSession

_HOST_REQUESTS = (McpStatusRequest, McpToggleRequest, McpReconnectRequest, GetContextUsageRequest,
                  ApplyFlagSettingsRequest, UpdateSettingsRequest, SeedReadStateRequest, RewindFilesRequest)

# -------------------------------------------------------------------------------------- headless run


RESULT_SUBTYPES = {
    "completed": "success", "stop_hook_prevented": "success", "hook_stopped": "success",
    "max_turns": "error_max_turns", "aborted_streaming": "error_during_execution",
    "aborted_tools": "error_during_execution", "model_error": "error_during_execution",
    "prompt_blocked": "error_during_execution", "tool_deferred": "success",
}


NO_INPUT = "Input must be provided either through stdin or as a prompt argument when using --print"

# TurnFinished.reason → the ``terminal_reason`` of the result line (the reference's names; ours match but one).
TERMINAL_REASONS = {"prompt_blocked": "hook_stopped"}


class HeadlessRun:
    def __init__(self, opts: Options, out: Output | None = None):
        self.opts = opts
        self.out = out or Output()
        self._session: AgentSession | None = None
        self.channel = ControlChannel(self.out, verbose=opts.verbose)
        self.prompter = DenyingPrompter(
            StdioPrompter(self.channel, self._interrupt) if opts.permission_prompt_tool == "stdio" else None)
        self.queue: asyncio.Queue[UserLine | None] = asyncio.Queue()
        self.last_ok = True
        self.turn_task: asyncio.Task[Any] | None = None
        self.interrupted = False
        self._emitted: set[str] = set()
        self._key_source: str | None = None
        self.freeze_heap = False  # set by run_headless (the program), never for in-process callers
        self.flag_layer: FlagLayer | None = None  # the flag settings a host's apply_flag_settings merges into
        # --await-initialize: the initialize read at launch, and the stdin lines that came before the session
        self.launch_init: InitializeRequest | None = None
        self._awaiting: asyncio.Future[ControlRequest | None] | None = None
        self._early: list[str] = []

    # ---------------------------------------------------------------------- session

    @property
    def session(self) -> AgentSession:
        """The session ``create_session`` built (``main`` builds it first)."""
        if self._session is None:
            raise RuntimeError("the headless run has no session yet")
        return self._session

    def create_session(self, init: InitializeRequest | None = None) -> None:
        """The session from the flags, and under ``--await-initialize`` from what ``init`` carries as well: its
        ``mcpServers`` as one more ``--mcp-config`` item, its ``settings`` over ``--settings``, its
        ``disallowedTools`` after ``--disallowedTools`` (checked as that flag's values are)."""
        from desktop_agent.app.host_requests import FlagLayer, merged_settings_arg
        from desktop_agent.app.session import AgentSession
        from desktop_agent.cli.argv import checked_rules

        o = self.opts
        cwd = os.getcwd()
        mcp_config, disallowed, settings_arg = list(o.mcp_config), list(o.disallowed_tools), o.settings
        if init is not None:
            if init.mcpServers is not None:
                mcp_config.append(json.dumps({"mcpServers": init.mcpServers}))
            disallowed += checked_rules("initialize disallowedTools", init.disallowedTools or [], hint=False)
            settings_arg = merged_settings_arg(settings_arg, init.settings, cwd)
            self.launch_init = init
        self._session = AgentSession.create(
            cwd, prompter=self.prompter, session_id=o.session_id, resume=o.resume,
            continue_latest=o.continue_latest, permission_mode=o.permission_mode, allowed_tools=o.allowed_tools,
            disallowed_tools=disallowed, tools=o.tools, add_dirs=o.add_dirs, max_turns=o.max_turns,
            system_prompt=o.system_prompt, append_system_prompt=o.append_system_prompt,
            trusted=True if o.trust else None, settings_arg=settings_arg, model=o.model, mcp_config=mcp_config,
            provider=o.provider,
        )
        self.flag_layer = FlagLayer.of(settings_arg, cwd, o.add_dirs)
        self.session.include_stream_events = o.include_partial and o.out_format == "stream-json"
        self.session.defer_allowed = True  # non-interactive: a PreToolUse "defer" ends the run (SPEC D.6)
        for warning in self.session.permission_context.warnings:  # invalid settings entries: file and entry
            eprint(f"warning: {warning}")
        self._fit_prompter()
        if self.freeze_heap:
            freeze_heap()  # start-up is done: its modules and classes live until exit

    def _fit_prompter(self) -> None:
        """Without ``--permission-prompt-tool stdio`` an ask is denied; but when PermissionRequest hooks exist the
        engine must run them first, which it does only with no prompter at all."""
        if self.prompter.inner is not None or self._session is None:
            return
        self.session.set_prompter(None if self.session.has_hooks("PermissionRequest") else self.prompter)

    def _interrupt(self) -> None:
        self.interrupted = True
        if self._session is not None:
            self._session.interrupt()

    # ---------------------------------------------------------------------- stream-json lines

    def _line(self, line: WireModel) -> None:
        if self.opts.out_format == "stream-json":
            self.out.line(line)

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
        """Where the key came from, as the reference names it (``initialize``'s ``account``, ``system``/``init``)."""
        if self._key_source is None:
            from desktop_agent.config import find_api_key

            key, source = find_api_key()
            if not key and os.environ.get("ANTHROPIC_AUTH_TOKEN"):
                source = "ANTHROPIC_AUTH_TOKEN"
            self._key_source = {"credentials": "config file"}.get(source, source)
        return self._key_source

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

    def _on_entry(self, entry: dict[str, Any]) -> None:
        """A transcript entry the turn produced → an ``assistant`` / ``user`` / ``system`` line, in event order."""
        if self.opts.out_format != "stream-json":
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
            self._line(AssistantLine(message=msg, session_id=sid, uuid=uid))
        elif kind == "user" and not entry.get("isMeta") and not entry.get("isCompactSummary"):
            msg = entry.get("message") or {}
            self._line(UserLine(message={"role": "user", "content": msg.get("content")}, session_id=sid, uuid=uid,
                                tool_use_result=entry.get("toolUseResult")))

    def _replay_prompt(self, content: Any) -> None:
        """``--replay-user-messages``: the prompt as a ``user`` line with the uuid its transcript entry got."""
        uid = self.session.last_prompt_uuid
        if uid is None or uid in self._emitted or not self.session.store.contains(uid):
            return
        self._emitted.add(uid)
        self._line(UserLine(message={"role": "user", "content": content}, session_id=self.session.session_id,
                            uuid=uid))

    # ---------------------------------------------------------------------- one turn

    async def run_compact(self, instructions: str | None) -> ResultLine:
        """``/compact [instructions]``: manual compaction instead of a model turn."""
        s = self.session
        self._line(self.init_line())
        t0 = time.perf_counter()
        subtype, text, errors = "success", "Compacted. ", []
        try:
            event = await s.compact(instructions or None)
            self._line(self._compact_boundary("manual", event.pre_tokens))
        except Exception as exc:
            subtype, text, errors = "error_during_execution", "", [f"Error during compaction: {exc}"]
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
        self._line(self.init_line())
        t0 = time.perf_counter()
        finished: TurnFinished | None = None
        errors: list[str] = []
        user_messages = 0
        # the prompt's id: the host's (an SDKUserMessage's ``uuid``) or a new one; with --replay-user-messages the
        # prompt goes back out with it, so a host can name it in rewind_files (App. D.3)
        message_uuid = message_uuid or str(uuid.uuid4())
        stream = s.submit(content, uuid=message_uuid)
        replay = self.opts.replay_user_messages
        try:
            async for event in stream:
                if replay and not isinstance(event, Compacted) and s.last_prompt_uuid is not None:
                    replay = False  # the prompt's entry exists now (a blocked prompt has none: nothing goes out)
                    self._replay_prompt(content)
                match event:
                    case AssistantBlock():
                        # One ``assistant`` line per finished block, written before the loop starts its call.
                        self._line(AssistantLine(message=event.message, session_id=s.session_id,
                                                 uuid=str(uuid.uuid4())))
                    case AssistantMessage():
                        self._emitted.add(str(event.message.get("uuid")))  # its blocks went out one by one
                    case UserMessage():
                        user_messages += 1
                        self._on_entry(event.message)
                    case Compacted():
                        self._line(self._compact_boundary("auto", event.pre_tokens))
                    case StreamEvent():
                        self._line(StreamEventLine(event=event.event, session_id=s.session_id,
                                                   uuid=str(uuid.uuid4())))
                    case ErrorEvent():
                        errors.append(event.message)
                        if self.opts.verbose:
                            eprint(f"error: {event.message}")
                    case RetryWaiting():
                        if self.opts.verbose:
                            eprint(f"retrying in {event.delay_s:.1f}s (attempt {event.attempt}/{event.max_attempts}): "
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
        if subtype == "error_max_turns" and self.session.max_turns:
            errors.insert(0, f"Reached maximum number of turns ({self.session.max_turns})")  # the reference's text
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

    # ---------------------------------------------------------------------- control requests

    async def handle_control_request(self, message: ControlRequest) -> None:
        request_id, request = message.request_id, message.request
        response: dict[str, Any] | None
        try:
            if isinstance(request, InitializeRequest):
                if request.hooks:
                    register_sdk_hooks(self.session.hook_runner(), self.channel, request.hooks)
                    self._fit_prompter()
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
                self._interrupt()
                self.out.line(ControlResponse.success(request_id))  # the reference's reply has no ``response``
                return
            elif isinstance(request, SetPermissionModeRequest):
                self.session.set_permission_mode(request.mode)
                self.out.line(ControlResponse.success(request_id, {"mode": self.session.permission_mode}))
                self._line(SystemStatus(permissionMode=self.session.permission_mode,
                                        session_id=self.session.session_id, uuid=str(uuid.uuid4())))
                return
            elif isinstance(request, SetModelRequest):
                self.session.set_model(request.model or None)
                response = {}
            elif isinstance(request, _HOST_REQUESTS):
                from desktop_agent.cli.controls import answer

                assert self.flag_layer is not None  # made with the session
                response, mode_changed = await answer(self.session, self.flag_layer, request)
                if mode_changed:  # as after set_permission_mode: the reply, then the status line
                    self.out.line(ControlResponse.success(request_id, response))
                    self._line(SystemStatus(permissionMode=self.session.permission_mode,
                                            session_id=self.session.session_id, uuid=str(uuid.uuid4())))
                    return
            else:
                raise ValueError(unsupported(request.subtype))
        except Exception as exc:
            from desktop_agent.cli.controls import error_text

            self.out.line(ControlResponse.failure(request_id, error_text(exc)))
            return
        self.out.line(ControlResponse.success(request_id, response))

    def _applied(self, request: InitializeRequest) -> dict[str, bool]:
        """``mcp_servers_applied`` / ``settings_applied`` / ``disallowed_tools_applied`` for what ``request``
        carries: true when it is what this process read at launch (``--await-initialize``); a repeated or late
        ``initialize`` loads nothing (the SDK then ends the session rather than run without them)."""
        launch = self.launch_init
        out: dict[str, bool] = {}
        for field, key in (("mcpServers", "mcp_servers_applied"), ("settings", "settings_applied"),
                           ("disallowedTools", "disallowed_tools_applied")):
            value = getattr(request, field)
            if value is not None:
                out[key] = launch is not None and getattr(launch, field) == value
        return out

    def on_line(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        if self._session is None and self._awaiting is not None:
            self._before_session(line)
            return
        try:
            obj = json.loads(line)
        except ValueError:
            eprint(f"ignoring a stdin line that is not JSON: {line[:80]}")
            return
        if not isinstance(obj, dict):
            return
        try:
            message = decode(obj)
        except ProtocolError as exc:
            if obj.get("type") == "control_request":  # answered, so the host does not wait forever
                self.out.line(ControlResponse.failure(str(obj.get("request_id") or ""), str(exc)))
            elif self.opts.verbose:
                eprint(f"ignoring a stdin line: {exc}")
            return
        if isinstance(message, ControlResponse):
            self.channel.on_response(message)
        elif isinstance(message, ControlRequest):
            asyncio.ensure_future(self.handle_control_request(message))
        elif isinstance(message, UserLine):
            if self.opts.input_format == "stream-json":
                self.queue.put_nowait(message)
        elif isinstance(message, ControlCancelRequest):
            pass
        elif isinstance(message, UnknownLine) and message.type in ("keep_alive", "update_environment_variables"):
            variables = message.raw.get("variables")
            if message.type == "update_environment_variables" and isinstance(variables, dict):
                os.environ.update({str(k): str(v) for k, v in variables.items()})
        elif self.opts.verbose:
            eprint(f"ignoring stdin message of type {message.type}")

    def on_eof(self) -> None:
        self.channel.close()
        self.queue.put_nowait(None)
        if self._awaiting is not None and not self._awaiting.done():
            self._awaiting.set_result(None)

    def _before_session(self, line: str) -> None:
        """``--await-initialize``: the first ``initialize`` request starts the session; lines before it wait."""
        assert self._awaiting is not None
        try:
            obj = json.loads(line)
        except ValueError:
            obj = None
        if not self._awaiting.done() and isinstance(obj, dict) and obj.get("type") == "control_request":
            try:
                message = decode(obj)
            except ProtocolError as exc:  # a malformed initialize among them: answered now, never a hang
                self.out.line(ControlResponse.failure(str(obj.get("request_id") or ""), str(exc)))
                return
            if isinstance(message, ControlRequest) and isinstance(message.request, InitializeRequest):
                self._awaiting.set_result(message)
                return
        self._early.append(line)

    async def _start_after_initialize(self) -> bool:
        """Read stdin until ``initialize``, build the session from it, answer it, then take the lines that came
        before it. False when stdin ended first (nothing was started)."""
        self._awaiting = asyncio.get_running_loop().create_future()
        message = await self._awaiting
        if message is None:
            eprint("error: stdin closed before the initialize request (--await-initialize)")
            return False
        assert isinstance(message.request, InitializeRequest)
        try:
            self.create_session(message.request)
        except Exception as exc:  # the host learns why before the process ends
            self.out.line(ControlResponse.failure(message.request_id, str(exc)))
            raise
        await self.handle_control_request(message)
        early, self._early = self._early, []
        for line in early:
            self.on_line(line)
        return True

    # ---------------------------------------------------------------------- main

    async def main(self, prompt: str | None) -> int:
        from desktop_agent.cli.argv import UsageError

        awaits = self.opts.await_initialize and self.opts.input_format == "stream-json"
        if not awaits:
            self.create_session()
        reader: StdinReader | None = None
        needs_stdin = self.opts.input_format == "stream-json" or self.opts.permission_prompt_tool == "stdio"
        if needs_stdin:
            reader = StdinReader(self.on_line, self.on_eof)
            reader.start()
        try:
            if awaits:
                try:
                    if not await self._start_after_initialize():
                        return 1
                except UsageError as exc:
                    eprint(f"error: {exc}")
                    return 2
            if self.opts.input_format == "stream-json":
                if prompt:
                    await self._run_and_report(prompt)
                while True:
                    message = await self.queue.get()
                    if message is None:
                        break
                    content = message.message.get("content")
                    if content is None:
                        continue
                    await self._run_and_report(content, message.uuid)
            elif not prompt and self.session.pending_deferred is None:
                eprint(NO_INPUT)  # only a deferred call may be resumed without a prompt
                return 2
            else:
                await self._run_and_report(prompt or "")
        finally:
            if reader is not None and reader.task is not None and not reader.task.done():
                reader.task.cancel()
            if self._session is not None:
                await self.session.end("other")  # SessionEnd hooks, then close (``-p`` exits: reason ``other``)
        return 0 if self.last_ok else 1

    async def _run_and_report(self, content: Any, message_uuid: str | None = None) -> None:
        result = await self.run_turn(content, message_uuid)
        if self.opts.out_format in ("stream-json", "json"):
            self.out.line(result)
        elif result.is_error:
            text = result.result or "; ".join(result.errors or []) or result.subtype
            if result.subtype == "error_max_turns":
                text = f"Error: Reached max turns ({self.opts.max_turns})"
            eprint(text)
        else:
            self.out.text(result.result or "")


def _usage_dict(usage: dict[str, Any]) -> dict[str, Any]:
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    out: dict[str, Any] = {k: int(usage.get(k) or 0) for k in keys}
    for k, v in usage.items():
        out.setdefault(k, v)
    return out


def _read_stdin_prompt() -> str | None:
    if sys.stdin is None or sys.stdin.closed:
        return None
    try:
        if sys.stdin.isatty():
            return None
    except (ValueError, OSError):
        return None
    data = sys.stdin.read()
    return data if data.strip() else None


def freeze_heap() -> None:
    """``gc.freeze()``: move every object alive now into the collector's permanent generation.

    What start-up imported (pydantic models, tool schemas, httpx2) lives until exit; frozen, it is not
    walked by every full collection nor by the interpreter's collection at exit (with the ``anthropic``
    SDK transport loaded that walk was ~1 s on a loaded 2-core box; ~35 ms frozen). Frozen objects are
    still freed by reference counting and atexit handlers still run; only reference cycles among them
    are not collected, and these are module-level objects that live until exit anyway.
    Called by the program only (``run_headless``/``main``), never for an in-process ``HeadlessRun``.
    """
    import gc

    gc.freeze()


def run_headless(opts: Options) -> int:
    from desktop_agent.app.session import ConfigError, SessionError
    from desktop_agent.permissions.settings import SettingsError

    prompt: str | None = " ".join(opts.positionals) if opts.positionals else None
    if opts.input_format == "text" and not prompt:
        if opts.permission_prompt_tool == "stdio":
            eprint("a prompt argument is required with --permission-prompt-tool stdio and text input")
            return 2
        prompt = _read_stdin_prompt()
        if not prompt and not (opts.resume or opts.continue_latest):  # a resume may run a deferred call (D.6)
            eprint(NO_INPUT)
            return 2
    run = HeadlessRun(opts)
    run.freeze_heap = True
    try:
        return asyncio.run(run.main(prompt))
    except SettingsError as exc:  # a settings source that cannot be read: never a run with fewer rules
        eprint(f"error: {exc}. Nothing was started, so no rule is lost: fix it and start again")
        return 2
    except (ConfigError, SessionError) as exc:
        eprint(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
