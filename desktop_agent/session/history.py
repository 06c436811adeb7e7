"""File-history backups: the previous content of every file Edit/Write is about to change.

Owns ``FileHistory(data_dir, session_id)`` (``data_dir``: ``util.dirs.data_dir()`` unless given):
``backup(abs_path)`` copies the current bytes (and mode) to ``<data_dir>/file-history/<session_id>/`` before
a write, ``list()`` returns the backups in order, ``restore()`` puts a version back (or deletes a file that did
not exist before), so a later rewind can undo the session's edits. An append-only ``index.jsonl`` records every
backup; a missing file is recorded too (``existed: false``), without a copy.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import shutil
import stat
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from desktop_agent.util import dirs
from desktop_agent.util.fileio import write_bytes_atomic


@dataclass
class BackupEntry:
    path: str  # the file's absolute path
    version: int  # 1, 2, ... per path, in backup order
    backup: str | None  # the copy's path; None when the file did not exist
    existed: bool
    mode: int | None
    time: float
    tag: str | None = None  # e.g. the assistant message uuid that caused the write

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class FileHistory:
    """Per-session backups. Thread-safe: tools call ``backup`` from worker threads."""

    def __init__(self, data_dir: str | os.PathLike[str] | None = None, session_id: str = "default"):
        self.root = Path(data_dir) if data_dir is not None else dirs.data_dir()
        self.dir = self.root / "file-history" / (session_id or "default")
        self.index_path = self.dir / "index.jsonl"
        self._lock = threading.Lock()
        self._entries: list[BackupEntry] = self._load()

    def _load(self) -> list[BackupEntry]:
        entries: list[BackupEntry] = []
        try:
            with open(self.index_path, encoding="utf-8") as fh:
                for line in fh:
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        entries.append(BackupEntry(**json.loads(line)))
                    except (ValueError, TypeError):
                        continue  # a torn last line after a crash
        except FileNotFoundError:
            pass
        return entries

    @staticmethod
    def _key(abs_path: str) -> str:
        return hashlib.sha256(os.path.normpath(abs_path).encode("utf-8", "surrogateescape")).hexdigest()[:16]

    def backup(self, abs_path: str, tag: str | None = None) -> str | None:
        """Save the file's current content before a write; returns the backup path (None: no file)."""
        abs_path = os.path.normpath(abs_path)
        with self._lock:
            version = 1 + sum(1 for e in self._entries if e.path == abs_path)
            try:
                st = os.stat(abs_path)
                existed = stat.S_ISREG(st.st_mode)
            except OSError:
                st, existed = None, False
            backup_path: str | None = None
            mode = stat.S_IMODE(st.st_mode) if (st is not None and existed) else None
            self.dir.mkdir(parents=True, exist_ok=True)
            if existed:
                backup_path = str(self.dir / f"{self._key(abs_path)}@v{version}")
                tmp = backup_path + ".tmp"
                shutil.copyfile(abs_path, tmp)
                os.replace(tmp, backup_path)
            entry = BackupEntry(abs_path, version, backup_path, existed, mode, time.time(), tag)
            with open(self.index_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry.to_json()) + "\n")
                fh.flush()
            self._entries.append(entry)
            return backup_path

    def list(self, abs_path: str | None = None) -> list[BackupEntry]:
        """Backups in the order they were made, optionally for one file."""
        with self._lock:
            if abs_path is None:
                return list(self._entries)
            key = os.path.normpath(abs_path)
            return [e for e in self._entries if e.path == key]

    def restore(self, abs_path: str, version: int | None = None) -> BackupEntry:
        """Put the file back as it was before backup ``version`` (default: the first, i.e. the session start).

        A file that did not exist then is deleted. Raises KeyError when there is no such backup.
        """
        entries = self.list(abs_path)
        if not entries:
            raise KeyError(f"no backup of {abs_path}")
        if version is None:
            entry = entries[0]
        else:
            matching = [e for e in entries if e.version == version]
            if not matching:
                raise KeyError(f"no backup version {version} of {abs_path}")
            entry = matching[0]
        if not entry.existed or entry.backup is None:
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                pass
            return entry
        data = Path(entry.backup).read_bytes()
        os.makedirs(os.path.dirname(entry.path) or ".", exist_ok=True)
        write_bytes_atomic(entry.path, data)
        if entry.mode is not None:
            os.chmod(entry.path, entry.mode)
        return entry

    def files(self) -> builtins.list[str]:  # ``list`` here is the method above
        """Every path backed up in this session, in first-backup order."""
        seen: dict[str, None] = {}
        for e in self.list():
            seen.setdefault(e.path, None)
        return list(seen)
