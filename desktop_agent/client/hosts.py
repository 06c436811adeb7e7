"""The clients of an engine host (DESIGN.md §1): ``HostClient`` — the host in this process, over the memory
transport (``make_client("inprocess")``, the window's default) — and ``SocketClient`` — the background host
(``desktop-agent host``) over its Unix socket. Both open or attach ``ProtocolSession``s; the folder questions are
``LocalStore``'s.
"""

from __future__ import annotations

import os

from desktop_agent.client.base import ClientError, ExecutorKind, SessionOptions
from desktop_agent.client.local import LocalStore
from desktop_agent.client.session import ProtocolSession
from desktop_agent.client.transports import MemoryTransport, Transport, UnixTransport
from desktop_agent.host.server import Host


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
