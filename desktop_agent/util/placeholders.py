"""Placeholders: the empty mount points the sandbox binds read-only over protected names that do not exist yet
(``permissions.protected``), their lifetime, and how our own writers get past one.

A bind mount needs an existing name, and the folder it lives in is the person's: so a placeholder is a real,
empty entry on disk **for the lifetime of the commands that bind it**, and no longer. ``make_placeholder(path,
kind)``:

- "dir" (``.claude``, ``.vscode``, ``~/.ssh``, our config dir…): an empty directory, mode 0755, so the app itself
  (outside the sandbox) can still create the person's files in it (``.claude/settings.local.json`` after "always
  allow"); once something is in it, it is the real folder and stays.
- "file" (``.mcp.json``, ``.envrc``, ``~/.bashrc``…): an empty directory mode 0555 (a directory: ``git status``
  and ``git add -A`` inside the command do not see it; an empty file would be committed). ``write_bytes_atomic``
  replaces it (``release``): a write the person allowed through Write/Edit lands.
- "commondir": a file holding ``.`` in a git dir (git reads it as "the git dir itself").

Lifetime. Each use is a reference: ``make_placeholder`` / ``note_existing`` take one (appending the path to
``held``), ``release_placeholders(paths)`` drops them when the command ends (``sandbox_launch.LaunchPlan.release``,
called by ``tools.bash.process`` once the shell has exited). While this process has a reference it holds a
shared ``flock`` on the placeholder's lock file (``/dev/shm/desktop-agent-placeholder-<uid>-<hash>.lock``, or
in the temp dir; not inherited by children). At the last reference it takes the lock exclusively (non-blocking): only when no other
agent process has the placeholder bound — removing a mount point on the host detaches the mount inside a
running sandbox, and the protected name would become writable there — is it removed, and only when it is still
ours: the same inode we created, with the same change time (recorded in the lock file: path, kind, device,
inode, ctime) and still untouched
(empty; "file" mode 0555; commondir still ``.``). Something the person made or filled meanwhile is never
removed. The lock file is removed with it (openers check that the file they locked is still the one at its
name, so no two processes ever lock different files for one path).

Leftovers of a killed process (kill -9 mid-command: its locks die with it, the entries stay): ``sweep`` (run
once per process, on the first protected-path computation, ``permissions.protected``) reads every lock file of
this user, and removes each entry no process holds that is still the recorded, untouched one. A placeholder
whose lock file is gone (a reboot cleared ``/dev/shm``) is not recognised as ours and stays. One an earlier
build left (it kept them for the life of its process, with a lock file in the temp dir and no record) is taken
over by the next command that binds it (``_adopt_legacy``) and removed when that command ends.
"""

from __future__ import annotations

import atexit
import fcntl
import glob
import hashlib
import json
import os
import stat
import tempfile
import threading

FILE_MODE = 0o555
DIR_MODE = 0o755
KINDS = ("file", "dir", "commondir")
LOCK_DIR_ENV = "DESKTOP_AGENT_PLACEHOLDER_LOCK_DIR"  # test-only
LEGACY_WINDOW_NS = 2_000_000_000  # an earlier build's entry: made within this of its lock file
_created: dict[str, str] = {}  # placeholders this process holds → kind
_ids: dict[str, tuple[int, int, int]] = {}  # → (st_dev, st_ino, st_ctime_ns) of the entry, when known
_refs: dict[str, int] = {}  # → how many commands (policies) of this process hold it
_fds: dict[str, int] = {}  # → the fd of its lock file, held shared while _refs > 0
_lock = threading.Lock()
_swept = False
_exit_hook = False


def lock_dir() -> str:
    """Where the lock files live: ``/dev/shm`` (memory: taking and dropping them costs no disk I/O; invisible
    inside the sandbox, which has its own ``/dev``) when usable, else the temp dir."""
    override = os.environ.get(LOCK_DIR_ENV)
    if override and os.path.isabs(override):  # tests: their own registry, apart from every other agent process
        return override
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return tempfile.gettempdir()


def _prefix() -> str:
    return os.path.join(lock_dir(), f"desktop-agent-placeholder-{os.getuid()}-")


def lock_path(path: str) -> str:
    digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return f"{_prefix()}{digest}.lock"


def _open_locked(lp: str, how: int) -> int | None:
    """An fd of the lock file at ``lp`` locked ``how``, checked to still be the file at that name (a remover
    unlinks it while holding it exclusively). None when it cannot be had (``LOCK_NB``) or opened."""
    for _ in range(16):
        try:
            fd = os.open(lp, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError:
            return None
        try:
            fcntl.flock(fd, how)
            st, now = os.fstat(fd), os.stat(lp, follow_symlinks=False)
            if (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
                return fd
        except OSError:
            pass
        os.close(fd)
        if how & fcntl.LOCK_NB:
            return None
    return None


def _read_record(fd: int) -> dict | None:
    try:
        data = os.pread(fd, 4096, 0)
        rec = json.loads(data.decode("utf-8", "surrogateescape")) if data else None
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) else None


def _ident(st: os.stat_result) -> tuple[int, int, int]:
    # the inode number alone is reused at once by the next mkdir; its change time is not
    return st.st_dev, st.st_ino, st.st_ctime_ns


def _rec_ident(rec: dict | None, path: str, kind: str | None = None) -> tuple[int, int, int] | None:
    if not rec or rec.get("path") != path or (kind is not None and rec.get("kind") != kind):
        return None
    try:
        return int(rec["dev"]), int(rec["ino"]), int(rec["ctime_ns"])
    except (KeyError, TypeError, ValueError):
        return None


def _write_record(fd: int, path: str, kind: str, ident: tuple[int, int, int]) -> None:
    data = json.dumps({"path": path, "kind": kind, "dev": ident[0], "ino": ident[1], "ctime_ns": ident[2]}
                      ).encode("utf-8", "surrogateescape")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    except OSError:
        pass


def _acquire(path: str, kind: str) -> bool:
    """One more reference to ``path`` (caller holds ``_lock``); the shared lock on the first."""
    if path in _fds:
        _refs[path] += 1
        return True
    fd = _open_locked(lock_path(path), fcntl.LOCK_SH)
    if fd is None:
        return False
    global _exit_hook
    if not _exit_hook:
        _exit_hook = True
        atexit.register(cleanup_placeholders)
    _fds[path], _refs[path], _created[path] = fd, 1, kind
    return True


def is_placeholder(path: str, kind: str) -> bool:
    """An untouched placeholder of ``kind`` at ``path`` (by shape)."""
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


def _ours(path: str, kind: str, ident: tuple[int, int, int] | None) -> bool:
    """Still the entry we made (same inode, same change time: nothing was ever added to it) and untouched."""
    if ident is None:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if _ident(st) != ident:
        return False
    if kind == "commondir":
        return stat.S_ISREG(st.st_mode) and st.st_size == 2 and is_placeholder(path, kind)
    if not stat.S_ISDIR(st.st_mode):
        return False
    try:
        if os.listdir(path):
            return False
    except OSError:
        return False
    return kind == "dir" or stat.S_IMODE(st.st_mode) == FILE_MODE


def _remove(path: str, kind: str) -> bool:
    try:
        (os.unlink if kind == "commondir" else os.rmdir)(path)  # rmdir: never a directory someone filled
    except OSError:
        return False
    return True


def make_placeholder(path: str, kind: str, held: list[str] | None = None) -> bool:
    """Create the placeholder (its parent folders as ordinary ones) and take a reference to it (``path`` appended
    to ``held``); True when ``path`` exists afterwards."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)  # e.g. ~/.config for ~/.config/git
    except OSError:
        return False
    with _lock:
        locked = _acquire(path, kind)
        if locked and held is not None:
            held.append(path)
        try:
            if kind == "commondir":
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
                with os.fdopen(fd, "w") as fh:
                    fh.write(".\n")
            else:
                mode = FILE_MODE if kind == "file" else DIR_MODE
                os.mkdir(path, mode)
                os.chmod(path, mode)
        except FileExistsError:  # another process made it meanwhile (its record says so), or it is real
            if locked and path not in _ids:
                ident = _rec_ident(_read_record(_fds[path]), path, kind)
                if ident is not None:
                    _ids[path] = ident
            return True
        except OSError:
            return False
        if locked:
            try:
                _ids[path] = _ident(os.lstat(path))
                _write_record(_fds[path], path, kind, _ids[path])
            except OSError:
                pass
    return True


def note_existing(path: str, kind: str, held: list[str] | None = None) -> None:
    """An existing entry: when it is a placeholder of ours (this process's, or one another process recorded),
    take a reference to it too, so it is removed when the last command binding it ends."""
    if kind not in KINDS:
        return
    with _lock:
        if path in _fds:
            _refs[path] += 1
            if held is not None:
                held.append(path)
            return
        if not os.path.exists(lock_path(path)):
            _adopt_legacy(path, kind, held)
            return
        if not _acquire(path, kind):
            return
        ident = _rec_ident(_read_record(_fds[path]), path, kind)
        if ident is None or not _ours(path, kind, ident):
            _drop(path)  # the person's own entry: not ours to remove
            return
        _ids[path] = ident
        if held is not None:
            held.append(path)


def legacy_lock_path(path: str) -> str:
    """The lock file builds before per-command placeholders used (in the temp dir, never removed, no record)."""
    digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return os.path.join(tempfile.gettempdir(), f"desktop-agent-placeholder-{os.getuid()}-{digest}.lock")


def _adopt_legacy(path: str, kind: str, held: list[str] | None) -> None:
    """A placeholder an earlier build left for the whole life of its process (the empty ``.claude``, ``.mcp.json``…
    a person finds in their folder): recognised by its legacy lock file, made just before it (change time within
    ``LEGACY_WINDOW_NS`` after the lock file's), and its untouched shape ("file": an empty mode-0555 directory;
    "dir": an empty directory), taken over when no process of that build holds it, so the
    end of this command removes it. Caller holds ``_lock``."""
    if kind == "commondir" or not is_placeholder(path, kind) and not _legacy_shape(path, kind):
        return
    legacy = legacy_lock_path(path)
    if legacy == lock_path(path) or not os.path.exists(legacy):
        return
    try:
        lfd = os.open(legacy, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        fcntl.flock(lfd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # an old-build process still has it bound: leave it
        # that build made the lock file, then the entry at once: an entry made later is the person's
        made = os.lstat(path).st_ctime_ns - os.fstat(lfd).st_mtime_ns
        if not 0 <= made <= LEGACY_WINDOW_NS or not _legacy_shape(path, kind) or not _acquire(path, kind):
            return
        _ids[path] = _ident(os.lstat(path))
        _write_record(_fds[path], path, kind, _ids[path])
        if held is not None:
            held.append(path)
        os.unlink(legacy)
    except OSError:
        pass
    finally:
        os.close(lfd)


def _legacy_shape(path: str, kind: str) -> bool:
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or os.listdir(path):
            return False
    except OSError:
        return False
    return stat.S_IMODE(st.st_mode) == FILE_MODE if kind == "file" else True


def _drop(path: str) -> None:
    fd = _fds.pop(path, None)
    _refs.pop(path, None)
    _created.pop(path, None)
    _ids.pop(path, None)
    if fd is not None:
        os.close(fd)


def _finish(path: str) -> bool:
    """The last reference of this process is gone (caller holds ``_lock``): remove the entry when no other process
    holds it and it is still ours and untouched. True when removed."""
    fd, kind, ident = _fds.get(path), _created.get(path, "dir"), _ids.get(path)
    removed = False
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            _drop(path)
            return False  # another agent process has it bound: it removes it when its commands end
        if ident is None:
            ident = _rec_ident(_read_record(fd), path)
        if _ours(path, kind, ident):
            removed = _remove(path, kind)
        try:
            os.unlink(lock_path(path))  # held exclusively: openers see the name changed and retry
        except OSError:
            pass
    _drop(path)
    return removed


def release_placeholders(paths: list[str]) -> list[str]:
    """Drop one reference per path (a command that bound them ended); returns what was removed."""
    removed: list[str] = []
    with _lock:
        for path in sorted(paths, key=len, reverse=True):  # what is inside a folder first
            n = _refs.get(path)
            if n is None:
                continue
            if n > 1:
                _refs[path] = n - 1
                continue
            if _finish(path):
                removed.append(path)
    return removed


def held_count(path: str) -> int:
    with _lock:
        return _refs.get(path, 0)


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
    """Drop every reference this process holds (at exit; tests) and remove what is then unused, ours and
    untouched. Returns what was removed."""
    removed: list[str] = []
    with _lock:
        for path in sorted(list(_fds), key=len, reverse=True):
            if _finish(path):
                removed.append(path)
        _created.clear()
        _refs.clear()
        _ids.clear()
    return removed


def sweep() -> list[str]:
    """Remove the placeholders killed agent processes left: every recorded entry no process holds, still the
    recorded inode and untouched. Returns what was removed."""
    removed: list[str] = []
    for lp in glob.glob(glob.escape(_prefix()) + "*.lock"):
        with _lock:
            if any(lock_path(p) == lp for p in _fds):
                continue
            fd = _open_locked(lp, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if fd is None:
                continue  # held: a live process cleans it up
            try:
                rec = _read_record(fd)
                path, kind = (rec or {}).get("path"), (rec or {}).get("kind")
                if isinstance(path, str) and kind in KINDS and lock_path(path) == lp:
                    if _ours(path, kind, _rec_ident(rec, path, kind)) and _remove(path, kind):
                        removed.append(path)
                if rec is not None or os.fstat(fd).st_size == 0:
                    os.unlink(lp)
            except OSError:
                pass
            finally:
                os.close(fd)
    return removed


def sweep_once() -> list[str]:
    global _swept
    if _swept:
        return []
    _swept = True
    return sweep()
