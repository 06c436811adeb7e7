"""The ``desktop-agent`` command (SPEC App. C): the desktop window, or with ``-p`` the same engine headless.

``desktop-agent [FOLDER]`` opens the window (``desktop_agent.__main__.main``). ``-p``/``--print``,
``--input-format stream-json`` or ``--output-format`` run headless with the reference agent's flags,
so scripts and SDKs written for it work unchanged:

- output ``text`` (the final reply), ``json`` (one ``result`` object) or ``stream-json`` (``system``
  init, ``assistant``/``user`` lines as the transcript grows, ``stream_event`` lines with
  ``--include-partial-messages``, and one ``result`` line per turn);
- input ``text`` (the prompt argument or stdin) or ``stream-json`` (user turns and control requests,
  one JSON object a line, read by an asyncio reader task while turns run);
- the control protocol on stdio: ``initialize`` (SDK hook callbacks are registered as callback hooks of
  the session's ``HookRunner``; each sends a ``hook_callback`` request), ``can_use_tool`` requests for every ``ask`` with
  ``--permission-prompt-tool stdio`` (``control_cancel_request`` when the wait is aborted; a duplicate
  or unknown response is ignored), ``set_permission_mode``, ``set_model`` and ``interrupt``;
- ``/compact [instructions]`` as a prompt compacts the session instead of calling the model.

Unknown flags are reported on stderr and ignored. A bad flag value or a missing API key is one line
on stderr and a non-zero exit. Exit code 0 when the last turn succeeded, 1 otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from desktop_agent import __version__

PROG = "desktop-agent"

# flag → (destination, arity): 0 takes no value, 1 takes one value, LIST takes every value up to the next
# ``-…`` option, as the reference's variadic flags do (``--disallowedTools Edit "Bash(rm *)"`` is two rules;
# ``--flag=value`` is one value; repeating the flag adds more).
LIST = -1
_FLAGS: dict[str, tuple[str, int]] = {
    "-p": ("print", 0),
    "--print": ("print", 0),
    "--output-format": ("output_format", 1),
    "--input-format": ("input_format", 1),
    "--verbose": ("verbose", 0),
    "--include-partial-messages": ("include_partial", 0),
    "--model": ("model", 1),
    "--provider": ("provider", 1),
    "--max-turns": ("max_turns", 1),
    "--permission-mode": ("permission_mode", 1),
    "--dangerously-skip-permissions": ("skip_permissions", 0),
    "--tools": ("tools", LIST),
    "--allowedTools": ("allowed_tools", LIST),
    "--allowed-tools": ("allowed_tools", LIST),
    "--disallowedTools": ("disallowed_tools", LIST),
    "--disallowed-tools": ("disallowed_tools", LIST),
    "--settings": ("settings", 1),
    "--add-dir": ("add_dirs", LIST),
    "--mcp-config": ("mcp_config", LIST),
    "--betas": ("betas", LIST),
    "--system-prompt": ("system_prompt", 1),
    "--append-system-prompt": ("append_system_prompt", 1),
    "--session-id": ("session_id", 1),
    "--resume": ("resume", 1),
    "-r": ("resume", 1),
    "--continue": ("continue_latest", 0),
    "-c": ("continue_latest", 0),
    "--permission-prompt-tool": ("permission_prompt_tool", 1),
    "--trust": ("trust", 0),
    "--version": ("version", 0),
    "-v": ("version", 0),
    "--help": ("help", 0),
    "-h": ("help", 0),
}
# List flags we parse (so their values never become the prompt) but do not act on: reported as ignored.
_IGNORED_LISTS = ("--betas",)
# Flags of the reference agent that take no value: ignored without swallowing the next argument.
_UNKNOWN_BOOLEAN = {
    "--fork-session", "--strict-mcp-config", "--include-hook-events", "--session-mirror", "--debug", "--ide",
    "--replay-user-messages", "--bare", "--no-session-persistence", "--mcp-debug", "--exclude-dynamic-sections",
}
OUTPUT_FORMATS = ("text", "json", "stream-json")
INPUT_FORMATS = ("text", "stream-json")
PROVIDERS = ("anthropic", "openai")
MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")

USAGE = f"""Usage: {PROG} [FOLDER]            open the desktop window
       {PROG} --demo               open the offline tour (no API key needed)
       {PROG} -p [options] PROMPT  run one prompt headless

Options (window): --demo, --resume SESSION_ID, --theme system|light|dark, --executor inprocess|process|claude

Options (headless):
  -p, --print                       print the response and exit
  --output-format text|json|stream-json
  --input-format text|stream-json
  --verbose, --include-partial-messages
  --model MODEL, --max-turns N
  --permission-mode default|acceptEdits|plan|bypassPermissions|dontAsk
  --dangerously-skip-permissions
  --provider anthropic|openai      the model API (openai: any chat-completions server, with
                                    OPENAI_BASE_URL / OPENAI_API_KEY; or DESKTOP_AGENT_PROVIDER)
  --mcp-config FILE|JSON...         MCP servers ({{"mcpServers": {{...}}}}), with .mcp.json, settings
  --tools A,B...  --allowedTools RULE...  --disallowedTools RULE...  --add-dir DIR...
                                    list flags take every value up to the next option:
                                    put the prompt first, or after --
  --settings FILE|JSON  --system-prompt TEXT  --append-system-prompt TEXT
  --session-id ID  --resume ID  --continue
  --permission-prompt-tool stdio    ask permissions through control requests on stdio
  --trust                           treat the folder as trusted for this run
  --version
"""


class UsageError(Exception):
    """A bad flag or flag value: one line on stderr, exit 2."""


@dataclass
class Options:
    print: bool = False
    output_format: str | None = None
    input_format: str = "text"
    verbose: bool = False
    include_partial: bool = False
    model: str | None = None
    provider: str | None = None
    max_turns: int | None = None
    permission_mode: str | None = None
    skip_permissions: bool = False
    tools: list[str] | None = None
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    settings: str | None = None
    add_dirs: list[str] = field(default_factory=list)
    mcp_config: list[str] = field(default_factory=list)
    betas: list[str] = field(default_factory=list)
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    session_id: str | None = None
    resume: str | None = None
    continue_latest: bool = False
    permission_prompt_tool: str | None = None
    trust: bool = False
    version: bool = False
    help: bool = False
    positionals: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def headless(self) -> bool:
        return self.print or self.input_format == "stream-json" or self.output_format is not None

    @property
    def out_format(self) -> str:
        return self.output_format or "text"


def _is_option(arg: str) -> bool:
    """Where a list flag's values end (commander's ``maybeOption``): ``-x``, ``--x``, ``--``; not ``-`` or ``""``."""
    return len(arg) > 1 and arg[0] == "-"


def parse_args(argv: list[str]) -> Options:
    opts = Options()
    raw: dict[str, Any] = {}
    i = 0
    only_positionals = False
    while i < len(argv):
        arg = argv[i]
        i += 1
        if only_positionals or not arg.startswith("-") or arg == "-":
            opts.positionals.append(arg)
            continue
        if arg == "--":
            only_positionals = True
            continue
        name, eq, inline = arg.partition("=")
        spec = _FLAGS.get(name)
        if spec is None:
            opts.unknown.append(name)
            if not eq and name.startswith("--") and name not in _UNKNOWN_BOOLEAN and i < len(argv) \
                    and not argv[i].startswith("-"):
                i += 1  # its value
            continue
        dest, arity = spec
        if arity == LIST:
            values = raw.setdefault(dest, [])
            raw.setdefault("_flag_" + dest, name)  # the spelling used, for error messages
            if eq:
                values.append(inline)
            else:
                if i >= len(argv) or _is_option(argv[i]):
                    raise UsageError(f"option '{name}' needs a value")
                while i < len(argv) and not _is_option(argv[i]):
                    values.append(argv[i])
                    i += 1
            if name in _IGNORED_LISTS and name not in opts.unknown:
                opts.unknown.append(name)
        elif arity == 1:
            if eq:
                value = inline
            elif i < len(argv) and (not argv[i].startswith("-") or argv[i] == "" or argv[i] == "-"):
                value = argv[i]
                i += 1
            elif dest in ("system_prompt", "append_system_prompt") and i < len(argv):
                value = argv[i]
                i += 1
            else:
                raise UsageError(f"option '{name}' needs a value")
            raw[dest] = value
        else:
            if eq:
                raise UsageError(f"option '{name}' takes no value")
            raw[dest] = True

    for dest, value in raw.items():
        if not dest.startswith("_flag_"):
            setattr(opts, dest, value)
    if opts.output_format is not None and opts.output_format not in OUTPUT_FORMATS:
        raise UsageError(f"--output-format must be one of {', '.join(OUTPUT_FORMATS)} (got '{opts.output_format}')")
    if opts.input_format not in INPUT_FORMATS:
        raise UsageError(f"--input-format must be one of {', '.join(INPUT_FORMATS)} (got '{opts.input_format}')")
    if "max_turns" in raw:
        try:
            opts.max_turns = int(raw["max_turns"])
        except ValueError:
            raise UsageError(f"--max-turns must be a positive integer (got '{raw['max_turns']}')") from None
        if opts.max_turns < 1:
            raise UsageError(f"--max-turns must be a positive integer (got '{raw['max_turns']}')")
    if opts.permission_mode == "manual":
        opts.permission_mode = "default"
    if opts.provider is not None and opts.provider not in PROVIDERS:
        raise UsageError(f"--provider must be one of {', '.join(PROVIDERS)} (got '{opts.provider}')")
    if opts.permission_mode is not None and opts.permission_mode not in MODES:
        raise UsageError(f"--permission-mode must be one of {', '.join(MODES)} (got '{opts.permission_mode}')")
    if opts.skip_permissions:
        opts.permission_mode = "bypassPermissions"
    _rule_lists(opts, raw)
    if opts.permission_prompt_tool is not None and opts.permission_prompt_tool != "stdio":
        raise UsageError(f"--permission-prompt-tool supports only 'stdio' (got '{opts.permission_prompt_tool}')")
    if opts.resume is not None and not opts.resume.strip():
        raise UsageError("--resume needs a session ID")
    if opts.session_id is not None:
        try:
            uuid.UUID(opts.session_id)
        except ValueError:
            raise UsageError(f"--session-id must be a valid UUID (got '{opts.session_id}')") from None
        if opts.resume or opts.continue_latest:
            raise UsageError("--session-id cannot be used with --resume or --continue")
    if opts.input_format == "stream-json" and opts.out_format != "stream-json":
        raise UsageError("--input-format=stream-json requires --output-format=stream-json")
    return opts


_LIST_FLAG_NAMES = {"tools": "--tools", "allowed_tools": "--allowedTools", "disallowed_tools": "--disallowedTools"}


def _rule_lists(opts: Options, raw: dict[str, Any]) -> None:
    """``--tools`` / ``--allowedTools`` / ``--disallowedTools`` values → names and rules (commas and spaces
    outside parentheses also separate them). A value that is not a valid rule or tool name stops the CLI
    (exit 2) naming it: a rule is never dropped, and a prompt after a list flag is never taken silently."""
    if not any(k in raw for k in _LIST_FLAG_NAMES):
        return
    # Lazy: pydantic is not needed for --version / --help.
    from desktop_agent.permissions.rules import split_rule_list
    from desktop_agent.permissions.settings import rule_problem

    for dest, flag in _LIST_FLAG_NAMES.items():
        if dest not in raw:
            continue
        flag = raw.get("_flag_" + dest, flag)
        values = list(raw[dest])
        if dest == "tools" and [v.strip() for v in values] == ["default"]:
            opts.tools = None
            continue
        items = split_rule_list(values)
        for item in items:
            problem = rule_problem(item, tool_name_only=dest == "tools")
            if problem:
                what = "tool name" if dest == "tools" else "permission rule"
                raise UsageError(f"{flag}: {item!r} is not a valid {what} ({problem}). {flag} takes every value "
                                 f"up to the next option: put the prompt before it, or after '--'")
        setattr(opts, dest, items)


# ------------------------------------------------------------------------------------------- output


class Output:
    """Line-delimited JSON (or text) on stdout, flushed per line."""

    def __init__(self, stream: Any = None):
        self.stream = stream or sys.stdout

    def json(self, obj: dict[str, Any]) -> None:
        self.stream.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        self.stream.flush()

    def text(self, text: str) -> None:
        self.stream.write(text if text.endswith("\n") else text + "\n")
        self.stream.flush()


def eprint(message: str) -> None:
    sys.stderr.write(f"{PROG}: {message}\n")
    sys.stderr.flush()


# ------------------------------------------------------------------------------ stdin reading (async)


class StdinReader:
    """Reads stdin lines without blocking the loop: a pipe reader, or a thread for other stdins."""

    def __init__(self, on_line: Callable[[str], None], on_eof: Callable[[], None]):
        self.on_line = on_line
        self.on_eof = on_eof
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        try:
            if sys.stdin.isatty():  # never leave a shared terminal in non-blocking mode
                raise ValueError("tty")
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        except (ValueError, OSError, NotImplementedError):
            await self._run_thread(loop)
            return
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                self.on_line(line.decode("utf-8", errors="replace"))
        finally:
            self.on_eof()

    async def _run_thread(self, loop: asyncio.AbstractEventLoop) -> None:
        done = loop.create_future()

        def work() -> None:
            try:
                for line in sys.stdin:
                    loop.call_soon_threadsafe(self.on_line, line)
            finally:
                loop.call_soon_threadsafe(lambda: done.done() or done.set_result(None))

        threading.Thread(target=work, name="stdin-reader", daemon=True).start()
        try:
            await done
        finally:
            self.on_eof()


# ----------------------------------------------------------------------------- the control protocol


class ControlChannel:
    """Our control requests to the SDK and their responses (``can_use_tool``, ``hook_callback``)."""

    def __init__(self, out: Output, verbose: bool = False):
        self.out = out
        self.verbose = verbose
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.closed = False

    async def request(self, request: dict[str, Any], request_id: str | None = None) -> dict[str, Any]:
        """Send a control_request and await its response; cancelled → ``control_cancel_request``."""
        if self.closed:
            raise ConnectionError("stdin is closed: no one can answer")
        request_id = request_id or str(uuid.uuid4())
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = fut
        self.out.json({"type": "control_request", "request_id": request_id, "request": request})
        try:
            return await fut
        except asyncio.CancelledError:
            if request_id in self.pending:
                self.out.json({"type": "control_cancel_request", "request_id": request_id})
            raise
        finally:
            self.pending.pop(request_id, None)

    def on_response(self, message: dict[str, Any]) -> None:
        response = message.get("response") or {}
        request_id = response.get("request_id")
        fut = self.pending.pop(request_id, None) if isinstance(request_id, str) else None
        if fut is None or fut.done():
            if self.verbose:
                eprint(f"ignoring a control_response for unknown or answered request {request_id}")
            return
        if response.get("subtype") == "error":
            fut.set_exception(RuntimeError(str(response.get("error") or "control request failed")))
        else:
            fut.set_result(response.get("response") or {})

    def close(self) -> None:
        self.closed = True
        for fut in list(self.pending.values()):
            if not fut.done():
                fut.set_exception(ConnectionError("stdin closed before the answer arrived"))
        self.pending.clear()


class StdioPrompter:
    """``PermissionPrompter`` over the control protocol (``--permission-prompt-tool stdio``)."""

    def __init__(self, channel: ControlChannel, on_interrupt: Callable[[], None] | None = None):
        self.channel = channel
        self.on_interrupt = on_interrupt

    async def ask(self, request: Any) -> Any:
        from desktop_agent.core.errors import USER_DENIED_MESSAGE
        from desktop_agent.core.permission import PermissionReply, PermissionUpdate

        payload: dict[str, Any] = {
            "subtype": "can_use_tool",
            "tool_name": request.tool_name,
            "display_name": request.tool_name,
            "input": request.input,
            "permission_suggestions": [s.to_wire() for s in request.suggestions],
            "tool_use_id": request.tool_use_id,
        }
        description = request.description or _describe(request)
        if description:
            payload["description"] = description
        if request.blocked_path:
            payload["blocked_path"] = request.blocked_path
        if request.decision_reason is not None:
            payload["decision_reason"] = request.reason_text
        # Extension fields (issue 15/16): the patch the engine built, so a host's dialog shows exactly it.
        for key in ("file_path", "structured_patch", "original_file", "subcommands"):
            if getattr(request, key, None) is not None:
                payload[key] = getattr(request, key)
        try:
            response = await self.channel.request(payload, request_id=request.request_id)
        except (ConnectionError, RuntimeError) as exc:
            return PermissionReply(behavior="deny", message=f"Permission request failed: {exc}")
        if response.get("behavior") == "allow":
            updates = []
            for raw in response.get("updatedPermissions") or []:
                try:
                    updates.append(PermissionUpdate.model_validate(raw))
                except Exception:
                    pass
            updated = response.get("updatedInput")
            return PermissionReply(behavior="allow", updated_input=updated if isinstance(updated, dict) and updated
                                   else None, updated_permissions=updates, **_rejected_hunks(response))
        if response.get("interrupt") and self.on_interrupt is not None:
            asyncio.get_running_loop().call_soon(self.on_interrupt)
        return PermissionReply(behavior="deny", message=str(response.get("message") or USER_DENIED_MESSAGE),
                               interrupt=bool(response.get("interrupt")))


def _rejected_hunks(response: dict[str, Any]) -> dict[str, Any]:
    """``rejectedHunks`` ([[start, end], …], original lines, 1-based inclusive) and ``totalHunks`` of an
    allow reply that took only some hunks, for the tool_result's sentence; malformed values are ignored."""
    raw = response.get("rejectedHunks")
    if not isinstance(raw, list) or not raw:
        return {}
    ranges = []
    for item in raw:
        if not (isinstance(item, (list, tuple)) and len(item) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in item) and 1 <= item[0] <= item[1]):
            return {}
        ranges.append((item[0], item[1]))
    total = response.get("totalHunks")
    ok = isinstance(total, int) and not isinstance(total, bool) and total >= len(ranges)
    return {"rejected_hunks": ranges, "total_hunks": total if ok else len(ranges)}


def _describe(request: Any) -> str:
    path = request.file_path or (request.input or {}).get("file_path") or (request.input or {}).get("path")
    if isinstance(path, str) and path:
        return os.path.basename(path)
    command = (request.input or {}).get("command")
    return str(command) if isinstance(command, str) else ""


class DenyingPrompter:
    """The prompter of ``-p``: the stdio control channel's when there is one (``inner``), else every ask
    is denied with the ask's own message (the App. A texts)."""

    def __init__(self, inner: Any = None):
        self.inner = inner

    @property
    def waits(self) -> bool:
        """Only a host's prompter waits for an answer (and so raises a ``permission_prompt`` Notification)."""
        return self.inner is not None

    async def ask(self, request: Any) -> Any:
        from desktop_agent.core.permission import PermissionReply

        if self.inner is None:
            return PermissionReply(behavior="deny", message=request.message or "Permission required")
        return await self.inner.ask(request)


def register_sdk_hooks(runner: Any, channel: ControlChannel, hooks: dict[str, Any] | None) -> int:
    """``initialize``'s ``hooks`` → callback hooks of the session's ``HookRunner``.

    Each callback sends a ``hook_callback`` control request and returns the SDK's reply, which is hook
    output JSON (App. B §B.5) that the runner interprets like a command hook's stdout.
    Returns how many callbacks were registered.
    """
    count = 0
    for event, matchers in (hooks or {}).items():
        for m in matchers or []:
            if not isinstance(m, dict):
                continue
            timeout = m.get("timeout")
            for callback_id in m.get("hookCallbackIds") or []:
                runner.register_callback(str(event), m.get("matcher"), _hook_callback(channel, str(callback_id)),
                                         timeout=float(timeout) if timeout else None, name=f"sdk:{callback_id}")
                count += 1
    return count


def _hook_callback(channel: ControlChannel, callback_id: str) -> Callable[..., Any]:
    async def call(payload: dict[str, Any], tool_use_id: str | None) -> dict[str, Any] | None:
        request: dict[str, Any] = {"subtype": "hook_callback", "callback_id": callback_id, "input": payload}
        if tool_use_id:
            request["tool_use_id"] = tool_use_id
        result = await channel.request(request)
        return result if isinstance(result, dict) else None

    call.__name__ = f"sdk_hook_{callback_id}"
    return call


# -------------------------------------------------------------------------------------- headless run


RESULT_SUBTYPES = {
    "completed": "success", "stop_hook_prevented": "success", "hook_stopped": "success",
    "max_turns": "error_max_turns", "aborted_streaming": "error_during_execution",
    "aborted_tools": "error_during_execution", "model_error": "error_during_execution",
    "prompt_blocked": "error_during_execution",
}


# TurnFinished.reason → the ``terminal_reason`` of the result line (the reference's names; ours match but one).
TERMINAL_REASONS = {"prompt_blocked": "hook_stopped"}


class HeadlessRun:
    def __init__(self, opts: Options, out: Output | None = None):
        self.opts = opts
        self.out = out or Output()
        self.session: Any = None
        self.channel = ControlChannel(self.out, verbose=opts.verbose)
        self.prompter = DenyingPrompter(
            StdioPrompter(self.channel, self._interrupt) if opts.permission_prompt_tool == "stdio" else None)
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.last_ok = True
        self.turn_task: asyncio.Task[Any] | None = None
        self.interrupted = False
        self._emitted: set[str] = set()
        self._key_source: str | None = None
        self.freeze_heap = False  # set by run_headless (the program), never for in-process callers

    # ---------------------------------------------------------------------- session

    def create_session(self) -> None:
        from desktop_agent.app.session import AgentSession

        o = self.opts
        self.session = AgentSession.create(
            os.getcwd(), prompter=self.prompter, session_id=o.session_id, resume=o.resume,
            continue_latest=o.continue_latest, permission_mode=o.permission_mode, allowed_tools=o.allowed_tools,
            disallowed_tools=o.disallowed_tools, tools=o.tools, add_dirs=o.add_dirs, max_turns=o.max_turns,
            system_prompt=o.system_prompt, append_system_prompt=o.append_system_prompt,
            trusted=True if o.trust else None, settings_arg=o.settings, model=o.model, mcp_config=o.mcp_config,
            provider=o.provider,
        )
        self.session.include_stream_events = o.include_partial and o.out_format == "stream-json"
        self._fit_prompter()
        if self.freeze_heap:
            _freeze_heap()  # start-up is done: its modules and classes live until exit

    def _fit_prompter(self) -> None:
        """Without ``--permission-prompt-tool stdio`` an ask is denied; but when PermissionRequest hooks exist the
        engine must run them first, which it does only with no prompter at all."""
        if self.prompter.inner is not None or self.session is None:
            return
        self.session.set_prompter(None if self.session.has_hooks("PermissionRequest") else self.prompter)

    def _interrupt(self) -> None:
        self.interrupted = True
        if self.session is not None:
            self.session.interrupt()

    # ---------------------------------------------------------------------- stream-json lines

    def _line(self, obj: dict[str, Any]) -> None:
        if self.opts.out_format == "stream-json":
            self.out.json(obj)

    def init_line(self) -> dict[str, Any]:
        s = self.session
        return {
            "type": "system", "subtype": "init", "cwd": s.cwd, "session_id": s.session_id,
            "tools": [t.name for t in s.tools],
            "mcp_servers": [{"name": m["name"], "status": m["status"]} for m in s.mcp_status()], "model": s.model,
            "permissionMode": s.permission_mode, "slash_commands": ["compact"],
            "apiKeySource": self.api_key_source(),
            "output_style": "default", "agents": [], "skills": [], "plugins": [],
            "claude_code_version": __version__, "uuid": str(uuid.uuid4()),
        }

    def api_key_source(self) -> str:
        """Where the key came from, as the reference names it (``initialize``'s ``account``, ``system``/``init``)."""
        if self._key_source is None:
            from desktop_agent.config import find_api_key

            key, source = find_api_key()
            if not key and os.environ.get("ANTHROPIC_AUTH_TOKEN"):
                source = "ANTHROPIC_AUTH_TOKEN"
            self._key_source = {"credentials": "config file"}.get(source, source)
        return self._key_source

    def _initialize_prompt(self, request: dict[str, Any]) -> None:
        """``initialize``'s ``systemPrompt`` / ``appendSystemPrompt`` (the TypeScript SDK sends them there, not as
        flags): a string or a list of parts, replacing what the flags said."""
        custom, append = request.get("systemPrompt"), request.get("appendSystemPrompt")
        if custom is None and append is None:
            return

        def text(value: Any) -> str:
            return "".join(str(v) for v in value) if isinstance(value, list) else str(value)

        working_dirs, old_custom, old_append = self.session._prompt_args
        self.session._prompt_args = (working_dirs, text(custom) if custom is not None else old_custom,
                                     text(append) if append is not None else old_append)
        self.session.system_prompt = None  # rebuilt for the next request

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
            self._line({"type": "assistant", "message": msg, "parent_tool_use_id": None, "session_id": sid,
                        "uuid": uid})
        elif kind == "user" and not entry.get("isMeta") and not entry.get("isCompactSummary"):
            msg = entry.get("message") or {}
            line = {"type": "user", "message": {"role": "user", "content": msg.get("content")},
                    "parent_tool_use_id": None, "session_id": sid, "uuid": uid}
            if entry.get("toolUseResult") is not None:
                line["tool_use_result"] = entry["toolUseResult"]
            self._line(line)

    # ---------------------------------------------------------------------- one turn

    async def run_compact(self, instructions: str | None) -> dict[str, Any]:
        """``/compact [instructions]``: manual compaction instead of a model turn."""
        s = self.session
        self._line(self.init_line())
        t0 = time.perf_counter()
        subtype, text, errors = "success", "Compacted. ", []
        try:
            event = await s.compact(instructions or None)
            self._line({"type": "system", "subtype": "compact_boundary", "session_id": s.session_id,
                        "uuid": str(uuid.uuid4()),
                        "compact_metadata": {"trigger": "manual", "pre_tokens": event.pre_tokens}})
        except Exception as exc:
            subtype, text, errors = "error_during_execution", "", [f"Error during compaction: {exc}"]
        result: dict[str, Any] = {
            "type": "result", "subtype": subtype, "is_error": subtype != "success",
            "duration_ms": int((time.perf_counter() - t0) * 1000), "duration_api_ms": 0, "num_turns": 0,
            "result": text, "stop_reason": None, "session_id": s.session_id,
            "total_cost_usd": round(s.total_cost_usd, 8), "usage": _usage_dict({}), "modelUsage": {},
            "permission_denials": [], "uuid": str(uuid.uuid4()),
        }
        if errors:
            result["errors"] = errors
        self.last_ok = subtype == "success"
        return result

    async def run_turn(self, content: Any) -> dict[str, Any]:
        from desktop_agent.core.events import (
            AssistantBlock, AssistantMessage, Compacted, ErrorEvent, RetryWaiting, StreamEvent, ToolCallFinished,
            ToolCallStarted, TurnFinished, UserMessage,
        )

        s = self.session
        if isinstance(content, str) and (content.strip() == "/compact" or content.strip().startswith("/compact ")):
            return await self.run_compact(content.strip()[len("/compact"):].strip())
        self.interrupted = False
        denials: list[dict[str, Any]] = []
        inputs: dict[str, Any] = {}
        await s.start_mcp()  # system/init lists the servers' states and tools
        self._line(self.init_line())
        t0 = time.perf_counter()
        finished: Any = None
        errors: list[str] = []
        user_messages = 0
        stream = s.submit(content)
        try:
            async for event in stream:
                if isinstance(event, AssistantBlock):
                    # One ``assistant`` line per finished block, written before the loop starts its call.
                    self._line({"type": "assistant", "message": event.message, "parent_tool_use_id": None,
                                "session_id": s.session_id, "uuid": str(uuid.uuid4())})
                elif isinstance(event, AssistantMessage):
                    self._emitted.add(str(event.message.get("uuid")))  # its blocks went out one by one
                elif isinstance(event, UserMessage):
                    user_messages += 1
                    self._on_entry(event.message)
                elif isinstance(event, Compacted):
                    self._line({"type": "system", "subtype": "compact_boundary", "session_id": s.session_id,
                                "uuid": str(uuid.uuid4()),
                                "compact_metadata": {"trigger": "auto", "pre_tokens": event.pre_tokens}})
                elif isinstance(event, StreamEvent):
                    self._line({"type": "stream_event", "event": event.event, "session_id": s.session_id,
                                "parent_tool_use_id": None, "uuid": str(uuid.uuid4())})
                elif isinstance(event, ErrorEvent):
                    errors.append(event.message)
                    if self.opts.verbose:
                        eprint(f"error: {event.message}")
                elif isinstance(event, RetryWaiting) and self.opts.verbose:
                    eprint(f"retrying in {event.delay_s:.1f}s (attempt {event.attempt}/{event.max_attempts}): "
                           f"{event.error}")
                elif isinstance(event, ToolCallStarted):
                    inputs[event.tool_use_id] = event.input
                elif isinstance(event, ToolCallFinished) and event.denied:
                    denials.append({"tool_name": event.name, "tool_use_id": event.tool_use_id,
                                    "tool_input": inputs.get(event.tool_use_id, {})})
                elif isinstance(event, TurnFinished):
                    finished = event
        finally:
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
        result: dict[str, Any] = {
            "type": "result", "subtype": subtype, "is_error": subtype != "success",
            "duration_ms": int((time.perf_counter() - t0) * 1000),
            "duration_api_ms": int(finished.duration_api_ms) if finished else 0,
            # As the reference counts: the prompt plus each user message the turn wrote (one per tool_result,
            # interruption notices included), not the number of API requests.
            "num_turns": 1 + user_messages if finished else 0,
            "result": (finished.result_text if finished else "") or "",
            "stop_reason": stop_reason, "session_id": s.session_id,
            "terminal_reason": TERMINAL_REASONS.get(reason, reason),
            "total_cost_usd": round(s.total_cost_usd, 8),
            "usage": _usage_dict(finished.usage if finished else {}),
            "modelUsage": {}, "permission_denials": denials,
            "uuid": str(uuid.uuid4()),
        }
        if finished is not None and finished.error:
            errors.append(finished.error)
        if subtype == "error_max_turns" and self.session.max_turns:
            errors.insert(0, f"Reached maximum number of turns ({self.session.max_turns})")  # the reference's text
        if subtype != "success":
            result["errors"] = list(dict.fromkeys(errors)) or [reason]
        self.last_ok = subtype == "success"
        return result

    # ---------------------------------------------------------------------- control requests

    async def handle_control_request(self, message: dict[str, Any]) -> None:
        request_id = message.get("request_id")
        request = message.get("request") or {}
        subtype = request.get("subtype")
        try:
            if subtype == "initialize":
                if request.get("hooks"):
                    register_sdk_hooks(self.session.hook_runner(), self.channel, request["hooks"])
                    self._fit_prompter()
                response: dict[str, Any] = {
                    "commands": [{"name": "compact", "description": "Summarize the conversation so far",
                                  "argumentHint": ""}],
                    "output_style": "default", "available_output_styles": ["default"],
                    "agents": [],
                    "models": [{"value": self.session.model, "displayName": self.session.model,
                                "description": "The session's model"}],
                    "account": {"apiKeySource": self.api_key_source()}, "pid": os.getpid(), "hooks_applied": True,
                }
                self._initialize_prompt(request)
            elif subtype == "interrupt":
                self._interrupt()
                # The reference's reply has no ``response`` key.
                self.out.json({"type": "control_response", "response": {"subtype": "success",
                                                                        "request_id": request_id}})
                return
            elif subtype == "set_permission_mode":
                mode = request.get("mode")
                self.session.set_permission_mode(str(mode))
                response = {"mode": self.session.permission_mode}
                self.out.json({"type": "control_response", "response": {
                    "subtype": "success", "request_id": request_id, "response": response}})
                self._line({"type": "system", "subtype": "status", "status": None,
                            "permissionMode": self.session.permission_mode, "session_id": self.session.session_id,
                            "uuid": str(uuid.uuid4())})
                return
            elif subtype == "set_model":
                model = request.get("model")
                self.session.set_model(str(model) if model else None)
                response = {}
            elif subtype == "mcp_status":
                await self.session.start_mcp()
                response = {"mcpServers": self.session.mcp_status()}
            else:
                raise ValueError(f"Unsupported control request subtype: {subtype}")
        except Exception as exc:
            self.out.json({"type": "control_response", "response": {
                "subtype": "error", "request_id": request_id, "error": str(exc)}})
            return
        self.out.json({"type": "control_response", "response": {
            "subtype": "success", "request_id": request_id, "response": response}})

    def on_line(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        try:
            message = json.loads(line)
        except ValueError:
            eprint(f"ignoring a stdin line that is not JSON: {line[:80]}")
            return
        if not isinstance(message, dict):
            return
        kind = message.get("type")
        if kind == "control_response":
            self.channel.on_response(message)
        elif kind == "control_request":
            asyncio.ensure_future(self.handle_control_request(message))
        elif kind == "user":
            if self.opts.input_format == "stream-json":
                self.queue.put_nowait(message)
        elif kind in ("control_cancel_request", "keep_alive", "update_environment_variables"):
            if kind == "update_environment_variables" and isinstance(message.get("variables"), dict):
                os.environ.update({str(k): str(v) for k, v in message["variables"].items()})
        elif self.opts.verbose:
            eprint(f"ignoring stdin message of type {kind}")

    def on_eof(self) -> None:
        self.channel.close()
        self.queue.put_nowait(None)

    # ---------------------------------------------------------------------- main

    async def main(self, prompt: str | None) -> int:
        self.create_session()
        reader: StdinReader | None = None
        needs_stdin = self.opts.input_format == "stream-json" or self.opts.permission_prompt_tool == "stdio"
        if needs_stdin:
            reader = StdinReader(self.on_line, self.on_eof)
            reader.start()
        try:
            if self.opts.input_format == "stream-json":
                if prompt:
                    await self._run_and_report(prompt)
                while True:
                    message = await self.queue.get()
                    if message is None:
                        break
                    content = (message.get("message") or {}).get("content")
                    if content is None:
                        continue
                    await self._run_and_report(content)
            else:
                await self._run_and_report(prompt or "")
        finally:
            if reader is not None and reader.task is not None and not reader.task.done():
                reader.task.cancel()
            await self.session.end("other")  # SessionEnd hooks, then close (``-p`` exits: reason ``other``)
        return 0 if self.last_ok else 1

    async def _run_and_report(self, content: Any) -> None:
        result = await self.run_turn(content)
        fmt = self.opts.out_format
        if fmt == "stream-json":
            self.out.json(result)
        elif fmt == "json":
            self.out.json(result)
        else:
            if result["is_error"]:
                text = result.get("result") or "; ".join(result.get("errors") or []) or result["subtype"]
                if result["subtype"] == "error_max_turns":
                    text = f"Error: Reached max turns ({self.opts.max_turns})"
                eprint(text)
            else:
                self.out.text(result.get("result") or "")


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


def _freeze_heap() -> None:
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
    except (ConfigError, SessionError) as exc:
        eprint(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130


def main(argv: list[str] | None = None, open_window: Callable[[list[str]], int] | None = None) -> int:
    """The ``desktop-agent`` command: ``-p`` runs headless here; anything else opens the window through
    ``open_window`` (given by ``desktop_agent.__main__``, the one module above both front ends)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        opts = parse_args(args)
    except UsageError as exc:
        eprint(f"error: {exc}")
        return 2
    if opts.version:
        print(f"{__version__} (Desktop Agent)")
        return 0
    if opts.help:
        sys.stdout.write(USAGE)
        return 0
    if opts.headless:
        for flag in opts.unknown:
            eprint(f"warning: unknown option '{flag}' ignored")
        code = run_headless(opts)
        _freeze_heap()  # skip the exit-time collection over every object
        return code
    if open_window is None:
        eprint("desktop-agent: the desktop window is not available from this entry point")
        return 1
    return open_window(args)
