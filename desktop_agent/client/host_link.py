"""The way to the background host (``desktop-agent host``) from a front end: find it, start it on demand, connect.

``await connect_host(start=True)`` returns ``(reader, writer)`` of a connection to the host's session socket:
when no host answers it starts one (``host.daemon.start_background``: detached, stdio to its log; run on a worker
thread, never on the Qt thread) and waits until the socket answers, at most ``timeout`` seconds; a failure is
``HostUnavailable`` naming the log file. The socket directory is verified first (0700, ours, not a symlink) and
the process at the other end must be run by this user (``SO_PEERCRED``), so a socket planted by someone else is
never spoken to. ``host_status()`` / ``stop_host()`` are ``--status`` / ``--stop`` for a front end.

``BackgroundClient`` is the ``EngineClient`` of the window's sessions in the background host: ``open(folder)`` a new
session or ``attach(session_id)`` to one the host runs (every pending question is asked again), each connection —
a restart's too — through ``connect_host``. ``phone(state_dir, confirm)`` turns on the phone page the host serves
(``client.phone.BackgroundPhone``); ``notifications()`` is None: the host notifies its questions itself
(``host.away``, told whether the window is active).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Awaitable, Callable, Sequence

from desktop_agent.client.base import ClientError, ExecutorKind, SessionOptions
from desktop_agent.client.local import LocalStore
from desktop_agent.host.daemon import START_TIMEOUT_S, control_request, start_background
from desktop_agent.host.daemon import stop_host as _stop_host
from desktop_agent.host.runtime import HostPaths, UnsafeDirectory, ensure_private_dir, host_paths, peer_credentials
from desktop_agent.util.threads import in_thread

STREAM_LIMIT = 16 * 1024 * 1024  # one protocol line may carry a large patch


class HostUnavailable(ClientError):
    """The background host cannot be reached or started; the message says why and names its log file."""


async def connect_host(start: bool = True, *, timeout: float = START_TIMEOUT_S, paths: HostPaths | None = None,
                       command: Sequence[str] | None = None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the running host's session socket; with ``start``, the host is started when none runs."""
    paths = paths or host_paths()
    try:
        await in_thread(lambda: ensure_private_dir(paths.dir, create=start))
    except FileNotFoundError:
        raise HostUnavailable(f"The background host is not running (no {paths.dir}).") from None
    except UnsafeDirectory as exc:
        raise HostUnavailable(str(exc)) from None
    connection = await _try_connect(paths)
    if connection is not None:
        return connection
    if not start:
        raise HostUnavailable(f"The background host is not running (nothing answers on {paths.socket}).")
    from desktop_agent.host.daemon import HostUnavailable as StartFailed

    try:
        await in_thread(lambda: start_background(paths=paths, timeout=timeout, command=command))
    except (StartFailed, UnsafeDirectory, OSError) as exc:
        raise HostUnavailable(str(exc)) from None
    connection = await _try_connect(paths)
    if connection is None:
        raise HostUnavailable(f"The background host started but its socket {paths.socket} does not answer. "
                              f"See its log: {paths.log}")
    return connection


async def _try_connect(paths: HostPaths) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    try:
        reader, writer = await asyncio.open_unix_connection(os.fspath(paths.socket), limit=STREAM_LIMIT)
    except (FileNotFoundError, ConnectionRefusedError):
        return None
    except OSError as exc:
        raise HostUnavailable(f"Cannot connect to the background host on {paths.socket}: {exc}") from None
    _pid, uid, _gid = peer_credentials(writer.get_extra_info("socket"))
    if uid != os.getuid():
        writer.transport.abort()
        raise HostUnavailable(f"{paths.socket} is served by uid {uid}, not by this user: not using it")
    return reader, writer


async def ensure_host(*, timeout: float = START_TIMEOUT_S, paths: HostPaths | None = None,
                      command: Sequence[str] | None = None) -> dict[str, Any]:
    """The running host's status, starting the host first when none runs (``HostUnavailable`` naming the log
    when it cannot start)."""
    paths = paths or host_paths()
    from desktop_agent.host.daemon import HostUnavailable as StartFailed

    try:
        return dict(await in_thread(lambda: start_background(paths=paths, timeout=timeout, command=command)))
    except (StartFailed, UnsafeDirectory, OSError) as exc:
        raise HostUnavailable(str(exc)) from None


async def host_status(paths: HostPaths | None = None) -> dict[str, Any] | None:
    """The running host's status (pid, socket, sessions, pending questions), or None when none runs."""
    return await in_thread(lambda: control_request("status", paths=paths))


async def stop_host(paths: HostPaths | None = None) -> int | None:
    """Stop the host gracefully; its pid, or None when none ran."""
    return await in_thread(lambda: _stop_host(paths=paths))


class BackgroundClient(LocalStore):
    """Sessions in the background host (``desktop-agent host``), started on demand: ``open`` a new session or
    ``attach`` to one the host runs (its pending questions are asked again). Every connection — a restart too — goes
    through ``connect_host``: the directory verified, the host started when none runs, its peer uid checked."""

    kind: ExecutorKind = "host"

    def __init__(self, paths: HostPaths | None = None, *, command: Sequence[str] | None = None):
        self.paths = paths or host_paths()
        self.command = command

    async def _transport(self, _resume: str | None = None) -> Any:
        from desktop_agent.client.transports import UnixTransport

        reader, writer = await connect_host(True, paths=self.paths, command=self.command)
        return UnixTransport(reader, writer, os.fspath(self.paths.socket))

    async def open(self, folder: str | os.PathLike[str], options: SessionOptions) -> Any:
        from desktop_agent.client.session import ProtocolSession

        if options.engine_kwargs:
            raise ClientError("engine objects cannot cross to the background host")
        cwd = os.path.abspath(os.fspath(folder))
        session = ProtocolSession(await self._transport(), cwd, options, speaks="host", executor="host",
                                  connect=self._transport)
        await session.start()
        return session

    async def attach(self, session_id: str, options: SessionOptions) -> Any:
        from desktop_agent.client.session import ProtocolSession

        options.session_id = session_id
        session = ProtocolSession(await self._transport(), "", options, speaks="host", executor="host",
                                  connect=self._transport)
        await session.start(attach=True)
        return session

    async def notifications(self, **_kw: Any) -> None:
        """None: the background host sends its own notifications (``host.away``)."""
        return None

    async def phone(self, state_dir: str, confirm: Callable[[Any], Awaitable[bool]]) -> Any:
        """The phone page in the background host, on (``client.phone.BackgroundPhone``: ``stop()`` turns it off);
        its pairings confirmed by ``confirm`` here. ``state_dir`` is the in-process host's; the background host
        keeps the page's state in its own state directory (it refuses a client's choice), so it is not sent."""
        from desktop_agent.client.phone import BackgroundPhone
        from desktop_agent.client.transports import UnixTransport

        reader, writer = await connect_host(True, paths=self.paths, command=self.command)
        return await BackgroundPhone.start(UnixTransport(reader, writer, os.fspath(self.paths.socket)), None,
                                           confirm)


__all__ = ["BackgroundClient", "HostUnavailable", "connect_host", "ensure_host", "host_status", "stop_host"]
