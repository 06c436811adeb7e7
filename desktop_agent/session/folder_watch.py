"""Folder watch: which names in a set of folders changed since the last look, from Linux inotify.

Owns ``FolderWatch``: one inotify instance watching a set of folders (relative to a root), drained on demand into
the changed names (``drain``). It is a hint that may only ever say *more* than what changed, never less: the caller
(``session.checkpoints``) takes it instead of a stat of every tracked file only while it is ``armed`` (every folder
watched before the last whole look began, no queue overflow, no folder created, removed or moved since), and looks
at everything again otherwise. What inotify cannot see (a write through ``mmap``, a write through a hard link
from a folder that is not watched) is left to the next whole look, which checkpoints take before every prompt and
before every restore. Off Linux, or when inotify cannot be had (``max_user_watches``), ``FolderWatch.create``
returns None. ``DESKTOP_AGENT_CHECKPOINT_WATCH=0`` turns it off.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import sys
from dataclasses import dataclass, field

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000

MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
_NAMES = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE  # a folder's list of names changed
_BROKEN = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED | IN_Q_OVERFLOW  # the watch no longer covers it
_EVENT = struct.Struct("iIII")


@dataclass
class Changes:
    """What a drain saw. ``complete`` False: something happened that the watch cannot account for (an overflow, a
    watched folder gone or moved, a folder created, removed or renamed inside one): look at everything."""
    complete: bool = True
    paths: set[str] = field(default_factory=set)  # files (or links) whose content, bits or existence may have changed
    dirs: set[str] = field(default_factory=set)  # folders whose list of names may have changed


class FolderWatch:
    """inotify watches on folders under ``root`` (relative paths, "" the root itself)."""

    def __init__(self, fd: int, libc: ctypes.CDLL, root: str) -> None:
        self._fd = fd
        self._libc = libc
        self.root = root.rstrip("/") or "/"
        self._wd: dict[int, str] = {}
        self._rel: dict[str, int] = {}
        self.armed = False

    @classmethod
    def create(cls, root: str) -> FolderWatch | None:
        if not sys.platform.startswith("linux") or os.environ.get("DESKTOP_AGENT_CHECKPOINT_WATCH", "1") == "0":
            return None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        return cls(fd, libc, root)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._wd.clear()
        self._rel.clear()
        self.armed = False

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    def watched(self, rel: str) -> bool:
        return rel in self._rel

    def covers(self, rels: dict[str, object]) -> bool:
        """Every folder of ``rels`` (a dict keyed by relative folder) is watched."""
        return rels.keys() <= self._rel.keys()

    def watch(self, rels: list[str]) -> bool:
        """Watches on these folders (those already watched are kept). False when one could not be added (the
        watch is then not to be trusted: the caller stays unarmed)."""
        ok = True
        for rel in rels:
            if rel in self._rel:
                continue
            path = os.path.join(self.root, rel) if rel else self.root
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(path), MASK)
            if wd < 0:
                err = ctypes.get_errno()
                if err not in (errno.ENOENT, errno.ENOTDIR):
                    ok = False
                continue
            old = self._wd.get(wd)
            if old is not None and old != rel:  # the same folder under another name (a bind, a rename we missed)
                ok = False
                continue
            self._wd[wd] = rel
            self._rel[rel] = wd
        return ok

    def forget(self, rels: list[str]) -> None:
        for rel in rels:
            wd = self._rel.pop(rel, None)
            if wd is not None:
                self._wd.pop(wd, None)
                self._libc.inotify_rm_watch(self._fd, wd)

    def drain(self) -> Changes:
        """Every event queued since the last drain, as changed paths (relative to the root)."""
        out = Changes()
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                out.complete = False
                break
            if not data:
                break
            pos = 0
            while pos + _EVENT.size <= len(data):
                wd, mask, _cookie, length = _EVENT.unpack_from(data, pos)
                pos += _EVENT.size
                name = data[pos:pos + length].rstrip(b"\0")
                pos += length
                if mask & _BROKEN:
                    out.complete = False
                    if mask & IN_IGNORED:  # the kernel dropped this watch (its folder went)
                        rel = self._wd.pop(wd, None)
                        if rel is not None:
                            self._rel.pop(rel, None)
                    continue
                rel = self._wd.get(wd)
                if rel is None:
                    out.complete = False
                    continue
                if mask & IN_ISDIR:
                    if mask & _NAMES:  # a folder created, removed or renamed inside a watched one
                        out.complete = False
                    continue  # a sub-folder's own bits: not part of a snapshot
                if not name:
                    continue
                text = os.fsdecode(name)
                path = f"{rel}/{text}" if rel else text
                out.paths.add(path)
                if mask & _NAMES:
                    out.dirs.add(rel)
        return out
