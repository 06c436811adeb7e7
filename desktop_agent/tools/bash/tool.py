"""The Bash tool (SPEC §3.9, App. A "Bash", App. B.1 BashInput and notes): ``BashTool`` and the foreground runner.

The package: ``tool`` (this module), ``background`` (background shells, BashOutput and KillShell, the registry in
``ctx.extras["bash_shells"]``), ``process`` (spawning a shell in its own process group, through the context's
``CommandSandbox``, and killing the whole group), ``output`` (bounded capture, the 30,000-character cap, exit codes).

How a foreground command runs: the command is ``eval``'d and the shell then writes its final ``pwd`` to a temp
file: the working directory persists between calls while it stays inside ``ctx.working_dirs`` (a context modifier
updates ``ctx.cwd``), otherwise it is reset to the original directory and the result says ``Shell cwd was reset to
<dir>``. On timeout, on the turn's abort signal (the user's Stop) and on task cancellation the WHOLE group is killed.

Interrupt behaviour: the default ``block``. Bash watches ``ctx.abort`` itself: on the user's Stop
(or a sibling's error in the streaming executor) it kills the group at once and reports the real
partial output with ``<error>Command was aborted before completion</error>``, so the model learns
what actually ran (a ``cancel`` tool would get REJECT_MESSAGE, which claims nothing happened). An
abort with reason ``interrupt`` (new user input while tools run) does not stop it, as for every
``block`` tool.

Sandbox: every shell, foreground and background, is spawned through ``ctx.sandbox`` (``core.context.CommandSandbox``;
the app sets ``permissions.sandbox_launch.BubblewrapSandbox``: writable only the working dirs and a private TMPDIR,
Read-deny paths masked, no network). The permission decision (``permission_target`` → ``permissions.bash``) gates
``dangerouslyDisableSandbox`` and an unavailable sandbox. The cwd file lives in the sandbox's private TMPDIR.

Output: at most 30,000 characters, keeping head and tail with a note of how much was cut. Exit code
N ≠ 0 → ``is_error`` with ``Exit code N`` and the output; exit code 1 of grep/rg/find/diff/test/
git diff is a normal result (B.1).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import Field

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.core.tool import Tool, ToolInput, ToolResult, ValidationResult, current_call
from desktop_agent.shell.parse import split_command
from desktop_agent.shell.readonly import is_concurrency_safe_command, is_read_only_command
from desktop_agent.tools.bash import process
from desktop_agent.tools.bash.background import start_background_shell
from desktop_agent.tools.bash.output import OutputBuffer, exit_code_is_error, format_output
from desktop_agent.tools.bash.process import (ShellProcess, close_pipes, exit_status, live_groups, pump_stream,
                                              shell_env, terminate_group, terminate_in_background)
from desktop_agent.util.paths import is_inside


DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
NO_OUTPUT = "(Bash completed with no output)"
ABORTED_NOTE = "<error>Command was aborted before completion</error>"
_PROGRESS_INTERVAL_S = 0.1


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
    """Inside a working directory as they are now (the permission state's: one removed no longer counts)."""
    real = os.path.realpath(path)
    for d in ctx.working_dirs:
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
            return bool(is_read_only_command(input.command))
        except Exception:
            return False

    def is_concurrency_safe(self, input: Any) -> bool:
        # Read-only commands may share a batch, except a `cd` (see shell.readonly.is_concurrency_safe_command).
        try:
            return is_concurrency_safe_command(input.command)
        except Exception:
            return False

    def summary(self, input: dict[str, Any]) -> str:
        command = input.get("command") if isinstance(input, dict) else None
        return command if isinstance(command, str) else ""

    async def validate_input(self, input: BashInput, ctx: ToolUseContext) -> ValidationResult:
        problem = command_too_long(input.command)  # before the command analysis parses megabytes
        return ValidationResult.fail(problem, 1) if problem else ValidationResult.ok()

    def permission_target(self, input: BashInput, ctx: ToolUseContext) -> PermissionTarget:
        return PermissionTarget(kind="bash", command=input.command, summary=input.command,
                                disable_sandbox=bool(input.dangerouslyDisableSandbox))

    def permission_extras(self, input: BashInput, ctx: ToolUseContext) -> dict[str, Any]:
        extras: dict[str, Any] = {}
        if input.description:
            extras["description"] = input.description
        try:
            parts = [str(p) for p in split_command(input.command)]
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
    tmpdir = ctx.sandbox.private_tmpdir() if ctx.sandbox is not None else None
    fd, cwd_file = tempfile.mkstemp(prefix="desktop-agent-cwd-", suffix=".txt", dir=tmpdir)
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
        proc = await process.spawn_shell(script, cwd, shell_env(cwd), ctx, command=command,
                                         disable_sandbox=disable_sandbox)
        assert proc.stdout is not None
        reader = asyncio.ensure_future(pump_stream(proc.stdout, sink))
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
            live_groups.discard(proc.pid)
        # Collect what is still in the pipe; a background child holding it open does not keep us waiting.
        finished, _ = await asyncio.wait({reader}, timeout=0.2)
        if not finished:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        close_pipes(proc)
        status = exit_status(proc.returncode)
        output = format_output(buf)
        if interrupted or timed_out:
            run = BashRun(output, status, True, interrupted=interrupted, timed_out=timed_out, timeout_ms=timeout_ms)
            return run, None
        new_cwd = _read_cwd_file(cwd_file)
        return BashRun(output, status, exit_code_is_error(command, status)), new_cwd
    except asyncio.CancelledError:
        if proc is not None and proc.returncode is None:
            terminate_in_background(proc)
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
