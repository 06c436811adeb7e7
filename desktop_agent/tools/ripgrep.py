"""Locating and running ripgrep for Grep and Glob (ENVIRONMENT §4).

Owns ``find_rg`` (``rg`` next to ``sys.executable`` first — the pip ``ripgrep`` wheel puts it in the
venv's ``bin`` — then ``shutil.which("rg")``), ``RipgrepNotFound`` with the sentence the model and
the user see, ``run_rg``, the modification-time orders of Grep (newest first) and Glob (oldest first,
``ByMtime``), and ``DenyFilter``, which drops result paths a Read deny rule covers.

``run_rg`` starts rg as an asyncio subprocess (stdin /dev/null) and reads its stdout on a worker
thread, optionally handing complete lines to a consumer there while rg still searches (stat'ing
paths for the mtime order overlaps the search). The loop only awaits; rg is killed on cancellation,
on timeout and at the output cap.
"""

from __future__ import annotations

import asyncio
import heapq
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import Any, Callable, Iterator

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import ReadPolicy

RG_NOT_FOUND_MESSAGE = (
    "ripgrep (rg) is not installed or could not be found: looked next to the Python executable and on PATH. "
    "Install it (pip install ripgrep, or the system package manager, e.g. apt-get install ripgrep) and try again."
)

# ripgrep exits 0 on matches, 1 on none, 2 on errors (possibly with partial results).
RG_TIMEOUT_S = 60.0
# Beyond this much output the search is stopped and what was read is used (Grep caps results anyway).
RG_MAX_OUTPUT_BYTES = 64 * 1024 * 1024
_HAND_OFF_BYTES = 64 * 1024
_READ_BUFFER = 1 << 20
# A read shorter than this is followed by a pause of _COALESCE_S, so rg's many small writes arrive together.
_SHORT_READ = 32 * 1024
_COALESCE_S = 0.001


# Linux caps one argv string at 32 pages (MAX_ARG_STRLEN, 128 KiB); longer patterns are refused up front.
MAX_PATTERN_BYTES = 100_000


def rg_argument_problem(parameter: str, value: str | None) -> str | None:
    """Why ``value`` cannot be handed to rg as one argument (a NUL, or too long), or None."""
    if not value:
        return None
    if "\x00" in value:
        hint = " (to match a NUL byte, write \\x00 in the regular expression)" if parameter == "pattern" else ""
        return f"The {parameter} contains a NUL character, which cannot be passed to ripgrep{hint}."
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_PATTERN_BYTES:
        return (f"The {parameter} is {size} bytes long; ripgrep can be given at most {MAX_PATTERN_BYTES} bytes. "
                "Use a shorter, distinctive part of it.")
    return None


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

    rg writes each file's output with its own ``write``: reading as eagerly as it writes costs a wake-up
    (and a read) per file, for rg and for us. So after a short read the thread waits ``_COALESCE_S``
    before the next one and lets the (1 MB) pipe collect what rg writes meanwhile — at most that long
    is added at EOF. Reads go into one reused buffer (no megabyte allocation per read).
    With a ``consumer``, complete lines are decoded and handed to it in batches of about 64 KB as
    they arrive, so its work overlaps the search. Returns (output if no consumer, bytes read, capped).
    """
    out = bytearray()  # without a consumer: everything; with one: the bytes not handed over yet
    size = 0
    capped = False
    view = memoryview(bytearray(_READ_BUFFER))
    pipe = open(fd, "rb", buffering=0, closefd=False)
    readinto = pipe.readinto
    sleep = time.sleep
    try:
        while True:
            n = readinto(view)
            if not n:
                break
            size += n
            out += view[:n]
            if consumer is not None and len(out) >= _HAND_OFF_BYTES:
                cut = out.rfind(b"\n")
                if cut >= 0:
                    consumer(out[: cut + 1].decode("utf-8", "replace"))
                    del out[: cut + 1]
            if size >= max_bytes:
                capped = True
                stop()
                break
            if n < _SHORT_READ:
                sleep(_COALESCE_S)
    finally:
        view.release()
        pipe.close()
        os.close(fd)
    if consumer is not None:
        if out and not capped:  # the rest, perhaps a last line without its newline
            consumer(out.decode("utf-8", "replace") + ("" if out.endswith(b"\n") else "\n"))
        return b"", size, capped
    if capped:  # drop the partial last line
        cut = out.rfind(b"\n")
        del out[cut + 1 if cut >= 0 else 0:]
    return bytes(out), size, capped


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

    def kill() -> None:
        if proc.returncode is None:
            proc.kill()

    def stop() -> None:  # from the reader thread, on the output cap
        loop.call_soon_threadsafe(kill)

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


class ByMtime:
    """Collects paths (relative to ``cwd`` or absolute) with their mtimes as they arrive; ``ordered()``
    gives them newest modification first (Grep) or oldest first (``newest_first=False``, Glob), ties
    by path. A ``deny`` filter drops paths a Read deny rule covers before they are stat'ed.
    Blocking work: call from a worker thread."""

    def __init__(self, cwd: str, newest_first: bool = True, deny: DenyFilter | None = None):
        self.prefix = cwd.rstrip(os.sep) + os.sep
        self.sign = -1.0 if newest_first else 1.0
        self.deny = deny
        self.keys: list[tuple[float, str]] = []

    def add(self, path: str) -> bool:
        """Add one path; False (not added) when the deny filter covers it."""
        if self.deny is not None and self.deny.denied(path):
            return False
        try:
            mtime = os.stat(path if path.startswith(os.sep) else self.prefix + path).st_mtime
        except (OSError, ValueError):
            mtime = 0.0
        self.keys.append((self.sign * mtime, path))
        return True

    def add_lines(self, text: str) -> None:
        """A consumer for ``run_rg``: one path per line."""
        stat = os.stat
        prefix = self.prefix
        append = self.keys.append
        sign = self.sign
        denied = self.deny.denied if self.deny is not None else None
        for path in text.split("\n"):
            if not path or (denied is not None and denied(path)):
                continue
            try:
                mtime = stat(path if path.startswith(os.sep) else prefix + path).st_mtime
            except (OSError, ValueError):
                mtime = 0.0
            append((sign * mtime, path))

    def ordered(self) -> list[str]:
        self.keys.sort()
        return [p for _, p in self.keys]

    def first(self, n: int | None) -> list[str]:
        """``ordered()[:n]`` (all of it for None); a small page out of many paths without sorting them all."""
        if n is None or n * 8 >= len(self.keys):
            order = self.ordered()
            return order if n is None else order[:n]
        return [p for _, p in heapq.nsmallest(n, self.keys)]

    def iter_ordered(self) -> Iterator[str]:
        """``ordered()`` one path at a time, each step cheap (a heap), for a caller that may stop early."""
        heap = list(self.keys)
        heapq.heapify(heap)
        pop = heapq.heappop
        while heap:
            yield pop(heap)[1]


class NewestFirst(ByMtime):
    """``ByMtime`` newest first (Grep's order)."""

    def __init__(self, cwd: str, deny: DenyFilter | None = None):
        super().__init__(cwd, True, deny)


def sort_by_mtime(paths: list[str], cwd: str, newest_first: bool = True, deny: DenyFilter | None = None) -> list[str]:
    """Newest (or oldest) modification first, ties by path, denied paths dropped (blocking: run in a thread)."""
    collector = ByMtime(cwd, newest_first, deny)
    collector.add_lines("\n".join(paths))
    return collector.ordered()


# rg prints one path per line: a name holding a newline would reach ``DenyFilter`` in pieces (``secrets/a`` and
# ``b``), none of them the denied path. While a Read deny rule exists such names are not searched at all.
NEWLINE_NAME_EXCLUDE = ["--glob", "!*\n*"]


def deny_exclude_args(ctx: ToolUseContext, rg_cwd: str, rule_globs: bool = True) -> list[str]:
    """``--glob !…`` arguments while Read deny rules exist: ``NEWLINE_NAME_EXCLUDE`` (part of the guarantee),
    then (``rule_globs``) the rules' own globs, relative to the directory rg runs in (rg matches globs against
    the paths it prints, relative to its cwd) — only an efficiency: ``DenyFilter`` is the guarantee. A glob
    without a slash would match at any depth in rg (``!.env`` hides ``sub/.env`` too), so it is anchored with
    a leading ``/``."""
    policy = ctx.read_policy
    if policy is None or not policy.has_read_denies():
        return []
    args: list[str] = list(NEWLINE_NAME_EXCLUDE)
    for glob in policy.read_deny_globs(rg_cwd) if rule_globs else []:
        body = glob[1:]
        if "/" not in body.rstrip("/"):
            body = "/" + body
        args += ["--glob", "!" + body]
    return args


class DenyFilter:
    """Which result paths of a search a Read deny rule covers (issue 12 item 3): the guarantee that Grep
    and Glob never show a name or a line from a denied file, whatever the pattern.

    Paths are as rg prints them, relative to ``root`` (the directory rg ran in) or absolute. A path is
    denied when a Read deny rule covers it *or* its symlink-resolved target (``matching_path_rule`` on
    both forms; ``ReadPolicy.path_denied``), or covers a directory between the search base and it
    (``Read(./secrets)`` hides
    ``secrets/key``). Directory answers and resolved directories are cached, so a big listing costs
    about one ``lstat`` per file. Build it on the event loop (``for_search``: it warms the rule
    matcher), then call ``denied`` from one worker thread.
    """

    def __init__(self, policy: ReadPolicy, root: str, base: str):
        self.policy = policy
        self.root = os.path.normpath(root)
        self.prefix = self.root.rstrip(os.sep) + os.sep
        self.base = os.path.normpath(base)  # the search root the permission check already passed
        self._dirs: dict[str, bool] = {}
        self._real: dict[str, str] = {}

    @classmethod
    def for_search(cls, ctx: ToolUseContext, root: str, base: str | None = None) -> DenyFilter | None:
        """A filter for a search run in ``root`` (None when no Read deny rule exists)."""
        policy = ctx.read_policy
        if policy is None or not policy.has_read_denies():
            return None
        policy.path_denied(root, "read", is_dir=True)  # builds and caches the matcher here
        return cls(policy, root, base or root)

    def _realdir(self, d: str) -> str:
        real = self._real.get(d)
        if real is None:
            try:
                real = os.path.realpath(d)
            except (OSError, ValueError):
                real = d
            self._real[d] = real
        return real

    def _rule(self, path: str, real: str, is_dir: bool) -> bool:
        checked = [path] if real == path else [path, real]
        return self.policy.path_denied(path, "read", checked=checked, is_dir=is_dir)

    def _dir_denied(self, d: str) -> bool:
        """``d`` or a directory between the search base and it is denied (cached; iterative)."""
        chain: list[str] = []
        while d not in self._dirs:
            parent = os.path.dirname(d)
            if d == self.base or parent == d:
                self._dirs[d] = False
                break
            chain.append(d)
            d = parent
        hit = self._dirs[d]
        for x in reversed(chain):  # from the outermost down
            hit = hit or self._rule(x, self._realdir(x), True)
            self._dirs[x] = hit
        return hit

    def denied(self, path: str) -> bool:
        full = path if path.startswith(os.sep) else self.prefix + path
        full = os.path.normpath(full)
        directory, name = os.path.split(full)
        if self._dir_denied(directory):
            return True
        real = os.path.join(self._realdir(directory), name)
        try:
            if os.path.islink(full):
                real = os.path.realpath(full)
        except (OSError, ValueError):
            pass
        return self._rule(full, real, False)
