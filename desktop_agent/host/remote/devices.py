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
    """The paired devices of one ``devices.json``. Another process may change the file (a second window's page,
    the background host's): ``refresh()`` (off the loop: it stats and reads) takes its changes — a device paired
    there is known here, one revoked there is gone here — and every write merges with the file first, so neither
    side's pairing or revoke is lost. A device revoked here is never brought back by a merge."""

    def __init__(self, path: Path, *, load: bool = True) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._devices: dict[str, Device] = {}
        self._removed: set[str] = set()  # revoked here: a merge never brings them back
        self._seen: tuple[int, int, int, int] | None = None  # the file's (dev, ino, size, mtime_ns) last read/written
        if load:
            self.load()

    def _signature(self) -> tuple[int, int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def _read(self) -> dict[str, Device] | None:
        """The file's devices; None when it cannot be read as a whole (missing: empty)."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (ValueError, OSError):
            return None
        out: dict[str, Device] = {}
        for item in data.get("devices", []) if isinstance(data, dict) else []:
            try:
                out[item["id"]] = Device(item["id"], str(item["name"]), base64.b64decode(item["key"]),
                                         float(item["paired_at"]), float(item["last_used"]))
            except (KeyError, ValueError, TypeError):
                continue
        return out

    def _merge(self, on_disk: dict[str, Device]) -> None:
        """The file's set of devices (without the ones revoked here), keeping our later ``last_used``."""
        merged: dict[str, Device] = {}
        for device_id, device in on_disk.items():
            if device_id in self._removed:
                continue
            mine = self._devices.get(device_id)
            if mine is not None and mine.key == device.key:
                device.last_used = max(device.last_used, mine.last_used)
            merged[device_id] = device
        self._devices = merged

    def load(self) -> None:
        with self._lock:
            signature = self._signature()
            on_disk = self._read()
            if on_disk is None:
                return
            self._merge(on_disk)
            self._seen = signature

    def refresh(self) -> bool:
        """Take the file's changes made by another process; True when the set of devices changed."""
        with self._lock:
            before = set(self._devices)
            self._sync()
            return set(self._devices) != before

    def _sync(self) -> None:
        signature = self._signature()
        if signature == self._seen:
            return
        on_disk = self._read()
        if on_disk is None:  # half-written by another process: read it next time
            return
        self._merge(on_disk)
        self._seen = signature

    def save(self) -> None:
        with self._lock:
            self._sync()  # changed elsewhere since we read it: merged first
            self._write()

    def _write(self) -> None:
        items = [dict(asdict(d), key=base64.b64encode(d.key).decode()) for d in list(self._devices.values())]
        write_secret(self.path, json.dumps({"devices": items}, indent=1).encode())
        self._seen = self._signature()

    def add(self, name: str, key: bytes) -> Device:
        now = time.time()
        with self._lock:
            self._sync()
            device = Device(new_device_id(), name[:60] or "Phone", key, now, now)
            self._devices[device.id] = device
            self._write()
        return device

    def get(self, device_id: object) -> Device | None:
        return self._devices.get(device_id) if isinstance(device_id, str) else None

    def forget(self, device_id: str) -> bool:
        """Revoked in memory at once (every later request refused); ``save()`` writes it."""
        self._removed.add(device_id)
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

    def offer(self, code: str | None = None) -> str:
        """A new single-use code (the last one is void); ``code``: the one a window made for the QR it shows (the
        background host's page: ``host.remote.relay``) — at least 32 characters."""
        if code is not None and (not isinstance(code, str) or len(code) < 32):
            raise ValueError("a pairing code has at least 32 characters")
        code = code or secrets.token_urlsafe(24)
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
