"""The phone page in the background host (issue 26): one ``RemoteServer`` on the host's inbox, turned on and off by
the windows (``desktop_agent_phone``, ``client.host_link.BackgroundPhone``), its pairings confirmed in a window.

- ``on``: the page starts (once per host; a second window's ``on`` gets the same page) and this window's
  connection becomes one that confirms pairings; it gets ``PhoneInfo`` (URL, certificate, devices).
- Pairing: the QR's single-use code is made by the window that shows it (``offer``: the code goes over the
  private socket, never into a log) — the page takes it as its one open offer. A phone's pairing is confirmed by
  ``desktop_agent_confirm_pairing`` to a connected window (an active one first): its focus-safe dialog answers.
  With no window connected, a pairing is refused.
- Its state (certificate, key, port, devices) is in the host's own state directory, ``<state dir>/remote``, made
  0700 (``host.runtime.ensure_private_dir``: never a symlink, another user's or a group-writable one); an ``on``
  that names another directory (or a relative one) is refused: no client points the host elsewhere.
- Only a connection that turned the page ``on`` may ``offer`` a pairing code, ``revoke`` a device or turn it
  ``off``; a pairing is confirmed only by the window it was asked of (the answer to that request on that
  connection's channel: an answer from another connection is refused by ``host.server``).
- The page keeps serving when every window has gone (a paired phone still answers the questions of the sessions
  left running); ``off`` — any window's — stops it. ``revoke`` forgets a device and closes its sockets at once;
  every change of the devices goes to the connected windows (``desktop_agent_phone_devices``).
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.host.remote.server import PAIR_CONFIRM_TIMEOUT, PairingPrompt, RemoteServer
from desktop_agent.host.runtime import ensure_private_dir
from desktop_agent.protocol.control import ConfirmPairingRequest, PhoneDevicesRequest, PhoneInfo, PhoneRequest
from desktop_agent.util import dirs

if TYPE_CHECKING:
    from desktop_agent.host.inbox import Inbox
    from desktop_agent.host.session import Client

log = logging.getLogger(__name__)


def _connected(client: Client) -> bool:
    return not client.channel.closed and not getattr(client.connection, "closed", False)


class PhoneRelay:
    """The host's phone page and the windows that confirm its pairings."""

    def __init__(self, inbox: Inbox, *, host: str | None = None, state_dir: Path | None = None) -> None:
        self.inbox = inbox
        self.bind_host = host  # tests: 127.0.0.1; else the LAN address
        # the one place of the page's state: the host's state directory's ``remote`` (never a client's choice)
        self.state_dir = Path(os.path.abspath(state_dir if state_dir is not None else dirs.state_dir() / "remote"))
        self.server: RemoteServer | None = None
        self.windows: list[Client] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._lock = asyncio.Lock()

    async def answer(self, client: Client, request: PhoneRequest) -> dict[str, Any]:
        """The response object of one ``desktop_agent_phone`` request (a refusal raises)."""
        if request.action == "on":
            return (await self.on(client, request.state_dir)).to_wire()
        if client not in self.windows or not _connected(client):
            raise PermissionError(f"Refused {request.action!r}: only a connection that turned the phone page on may "
                                  f"send it")
        if request.action == "off":
            await self.stop()
            return {}
        server = self._running()
        if request.action == "offer":
            server.offers.offer(request.code or "")
            return {}
        revoked = await server.revoke(str(request.device_id or ""))  # on_devices_changed tells the windows
        return {"revoked": revoked, "devices": server.list_devices()}

    def _running(self) -> RemoteServer:
        if self.server is None:
            raise RuntimeError("The phone page is not on")
        return self.server

    def _place(self, asked: str | None) -> Path:
        """The page's state directory, 0700: the fixed one; a request that names another is refused."""
        fixed = self.state_dir
        if asked is not None:
            if not os.path.isabs(asked):
                raise ValueError(f"The phone page's state directory must be an absolute path, not {asked!r}")
            if os.path.normpath(asked) != os.path.normpath(fixed):
                raise ValueError(f"The phone page keeps its state in the host's state directory ({fixed}); "
                                 f"a client cannot choose another")
        fixed.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        ensure_private_dir(fixed)  # 0700, this user's, not a symlink (UnsafeDirectory otherwise)
        return fixed

    async def on(self, client: Client, state_dir: str | None) -> PhoneInfo:
        place = self._place(state_dir)
        async with self._lock:
            if self.server is None:
                server = RemoteServer(self.inbox, place, host=self.bind_host, confirm=self.confirm)
                server.on_devices_changed = self._devices_changed
                await server.start()
                self.server = server
            server = self.server
        self.windows = [c for c in self.windows if _connected(c) and c is not client] + [client]
        return PhoneInfo(url=server.base_url(), host=server.host, port=server.port,
                         fingerprint=server.ident.fingerprint, cert_pem=server.ident.cert_pem.decode(),
                         devices=server.list_devices())

    async def stop(self) -> None:
        async with self._lock:
            server, self.server = self.server, None
            if server is not None:
                await server.stop()
                log.info("phone page stopped")
        for task in list(self._tasks):
            task.cancel()

    async def confirm(self, prompt: PairingPrompt) -> bool:
        """A phone asks to pair: a connected window confirms it (an active one first); none → refused."""
        windows = [c for c in self.windows if _connected(c)]
        if not windows:
            log.warning("pairing refused: no window is there to confirm it")
            return False
        window = ([c for c in windows if c.active] or windows)[-1]
        request = ConfirmPairingRequest(device_name=prompt.device_name, verification=prompt.verification,
                                        address=prompt.address)
        try:
            response = await asyncio.wait_for(window.channel.request(request), PAIR_CONFIRM_TIMEOUT)
        except (asyncio.TimeoutError, ConnectionError, RuntimeError) as exc:
            log.info("pairing not confirmed: %s", exc or "timed out")
            return False
        return response.get("accepted") is True

    def _devices_changed(self) -> None:
        server = self.server
        if server is None:
            return
        request = PhoneDevicesRequest(devices=server.list_devices())
        for window in [c for c in self.windows if _connected(c)]:
            task = asyncio.ensure_future(self._tell(window, request))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _tell(self, window: Client, request: PhoneDevicesRequest) -> None:
        try:
            await asyncio.wait_for(window.channel.request(request), 10)
        except (asyncio.TimeoutError, ConnectionError, RuntimeError):
            pass


__all__ = ["PhoneRelay"]
