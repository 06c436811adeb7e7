"""The background host: ``desktop-agent host`` (DESIGN.md §1) — the engine host served on a Unix socket, one per
user, outliving the windows that attach to it.

``HostDaemon(service).run()`` (``--foreground``): takes ``host.lock`` (two starting hosts cannot race: the second
is told ``AlreadyRunning``), verifies the 0700 directory (``runtime.ensure_private_dir``), replaces a stale socket
file (nobody listening) and refuses to start over a live one, binds ``host.sock`` and ``control.sock`` (0600), and
serves until ``stop`` (a control request, SIGTERM or SIGINT). Every accepted connection's peer uid is read with
``SO_PEERCRED``: anyone but this user is closed and logged before a byte is read. A session connection is handed
to the ``HostService`` (the engine host: ``host.server``); a control connection is one JSON request line
(``{"op": "status"}`` or ``{"op": "stop"}``) and one JSON reply line.

Stopping is graceful: no new connection is accepted, the service ends its sessions (each transcript is left
valid: an unanswered call gets its synthetic result), the clients are closed, the socket files are removed (only
if they are still ours) and the lock is released. A killed host leaves a stale socket behind; the next start
replaces it.

``start_background()`` starts ``desktop-agent host --foreground`` detached (a new session, stdio to the log) and
waits until its control socket answers; ``control_request(op)`` is the client of ``control.sock``
(``--status``, ``--stop``, the window's start-on-demand). Logging goes to ``util.dirs.host_log_path()``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Callable, Protocol, Sequence

from desktop_agent.host.runtime import (
    HostLock, HostPaths, UnsafeDirectory, ensure_private_dir, ensure_state_dir, host_paths, peer_credentials,
    socket_answers,
)

log = logging.getLogger("desktop_agent.host")

START_TIMEOUT_S = 15.0  # the longest a starter waits for a new host's socket to answer
STOP_TIMEOUT_S = 30.0  # the longest ``--stop`` waits for the host to end its sessions and exit
SHUTDOWN_TIMEOUT_S = 20.0  # the longest the host waits for its service to end the sessions
CONTROL_LINE_LIMIT = 64 * 1024
LOG_ROTATE_BYTES = 5 * 1024 * 1024


class AlreadyRunning(Exception):
    """Another host holds the lock or answers on the socket."""

    def __init__(self, pid: int | None, socket_path: str):
        self.pid, self.socket_path = pid, socket_path
        who = f" (pid {pid})" if pid else ""
        super().__init__(f"the background host is already running{who} on {socket_path}")


class HostUnavailable(Exception):
    """The host could not be reached or started; the message names the log file."""


class HostService(Protocol):
    """What the daemon serves: the engine host behind the socket."""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, peer: str) -> None:
        """One client connection, until it closes (the daemon closes the writer afterwards)."""
        ...

    def status(self) -> dict[str, Any]:
        """``{"sessions": [...], "pending": [...]}``: each session and pending question as plain JSON."""
        ...

    async def shutdown(self) -> None:
        """End every session cleanly (transcripts valid) before the host exits."""
        ...


class HostDaemon:
    """The listening host. ``run()`` returns when it has stopped; ``AlreadyRunning`` / ``UnsafeDirectory`` before
    anything was bound."""

    def __init__(self, service_factory: Callable[[], HostService], paths: HostPaths | None = None):
        self.paths = paths or host_paths()
        self._factory = service_factory
        self.service: HostService | None = None
        self._lock = HostLock(self.paths.lock)
        self._stop = asyncio.Event()
        self._stop_reason = ""
        self._servers: list[asyncio.AbstractServer] = []
        self._bound: dict[str, tuple[int, int]] = {}  # path -> (st_dev, st_ino) of the socket files we made
        self._clients: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.started_at = time.time()
        self._started_mono = time.monotonic()
        self.refused = 0

    # ----- start ------------------------------------------------------------------------------------------
    def _claim(self) -> None:
        """The directory, the lock, the stale sockets — under the lock, so no other host is between check and bind."""
        ensure_private_dir(self.paths.dir)
        if not self._lock.acquire():
            raise AlreadyRunning(self._lock.holder_pid(), str(self.paths.socket))
        try:
            for path in (self.paths.socket, self.paths.control):
                self._clear_stale(str(path))
        except BaseException:
            self._lock.release()
            raise

    def _clear_stale(self, path: str) -> None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        import stat

        if stat.S_ISSOCK(st.st_mode) and socket_answers(path):
            # a host that does not hold the lock (its lock file was removed): leave it alone
            raise AlreadyRunning(None, path)
        log.warning("replacing a stale %s (%s; nobody listening)", path,
                    "socket" if stat.S_ISSOCK(st.st_mode) else "not a socket")
        os.unlink(path)

    def _bind(self, path: str) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        old = os.umask(0o177)
        try:
            sock.bind(path)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        st = os.lstat(path)
        self._bound[path] = (st.st_dev, st.st_ino)
        sock.listen(64)
        sock.setblocking(False)
        return sock

    async def start(self) -> None:
        self._claim()
        try:
            self.service = self._factory()
            session_sock = self._bind(str(self.paths.socket))
            control_sock = self._bind(str(self.paths.control))
            self._servers.append(await asyncio.start_unix_server(self._on_session, sock=session_sock,
                                                                 limit=16 * 1024 * 1024))
            self._servers.append(await asyncio.start_unix_server(self._on_control, sock=control_sock,
                                                                 limit=CONTROL_LINE_LIMIT))
        except BaseException:
            await self._close_servers()
            self._unlink_ours()
            self._lock.release()
            raise
        log.info("host %d listening on %s (control %s)", os.getpid(), self.paths.socket, self.paths.control)
        start = getattr(self.service, "start", None)  # optional: what the service turns on once it listens
        if start is not None:
            try:
                await start()
            except Exception:
                log.exception("the service's start failed")

    async def run(self) -> None:
        """Start, serve until stopped (``stop()``, SIGTERM, SIGINT), then stop gracefully."""
        await self.start()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self.stop, signal.Signals(sig).name)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                pass
        try:
            await self._stop.wait()
        finally:
            await self._shutdown()

    def stop(self, reason: str = "asked to stop") -> None:
        if not self._stop.is_set():
            self._stop_reason = reason
            self._stop.set()

    # ----- connections ------------------------------------------------------------------------------------
    def _admit(self, writer: asyncio.StreamWriter, what: str) -> tuple[int, int] | None:
        """The peer's ``(pid, uid)`` when it is this user; else the connection is closed and logged."""
        sock = writer.get_extra_info("socket")
        try:
            pid, uid, _gid = peer_credentials(sock)
        except (OSError, AttributeError) as exc:
            log.warning("refused a %s connection: its peer credentials cannot be read (%s)", what, exc)
            self.refused += 1
            writer.transport.abort()
            return None
        if uid != os.getuid():
            log.warning("refused a %s connection from uid %d (pid %d): only uid %d may use this host",
                        what, uid, pid, os.getuid())
            self.refused += 1
            writer.transport.abort()
            return None
        return pid, uid

    async def _on_session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        who = self._admit(writer, "session")
        if who is None:
            return
        if self._stop.is_set() or self.service is None:
            writer.transport.abort()
            return
        peer = f"socket:{who[0]}"
        self._clients.add(writer)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        log.info("client %s attached", peer)
        try:
            await self.service.serve(reader, writer, peer=peer)
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            log.info("client %s went away: %s", peer, exc)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("serving client %s failed", peer)
        finally:
            self._clients.discard(writer)
            if task is not None:
                self._tasks.discard(task)
            writer.close()
            log.info("client %s detached", peer)

    async def _on_control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._admit(writer, "control") is None:
            return
        try:
            line = await asyncio.wait_for(reader.readline(), 10.0)
            try:
                request = json.loads(line)
                op = request.get("op") if isinstance(request, dict) else None
            except ValueError:
                op = None
            if op == "status":
                reply: dict[str, Any] = self.status()
            elif op == "stop":
                reply = {"ok": True, "pid": os.getpid(), "stopping": True}
            else:
                reply = {"ok": False, "error": f"unknown control request: {str(op)[:80]!r}"}
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()
            if op == "stop":
                self.stop("stopped by a client (desktop-agent host --stop)")
        except (asyncio.TimeoutError, ConnectionError, ValueError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    def status(self) -> dict[str, Any]:
        served: dict[str, Any] = {}
        if self.service is not None:
            try:
                served = self.service.status()
            except Exception as exc:  # the status must answer even when a session is in a bad state
                log.exception("the service's status failed")
                served = {"error": str(exc)}
        return {
            "ok": True, "pid": os.getpid(), "socket": str(self.paths.socket), "control": str(self.paths.control),
            "log": str(self.paths.log), "started_at": self.started_at,
            "uptime_s": round(time.monotonic() - self._started_mono, 3), "clients": len(self._clients),
            "refused": self.refused, "sessions": served.get("sessions", []), "pending": served.get("pending", []),
            **({"error": served["error"]} if "error" in served else {}),
        }

    # ----- stop -------------------------------------------------------------------------------------------
    async def _close_servers(self) -> None:
        for server in self._servers:
            server.close()
        for server in self._servers:
            try:
                await asyncio.wait_for(server.wait_closed(), 1.0)
            except (asyncio.TimeoutError, Exception):
                pass
        self._servers.clear()

    def _unlink_ours(self) -> None:
        for path, ident in list(self._bound.items()):
            try:
                st = os.lstat(path)
                if (st.st_dev, st.st_ino) == ident:
                    os.unlink(path)
            except FileNotFoundError:
                pass
            self._bound.pop(path, None)

    async def _shutdown(self) -> None:
        log.info("host %d stopping: %s", os.getpid(), self._stop_reason or "stopped")
        for server in self._servers:
            server.close()  # no new connection; the ones open go on until the sessions end
        if self.service is not None:
            try:
                await asyncio.wait_for(self.service.shutdown(), SHUTDOWN_TIMEOUT_S)
            except asyncio.TimeoutError:
                log.error("the sessions did not end within %.0f s", SHUTDOWN_TIMEOUT_S)
            except Exception:
                log.exception("ending the sessions failed")
        for writer in list(self._clients):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=2.0)
        await self._close_servers()
        self._unlink_ours()
        self._lock.release()
        log.info("host %d stopped", os.getpid())


# ----- the process -----------------------------------------------------------------------------------------
def setup_logging(paths: HostPaths, *, foreground: bool) -> None:
    """The log file (0600, appended; moved to ``host.log.1`` past 5 MB) and, in the foreground, stderr too —
    unless stderr already is the log file (a host started by ``start_background``)."""
    ensure_state_dir()
    path = str(paths.log)
    try:
        if os.path.getsize(path) > LOG_ROTATE_BYTES:
            os.replace(path, path + ".1")
    except OSError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    stream = os.fdopen(fd, "a", encoding="utf-8", buffering=1)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(process)d]: %(message)s")
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    handler: logging.Handler = logging.StreamHandler(stream)
    handler.setFormatter(fmt)
    root.addHandler(handler)
    if foreground and not _same_file(sys.stderr, path):
        err = logging.StreamHandler(sys.stderr)
        err.setFormatter(fmt)
        root.addHandler(err)


def _same_file(stream: Any, path: str) -> bool:
    try:
        a, b = os.fstat(stream.fileno()), os.stat(path)
    except (OSError, AttributeError, ValueError):
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def run_foreground(service_factory: Callable[[], HostService], *, paths: HostPaths | None = None,
                   log_to_stderr: bool = True) -> int:
    """``desktop-agent host --foreground``: 0 after a graceful stop; 1 when a host already runs or the directory
    is unsafe (said on stderr and in the log)."""
    paths = paths or host_paths()
    setup_logging(paths, foreground=log_to_stderr)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal does not end the sessions

    async def main() -> None:
        await HostDaemon(service_factory, paths).run()

    try:
        asyncio.run(main())
    except AlreadyRunning as exc:
        log.info("not starting: %s", exc)
        if not _same_file(sys.stderr, str(paths.log)):
            sys.stderr.write(f"desktop-agent: {exc}\n")
        return 1
    except (UnsafeDirectory, HostUnavailable) as exc:
        log.error("not starting: %s", exc)
        if not _same_file(sys.stderr, str(paths.log)):
            sys.stderr.write(f"desktop-agent: {exc}\n")
        return 1
    return 0


def default_service() -> HostService:
    """The engine host (``host.server``) as the daemon serves it."""
    from desktop_agent.host.service import EngineHostService

    return EngineHostService()


def host_command() -> list[str]:
    """This program's ``desktop-agent host --foreground`` (the frozen bundle is the command itself)."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "host", "--foreground"]
    return [sys.executable, "-m", "desktop_agent", "host", "--foreground"]


def _child_env() -> dict[str, str]:
    """This environment, with an import path that finds this very package from the host's directory (home)."""
    env = dict(os.environ)
    if getattr(sys, "frozen", False):
        return env
    import desktop_agent

    here = os.path.dirname(os.path.dirname(os.path.abspath(desktop_agent.__file__)))
    parts = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([here, *parts]))
    return env


def control_request(op: str, *, paths: HostPaths | None = None, timeout: float = 5.0) -> dict[str, Any] | None:
    """Ask the running host (``status`` or ``stop``); None when no host answers. The host must be run by this
    user (its ``SO_PEERCRED``), else ``HostUnavailable``."""
    paths = paths or host_paths()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    s.settimeout(timeout)
    try:
        try:
            s.connect(str(paths.control))
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        _pid, uid, _gid = peer_credentials(s)
        if uid != os.getuid():
            raise HostUnavailable(f"{paths.control} is served by uid {uid}, not by this user: not using it")
        s.sendall(json.dumps({"op": op}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if len(data) > 16 * 1024 * 1024:
                break
    except (ConnectionResetError, BrokenPipeError, socket.timeout):
        return None
    finally:
        s.close()
    try:
        reply = json.loads(data)
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


def start_background(*, paths: HostPaths | None = None, timeout: float = START_TIMEOUT_S,
                     command: Sequence[str] | None = None) -> dict[str, Any]:
    """Start the host detached and wait until it answers; its status (``started`` says whether this call started
    it or found one running). ``HostUnavailable`` naming the log file when it does not answer in time."""
    paths = paths or host_paths()
    running = control_request("status", paths=paths)
    if running is not None:
        return {**running, "started": False}
    ensure_private_dir(paths.dir)
    ensure_state_dir()
    fd = os.open(str(paths.log), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        child = subprocess.Popen(list(command or host_command()), stdin=subprocess.DEVNULL, stdout=fd, stderr=fd,
                                 start_new_session=True, close_fds=True, cwd=os.path.expanduser("~"),
                                 env=_child_env())
    except OSError as exc:
        raise HostUnavailable(f"The background host could not be started ({exc}). See its log: {paths.log}") \
            from None
    finally:
        os.close(fd)
    deadline = time.monotonic() + timeout
    exited: int | None = None
    while time.monotonic() < deadline:
        reply = control_request("status", paths=paths, timeout=max(0.2, deadline - time.monotonic()))
        if reply is not None:
            if exited is None and reply.get("pid") == child.pid:
                _reap_later(child)
                return {**reply, "started": True}
            if exited is not None or reply.get("pid") != child.pid:
                if exited is None:
                    _reap_later(child)  # ours will find the lock taken and exit
                return {**reply, "started": False}
        if exited is None:
            exited = child.poll()
            if exited not in (None, 1) or (exited == 1 and not HostLock(paths.lock).held_elsewhere()):
                raise HostUnavailable(f"The background host exited at start (status {exited}). "
                                      f"See its log: {paths.log}")
        time.sleep(0.03)
    if child.poll() is None:
        child.terminate()
    raise HostUnavailable(f"The background host did not answer within {timeout:.0f} s. See its log: {paths.log}")


def _reap_later(child: subprocess.Popen[bytes]) -> None:
    """The host outlives this process; a thread waits for it so that it never stays a zombie of ours."""
    import threading

    threading.Thread(target=child.wait, name="host-reaper", daemon=True).start()


def _gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for its parent counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def stop_host(*, paths: HostPaths | None = None, timeout: float = STOP_TIMEOUT_S) -> int | None:
    """Ask the host to stop and wait until it has (its lock is free); its pid, or None when none was running.
    ``HostUnavailable`` when it is still there after ``timeout``."""
    paths = paths or host_paths()
    reply = control_request("stop", paths=paths)
    if reply is None:
        return None
    pid = reply.get("pid")
    lock = HostLock(paths.lock)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not lock.held_elsewhere() and (not isinstance(pid, int) or _gone(pid)):
            return pid if isinstance(pid, int) else 0
        time.sleep(0.02)
    raise HostUnavailable(f"The background host (pid {pid}) did not stop within {timeout:.0f} s. "
                          f"See its log: {paths.log}")
