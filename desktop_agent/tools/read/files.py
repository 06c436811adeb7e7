"""What every Read (and Edit and Write) does to a path before any content: the I/O and CPU thread pools, refusing
FIFOs, sockets and devices (``open_regular`` opens with O_NONBLOCK and ``fstat``s), the not-found message with a
near match, and the denied-path sentence."""

from __future__ import annotations

import asyncio
import os
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from desktop_agent.core.errors import ToolError

DENIED_MESSAGE = "File is in a directory that is denied by your permission settings."
FILE_NOT_FOUND_CWD_NOTE = "Note: your current working directory is"

BLOCKED_DEVICE_PATHS = frozenset({
    "/dev/zero", "/dev/random", "/dev/urandom", "/dev/full", "/dev/stdin", "/dev/tty", "/dev/console",
    "/dev/stdout", "/dev/stderr", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2",
    "/proc/self/fd/0", "/proc/self/fd/1", "/proc/self/fd/2",
})


def file_not_found_message(abs_path: str, cwd: str) -> str:
    """``File does not exist. Note: your current working directory is <cwd>.`` plus a near match."""
    message = f"File does not exist. {FILE_NOT_FOUND_CWD_NOTE} {cwd}."
    similar = find_similar_file(abs_path)
    if similar:
        message += f" Did you mean {similar}?"
    return message


def find_similar_file(abs_path: str) -> str | None:
    """A file in the same directory with the same name but another extension (``app.js`` for ``app.ts``)."""
    directory, name = os.path.split(abs_path)
    stem = os.path.splitext(name)[0]
    if not stem:
        return None
    try:
        entries = sorted(os.listdir(directory))
    except OSError:
        return None
    for entry in entries:
        if entry != name and os.path.splitext(entry)[0] == stem and os.path.isfile(os.path.join(directory, entry)):
            return os.path.join(directory, entry)
    return None



# Two stages, two pools. File system calls (stat, open, read) run on a wide I/O pool: they release
# the GIL, so parallel Reads overlap their disk or network waits. Turning the bytes into numbered
# text is CPU work under the GIL; it runs on one CPU thread, because more threads would not finish
# sooner and would starve the event loop (the GUI's): with ten parallel 1 MB Reads on a warm cache
# the longest loop stall measured ~10-20 ms with one CPU thread and 65-190 ms with several
# (bench/bench_file_tools.py).
IO_THREADS = 10  # as CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY's default
CPU_THREADS = 1
_pools: dict[str, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(kind: str) -> ThreadPoolExecutor:
    pool = _pools.get(kind)
    if pool is None:
        with _pools_lock:
            pool = _pools.get(kind)
            if pool is None:
                workers = IO_THREADS if kind == "io" else CPU_THREADS
                pool = _pools[kind] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"file-read-{kind}")
    return pool


async def run_io(fn: Any, *args: Any) -> Any:
    """Run blocking file system work off the event loop (exceptions propagate)."""
    return await asyncio.get_running_loop().run_in_executor(_pool("io"), fn, *args)


async def run_cpu(fn: Any, *args: Any) -> Any:
    """Run CPU-heavy text work on the single CPU thread (exceptions propagate)."""
    return await asyncio.get_running_loop().run_in_executor(_pool("cpu"), fn, *args)


def special_file_message(abs_path: str, mode: int) -> str:
    """Why a FIFO, socket or device is not read (opening or reading one can block forever or never end)."""
    if stat.S_ISFIFO(mode):
        kind = "a named pipe (FIFO)"
    elif stat.S_ISSOCK(mode):
        kind = "a socket"
    elif stat.S_ISCHR(mode):
        kind = "a character device"
    elif stat.S_ISBLK(mode):
        kind = "a block device"
    else:
        kind = "a special file"
    return (f"Cannot read '{abs_path}': it is not a regular file (it is {kind}; reading it could block or "
            "never end).")


Guard = Callable[[int], None]  # called with the descriptor of what was opened; raises to refuse it


def opened_guard(ctx: Any, operation: str = "read") -> Guard:
    """A guard refusing a file whose identity, real folder or real path a deny rule covers (``ctx.opened_denied``):
    the check made on the name before the call is made again on what was actually opened."""
    def guard(fd: int) -> None:
        if ctx.opened_denied(fd, operation):
            raise ToolError(DENIED_MESSAGE)
    return guard


def open_regular(path: str, guard: Guard | None = None) -> Any:
    """``open(path, "rb")`` for a regular file only. Opened with O_NONBLOCK (opening a FIFO that a race put
    in place of the file does not wait for a writer), then ``fstat``: anything but a regular file is
    closed again and refused. For a regular file O_NONBLOCK changes nothing."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory", path)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(special_file_message(path, st.st_mode))
        if guard is not None:
            guard(fd)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def stat_regular_file(abs_path: str, cwd: str) -> os.stat_result:
    """stat, turning a missing path, a directory or a special file into the model-facing errors."""
    try:
        st = os.stat(abs_path)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(file_not_found_message(abs_path, cwd), wrap=False) from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(
            f"{abs_path} is a directory, not a file. Use the Glob tool or Bash `ls` to list its contents.",
            wrap=False)
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(special_file_message(abs_path, st.st_mode))
    return st


