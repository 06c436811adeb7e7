"""The Bash tool and its background-shell companions BashOutput and KillShell (SPEC §3.9, App. A "Bash",
App. B.1 BashInput and notes).

Owns ``BashTool``, ``BashOutputTool``, ``KillShellTool``, the shell runner and the background-shell
registry (``ctx.extras["bash_shells"]``).

How a foreground command runs: ``bash -c`` (``/bin/sh`` without bash) through
``asyncio.create_subprocess_exec`` in a process group of its own (``start_new_session=True``), stdin
from /dev/null, stderr merged into stdout so the text keeps its order. The command is ``eval``'d
and the shell then writes its final ``pwd`` to a temp file: the working directory persists between
calls while it stays inside ``ctx.working_dirs`` (a context modifier updates ``ctx.cwd``), otherwise
it is reset to the original directory and the result says ``Shell cwd was reset to <dir>``.
On timeout, on the turn's abort signal (the user's Stop) and on task cancellation the WHOLE group is
killed: SIGTERM, then SIGKILL after a short grace.

Interrupt behaviour: the default ``block``. Bash watches ``ctx.abort`` itself: on the user's Stop
(or a sibling's error in the streaming executor) it kills the group at once and reports the real
partial output with ``<error>Command was aborted before completion</error>``, so the model learns
what actually ran (a ``cancel`` tool would get REJECT_MESSAGE, which claims nothing happened). An
abort with reason ``interrupt`` (new user input while tools run) does not stop it, as for every
``block`` tool.

Sandbox: every shell, foreground and background, is spawned through ``desktop_agent.permissions.sandbox``
(bubblewrap; writable only the working dirs and a private TMPDIR, Read-deny paths masked, no network;
see that module). ``check_permissions`` wraps the static analysis (``bash_commands.check_bash_permission``)
with ``sandbox.gate_decision``: ``dangerouslyDisableSandbox`` always asks, and a sandbox that cannot
start makes every command not proven read-only ask. The cwd file lives in the sandbox's private TMPDIR.

Output: at most 30,000 characters, keeping head and tail with a note of how much was cut. Exit code
N ≠ 0 → ``is_error`` with ``Exit code N`` and the output; exit code 1 of grep/rg/find/diff/test/
git diff is a normal result (B.1).
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import os
import re
import shlex
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from typing import Any, Callable, Literal

from pydantic import Field

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.tool import current_call
from desktop_agent.permissions import bash_commands
from desktop_agent.permissions.paths import is_inside
from desktop_agent.core.permission import PermissionDecision, PermissionTarget
from desktop_agent.permissions.bash import bash_decision
from desktop_agent.permissions import sandbox
from desktop_agent.core.tool import Tool, ToolInput, ToolResult, ValidationResult

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000
NO_OUTPUT = "(Bash completed with no output)"
ABORTED_NOTE = "<error>Command was aborted before completion</error>"
KILL_GRACE_S = 1.0
# Bytes kept from the start and from the end of a command's output (enough for 30,000 characters each).
_HEAD_BYTES = 4 * MAX_OUTPUT_CHARS
_TAIL_BYTES = 4 * MAX_OUTPUT_CHARS
# Unread output a background shell keeps (older output is dropped and counted).
_BACKGROUND_BUFFER_BYTES = 8 * 1024 * 1024
_PROGRESS_INTERVAL_S = 0.1
_PROGRESS_CHARS = 4000
SHELLS_KEY = "bash_shells"


def default_timeout_ms() -> int:
    try:
        return max(1, int(os.environ.get("BASH_DEFAULT_TIMEOUT_MS") or DEFAULT_TIMEOUT_MS))
    except ValueError:
        return DEFAULT_TIMEOUT_MS


def max_timeout_ms() -> int:
    try:
        return max(default_timeout_ms(), int(os.environ.get("BASH_MAX_TIMEOUT_MS") or MAX_TIMEOUT_MS))
    except ValueError:
        return MAX_TIMEOUT_MS


def effective_timeout_ms(timeout: float | None) -> float:
    """The model's timeout (ms), defaulted and clamped to the maximum (B.1)."""
    if timeout is None or timeout <= 0:
        return default_timeout_ms()
    return min(timeout, max_timeout_ms())


@cache
def shell_path() -> str:
    """bash when there is one, else /bin/sh."""
    return shutil.which("bash") or ("/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh")


# ---------------------------------------------------------------------------------------------------------------
# Output accumulation and formatting


class OutputBuffer:
    """A command's output with bounded memory: the first and the last bytes, and how many fell between."""

    def __init__(self, head_bytes: int = _HEAD_BYTES, tail_bytes: int = _TAIL_BYTES):
        self.head = bytearray()
        self.tail = bytearray()
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.total = 0
        self.dropped = 0
        self.newlines = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        room = self.head_bytes - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - self.tail_bytes
            if excess > self.tail_bytes:  # trim in big steps (amortised)
                self.dropped += excess
                del self.tail[:excess]

    def _trim_tail(self) -> bytes:
        excess = len(self.tail) - self.tail_bytes
        tail = bytes(self.tail[excess:]) if excess > 0 else bytes(self.tail)
        dropped = self.dropped + max(0, excess)
        if dropped:  # do not start in the middle of a UTF-8 sequence
            i = 0
            while i < len(tail) and i < 4 and (tail[i] & 0xC0) == 0x80:
                i += 1
            tail = tail[i:]
        return tail

    def parts(self) -> tuple[str, str, int]:
        """(head text, tail text, bytes not kept between them). With nothing dropped the tail is empty."""
        tail = self._trim_tail()
        missing = self.total - len(self.head) - len(tail)
        if not missing:
            return (bytes(self.head) + tail).decode("utf-8", "replace"), "", 0
        return bytes(self.head).decode("utf-8", "replace"), tail.decode("utf-8", "replace"), missing

    def recent_text(self, chars: int = _PROGRESS_CHARS) -> str:
        """The last ``chars`` characters (for progress display)."""
        source = self.tail if self.tail else self.head
        data = bytes(source[-4 * chars:])
        return data.decode("utf-8", "replace")[-chars:]


_LEADING_BLANK_LINES = re.compile(r"^(?:[ \t\r\f\v]*\n)+")


def cap_output(head: str, tail: str = "", missing: int = 0, limit: int = MAX_OUTPUT_CHARS) -> str:
    """At most ``limit`` characters: head and tail kept, the middle replaced by a note of how much was cut.

    ``head`` + ``tail`` is the text, with ``missing`` characters (bytes, for non-ASCII output: an
    estimate) that were not kept between them.
    """
    if not missing and len(head) + len(tail) <= limit:
        return head + tail
    total = len(head) + len(tail) + missing
    # The note's length depends on the number; sizing it with the total keeps the result within the limit.
    keep = limit - len(f"\n\n... [{total} characters truncated] ...\n\n")
    tail_len = min(len(tail), keep - keep // 2) if missing else keep - keep // 2
    if missing:
        kept_tail = tail[len(tail) - tail_len:] if tail_len else ""
        kept_head = head[: keep - len(kept_tail)]
    else:
        kept_head, kept_tail = head[: keep // 2], head[len(head) - tail_len:]
    cut = total - len(kept_head) - len(kept_tail)
    return f"{kept_head}\n\n... [{cut} characters truncated] ...\n\n{kept_tail}"


def clean_output(head: str, tail: str = "", missing: int = 0) -> tuple[str, str]:
    """Leading blank lines and trailing whitespace dropped (as the reference agent)."""
    head = _LEADING_BLANK_LINES.sub("", head)
    if missing:
        return head, tail.rstrip()
    return head.rstrip(), ""


def format_output(buf: OutputBuffer) -> str:
    head, tail, missing = buf.parts()
    head, tail = clean_output(head, tail, missing)
    return cap_output(head, tail, missing)


# Commands whose exit code 1 is not a failure (B.1): no match, files differ, condition false...
_EXIT_ONE_OK = {"grep", "egrep", "fgrep", "rg", "find", "diff", "test", "["}
_OPERATORS = {"|", "||", "&&", ";", "&", "|&", ";;", "(", ")", "\n"}


def last_command_words(command: str) -> list[str]:
    """The words of the last simple command (whose status the shell returns), best effort."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    words: list[str] = []
    for tok in tokens:
        if tok in _OPERATORS or set(tok) <= set(";&|()"):
            words = []
        else:
            words.append(tok)
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    return words


def exit_code_is_error(command: str, code: int) -> bool:
    if code == 0:
        return False
    if code != 1:
        return True
    words = last_command_words(command)
    if not words:
        return True
    base = os.path.basename(words[0])
    if base in _EXIT_ONE_OK:
        return False
    if base == "git":
        i = 1
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] in ("-C", "-c") else 1  # global options, two of them with a value
        return not (i < len(words) and words[i] == "diff")
    return True


# ---------------------------------------------------------------------------------------------------------------
# Process groups


_live_groups: set[int] = set()
_reapers: set[asyncio.Task[Any]] = set()


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _group_alive(pgid: int) -> bool:
    """Does any process of the group still run? Zombies do not count (an orphan's zombie may wait long
    for a reaper in a container), so Linux reads /proc; elsewhere ``killpg(pgid, 0)``. Blocking."""
    if os.path.isdir("/proc/self"):
        try:
            entries = os.listdir("/proc")
        except OSError:
            entries = []
        for entry in entries:
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2:].split()
            if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid:
                return True
        return False
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


async def terminate_group(proc: ShellProcess, grace: float = KILL_GRACE_S) -> None:
    """SIGTERM to the whole group, SIGKILL to whatever is left after ``grace`` seconds, reap the shell."""
    pgid = proc.pid
    if _signal_group(pgid, signal.SIGTERM):
        deadline = time.monotonic() + grace
        await asyncio.sleep(0.01)
        while time.monotonic() < deadline and await asyncio.to_thread(_group_alive, pgid):
            await asyncio.sleep(0.05)
    _signal_group(pgid, signal.SIGKILL)
    try:
        await asyncio.wait_for(proc.wait_exit(), 5)
    except (asyncio.TimeoutError, ProcessLookupError):  # pragma: no cover - defensive
        pass
    _live_groups.discard(pgid)


def _terminate_in_background(proc: ShellProcess) -> None:
    """For the cancellation path: SIGTERM now, SIGKILL later from a task nobody awaits (kept referenced)."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        task = asyncio.get_running_loop().create_task(terminate_group(proc))
    except RuntimeError:  # pragma: no cover - no loop: kill at once
        _signal_group(proc.pid, signal.SIGKILL)
        return
    _reapers.add(task)
    task.add_done_callback(_reapers.discard)


@atexit.register
def _kill_live_groups() -> None:  # pragma: no cover - interpreter exit
    for pgid in list(_live_groups):
        _signal_group(pgid, signal.SIGKILL)


class _ShellProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Stream protocol that also reports the moment the shell exits.

    ``Process.wait()`` (Python 3.11) returns only once every pipe is closed too, so a background
    child still holding stdout (``server &``) would keep a finished command "running".
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop):
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


class ShellProcess(asyncio.subprocess.Process):
    """An asyncio ``Process`` whose ``exited`` future resolves when the shell exits (pipes or not)."""

    exited: asyncio.Future[None]

    async def wait_exit(self) -> int:
        await asyncio.shield(self.exited)
        return self.returncode if self.returncode is not None else -1


async def spawn_shell(script: str, cwd: str, env: dict[str, str] | None = None, ctx: ToolUseContext | None = None,
                      *, command: str = "", disable_sandbox: bool = False) -> ShellProcess:
    """``<shell> -c script`` in a new session (its own process group), stdin /dev/null, stderr into stdout.

    With ``ctx``, the shell starts through the sandbox (``sandbox.plan_launch``: bubblewrap around it, the
    private TMPDIR, git neutralised in untrusted folders); without, it starts as is (tests of the runner)."""
    loop = asyncio.get_running_loop()
    argv = [shell_path(), "-c", script]
    if ctx is not None:
        plan = sandbox.plan_launch(argv, cwd, dict(env if env is not None else os.environ), ctx, command=command,
                                   disable_sandbox=disable_sandbox)
        argv, env = plan.argv, plan.env
    transport, protocol = await loop.subprocess_exec(
        lambda: _ShellProtocol(limit=2 ** 16, loop=loop), *argv, cwd=cwd, env=env,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    proc = ShellProcess(transport, protocol, loop)
    proc.exited = protocol.exited
    _live_groups.add(proc.pid)
    return proc


def _shell_env(cwd: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PWD"] = cwd  # so `pwd` reports the logical path (symlinked dirs keep their name)
    env.pop("OLDPWD", None)
    return env


def _close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Stop reading a pipe that a left-over background child of the command still holds."""
    transport = getattr(proc, "_transport", None)
    if transport is not None and proc.returncode is not None:
        try:
            transport.close()
        except Exception:  # pragma: no cover - best effort
            pass


async def _pump(stream: asyncio.StreamReader, sink: Callable[[bytes], None]) -> None:
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return
        sink(chunk)


def _exit_status(returncode: int | None) -> int:
    if returncode is None:
        return -1
    return 128 - returncode if returncode < 0 else returncode  # killed by signal N → 128+N, like a shell


# ---------------------------------------------------------------------------------------------------------------
# Bash


class BashInput(ToolInput):
    command: str = Field(description="The command to execute")
    timeout: float | None = Field(None, description=f"Optional timeout in milliseconds (max {MAX_TIMEOUT_MS})")
    description: str | None = Field(
        None, description="Clear, concise description of what this command does in 5-10 words, in active voice. "
                          "Examples:\nInput: ls\nOutput: List files in current directory\n\nInput: git status\n"
                          "Output: Show working tree status\n\nInput: npm install\nOutput: Install package "
                          "dependencies\n\nInput: mkdir foo\nOutput: Create directory 'foo'")
    run_in_background: bool | None = Field(
        None, description="Set to true to run this command in the background. Use BashOutput to read the output "
                          "later.")
    dangerouslyDisableSandbox: bool | None = Field(
        None, description="Set this to true to dangerously override sandbox mode and run commands without "
                          "sandboxing.")


def _in_working_dirs(path: str, ctx: ToolUseContext) -> bool:
    """Inside the original cwd or an added directory (also those the permission context added)."""
    real = os.path.realpath(path)
    dirs = list(ctx.working_dirs)
    for d in getattr(ctx.permission_context, "working_dirs", None) or []:
        if d not in dirs:
            dirs.append(d)
    for d in dirs:
        if is_inside(path, d) or is_inside(real, os.path.realpath(d)):
            return True
    return False


def _set_cwd(new_cwd: str) -> Callable[[ToolUseContext], ToolUseContext]:
    def modifier(c: ToolUseContext) -> ToolUseContext:
        c.cwd = new_cwd  # in place: every holder of this session's context sees it
        return c

    return modifier


@dataclass
class BashRun:
    """The outcome of one foreground command (the tool's ``data``)."""

    output: str
    exit_code: int
    is_error: bool
    interrupted: bool = False
    timed_out: bool = False
    timeout_ms: float = 0
    cwd_reset_to: str | None = None
    background_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"stdout": self.output, "exitCode": self.exit_code, "isError": self.is_error,
                "interrupted": self.interrupted, "timedOut": self.timed_out, "cwdResetTo": self.cwd_reset_to,
                "backgroundTaskId": self.background_id}


def _format_seconds(ms: float) -> str:
    s = ms / 1000
    return f"{s:g}s"


def format_bash_result(data: dict[str, Any]) -> tuple[str, bool]:
    """The model-facing text and is_error (App. A: ``hi``; ``Exit code 2\\nout\\nerr``; no output →
    ``(Bash completed with no output)``)."""
    if data.get("backgroundTaskId"):
        return f"Command running in background with ID: {data['backgroundTaskId']}", False
    parts: list[str] = []
    output = data.get("stdout") or ""
    if output:
        parts.append(output)
    if data.get("timedOut"):
        parts.append(f"Command timed out after {_format_seconds(data.get('timeoutMs') or 0)} and was killed. "
                     "Use a larger timeout, or run_in_background for long-running commands.")
    elif data.get("interrupted"):
        parts.append(ABORTED_NOTE)
    if data.get("cwdResetTo"):
        parts.append(f"Shell cwd was reset to {data['cwdResetTo']}")
    is_error = bool(data.get("isError"))
    if is_error and not data.get("timedOut") and not data.get("interrupted"):
        parts.insert(0, f"Exit code {data.get('exitCode')}")
    text = "\n".join(parts)
    return (text or NO_OUTPUT), is_error


# Linux passes ``bash -c <command>`` as one argv string, capped at 32 pages (MAX_ARG_STRLEN).
MAX_COMMAND_BYTES = 131_072 - 4096


def command_too_long(command: str) -> str | None:
    size = len(command.encode("utf-8", "surrogatepass"))
    if size <= MAX_COMMAND_BYTES:
        return None
    return (f"The command is {size} bytes long; a command can be at most {MAX_COMMAND_BYTES} bytes. "
            "Write long scripts or data to a file first and run that.")


class BashTool(Tool):
    name = "Bash"
    input_model = BashInput
    # Our own cap (30,000 + a few short notes) stays below this, so the generic persistence never applies.
    max_result_size_chars = 40_000

    def is_read_only(self, input: Any) -> bool:
        try:
            return bool(bash_commands.is_read_only_command(input.command))
        except Exception:
            return False

    def is_concurrency_safe(self, input: Any) -> bool:
        # Read-only commands may share a batch — except a `cd`, which changes the shell's cwd for later
        # calls and must run in order so its context change is applied (the streaming executor applies
        # context modifiers only for unsafe tools).
        if not self.is_read_only(input):
            return False
        parsed = bash_commands.parse_command(input.command)
        return not any(cmd.argv[:1] == ["cd"] for cmd in parsed.commands)

    def summary(self, input: dict[str, Any]) -> str:
        command = input.get("command") if isinstance(input, dict) else None
        return command if isinstance(command, str) else ""

    async def validate_input(self, input: BashInput, ctx: ToolUseContext) -> ValidationResult:
        problem = command_too_long(input.command)  # before the command analysis parses megabytes
        return ValidationResult.fail(problem, 1) if problem else ValidationResult.ok()

    def permission_target(self, input: BashInput, ctx: ToolUseContext) -> PermissionTarget:
        return PermissionTarget(kind="bash", command=input.command, summary=input.command,
                                disable_sandbox=bool(input.dangerouslyDisableSandbox))

    async def check_permissions(self, input: BashInput, ctx: ToolUseContext) -> PermissionDecision:
        return bash_decision(self.permission_target(input, ctx), input.model_dump(exclude_unset=True), ctx)

    def permission_extras(self, input: BashInput, ctx: ToolUseContext) -> dict[str, Any]:
        extras: dict[str, Any] = {}
        if input.description:
            extras["description"] = input.description
        split = getattr(bash_commands, "split_command", None)
        if split is not None:
            try:
                parts = [str(p) for p in split(input.command)]
                if len(parts) > 1:
                    extras["subcommands"] = parts
            except Exception:
                pass
        return extras

    async def call(self, input: BashInput, ctx: ToolUseContext) -> ToolResult:
        cwd = ctx.cwd if os.path.isdir(ctx.cwd) else ctx.original_cwd
        if input.run_in_background:
            shell = await start_background_shell(input.command, cwd, ctx, input.description,
                                                 disable_sandbox=bool(input.dangerouslyDisableSandbox))
            return ToolResult(data={"stdout": "", "exitCode": 0, "isError": False, "backgroundTaskId": shell.id})
        run, new_cwd = await run_foreground(input.command, cwd, ctx, effective_timeout_ms(input.timeout),
                                            disable_sandbox=bool(input.dangerouslyDisableSandbox))
        final = new_cwd or cwd
        if cwd != ctx.cwd or not _in_working_dirs(final, ctx):
            # The old cwd had vanished, or the command left the working dirs: back to the original.
            run.cwd_reset_to = ctx.original_cwd
            if not _in_working_dirs(final, ctx):
                final = ctx.original_cwd
        modifier = _set_cwd(final) if final != ctx.cwd else None
        data = run.to_dict()
        data["timeoutMs"] = run.timeout_ms
        return ToolResult(data=data, context_modifier=modifier)

    def map_result_to_block(self, data: Any, tool_use_id: str) -> dict[str, Any]:
        text, is_error = format_bash_result(data)
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}
        if is_error:
            block["is_error"] = True
        return block


async def run_foreground(command: str, cwd: str, ctx: ToolUseContext, timeout_ms: float,
                         disable_sandbox: bool = False) -> tuple[BashRun, str | None]:
    """Run ``command`` to completion, timeout or abort. Returns the run and the shell's final cwd (or None)."""
    fd, cwd_file = tempfile.mkstemp(prefix="desktop-agent-cwd-", suffix=".txt", dir=sandbox.private_tmpdir())
    os.close(fd)
    script = (f"eval {shlex.quote(command)}\n__da_status=$?\n"
              f"pwd -L >| {shlex.quote(cwd_file)} 2>/dev/null\nexit $__da_status\n")
    call_info = current_call()
    tool_use_id = call_info.tool_use_id if call_info else ""
    buf = OutputBuffer()
    last_progress = 0.0
    started = time.monotonic()

    loop = asyncio.get_running_loop()
    pending: asyncio.TimerHandle | None = None

    def emit_progress() -> None:
        nonlocal last_progress, pending
        pending = None
        last_progress = time.monotonic()
        try:
            ctx.on_progress(tool_use_id, {"type": "bash_progress", "output": buf.recent_text(),  # type: ignore[misc]
                                          "total_bytes": buf.total, "total_lines": buf.newlines,
                                          "elapsed_s": round(last_progress - started, 3)})
        except Exception:  # a UI callback must not break the command
            pass

    def sink(chunk: bytes) -> None:
        nonlocal pending
        buf.feed(chunk)
        if ctx.on_progress is None or not tool_use_id or pending is not None:
            return
        wait = _PROGRESS_INTERVAL_S - (time.monotonic() - last_progress)
        if wait <= 0:
            emit_progress()
        else:  # throttled, but the latest output is always sent
            pending = loop.call_later(wait, emit_progress)

    proc: ShellProcess | None = None
    reader: asyncio.Task[None] | None = None
    abort_task: asyncio.Task[None] | None = None
    try:
        proc = await spawn_shell(script, cwd, _shell_env(cwd), ctx, command=command, disable_sandbox=disable_sandbox)
        assert proc.stdout is not None
        reader = asyncio.ensure_future(_pump(proc.stdout, sink))
        waiter = asyncio.ensure_future(proc.wait_exit())
        abort_task = asyncio.ensure_future(ctx.abort.wait())
        deadline = loop.time() + timeout_ms / 1000
        done, _ = await asyncio.wait({waiter, abort_task}, timeout=timeout_ms / 1000,
                                     return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done and abort_task in done and ctx.abort.reason == "interrupt":
            # New user input while a "block" tool runs does not stop it (SPEC §6): finish or time out.
            done, _ = await asyncio.wait({waiter}, timeout=max(0.0, deadline - loop.time()))
        interrupted = timed_out = False
        if waiter not in done:
            interrupted = ctx.abort.aborted and ctx.abort.reason != "interrupt"
            timed_out = not interrupted
            await terminate_group(proc)
        else:
            waiter.result()
            _live_groups.discard(proc.pid)
        # Collect what is still in the pipe; a background child holding it open does not keep us waiting.
        finished, _ = await asyncio.wait({reader}, timeout=0.2)
        if not finished:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        _close_pipes(proc)
        status = _exit_status(proc.returncode)
        output = format_output(buf)
        if interrupted or timed_out:
            run = BashRun(output, status, True, interrupted=interrupted, timed_out=timed_out, timeout_ms=timeout_ms)
            return run, None
        new_cwd = _read_cwd_file(cwd_file)
        return BashRun(output, status, exit_code_is_error(command, status)), new_cwd
    except asyncio.CancelledError:
        if proc is not None and proc.returncode is None:
            _terminate_in_background(proc)
        if reader is not None:
            reader.cancel()
        raise
    finally:
        if pending is not None:
            pending.cancel()
        if abort_task is not None:
            abort_task.cancel()
        try:
            os.unlink(cwd_file)
        except OSError:
            pass


def _read_cwd_file(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            value = fh.read().strip("\n")
    except OSError:
        return None
    return value if value and os.path.isabs(value) else None


# ---------------------------------------------------------------------------------------------------------------
# Background shells

_shell_ids = itertools.count(1)


@dataclass
class BackgroundShell:
    id: str
    command: str
    description: str | None
    proc: ShellProcess
    started_at: float = field(default_factory=time.time)
    status: Literal["running", "completed", "killed", "failed"] = "running"
    exit_code: int | None = None
    unread: bytearray = field(default_factory=bytearray)
    unread_dropped: int = 0
    total_bytes: int = 0
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)

    def feed(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        self.unread += chunk
        excess = len(self.unread) - _BACKGROUND_BUFFER_BYTES
        if excess > 0:
            del self.unread[:excess]
            self.unread_dropped += excess

    def take_unread(self) -> tuple[str, int]:
        data, dropped = bytes(self.unread), self.unread_dropped
        self.unread.clear()
        self.unread_dropped = 0
        return data.decode("utf-8", "replace"), dropped

    async def kill(self) -> None:
        if self.status == "running":
            self.status = "killed"
        await terminate_group(self.proc)
        self.exit_code = _exit_status(self.proc.returncode)
        for task in self.tasks:
            if not task.done():
                task.cancel()
        _close_pipes(self.proc)


def background_shells(ctx: ToolUseContext) -> dict[str, BackgroundShell]:
    shells = ctx.extras.get(SHELLS_KEY)
    if shells is None:
        shells = ctx.extras[SHELLS_KEY] = {}
    return shells


async def start_background_shell(command: str, cwd: str, ctx: ToolUseContext, description: str | None = None,
                                 disable_sandbox: bool = False) -> BackgroundShell:
    proc = await spawn_shell(command, cwd, _shell_env(cwd), ctx, command=command, disable_sandbox=disable_sandbox)
    shell = BackgroundShell(id=f"bash_{next(_shell_ids)}", command=command, description=description, proc=proc)
    assert proc.stdout is not None

    async def wait() -> None:
        code = await proc.wait_exit()
        _live_groups.discard(proc.pid)
        shell.exit_code = _exit_status(code)
        if shell.status == "running":
            shell.status = "completed"

    shell.tasks = [asyncio.ensure_future(_pump(proc.stdout, shell.feed)), asyncio.ensure_future(wait())]
    background_shells(ctx)[shell.id] = shell
    return shell


async def kill_background_shells(ctx: ToolUseContext) -> None:
    """Kill every running background shell of a session (call at session end)."""
    shells = list(background_shells(ctx).values())
    await asyncio.gather(*(s.kill() for s in shells if s.proc.returncode is None), return_exceptions=True)


class BashOutputInput(ToolInput):
    bash_id: str = Field(description="The ID of the background shell to retrieve output from")
    filter: str | None = Field(
        None, description="Optional regular expression to filter the output lines. Only lines matching this regex "
                          "will be included in the result. Any lines that do not match will no longer be available "
                          "to read.")


class BashOutputTool(Tool):
    name = "BashOutput"
    input_model = BashOutputInput
    max_result_size_chars = 40_000

    def is_concurrency_safe(self, input: Any) -> bool:
        return True

    def is_read_only(self, input: Any) -> bool:
        return True

    def summary(self, input: dict[str, Any]) -> str:
        value = input.get("bash_id") if isinstance(input, dict) else None
        return value if isinstance(value, str) else ""

    async def validate_input(self, input: BashOutputInput, ctx: ToolUseContext) -> ValidationResult:
        if input.bash_id not in background_shells(ctx):
            return ValidationResult.fail(f"No shell found with ID: {input.bash_id}", 1)
        if input.filter is not None:
            try:
                re.compile(input.filter)
            except re.error as exc:
                return ValidationResult.fail(f"Invalid regular expression \"{input.filter}\": {exc}", 2)
        return ValidationResult.ok()

    async def call(self, input: BashOutputInput, ctx: ToolUseContext) -> ToolResult:
        shell = background_shells(ctx)[input.bash_id]
        await asyncio.sleep(0)  # let a just-finished shell's reader deliver
        if shell.proc.returncode is not None:
            # The shell has exited: give the reader a moment to drain the pipe so no output is lost.
            pump = shell.tasks[0] if shell.tasks else None
            if pump is not None and not pump.done():
                await asyncio.wait({pump}, timeout=0.2)
            waiter = shell.tasks[1] if len(shell.tasks) > 1 else None
            if waiter is not None and not waiter.done():
                await asyncio.wait({waiter}, timeout=0.2)
        text, dropped = shell.take_unread()
        if input.filter is not None:
            rx = re.compile(input.filter)
            text = "\n".join(line for line in text.split("\n") if rx.search(line))
        output = cap_output(clean_output(text)[0])
        if dropped:
            output = f"[{dropped} bytes of earlier output were dropped]\n{output}".rstrip()
        data = {"shellId": shell.id, "command": shell.command, "status": shell.status, "exitCode": shell.exit_code,
                "stdout": output, "filter": input.filter,
                "timestamp": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")}
        return ToolResult(data=data)

    def map_result_to_block(self, data: Any, tool_use_id: str) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": format_bash_output(data)}


def format_bash_output(data: dict[str, Any]) -> str:
    parts = [f"<status>{data['status']}</status>"]
    if data.get("exitCode") is not None:
        parts.append(f"<exit_code>{data['exitCode']}</exit_code>")
    if (data.get("stdout") or "").strip():
        parts.append(f"<stdout>\n{data['stdout'].rstrip()}\n</stdout>")
    parts.append(f"<timestamp>{data['timestamp']}</timestamp>")
    return "\n\n".join(parts)


class KillShellInput(ToolInput):
    shell_id: str = Field(description="The ID of the background shell to kill")


class KillShellTool(Tool):
    name = "KillShell"
    input_model = KillShellInput

    def summary(self, input: dict[str, Any]) -> str:
        value = input.get("shell_id") if isinstance(input, dict) else None
        return value if isinstance(value, str) else ""

    async def validate_input(self, input: KillShellInput, ctx: ToolUseContext) -> ValidationResult:
        shell = background_shells(ctx).get(input.shell_id)
        if shell is None:
            return ValidationResult.fail(f"No shell found with ID: {input.shell_id}", 1)
        if shell.status != "running" or shell.proc.returncode is not None:
            return ValidationResult.fail(
                f"Shell {input.shell_id} is not running, so cannot be killed (status: {shell.status})", 2)
        return ValidationResult.ok()

    async def call(self, input: KillShellInput, ctx: ToolUseContext) -> ToolResult:
        shell = background_shells(ctx)[input.shell_id]
        await shell.kill()
        return ToolResult(data={"message": f"Successfully killed shell: {shell.id} ({shell.command})",
                                "shell_id": shell.id})

    def map_result_to_block(self, data: Any, tool_use_id: str) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": data["message"]}
