"""The phone page's HTTPS server (aiohttp): a client of the host's ``Inbox`` like the window and a notification.

Off by default; the host starts it when Settings → "Answer from my phone" is on. Boundaries, each failing closed:
- **TLS only** on its port, with the self-signed certificate of ``identity.py``; a plain-HTTP request gets the
  connection closed by the TLS handshake (never a redirect).
- **Host and Origin**: a request whose ``Host`` is not one of the addresses served is refused (DNS rebinding);
  every POST and the WebSocket need ``Origin`` equal to ``https://<that Host>`` (CSRF, cross-site WebSocket) and
  POSTs a JSON body.
- **Headers**: a strict Content-Security-Policy (scripts and styles only from files of ours, no inline script),
  no framing, no referrer, no caching; every asset is served from the package.
- **Pairing** (``/api/pair``, ``/api/pair/wait``): the QR's single-use code (rate-limited), an ECDH exchange, the
  desktop's ``confirm(PairingPrompt)`` (the window's focus-safe dialog, with the verification code the phone shows
  too); only then is the device stored with its own key.
- **Events** (``/api/events``, a WebSocket): the phone proves its key on the server's challenge, then gets the
  pending questions and every change (a question appears at once; answered or withdrawn ones vanish). Revoking a
  device closes its sockets at once.
- **Answers** (``/api/answer``): an HMAC with the device key over the session id, the request id, the sha256 of the
  input shown, a nonce, a time and the decision; a stale time (±``MAX_SKEW``), a nonce seen before, a wrong MAC, an
  unknown device, or an input hash that is not the pending one's is refused; else
  ``Inbox.answer(..., input_sha256=…, source="phone:<device id>")`` — the first answer from anywhere wins.

- **The port** is kept in the state directory (``server.json``) and taken again at the next start when it is free
  (a phone's stored key belongs to the page's origin, scheme + host + port); when it is taken, any free port.
- **Devices changed by another process** (``devices.json``): read again before each answer and each events
  socket's proof, and checked each ``DEVICES_POLL_S``: a device revoked elsewhere has its sockets closed here.

Nothing logs a key, a code, a MAC or a nonce (aiohttp's access log is off; our log lines name devices by id).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import secrets
import socket
import ssl
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import quote

from aiohttp import WSMsgType, web

from desktop_agent.core.permission import PermissionReply
from desktop_agent.host.inbox import Inbox, InboxEvent
from desktop_agent.host.remote.devices import Device, DeviceStore, PairingOffers
from desktop_agent.host.remote.identity import (
    Exchange, Identity, answer_message, b64u, events_message, exchange, load_identity, mac_ok, unb64u, write_secret,
)
from desktop_agent.host.remote.view import USER_DENIED, BadDecision, question_view, reply_for

log = logging.getLogger(__name__)

MAX_SKEW = 60.0  # seconds an answer's time may differ from ours
PAIR_CONFIRM_TIMEOUT = 120.0
MAX_BODY = 64 * 1024
DEVICES_POLL_S = 1.0
PORT_FILE = "server.json"
STATIC = {"app.js": "application/javascript", "style.css": "text/css"}  # and code.css, made from Pygments


@dataclass(frozen=True)
class PairingPrompt:
    """What the desktop's confirmation dialog shows."""

    device_name: str
    verification: str  # "123 456": the phone shows the same
    address: str  # the phone's IP address


@dataclass
class _Pending:
    prompt: PairingPrompt
    exchange: Exchange
    done: asyncio.Future[Device | None]


def _pygments_css() -> str:
    from pygments.formatters import HtmlFormatter

    return str(HtmlFormatter(style="monokai").get_style_defs(".code"))


def lan_address() -> str:
    """This machine's address on its LAN (the interface of the default route; a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.254.254.254", 9))
            return str(s.getsockname()[0])
        except OSError:
            return "127.0.0.1"


def qr_png(url: str) -> bytes:
    """The QR of ``url`` as PNG bytes (pure Python, a few ms), whole pixels a module, about 300 px wide."""
    import io

    import segno

    out = io.BytesIO()
    qr = segno.make(url, error="m")
    modules = qr.symbol_size(scale=1, border=2)[0]
    qr.save(out, kind="png", scale=max(3, 300 // modules), border=2)
    return out.getvalue()


def pairing_url(base_url: str, code: str, fingerprint: str) -> str:
    """The QR's URL: the page, the single-use code and the certificate's fingerprint in the fragment."""
    return f"{base_url}#pair={code}&fp={quote(fingerprint)}"


class RemoteServer:
    """``await start()`` serves on ``host:port`` (port 0: any free one); ``await stop()``."""

    def __init__(self, inbox: Inbox, state_dir: Path, *, host: str | None = None, port: int = 0,
                 names: tuple[str, ...] = (), confirm: Callable[[PairingPrompt], Awaitable[bool]] | None = None,
                 offers: PairingOffers | None = None) -> None:
        self.inbox = inbox
        self.state_dir = state_dir
        self.host = host or lan_address()
        self.port = port
        self.names = names
        self.confirm = confirm
        self.identity: Identity | None = None  # loaded in start(), off the loop's thread
        self.devices = DeviceStore(state_dir / "devices.json", load=False)
        self.offers = offers or PairingOffers()
        self._pairings: dict[str, _Pending] = {}
        self._sockets: dict[str, set[web.WebSocketResponse]] = {}
        self._nonces: dict[str, dict[str, float]] = {}
        self._runner: web.AppRunner | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._static_dir = resources.files("desktop_agent.host.remote") / "page"
        self._css = _pygments_css()
        self.on_devices_changed: Callable[[], None] = lambda: None
        self._remember_port = port == 0  # an explicit port is the caller's; any port: ours, kept for next time
        self._watch: asyncio.Task[None] | None = None

    # -- life ---------------------------------------------------------------------------------------------------
    @property
    def allowed_hosts(self) -> set[str]:
        hosts = {self.host, *self.names}
        out = set()
        for h in hosts:
            try:
                shown = f"[{h}]" if ipaddress.ip_address(h).version == 6 else h
            except ValueError:
                shown = h.lower()
            out.add(f"{shown}:{self.port}")
        return out

    @property
    def origin(self) -> str:
        return f"https://{sorted(self.allowed_hosts)[0]}"

    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}/"

    @property
    def ident(self) -> Identity:
        if self.identity is None:
            raise RuntimeError("the phone page is not started")
        return self.identity

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory() as tmp:  # load_cert_chain takes files; the key stays 0600 in a 0700 dir
            cert, key = Path(tmp) / "c.pem", Path(tmp) / "k.pem"
            cert.write_bytes(self.ident.cert_pem)
            key.touch(0o600)
            key.write_bytes(self.ident.key_pem)
            ctx.load_cert_chain(str(cert), str(key))
        return ctx

    async def start(self) -> None:
        # the certificate (made on first use), the devices and the TLS context: disk and key generation, on a thread
        self.identity = await asyncio.to_thread(load_identity, self.state_dir, [self.host, *self.names])
        await asyncio.to_thread(self.devices.load)
        ssl_context = await asyncio.to_thread(self.ssl_context)
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_BODY)
        app.router.add_get("/", self._index)
        app.router.add_get("/static/{name}", self._static)
        app.router.add_post("/api/pair", self._pair)
        app.router.add_post("/api/pair/wait", self._pair_wait)
        app.router.add_post("/api/answer", self._answer)
        app.router.add_get("/api/events", self._events)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        remembered = await asyncio.to_thread(self._saved_port) if self._remember_port else None
        site = None
        if remembered:
            site = web.TCPSite(self._runner, self.host, remembered, ssl_context=ssl_context, reuse_address=True)
            try:
                await site.start()
                self.port = remembered
            except OSError as exc:  # taken by another program: any free port (the phone pairs again)
                log.info("the phone page's port %d is taken (%s): another one", remembered, exc.strerror)
                site = None
        if site is None:
            site = web.TCPSite(self._runner, self.host, self.port, ssl_context=ssl_context, reuse_address=True)
            await site.start()
            sockets = getattr(site._server, "sockets", None) or []
            if self.port == 0 and sockets:
                self.port = int(sockets[0].getsockname()[1])
        if self._remember_port and self.port != remembered:
            await asyncio.to_thread(self._save_port)
        self._unsubscribe = self.inbox.subscribe(self._on_event)
        self._watch = asyncio.ensure_future(self._watch_devices())
        log.info("phone page serving on %s", self.base_url())

    def _saved_port(self) -> int | None:
        try:
            port = json.loads((self.state_dir / PORT_FILE).read_text()).get("port")
        except (OSError, ValueError, AttributeError):
            return None
        return port if isinstance(port, int) and 1024 <= port <= 65535 else None

    def _save_port(self) -> None:
        write_secret(self.state_dir / PORT_FILE, json.dumps({"port": self.port}).encode())

    async def _watch_devices(self) -> None:
        while True:
            await asyncio.sleep(DEVICES_POLL_S)
            try:
                await self._refresh_devices()
            except Exception:
                log.exception("reading the paired devices failed")

    async def _refresh_devices(self) -> None:
        """Take another process's changes to ``devices.json``; close the sockets of the devices gone."""
        if not await asyncio.to_thread(self.devices.refresh):
            return
        for device_id in [d for d in self._sockets if self.devices.get(d) is None]:
            self._nonces.pop(device_id, None)
            await self._close_sockets(device_id, 4001, "revoked")
            log.info("device %s revoked elsewhere", device_id)
        self.on_devices_changed()

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for device_id in list(self._sockets):
            await self._close_sockets(device_id, 1001, "server stopping")
        for pending in self._pairings.values():
            if not pending.done.done():
                pending.done.set_result(None)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- the desktop's API (Settings) ---------------------------------------------------------------------------
    def pairing_url(self) -> str:
        """A new single-use pairing URL (5 minutes): the code and the certificate's fingerprint in the fragment."""
        return pairing_url(self.base_url(), self.offers.offer(), self.ident.fingerprint)

    def pairing_qr_svg(self, url: str) -> str:
        import segno

        return str(segno.make(url, error="m").svg_inline(scale=6, border=2))

    def pairing_qr_png(self, url: str) -> bytes:
        return qr_png(url)

    def list_devices(self) -> list[dict[str, object]]:
        return self.devices.list()

    async def revoke(self, device_id: str) -> bool:
        """Forget the device and close its open connections now."""
        found = self.devices.forget(device_id)  # refused from now on …
        self._nonces.pop(device_id, None)
        await self._close_sockets(device_id, 4001, "revoked")  # … its sockets closed …
        if found:
            await asyncio.to_thread(self.devices.save)  # … and the file written off the loop
        if found:
            log.info("device %s revoked", device_id)
            self.on_devices_changed()
        return found

    # -- boundaries ---------------------------------------------------------------------------------------------
    @web.middleware
    async def _guard(self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                     ) -> web.StreamResponse:
        host = (request.headers.get("Host") or "").lower()
        if host not in self.allowed_hosts:
            log.warning("refused a request for a foreign Host")
            return self._secure(web.Response(status=421, text="Misdirected request"))
        needs_origin = request.method != "GET" or request.path == "/api/events"
        if needs_origin:
            if request.headers.get("Origin") != f"https://{host}":
                log.warning("refused a cross-origin request to %s", request.path)
                return self._secure(web.Response(status=403, text="Cross-origin request refused"))
            if request.headers.get("Sec-Fetch-Site") not in (None, "same-origin"):
                return self._secure(web.Response(status=403, text="Cross-site request refused"))
        if request.method == "POST" and request.content_type != "application/json":
            return self._secure(web.Response(status=415, text="JSON only"))
        if request.method not in ("GET", "POST"):
            return self._secure(web.Response(status=405))
        try:
            response = await handler(request)
        except web.HTTPException as exc:  # answered here, with our headers (returning the exception is deprecated)
            response = web.Response(status=exc.status, text=exc.text or exc.reason)
        return self._secure(response, host)

    def _secure(self, response: web.StreamResponse, host: str = "") -> web.StreamResponse:
        if response.prepared:  # a WebSocket: its headers went with the handshake
            return response
        connect = f"'self' wss://{host}" if host else "'self'"
        response.headers["Content-Security-Policy"] = (
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
            f"connect-src {connect}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        response.headers["Cross-Origin-Opener-Policy"] = "same-origin"
        response.headers["Cross-Origin-Resource-Policy"] = "same-origin"
        response.headers["Permissions-Policy"] = "camera=(), microphone=(), geolocation=()"
        return response

    # -- the page -----------------------------------------------------------------------------------------------
    async def _index(self, request: web.Request) -> web.Response:
        return web.Response(body=(self._static_dir / "index.html").read_bytes(), content_type="text/html",
                            charset="utf-8")

    async def _static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name == "code.css":
            return web.Response(text=self._css, content_type="text/css")
        if name not in STATIC:
            raise web.HTTPNotFound()
        return web.Response(body=(self._static_dir / name).read_bytes(), content_type=STATIC[name],
                            charset="utf-8")

    async def _json(self, request: web.Request) -> dict[str, Any]:
        try:
            data = await request.json()
        except (ValueError, UnicodeDecodeError):
            raise web.HTTPBadRequest(text="bad JSON")
        if not isinstance(data, dict):
            raise web.HTTPBadRequest(text="bad JSON")
        return data

    # -- pairing ------------------------------------------------------------------------------------------------
    async def _pair(self, request: web.Request) -> web.Response:
        data = await self._json(request)
        outcome = self.offers.take(data.get("code"))
        if outcome == "locked":
            log.warning("pairing refused: too many wrong codes")
            return web.json_response({"error": "Too many attempts; show a new pairing code"}, status=429)
        if outcome != "ok":
            log.warning("pairing refused: %s code", "expired" if outcome == "expired" else "unknown or used")
            return web.json_response({"error": "This pairing code is not valid; show a new one"}, status=403)
        try:
            phone_pub, phone_nonce = unb64u(str(data.get("pub", ""))), unb64u(str(data.get("nonce", "")))
            ex = exchange(self.ident.fingerprint, phone_pub, phone_nonce)
        except (ValueError, TypeError):
            return web.json_response({"error": "bad pairing key"}, status=400)
        name = str(data.get("name") or "Phone").strip()[:60] or "Phone"
        pairing_id = secrets.token_urlsafe(24)
        peer = request.remote or ""
        pending = _Pending(PairingPrompt(name, ex.verification, peer), ex,
                           asyncio.get_running_loop().create_future())
        self._pairings[pairing_id] = pending
        asyncio.ensure_future(self._confirm(pairing_id, pending))
        return web.json_response({"pairing": pairing_id, "pub": b64u(ex.server_pub), "nonce": b64u(ex.server_nonce),
                                  "fingerprint": self.ident.fingerprint})

    async def _confirm(self, pairing_id: str, pending: _Pending) -> None:
        ok = False
        try:
            if self.confirm is not None:
                ok = bool(await asyncio.wait_for(self.confirm(pending.prompt), PAIR_CONFIRM_TIMEOUT))
        except Exception:
            ok = False
        device = await asyncio.to_thread(self.devices.add, pending.prompt.device_name,
                                         pending.exchange.device_key) if ok else None
        if device is not None:
            log.info("device %s paired", device.id)
            self.on_devices_changed()
        if not pending.done.done():
            pending.done.set_result(device)
        await asyncio.sleep(30)
        self._pairings.pop(pairing_id, None)

    async def _pair_wait(self, request: web.Request) -> web.Response:
        data = await self._json(request)
        pending = self._pairings.get(str(data.get("pairing", "")))
        if pending is None:
            return web.json_response({"status": "unknown"}, status=404)
        try:
            device = await asyncio.wait_for(asyncio.shield(pending.done), 25)
        except asyncio.TimeoutError:
            return web.json_response({"status": "pending"})
        self._pairings.pop(str(data.get("pairing", "")), None)
        if device is None:
            return web.json_response({"status": "refused"})
        return web.json_response({"status": "paired", "device": device.id, "name": device.name})

    # -- events -------------------------------------------------------------------------------------------------
    async def _events(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(heartbeat=20, max_msg_size=16 * 1024)
        await ws.prepare(request)
        challenge = secrets.token_urlsafe(24)
        await ws.send_json({"type": "challenge", "challenge": challenge, "time": time.time()})
        device: Device | None = None
        try:
            msg = await asyncio.wait_for(ws.receive(), 10)
            if msg.type == WSMsgType.TEXT:
                data = json.loads(msg.data)
                await self._refresh_devices()  # paired or revoked by another process a moment ago
                candidate = self.devices.get(data.get("device"))
                if candidate is not None and mac_ok(candidate.key, events_message(candidate.id, challenge,
                                                                                  str(data.get("nonce", ""))),
                                                    data.get("mac")):
                    device = candidate
        except (asyncio.TimeoutError, ValueError):
            device = None
        if device is None:
            await ws.close(code=4001, message=b"unknown device")
            return ws
        self._sockets.setdefault(device.id, set()).add(ws)
        await self._touch(device.id)
        try:
            await ws.send_json({"type": "snapshot", "device": device.id, "name": device.name,
                                "questions": [question_view(q) for q in self.inbox.pending()]})
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    break
        finally:
            self._sockets.get(device.id, set()).discard(ws)
        return ws

    async def _close_sockets(self, device_id: str, code: int, why: str) -> None:
        for ws in list(self._sockets.pop(device_id, set())):
            await ws.close(code=code, message=why.encode())

    def _on_event(self, event: InboxEvent) -> None:
        if event.kind == "asked":
            message: dict[str, Any] = {"type": "asked", "question": question_view(event.question)}
        else:
            message = {"type": "gone", "session_id": event.question.session_id,
                       "request_id": event.question.request_id, "how": event.kind,
                       "by": "phone" if event.source.startswith("phone:") else (event.source or "")}
        for sockets in self._sockets.values():
            for ws in list(sockets):
                if not ws.closed:
                    asyncio.ensure_future(ws.send_json(message))

    # -- answers ------------------------------------------------------------------------------------------------
    async def _touch(self, device_id: str) -> None:
        if self.devices.touch(device_id):
            await asyncio.to_thread(self.devices.save)

    def _fresh_nonce(self, device_id: str, nonce: str, now: float) -> bool:
        seen = self._nonces.setdefault(device_id, {})
        for old, at in list(seen.items()):
            if now - at > 2 * MAX_SKEW + 5:
                del seen[old]
        if nonce in seen:
            return False
        seen[nonce] = now
        return True

    async def _answer(self, request: web.Request) -> web.Response:
        data = await self._json(request)
        names = ("device", "session_id", "request_id", "input_sha256", "nonce", "ts", "behavior", "accepted",
                 "feedback", "mac")
        if not all(isinstance(data.get(k), str) for k in names):
            return web.json_response({"error": "bad answer"}, status=400)
        fields: dict[str, str] = {k: str(data[k]) for k in names}
        await self._refresh_devices()  # revoked by another process a moment ago: refused
        device = self.devices.get(fields["device"])
        if device is None:
            log.warning("answer refused: unknown or revoked device")
            return web.json_response({"error": "This device is not paired"}, status=401)
        message = answer_message(fields["session_id"], fields["request_id"], fields["input_sha256"],
                                 fields["nonce"], fields["ts"], fields["behavior"], fields["accepted"],
                                 fields["feedback"])
        if not mac_ok(device.key, message, fields["mac"]):
            log.warning("answer refused from device %s: bad signature", device.id)
            return web.json_response({"error": "Bad signature"}, status=401)
        now = time.time()
        try:
            ts = float(fields["ts"])
        except ValueError:
            return web.json_response({"error": "bad answer"}, status=400)
        if abs(now - ts) > MAX_SKEW:
            log.warning("answer refused from device %s: stale", device.id)
            return web.json_response({"error": "This answer is stale", "outcome": "stale"}, status=409)
        if len(fields["nonce"]) < 16 or not self._fresh_nonce(device.id, fields["nonce"], now):
            log.warning("answer refused from device %s: replayed", device.id)
            return web.json_response({"error": "This answer was already received", "outcome": "replay"},
                                     status=409)
        await self._touch(device.id)
        question = self.inbox.get(fields["session_id"], fields["request_id"])
        if question is None:
            # not pending: the inbox refuses any reply and says why (answered, withdrawn, unknown)
            outcome = self.inbox.answer(fields["session_id"], fields["request_id"],
                                        PermissionReply(behavior="deny", message=USER_DENIED),
                                        source=f"phone:{device.id}", input_sha256=fields["input_sha256"])
            return web.json_response({"error": "This question is no longer pending", "outcome": outcome},
                                     status=409)
        if fields["input_sha256"] != question.input_sha256:
            log.warning("answer refused from device %s: for another input", device.id)
            return web.json_response({"error": "The answer is for a different tool input than the one pending",
                                      "outcome": "mismatch"}, status=409)
        try:
            reply = reply_for(question, fields["behavior"], fields["accepted"], fields["feedback"])
        except BadDecision as exc:
            return web.json_response({"error": str(exc)}, status=400)
        outcome = self.inbox.answer(question.session_id, question.request_id, reply, source=f"phone:{device.id}",
                                    input_sha256=fields["input_sha256"])
        if outcome != "ok":
            return web.json_response({"error": "This question is no longer pending", "outcome": outcome},
                                     status=409)
        log.info("question answered from device %s", device.id)
        return web.json_response({"outcome": "ok"})


__all__ = ["PairingPrompt", "RemoteServer", "lan_address", "pairing_url", "qr_png"]
