"""The headless run (``-p``): the host (``host.server``) serving one session over stdio, its events as
stream-json / json / text, control requests from stdin.

``HeadlessRun`` builds the ``AgentSession`` from the parsed ``Options`` and hands it to a ``Host`` as its one
``HostedSession``, with stdout as the one attached client: the host writes ``system``/``init``, the
``assistant``/``user`` lines as the transcript grows (``stream_event`` lines with ``--include-partial-messages``)
and one ``result`` per turn, asks every ``can_use_tool`` through its inbox (``--permission-prompt-tool stdio``)
and answers every control request (``initialize``, ``interrupt``, ``set_permission_mode``, ``set_model``, App.
D.5's requests through ``host.controls``; any other subtype gets the error ``Unsupported control request:
<subtype>``). With ``--await-initialize`` (and stream-json input) the session is built only once the host's
``initialize`` arrives, from its ``mcpServers``, ``settings`` and ``disallowedTools`` as well as the flags (the SDK
keeps server credentials off the command line); its reply says so (``mcp_servers_applied``, ``settings_applied``,
``disallowed_tools_applied``), and stdin lines sent before it are taken after it. ``/compact [instructions]`` as a
prompt compacts the session instead of calling the model. ``run_headless(opts)`` is the program's entry (exit code
0 when the last turn succeeded, 1 otherwise, 2 for a missing prompt or a settings source that cannot be read —
``SettingsError``, named with its file and position; the settings' other warnings, each invalid entry with its
file, go to stderr at start).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from desktop_agent.cli.argv import Options, eprint
from desktop_agent.cli.stdio import Output, StdinReader
from desktop_agent.host.server import (
    RESULT_SUBTYPES, TERMINAL_REASONS, Host, HostedSession, Malformed, ServeConfig, decode_line,
)
from desktop_agent.protocol import WireModel
from desktop_agent.protocol.control import ControlRequest, ControlResponse, InitializeRequest
from desktop_agent.protocol.stream_json import ResultLine, SystemInit, UserLine

if TYPE_CHECKING:
    from desktop_agent.app.host_requests import FlagLayer
    from desktop_agent.app.session import AgentSession

__all__ = ["HeadlessRun", "RESULT_SUBTYPES", "TERMINAL_REASONS", "freeze_heap", "run_headless"]


class StdioConnection:
    """The host's end of stdout (stdin is read by ``StdinReader`` into ``HeadlessRun.on_line``)."""

    peer = "stdio"
    in_process = False

    def __init__(self, out: Output):
        self.out = out

    def line(self, message: WireModel) -> None:
        self.out.line(message)

    async def receive(self) -> None:  # pragma: no cover - stdin is pushed, not pulled
        return None

    def close(self) -> None:
        pass


class HeadlessRun:
    def __init__(self, opts: Options, out: Output | None = None):
        self.opts = opts
        self.out = out or Output()
        self.host = Host()
        self.client = self.host.client(StdioConnection(self.out), verbose=opts.verbose, warn=eprint)
        self.channel = self.client.channel
        self.config = ServeConfig(out_format=opts.out_format, asks=opts.permission_prompt_tool == "stdio",
                                  lone=True, verbose=opts.verbose)
        self.queue: asyncio.Queue[UserLine | None] = asyncio.Queue()
        self.hosted: HostedSession | None = None
        self.freeze_heap = False  # set by run_headless (the program), never for in-process callers
        self.flag_layer: FlagLayer | None = None  # the flag settings a host's apply_flag_settings merges into
        # --await-initialize: the stdin lines that came before the session
        self._awaiting: asyncio.Future[ControlRequest | None] | None = None
        self._early: list[str] = []

    # ---------------------------------------------------------------------- session

    @property
    def session(self) -> AgentSession:
        """The session ``create_session`` built (``main`` builds it first)."""
        if self.hosted is None:
            raise RuntimeError("the headless run has no session yet")
        return self.hosted.session

    @property
    def last_ok(self) -> bool:
        return self.hosted.last_ok if self.hosted is not None else True

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
        session = AgentSession.create(
            cwd, prompter=None, session_id=o.session_id, resume=o.resume,
            continue_latest=o.continue_latest, permission_mode=o.permission_mode, allowed_tools=o.allowed_tools,
            disallowed_tools=disallowed, tools=o.tools, add_dirs=o.add_dirs, max_turns=o.max_turns,
            system_prompt=o.system_prompt, append_system_prompt=o.append_system_prompt,
            trusted=True if o.trust else None, settings_arg=settings_arg, model=o.model, mcp_config=mcp_config,
            provider=o.provider,
        )
        self.flag_layer = FlagLayer.of(settings_arg, cwd, o.add_dirs)
        session.include_stream_events = o.include_partial and o.out_format == "stream-json"
        hosted = HostedSession(self.host, session, config=self.config, queue=self.queue, flag_layer=self.flag_layer)
        hosted.launch_init = init
        hosted.on_result = self._report
        self.host.add(hosted)
        hosted.attach(self.client)
        self.hosted = hosted
        for warning in session.permission_context.warnings:  # invalid settings entries: file and entry
            eprint(f"warning: {warning}")
        if self.freeze_heap:
            freeze_heap()  # start-up is done: its modules and classes live until exit

    def init_line(self) -> SystemInit:
        assert self.hosted is not None
        return self.hosted.init_line()

    async def run_turn(self, content: Any) -> ResultLine:
        assert self.hosted is not None
        return await self.hosted.run_turn(content)

    async def handle_control_request(self, message: ControlRequest) -> None:
        await self.host._control(self.client, message)

    # ---------------------------------------------------------------------- stdin

    def on_line(self, line: str) -> None:
        if self.hosted is None and self._awaiting is not None:
            if line.strip():
                self._before_session(line.strip())
            return
        message = decode_line(line)
        if message is None:
            return
        if isinstance(message, UserLine):
            if self.opts.input_format == "stream-json":
                self.queue.put_nowait(message)
            return
        self.host.dispatch(self.client, message)

    def on_eof(self) -> None:
        self.channel.close()
        if self.hosted is not None:
            self.hosted.fail_pending("stdin closed before the answer arrived")
        self.queue.put_nowait(None)
        if self._awaiting is not None and not self._awaiting.done():
            self._awaiting.set_result(None)

    def _before_session(self, line: str) -> None:
        """``--await-initialize``: the first ``initialize`` request starts the session; lines before it wait."""
        assert self._awaiting is not None
        message = decode_line(line)
        if not self._awaiting.done() and message is not None:
            if isinstance(message, Malformed):
                if message.obj is not None and message.obj.get("type") == "control_request":
                    # a malformed initialize among them: answered now, never a hang
                    self.out.line(ControlResponse.failure(str(message.obj.get("request_id") or ""), message.error))
                    return
            elif isinstance(message, ControlRequest) and isinstance(message.request, InitializeRequest):
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
            assert self.hosted is not None
            if self.opts.input_format == "stream-json":
                if prompt:
                    await self.hosted.run_and_report(prompt)
                await self.hosted.run_queue()
            else:
                await self.hosted.run_and_report(prompt or "")
        finally:
            if reader is not None and reader.task is not None and not reader.task.done():
                reader.task.cancel()
            if self.hosted is not None:
                await self.session.end("other")  # SessionEnd hooks, then close (``-p`` exits: reason ``other``)
        return 0 if self.last_ok else 1

    def _report(self, result: ResultLine) -> None:
        if self.opts.out_format in ("stream-json", "json"):
            self.out.line(result)
        elif result.is_error:
            text = result.result or "; ".join(result.errors or []) or result.subtype
            if result.subtype == "error_max_turns":
                text = f"Error: Reached max turns ({self.opts.max_turns})"
            eprint(text)
        else:
            self.out.text(result.result or "")


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
        if not prompt:
            eprint("Input must be provided either through stdin or as a prompt argument when using --print")
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
