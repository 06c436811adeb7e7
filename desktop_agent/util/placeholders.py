"""Placeholders: the empty mount points the sandbox binds read-only over protected names that do not exist yet
(``permissions.protected``), their lifetime, and how our own writers get past one.

A bind mount needs an existing name, and the folder it lives in is the person's: so a placeholder is a real,
empty entry on disk while this process may bind it. ``make_placeholder(path, kind)``:

- "dir" (``.claude``, ``.husky``, ``~/.ssh``, our config dir…): an empty directory, mode 0755, so the app itself
  (outside the sandbox) can still create the person's files in it (``.claude/settings.local.json`` after "always
  allow"); once something is in it, it is the real folder and stays.
- "file" (``.mcp.json``, ``.envrc``, ``~/.bashrc``…): an empty directory mode 0555 (a directory: ``git status``
  and ``git add -A`` do not see it; an empty file would be committed). ``write_bytes_atomic`` replaces it
  (``release``): a write the person allowed through Write/Edit lands.
- "commondir": a file holding ``.`` in a git dir (git reads it as "the git dir itself").

Each is registered with a shared ``flock`` on a lock file of its own (``<tmp>/desktop-agent-placeholder-<uid>-<hash>
.lock``, not inherited by children). ``cleanup_placeholders`` (at exit) removes the ones still untouched whose
lock it gets exclusively — no other agent process may still have them bound (removing a mount point on the host
would detach it inside a running sandbox). A placeholder left by a killed process is recognised
(``note_existing``: an untouched entry with a lock file) and removed by the next process that binds it.
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import os
import stat
import tempfile
import threading

FILE_MODE = 0o555
DIR_MODE = 0o755
_created: dict[str, str] = {}  # placeholders this process created or bound → kind
_lock = threading.Lock()
_fds: dict[str, int] = {}  # placeholder → the fd of its lock file, held shared while this process lives


def lock_path(path: str) -> str:
    digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return os.path.join(tempfile.gettempdir(), f"desktop-agent-placeholder-{os.getuid()}-{digest}.lock")


def _hold(path: str, kind: str) -> None:
    if path in _fds:
        return
    try:
        fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        return
    if not _fds:
        atexit.register(cleanup_placeholders)
    _fds[path] = fd
    _created[path] = kind


def is_placeholder(path: str, kind: str) -> bool:
    """An untouched placeholder of ``kind`` at ``path``."""
    try:
        if kind == "commondir":
            with open(path, encoding="utf-8") as fh:
                return fh.read(8) == ".\n"
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or os.listdir(path):
            return False
        return stat.S_IMODE(st.st_mode) == FILE_MODE if kind == "file" else os.path.exists(lock_path(path))
    except (OSError, UnicodeDecodeError):
        return False


def make_placeholder(path: str, kind: str) -> bool:
    """Create the placeholder (its parent folders as ordinary ones); True when ``path`` exists afterwards."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)  # e.g. ~/.config for ~/.config/git
    except OSError:
        return False
    with _lock:
        _hold(path, kind)
        try:
            if kind == "commondir":
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
                with os.fdopen(fd, "w") as fh:
                    fh.write(".\n")
            else:
                mode = FILE_MODE if kind == "file" else DIR_MODE
                os.mkdir(path, mode)
                os.chmod(path, mode)
        except FileExistsError:
            return True
        except OSError:
            return False
    return True


def note_existing(path: str, kind: str) -> None:
    """An existing entry that is a placeholder (another process made it): hold it too, clean it up at exit."""
    if kind not in ("file", "dir", "commondir") or path in _fds or not is_placeholder(path, kind):
        return
    with _lock:
        _hold(path, kind)


def release(path: str) -> bool:
    """Remove a "file" placeholder so a file can take its name (our atomic writer, for a write the person
    allowed). True when one was removed."""
    if not is_placeholder(path, "file"):
        return False
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def cleanup_placeholders() -> list[str]:
    """Remove the placeholders this process created or bound that are still untouched, each when no other agent
    process holds its lock. Returns what was removed."""
    removed: list[str] = []
    with _lock:
        for path, kind in sorted(_created.items(), key=lambda kv: -len(kv[0])):
            fd = _fds.pop(path, None)
            if fd is None:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue  # another agent process may have it bound: it cleans up when it ends
            try:
                if is_placeholder(path, kind):
                    (os.unlink if kind == "commondir" else os.rmdir)(path)
                    removed.append(path)  # the lock file stays: a process may be opening it right now
            except OSError:
                pass
            finally:
                os.close(fd)
        _created.clear()
    return removed
