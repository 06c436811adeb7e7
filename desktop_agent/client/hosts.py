"""The clients of an engine host (DESIGN.md §1): ``HostClient`` — the host in this process, over the memory
transport (``make_client("inprocess")``, the window's default) — and ``SocketClient`` — the background host
(``desktop-agent host``) over its Unix socket. Both open or attach ``ProtocolSession``s; the folder questions are
``LocalStore``'s.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Awaitable, Callable

from desktop_agent.client.base import ClientError, ExecutorKind, SessionOptions
from desktop_agent.client.local import LocalStore
from desktop_agent.client.session import ProtocolSession
from desktop_agent.client.transports import MemoryTransport, Transport, UnixTransport
from desktop_agent.host.server import Host

log = logging.getLogger(__name__)


class HostClient(LocalStore):
    """Sessions in an engine host in this process (``inprocess``: the window's default), over the memory
    transport; the host is made on first use, on the running loop."""

    kind: ExecutorKind = "inprocess"

    def __init__(self, host: Host | None = None):
        self._host = host

    @property
    def host(self) -> Host:
        if self._host is None:
            self._host = Host()
        return self._host

    async def open(self, folder: str | os.PathLike[str], options: SessionOptions) -> ProtocolSession:
        cwd = os.path.abspath(os.fspath(folder))
        if options.script == "tour":
            from desktop_agent.client.tour import tour_client

            options.engine_kwargs = {**options.engine_kwargs, "client": tour_client(cwd)}
        host = self.host

        async def connect(_resume: str | None) -> Transport:
            return MemoryTransport(host)

        session = ProtocolSession(await connect(None), cwd, options, speaks="host", executor="inprocess",
                                  connect=connect)
        await session.start()
        return session


    async def attach(self, session_id: str, options: SessionOptions) -> ProtocolSession:
        """Another client of a session this host runs (a second window): it gets every pending question too."""
        host = self.host

        async def connect(_resume: str | None) -> Transport:
            return MemoryTransport(host)

        options.session_id = session_id
        session = ProtocolSession(await connect(None), "", options, speaks="host", executor="inprocess",
                                  connect=connect)
        await session.start(attach=True)
        return session


    async def notifications(self, *, review: Callable[[Any], None], window_active: Callable[[], bool]) -> Any:
        """Desktop notifications with Review / Deny / Allow once for this host's questions (``host.notify``: a client
        of the host's one inbox, like the window); None without a session bus or a notification daemon."""
        if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
            return None
        from desktop_agent.host.notify import Notifier

        notifier = Notifier(self.host.inbox, review=review, window_active=window_active)
        try:
            await asyncio.wait_for(notifier.start(), 5)
        except Exception as exc:  # no daemon, a broken bus: the taskbar alert stays
            log.info("desktop notifications are off: %s", exc)
            return None
        return notifier

    async def phone(self, state_dir: str, confirm: Callable[[Any], Awaitable[bool]]) -> Any:
        """The phone page (``host.remote``) on this host's inbox, started; ``stop()`` it to end it."""
        from pathlib import Path

        from desktop_agent.host.remote.server import RemoteServer

        server = RemoteServer(self.host.inbox, Path(state_dir), confirm=confirm)
        await server.start()
        return server


class SocketClient(LocalStore):
    """Sessions in the background host (``desktop-agent host``), over its Unix socket at ``path``."""

    kind: ExecutorKind = "host"

    def __init__(self, path: str):
        self.path = path

    async def open(self, folder: str | os.PathLike[str], options: SessionOptions) -> ProtocolSession:
        if options.engine_kwargs:
            raise ClientError("engine objects cannot cross to the background host")
        cwd = os.path.abspath(os.fspath(folder))

        async def connect(_resume: str | None) -> Transport:
            return await UnixTransport.connect(self.path)

        session = ProtocolSession(await connect(None), cwd, options, speaks="host", executor="host",
                                  connect=connect)
        await session.start()
        return session

    async def attach(self, session_id: str, options: SessionOptions) -> ProtocolSession:
        """A session the host runs already (the window reopened): every pending question is asked again."""
        async def connect(_resume: str | None) -> Transport:
            return await UnixTransport.connect(self.path)

        options.session_id = session_id
        session = ProtocolSession(await connect(None), "", options, speaks="host", executor="host",
                                  connect=connect)
        await session.start(attach=True)
        return session
