"""Background shells (``run_in_background``) and their companions BashOutput and KillShell (SPEC §3.9, App. A).

Owns ``BackgroundShell`` (unread output kept up to 8 MB, older output dropped and counted), the per-session
registry ``ctx.extras["bash_shells"]`` (``background_shells``), ``start_background_shell``,
``kill_background_shells`` (session end), ``BashOutputTool`` and ``KillShellTool``.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import Field

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.core.tool import Tool, ToolInput, ToolResult, ValidationResult
from desktop_agent.tools.bash import process
from desktop_agent.tools.bash.output import cap_output, clean_output
from desktop_agent.tools.bash.process import (ShellProcess, close_pipes, exit_status, live_groups, pump_stream,
                                              shell_env, terminate_group)


# Unread output a background shell keeps (older output is dropped and counted).
_BACKGROUND_BUFFER_BYTES = 8 * 1024 * 1024
SHELLS_KEY = "bash_shells"
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
        self.exit_code = exit_status(self.proc.returncode)
        for task in self.tasks:
            if not task.done():
                task.cancel()
        close_pipes(self.proc)


def background_shells(ctx: ToolUseContext) -> dict[str, BackgroundShell]:
    shells = ctx.extras.get(SHELLS_KEY)
    if shells is None:
        shells = ctx.extras[SHELLS_KEY] = {}
    return shells


async def start_background_shell(command: str, cwd: str, ctx: ToolUseContext, description: str | None = None,
                                 disable_sandbox: bool = False) -> BackgroundShell:
    proc = await process.spawn_shell(command, cwd, shell_env(cwd), ctx, command=command,
                                     disable_sandbox=disable_sandbox)
    shell = BackgroundShell(id=f"bash_{next(_shell_ids)}", command=command, description=description, proc=proc)
    assert proc.stdout is not None

    async def wait() -> None:
        code = await proc.wait_exit()
        live_groups.discard(proc.pid)
        shell.exit_code = exit_status(code)
        if shell.status == "running":
            shell.status = "completed"

    shell.tasks = [asyncio.ensure_future(pump_stream(proc.stdout, shell.feed)), asyncio.ensure_future(wait())]
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

    def permission_target(self, input: BashOutputInput, ctx: ToolUseContext) -> PermissionTarget:
        # Reads the output of a shell this session started (its command was decided then): nothing new is touched.
        return PermissionTarget(kind="none", summary=input.bash_id)

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

    def permission_target(self, input: KillShellInput, ctx: ToolUseContext) -> PermissionTarget:
        # Stops a shell this session started (validate_input refuses any other): nothing the policy guards.
        return PermissionTarget(kind="none", summary=input.shell_id)

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
