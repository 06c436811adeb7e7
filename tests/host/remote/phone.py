"""A phone in Python for the attack tests: the same pairing exchange and signatures as the page's app.js
(ECDH P-256, HKDF-SHA256, HMAC-SHA256), over real HTTPS and a real WebSocket (aiohttp's client) to a real
``RemoteServer``, trusting exactly its certificate."""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import aiohttp
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from desktop_agent.host.remote.identity import (
    DEVICE_KEY_INFO, answer_message, b64u, events_message, mac, unb64u, verification_code,
)
from desktop_agent.host.remote.server import RemoteServer


def fragment(url: str) -> tuple[str, str]:
    params = parse_qs(urlsplit(url).fragment)
    return params["pair"][0], unquote(params["fp"][0])


@dataclass
class Phone:
    server: RemoteServer
    name: str = "Test phone"
    device_id: str = ""
    key: bytes = b""
    verification: str = ""
    session: aiohttp.ClientSession | None = None
    sent: list[dict[str, Any]] = field(default_factory=list)

    @property
    def origin(self) -> str:
        return f"https://{self.server.host}:{self.server.port}"

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Origin": self.origin, **extra}

    async def __aenter__(self) -> Phone:
        ctx = ssl.create_default_context(cadata=self.server.ident.cert_pem.decode())
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx))
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.session is not None
        await self.session.close()

    async def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
        assert self.session is not None
        async with self.session.post(self.origin + path, json=body,
                                     headers=self.headers() if headers is None else headers) as r:
            try:
                data = await r.json(content_type=None)
            except Exception:
                data = {"text": await r.text()}
            return r.status, data if isinstance(data, dict) else {"value": data}

    async def begin_pairing(self, code: str) -> tuple[int, dict[str, Any], Any]:
        priv = ec.generate_private_key(ec.SECP256R1())
        pub = priv.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        nonce = os.urandom(16)
        status, data = await self.post("/api/pair", {"code": code, "name": self.name, "pub": b64u(pub),
                                                     "nonce": b64u(nonce)})
        return status, data, (priv, pub, nonce)

    async def pair(self, url: str) -> str:
        """Pair with the code of ``url``; the device id (the server's ``confirm`` must say yes)."""
        code, fp = fragment(url)
        status, data, (priv, pub, nonce) = await self.begin_pairing(code)
        assert status == 200, data
        assert data["fingerprint"] == fp
        server_pub, server_nonce = unb64u(data["pub"]), unb64u(data["nonce"])
        self.verification = verification_code(fp, pub, server_pub, nonce, server_nonce)
        shared = priv.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), server_pub))
        self.key = HKDF(algorithm=hashes.SHA256(), length=32, salt=nonce + server_nonce,
                        info=DEVICE_KEY_INFO).derive(shared)
        while True:
            status, done = await self.post("/api/pair/wait", {"pairing": data["pairing"]})
            if done.get("status") != "pending":
                break
        assert done.get("status") == "paired", done
        self.device_id = done["device"]
        return self.device_id

    def answer_body(self, view: dict[str, Any], behavior: str = "allow", accepted: str = "", feedback: str = "",
                    *, ts: float | None = None, nonce: str | None = None) -> dict[str, Any]:
        ts_text = str(int(time.time() if ts is None else ts))
        nonce = nonce or os.urandom(16).hex()
        body = {"device": self.device_id, "session_id": view["session_id"], "request_id": view["request_id"],
                "input_sha256": view["input_sha256"], "nonce": nonce, "ts": ts_text, "behavior": behavior,
                "accepted": accepted, "feedback": feedback}
        body["mac"] = mac(self.key, answer_message(body["session_id"], body["request_id"], body["input_sha256"],
                                                   nonce, ts_text, behavior, accepted, feedback))
        return body

    async def answer(self, view: dict[str, Any], behavior: str = "allow", accepted: str = "", feedback: str = "",
                     **kw: Any) -> tuple[int, dict[str, Any]]:
        body = self.answer_body(view, behavior, accepted, feedback, **kw)
        self.sent.append(body)
        return await self.post("/api/answer", body)

    async def events(self) -> aiohttp.ClientWebSocketResponse:
        """An authenticated events socket, past its snapshot (``self.snapshot``)."""
        assert self.session is not None
        ws = await self.session.ws_connect(self.origin + "/api/events", headers=self.headers())
        challenge = (await ws.receive_json(timeout=5))["challenge"]
        nonce = os.urandom(16).hex()
        await ws.send_json({"device": self.device_id, "nonce": nonce,
                            "mac": mac(self.key, events_message(self.device_id, challenge, nonce))})
        self.snapshot = await ws.receive_json(timeout=5)
        return ws


async def yes(prompt: Any) -> bool:
    return True


async def wait_for(check: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.01)
    return value
