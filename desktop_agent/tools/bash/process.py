"""Shell processes: ``spawn_shell`` (``bash -c``, ``/bin/sh`` without bash, through
``asyncio.create_subprocess_exec`` in a process group of its own, ``start_new_session=True``; stdin from
/dev/null, stderr merged into stdout so the text keeps its order; through the context's ``CommandSandbox`` when it
has one), and killing the WHOLE group on timeout, Stop and cancellation: SIGTERM, then SIGKILL after a short grace.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import signal
import time
from functools import cache
from typing import Any, Callable

from desktop_agent.core.context import ToolUseContext


KILL_GRACE_S = 1.0


@cache
def shell_path() -> str:
    """bash when there is one, else /bin/sh."""
    return shutil.which("bash") or ("/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh")


live_groups: set[int] = set()
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
    live_groups.discard(pgid)


def terminate_in_background(proc: ShellProcess) -> None:
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
    for pgid in list(live_groups):
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

    With a ``ctx`` that has a sandbox, the shell starts through it (``CommandSandbox.plan_launch``: bubblewrap
    around it, the private TMPDIR, git neutralised in untrusted folders); otherwise it starts as is."""
    loop = asyncio.get_running_loop()
    argv = [shell_path(), "-c", script]
    if ctx is not None and ctx.sandbox is not None:  # on a worker thread: the policy may ask git, probe bwrap
        sandbox, base_env = ctx.sandbox, dict(env if env is not None else os.environ)
        plan = await asyncio.to_thread(lambda: sandbox.plan_launch(argv, cwd, base_env, ctx, command=command,
                                                                   disable_sandbox=disable_sandbox))
        argv, env = plan.argv, plan.env
        release = getattr(plan, "release", None)  # the sandbox's per-command placeholders (util.placeholders)
    else:
        release = None
    try:
        transport, protocol = await loop.subprocess_exec(
            lambda: _ShellProtocol(limit=2 ** 16, loop=loop), *argv, cwd=cwd, env=env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    except BaseException:
        if release is not None:
            loop.run_in_executor(None, release)
        raise
    proc = ShellProcess(transport, protocol, loop)
    proc.exited = protocol.exited if release is None else _after_exit(loop, protocol.exited, release)
    live_groups.add(proc.pid)
    return proc


def _after_exit(loop: asyncio.AbstractEventLoop, exited: asyncio.Future[None],
                release: Callable[[], object]) -> asyncio.Future[None]:
    """A future that resolves once the shell has exited *and* ``release`` (the sandbox's clean-up of what it made
    for this command: placeholders in the person's folder) has run on a worker thread, so the tool result comes
    after the folder is as it was."""
    done: asyncio.Future[None] = loop.create_future()

    def finished(fut: asyncio.Future[object]) -> None:
        if not fut.cancelled():
            fut.exception()  # retrieved: a failed clean-up leaves entries, never the call hanging
        if not done.done():
            done.set_result(None)

    def on_exit(_: asyncio.Future[None]) -> None:
        try:
            loop.run_in_executor(None, release).add_done_callback(finished)
        except RuntimeError:  # the loop's executor is shut down: the exit-time clean-up takes it
            finished(exited)  # type: ignore[arg-type]

    exited.add_done_callback(on_exit)
    return done


def shell_env(cwd: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PWD"] = cwd  # so `pwd` reports the logical path (symlinked dirs keep their name)
    env.pop("OLDPWD", None)
    return env


def close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Stop reading a pipe that a left-over background child of the command still holds."""
    transport = getattr(proc, "_transport", None)
    if transport is not None and proc.returncode is not None:
        try:
            transport.close()
        except Exception:  # pragma: no cover - best effort
            pass


async def pump_stream(stream: asyncio.StreamReader, sink: Callable[[bytes], None]) -> None:
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return
        sink(chunk)


def exit_status(returncode: int | None) -> int:
    if returncode is None:
        return -1
    return 128 - returncode if returncode < 0 else returncode  # killed by signal N → 128+N, like a shell
