"""Locating and running ripgrep for Grep and Glob (ENVIRONMENT §4).

Owns ``find_rg`` (``rg`` next to ``sys.executable`` first — the pip ``ripgrep`` wheel puts it in the
venv's ``bin`` — then ``shutil.which("rg")``), ``RipgrepNotFound`` with the sentence the model and
the user see, ``run_rg`` and the newest-first ordering shared by Grep and Glob (``NewestFirst``).

``run_rg`` starts rg as an asyncio subprocess (stdin /dev/null) and reads its stdout on a worker
thread, optionally handing complete lines to a consumer there while rg still searches (stat'ing
paths for the mtime order overlaps the search). The loop only awaits; rg is killed on cancellation,
on timeout and at the output cap.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Callable

RG_NOT_FOUND_MESSAGE = (
    "ripgrep (rg) is not installed or could not be found: looked next to the Python executable and on PATH. "
    "Install it (pip install ripgrep, or the system package manager, e.g. apt-get install ripgrep) and try again."
)

# ripgrep exits 0 on matches, 1 on none, 2 on errors (possibly with partial results).
RG_TIMEOUT_S = 60.0
# Beyond this much output the search is stopped and what was read is used (Grep caps results anyway).
RG_MAX_OUTPUT_BYTES = 64 * 1024 * 1024
_HAND_OFF_BYTES = 64 * 1024


class RipgrepNotFound(RuntimeError):
    def __init__(self) -> None:
        super().__init__(RG_NOT_FOUND_MESSAGE)


class RipgrepError(RuntimeError):
    """rg reported an error and produced no results (invalid regex, unknown --type...): its diagnostic."""


@cache
def find_rg() -> str | None:
    """The ripgrep binary: next to ``sys.executable``, then on PATH. ``find_rg.cache_clear()`` to look again."""
    candidates = []
    if sys.executable:
        exe_dir = os.path.dirname(sys.executable)
        candidates.append(os.path.join(exe_dir, "rg.exe" if os.name == "nt" else "rg"))
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("rg")


def rg_path() -> str:
    path = find_rg()
    if path is None:
        raise RipgrepNotFound()
    return path


@dataclass
class RgResult:
    returncode: int
    stdout: str
    stderr: str
    truncated: bool = False  # output cap reached; the search was stopped
    output_bytes: int = 0

    @property
    def diagnostic(self) -> str:
        return self.stderr.strip()


async def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass
    try:
        await asyncio.shield(proc.wait())
    except Exception:  # pragma: no cover - best effort
        pass


def _read_pipe(fd: int, consumer: Callable[[str], None] | None, max_bytes: int,
               stop: Callable[[], None]) -> tuple[bytes, int, bool]:
    """Worker thread: read rg's stdout to EOF (blocking reads, no event-loop wake-up per write).

    With a ``consumer``, complete lines are decoded and handed to it in batches of about 64 KB as
    they arrive, so its work overlaps the search. Returns (output if no consumer, bytes read, capped).
    """
    chunks: list[bytes] = []
    pending = bytearray()
    size = 0
    capped = False
    read = os.read
    try:
        while True:
            chunk = read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if consumer is None:
                chunks.append(chunk)
            else:
                pending += chunk
                if len(pending) >= _HAND_OFF_BYTES:
                    cut = pending.rfind(b"\n")
                    if cut >= 0:
                        consumer(bytes(pending[: cut + 1]).decode("utf-8", "replace"))
                        del pending[: cut + 1]
            if size >= max_bytes:
                capped = True
                stop()
                break
    finally:
        os.close(fd)
    if consumer is not None:
        if pending and not capped:  # the rest, perhaps a last line without its newline
            consumer(bytes(pending).decode("utf-8", "replace") + ("" if pending.endswith(b"\n") else "\n"))
        return b"", size, capped
    out = b"".join(chunks)
    if capped:  # drop the partial last line
        cut = out.rfind(b"\n")
        out = out[: cut + 1] if cut >= 0 else b""
    return out, size, capped


@cache
def _readers() -> ThreadPoolExecutor:
    """Threads that read rg's output (own pool: a long search never starves the loop's default executor)."""
    return ThreadPoolExecutor(max_workers=16, thread_name_prefix="rg-reader")


def _grow_pipe(fd: int) -> None:
    """Linux: a 1 MB pipe buffer, so rg rarely waits for the reader."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (OSError, ImportError, ValueError):
        pass


async def run_rg(
    args: list[str],
    cwd: str,
    *,
    timeout: float = RG_TIMEOUT_S,
    max_output_bytes: int = RG_MAX_OUTPUT_BYTES,
    consumer: Callable[[str], None] | None = None,
) -> RgResult:
    """Run ``rg <args>`` in ``cwd``. Raises ``RipgrepNotFound``; on timeout a ``RipgrepError``.

    rg is an asyncio subprocess; its stdout is read on a worker thread (the loop only awaits). Output
    is decoded as UTF-8 (invalid bytes replaced). With ``consumer``, complete lines are handed to it on
    that thread *while rg is still searching*, in order, so per-line work (stat, grouping) overlaps the
    search and never runs on the loop; the result's ``stdout`` is then empty. Cancellation kills rg.
    """
    rg = rg_path()
    loop = asyncio.get_running_loop()
    rfd, wfd = os.pipe()
    try:
        _grow_pipe(wfd)
        proc = await asyncio.create_subprocess_exec(
            rg, *args, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, stdout=wfd, stderr=asyncio.subprocess.PIPE,
        )
    except BaseException:
        os.close(rfd)
        raise
    finally:
        os.close(wfd)
    assert proc.stderr is not None

    def stop() -> None:  # from the reader thread, on the output cap
        loop.call_soon_threadsafe(lambda: proc.returncode is None and proc.kill())

    reader = loop.run_in_executor(_readers(), _read_pipe, rfd, consumer, max_output_bytes, stop)
    err_task = asyncio.ensure_future(proc.stderr.read())
    try:
        (out, size, capped), stderr = await asyncio.wait_for(asyncio.gather(reader, err_task), timeout)
        await proc.wait()
    except asyncio.TimeoutError:
        await _kill(proc)
        raise RipgrepError(f"Search timed out after {timeout:g}s. Narrow the path or pattern and try again.")
    except BaseException:
        await _kill(proc)  # rg gone: the reader thread sees EOF and ends
        raise
    return RgResult(
        returncode=proc.returncode if proc.returncode is not None else -1,
        stdout=out.decode("utf-8", "replace"),
        stderr=stderr.decode("utf-8", "replace"),
        truncated=capped,
        output_bytes=size,
    )


# Version-control directories never searched or listed (they are hidden, and --hidden is on).
VCS_DIRECTORIES = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")


def vcs_exclude_args() -> list[str]:
    args: list[str] = []
    for d in VCS_DIRECTORIES:
        args += ["--glob", f"!{d}"]
    return args


def split_rel(abs_path: str, cwd: str) -> str:
    """How to name ``abs_path`` to rg running in ``cwd`` so its output paths come out relative to
    ``cwd`` when inside it ("" for cwd itself), absolute otherwise (SPEC App. A: relative paths)."""
    if abs_path == cwd:
        return ""
    prefix = cwd.rstrip(os.sep) + os.sep
    if abs_path.startswith(prefix):
        return abs_path[len(prefix):]
    return abs_path


class NewestFirst:
    """Collects paths (relative to ``cwd`` or absolute) with their mtimes as they arrive; ``ordered()``
    gives them newest modification first, ties by path. Blocking work: call from a worker thread."""

    def __init__(self, cwd: str):
        self.prefix = cwd.rstrip(os.sep) + os.sep
        self.keys: list[tuple[float, str]] = []

    def add(self, path: str) -> float:
        try:
            mtime = os.stat(path if path.startswith(os.sep) else self.prefix + path).st_mtime
        except (OSError, ValueError):
            mtime = 0.0
        self.keys.append((-mtime, path))
        return mtime

    def add_lines(self, text: str) -> None:
        """A consumer for ``run_rg``: one path per line."""
        stat = os.stat
        prefix = self.prefix
        append = self.keys.append
        for path in text.split("\n"):
            if not path:
                continue
            try:
                mtime = stat(path if path.startswith(os.sep) else prefix + path).st_mtime
            except (OSError, ValueError):
                mtime = 0.0
            append((-mtime, path))

    def ordered(self) -> list[str]:
        self.keys.sort()
        return [p for _, p in self.keys]


def sort_newest_first(paths: list[str], cwd: str) -> list[str]:
    """Newest modification first, ties by path (blocking: run in a thread)."""
    collector = NewestFirst(cwd)
    collector.add_lines("\n".join(paths))
    return collector.ordered()
