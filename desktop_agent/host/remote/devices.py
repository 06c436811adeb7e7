"""Paired devices and pairing offers.

``DeviceStore``: one JSON file in the state directory (``devices.json``, 0600, written atomically): each device's
id (Syncthing-like groups of base32), name, its own 32-byte key, when it was paired and last used. ``revoke``
removes it at once; the server closes its open connections.

``PairingOffers``: the single-use pairing code (192 random bits, in the QR's URL fragment, so never in a request
line or a log), valid 5 minutes; a new offer replaces the old. Guesses are rate-limited: after ``max_failures``
wrong codes within ``lockout`` seconds the current offer is burned and every attempt is refused until the lockout
ends — then the person shows a new QR.
"""

from __future__ import annotations

import base64
import hmac
import json
import os
import secrets
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Literal

from desktop_agent.host.remote.identity import write_secret

PAIRING_TTL = 300.0


@dataclass
class Device:
    id: str
    name: str
    key: bytes
    paired_at: float
    last_used: float

    def public(self) -> dict[str, object]:
        """What a list shows (never the key)."""
        return {"id": self.id, "name": self.name, "paired_at": self.paired_at, "last_used": self.last_used}


def new_device_id() -> str:
    raw = base64.b32encode(os.urandom(10)).decode().rstrip("=")
    return "-".join(raw[i:i + 4] for i in range(0, len(raw), 4))


class DeviceStore:
    def __init__(self, path: Path, *, load: bool = True) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._devices: dict[str, Device] = {}
        if load:
            self.load()

    def load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
        except (FileNotFoundError, ValueError):
            return
        for item in data.get("devices", []):
            try:
                self._devices[item["id"]] = Device(item["id"], str(item["name"]), base64.b64decode(item["key"]),
                                                   float(item["paired_at"]), float(item["last_used"]))
            except (KeyError, ValueError, TypeError):
                continue

    def save(self) -> None:
        with self._lock:
            self._save()

    def _save(self) -> None:
        items = [dict(asdict(d), key=base64.b64encode(d.key).decode()) for d in list(self._devices.values())]
        write_secret(self.path, json.dumps({"devices": items}, indent=1).encode())

    def add(self, name: str, key: bytes) -> Device:
        now = time.time()
        with self._lock:
            device = Device(new_device_id(), name[:60] or "Phone", key, now, now)
            self._devices[device.id] = device
            self._save()
        return device

    def get(self, device_id: object) -> Device | None:
        return self._devices.get(device_id) if isinstance(device_id, str) else None

    def forget(self, device_id: str) -> bool:
        """Revoked in memory at once (every later request refused); ``save()`` writes it."""
        return self._devices.pop(device_id, None) is not None

    def revoke(self, device_id: str) -> bool:
        found = self.forget(device_id)
        if found:
            self.save()
        return found

    def touch(self, device_id: str, *, save_every: float = 30.0) -> bool:
        """Note a use; True when the file is due to be written (``save()``, off the loop)."""
        device = self._devices.get(device_id)
        if device is None:
            return False
        now = time.time()
        due = now - device.last_used > save_every
        device.last_used = now
        return due

    def list(self) -> list[dict[str, object]]:
        return [d.public() for d in sorted(self._devices.values(), key=lambda d: d.paired_at)]


@dataclass
class Offer:
    code: str
    expires: float


TakeOutcome = Literal["ok", "wrong", "expired", "locked"]


class PairingOffers:
    def __init__(self, *, ttl: float = PAIRING_TTL, max_failures: int = 5, lockout: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl, self.max_failures, self.lockout, self.clock = ttl, max_failures, lockout, clock
        self._offer: Offer | None = None
        self._failures: list[float] = []
        self._locked_until = 0.0

    def offer(self) -> str:
        code = secrets.token_urlsafe(24)
        self._offer = Offer(code, self.clock() + self.ttl)
        return code

    def cancel(self) -> None:
        self._offer = None

    @property
    def active(self) -> bool:
        return self._offer is not None and self.clock() < self._offer.expires

    def take(self, code: object) -> TakeOutcome:
        """Use the code: ``ok`` once (the offer is gone after), otherwise why not."""
        now = self.clock()
        if now < self._locked_until:
            return "locked"
        offer = self._offer
        if offer is not None and isinstance(code, str) and hmac.compare_digest(code.encode(), offer.code.encode()):
            self._offer = None
            if now >= offer.expires:
                return "expired"
            return "ok"
        self._failures = [t for t in self._failures if now - t < self.lockout] + [now]
        if len(self._failures) >= self.max_failures:
            self._offer = None  # burned: a new QR is needed
            self._locked_until = now + self.lockout
            self._failures.clear()
            return "locked"
        return "wrong"
