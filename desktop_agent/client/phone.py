"""The window's handle on the background host's phone page (issue 26; ``host.remote.relay`` on the other side).

``BackgroundPhone`` is what Settings → "Answer from my phone" needs of the page (``ui.dialogs.phone.RemoteAccess``),
over a connection of its own to the background host (``desktop_agent_phone``), attached to no session:

- ``pairing_url()`` (sync, as Settings asks it): a new single-use code made here, sent to the host at once as the
  page's one open offer (``offer``: written to the private socket before the URL is returned), in the URL's
  fragment with the certificate's fingerprint; ``pairing_qr_png(url)``: its QR, made here.
- ``list_devices()``: the devices as the host last said (``PhoneInfo``, then every ``desktop_agent_phone_devices``;
  ``on_devices_changed()`` is called then); ``await revoke(device_id)``: the host forgets it and closes its sockets.
- The host's ``desktop_agent_confirm_pairing``: ``confirm(PairingPrompt)`` — the window's focus-safe dialog —
  answers ``{"accepted": bool}``.
- ``await stop()``: the page stops (Settings switched it off); ``await detach()``: only this connection goes (the
  window closes: the page keeps serving the sessions left running, and pairing is refused until a window is back).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import Any, Awaitable, Callable

from desktop_agent.client.base import ClientError
from desktop_agent.client.transports import UnixTransport
from desktop_agent.protocol.control import (
    ConfirmPairingRequest, ControlRequest, ControlResponse, PhoneDevicesRequest, PhoneInfo, PhoneRequest,
)

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 30.0


class BackgroundPhone:
    """``await BackgroundPhone.start(transport, state_dir, confirm)``; see the module's docstring."""

    def __init__(self, transport: UnixTransport, confirm: Callable[[Any], Awaitable[bool]]) -> None:
        self.transport = transport
        self.confirm = confirm
        self.info: PhoneInfo | None = None
        self.devices: list[dict[str, Any]] = []
        self.on_devices_changed: Callable[[], None] = lambda: None
        self._futures: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @classmethod
    async def start(cls, transport: UnixTransport, state_dir: str | None,
                    confirm: Callable[[Any], Awaitable[bool]]) -> BackgroundPhone:
        phone = cls(transport, confirm)
        phone._reader = asyncio.ensure_future(phone._read())
        try:
            response = await phone._request(PhoneRequest(action="on", state_dir=state_dir))
        except BaseException:
            await phone.detach()
            raise
        phone.info = PhoneInfo.model_validate(response)
        phone.devices = list(phone.info.devices)
        return phone

    # -- where it serves ------------------------------------------------------------------------------------
    @property
    def host(self) -> str:
        return self._info.host

    @property
    def port(self) -> int:
        return self._info.port

    @property
    def fingerprint(self) -> str:
        return self._info.fingerprint

    @property
    def cert_pem(self) -> bytes:
        return self._info.cert_pem.encode()

    @property
    def _info(self) -> PhoneInfo:
        if self.info is None:
            raise ClientError("the phone page is not on")
        return self.info

    def base_url(self) -> str:
        return self._info.url

    # -- Settings' side (ui.dialogs.phone.RemoteAccess) -----------------------------------------------------
    def pairing_url(self) -> str:
        from desktop_agent.host.remote.server import pairing_url

        code = secrets.token_urlsafe(24)
        self._spawn(self._request(PhoneRequest(action="offer", code=code)))  # on the wire before the URL shows
        return pairing_url(self.base_url(), code, self.fingerprint)

    def pairing_qr_png(self, url: str) -> bytes:
        from desktop_agent.host.remote.server import qr_png

        return qr_png(url)

    def list_devices(self) -> list[dict[str, Any]]:
        return list(self.devices)

    async def revoke(self, device_id: str) -> bool:
        response = await self._request(PhoneRequest(action="revoke", device_id=device_id))
        self._set_devices(response.get("devices") or [])
        return bool(response.get("revoked"))

    async def stop(self) -> None:
        """The page stops in the host (Settings switched it off), then this connection closes."""
        with contextlib.suppress(ClientError, asyncio.TimeoutError, ConnectionError):
            await self._request(PhoneRequest(action="off"))
        await self.detach()

    async def detach(self) -> None:
        await self.transport.close()
        if self._reader is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._reader), 5)
        for task in list(self._tasks):
            task.cancel()

    # -- the connection -------------------------------------------------------------------------------------
    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a failed offer after the window went is not an "unretrieved" error

    def _request(self, request: PhoneRequest) -> Awaitable[dict[str, Any]]:
        message = ControlRequest(request=request)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._futures[message.request_id] = future
        try:
            self.transport.send(message)  # written now, synchronously: in order with every later request
        except Exception as exc:
            self._futures.pop(message.request_id, None)
            future.set_exception(ClientError(f"the background host is gone: {exc}"))
        return asyncio.wait_for(future, REQUEST_TIMEOUT_S)

    def _set_devices(self, devices: list[dict[str, Any]]) -> None:
        self.devices = [d for d in devices if isinstance(d, dict)]
        try:
            self.on_devices_changed()
        except Exception:
            log.exception("on_devices_changed failed")

    async def _read(self) -> None:
        while True:
            message = await self.transport.receive()
            if message is None:
                break
            if isinstance(message, ControlResponse):
                future = self._futures.pop(message.request_id, None)
                if future is not None and not future.done():
                    body = message.response
                    if body.subtype == "error":
                        future.set_exception(ClientError(body.error or "the host refused"))
                    else:
                        future.set_result(body.response or {})
            elif isinstance(message, ControlRequest):
                self._spawn(self._answer(message))
        for future in self._futures.values():
            if not future.done():
                future.set_exception(ClientError("the background host closed the connection"))
        self._futures.clear()

    async def _answer(self, message: ControlRequest) -> None:
        request = message.request
        response: ControlResponse
        if isinstance(request, ConfirmPairingRequest):
            from desktop_agent.host.remote.server import PairingPrompt

            try:
                accepted = bool(await self.confirm(PairingPrompt(request.device_name, request.verification,
                                                                 request.address)))
            except Exception:
                log.exception("the pairing confirmation failed")
                accepted = False
            response = ControlResponse.success(message.request_id, {"accepted": accepted})
        elif isinstance(request, PhoneDevicesRequest):
            self._set_devices(request.devices)
            response = ControlResponse.success(message.request_id, {})
        else:
            response = ControlResponse.failure(message.request_id, f"unsupported control request: {request.subtype}")
        with contextlib.suppress(Exception):
            self.transport.send(response)


__all__ = ["BackgroundPhone"]
