"""A real browser for the phone page: Debian's chromium, headless, driven by Selenium through Debian's
chromium-driver, at a phone-sized viewport (390×844, touch, DPR 2). The server's certificate is pinned by its
public key (``--ignore-certificate-errors-spki-list``), the way the QR's fingerprint lets a phone trust exactly it;
every other certificate error still fails. ``LoopThread`` runs the server's asyncio loop beside the browser."""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from pathlib import Path
from typing import Any, Coroutine

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def wait(check: Any, timeout: float = 15.0, what: str = "the page", poll: float = 0.02) -> Any:
    """``check()``'s first truthy value (an exception counts as not yet: the page is still changing), polled every
    ``poll`` s; ``TimeoutError(what)`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
        except Exception:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(poll)


def missing() -> list[str]:
    out = [pkg for path, pkg in ((CHROMIUM, "chromium"), (DRIVER, "chromium-driver")) if not Path(path).exists()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        out.append("selenium (pip)")
    return out


class LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def phone_browser(spki_b64: str, profile: Path, width: int = 390, height: int = 844, *,
                  address: str = "127.0.0.1") -> Any:
    """``address``: the one host the browser may reach (the server's; every other name fails to resolve)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-extensions", "--disable-background-networking", "--disable-sync",
                "--disable-component-update", "--disable-default-apps", "--metrics-recording-only",
                f"--user-data-dir={profile}", f"--ignore-certificate-errors-spki-list={spki_b64}",
                f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {address}", "--lang=en-US"):
        options.add_argument(arg)
    options.add_experimental_option("mobileEmulation", {
        "deviceMetrics": {"width": width, "height": height, "pixelRatio": 2.0, "touch": True},
        "userAgent": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
                     "Chrome/126.0 Mobile Safari/537.36"})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    log = profile.parent / "chromedriver.log"
    return webdriver.Chrome(options=options, service=Service(DRIVER, log_output=str(log)))


def have_display_tools() -> bool:
    return shutil.which("import") is not None


def serve_phone(loop: LoopThread, inbox: Any, state: Path) -> Any:
    """A ``RemoteServer`` on ``inbox`` started on 127.0.0.1 in ``loop``, every pairing confirmed (the desktop's
    dialog answered yes: for benches and screenshots, never for a test of pairing itself)."""
    from desktop_agent.host.remote.server import RemoteServer

    async def yes(_prompt: Any) -> bool:
        return True

    async def make() -> RemoteServer:
        server = RemoteServer(inbox, state, host="127.0.0.1", confirm=yes)
        await server.start()
        return server

    return loop.run(make())
