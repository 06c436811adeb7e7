"""Where the background host lives and the checks at its doors (DESIGN.md §1, "In the background host").

One host per user. Its files are in ``util.dirs.host_runtime_dir()`` (``$XDG_RUNTIME_DIR/desktop-agent``, else
``<tmp>/desktop-agent-<uid>``): ``host.sock`` (the sessions protocol), ``control.sock`` (``--status``/``--stop``:
one JSON line each way) and ``host.lock`` (held with ``fcntl.flock`` for the host's whole life, so two starting
hosts cannot race). Its log is ``util.dirs.host_log_path()`` in the state directory.

- ``ensure_private_dir(path)``: the directory is created 0700, or verified before use: a directory itself (never
  followed through a symlink), owned by us, writable by nobody else (read/search bits for others are taken away;
  write bits mean someone else may have put something there: refused, ``UnsafeDirectory``).
- ``peer_credentials(sock)``: ``SO_PEERCRED`` of a connected Unix socket (pid, uid, gid): the host refuses every
  connection whose uid is not its own, and a client refuses a "host" that is not run by its user.
- ``socket_answers(path)``: is something listening there (a live host) or is the file stale?
- ``HostLock``: the lock file.

Standard library only (the window's start-on-demand and ``--status`` import this without the engine).
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from desktop_agent.util import dirs

SOCKET_NAME = "host.sock"
CONTROL_NAME = "control.sock"
LOCK_NAME = "host.lock"


class UnsafeDirectory(OSError):
    """The host's directory is not ours alone (a symlink, another owner, writable by others): nothing is used."""


@dataclass(frozen=True)
class HostPaths:
    dir: Path
    socket: Path
    control: Path
    lock: Path
    log: Path


def host_paths() -> HostPaths:
    base = dirs.host_runtime_dir()
    return HostPaths(dir=base, socket=base / SOCKET_NAME, control=base / CONTROL_NAME, lock=base / LOCK_NAME,
                     log=dirs.host_log_path())


def ensure_private_dir(path: str | os.PathLike[str], *, create: bool = True) -> None:
    """Create ``path`` 0700 (its parent must exist), or verify it: ``UnsafeDirectory`` when it is a symlink, not a
    directory, owned by another user or writable by group or others; read or search bits for others are removed
    (nobody else could have written there). ``FileNotFoundError`` when it is missing and ``create`` is False."""
    path = os.fspath(path)
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeDirectory(f"{path} is not a directory of its own (a symlink or a file): refusing to use it") \
                from None
        raise
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            raise UnsafeDirectory(f"{path} belongs to uid {st.st_uid}, not to this user (uid {os.getuid()}): "
                                  f"refusing to use it")
        if st.st_mode & 0o022:
            raise UnsafeDirectory(f"{path} is writable by other users (mode {stat.S_IMODE(st.st_mode):o}): "
                                  f"refusing to use it; remove it or make it 0700")
        if st.st_mode & 0o077:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def ensure_state_dir() -> Path:
    """The state directory (the log's), created 0700 with its parents when missing."""
    path = dirs.state_dir()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


_CRED = struct.Struct("3i")


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """``(pid, uid, gid)`` of the process at the other end of a connected Unix socket (``SO_PEERCRED``)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
    pid, uid, gid = _CRED.unpack(raw)
    return pid, uid, gid


def socket_answers(path: str | os.PathLike[str], timeout: float = 1.0) -> bool:
    """True when a process accepts connections on the Unix socket ``path``; False when there is no file or
    nobody listens (a stale file: ``ECONNREFUSED``)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    s.settimeout(timeout)
    try:
        s.connect(os.fspath(path))
    except (FileNotFoundError, ConnectionRefusedError):
        return False
    except socket.timeout:
        return True  # a backlog full of connections: something lives there
    finally:
        s.close()
    return True


class HostLock:
    """``host.lock``: an exclusive ``flock`` held by the running host (released by the kernel when it dies, even by
    kill -9). The file holds the holder's pid, for messages."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock without waiting; False when another process holds it."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def held_elsewhere(self) -> bool:
        """Another process holds the lock now (a host runs or is starting)."""
        if self._fd is not None:
            return False
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def holder_pid(self) -> int | None:
        try:
            with open(self.path, encoding="ascii") as fh:
                return int(fh.read().strip() or 0) or None
        except (OSError, ValueError):
            return None

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
