"""Screenshots of answering from anywhere (issue 26): ``.venv/bin/python bench/screenshots_remote.py [OUTDIR]``
(default ``docs/screenshots``).

Everything is the real thing: the host's ``Inbox``, questions asked the way the engine asks them (an Edit run
through ``run_tool_use`` carries the structured patch its tool computed), the phone page's HTTPS server
(``host.remote.server.RemoteServer``) and the freedesktop notifier (``host.notify.Notifier``); only the desktop's
pairing confirmation is answered yes by the script.

- ``30-phone-inbox.png``: headless Debian chromium (Selenium + chromedriver) at a phone viewport (390×844, DPR 2),
  paired with the page through its QR URL, showing the inbox with two pending questions (an Edit, a command).
- ``31-phone-patch.png``: the Edit's question: its full highlighted patch with per-hunk accept / reject, one hunk
  rejected, at the phone's width and the page's whole length (the page has a single, dark theme). The script then allows the rest and checks the file ends exactly
  as answered.
- ``32-notification.png``: Xvfb, a private ``dbus-daemon --session`` and Debian's dunst: our two notifications (the
  command with Review / Deny / Allow once; the Edit with Review / Deny only), and dunst's own context menu listing
  their actions, drawn by dmenu (suckless-tools) as dunst runs it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SETTINGS_PY = '''"""Read and write the settings file."""

import json
from pathlib import Path


def load(path):
    """The settings in ``path``."""
    text = Path(path).read_text()
    return json.loads(text)


def validate(settings):
    """``settings``, or ValueError when a key is missing."""
    for key in ("model", "mode"):
        if key not in settings:
            raise ValueError("missing " + key)
    return settings


def merge(base, override):
    """``base`` with ``override``'s keys on top."""
    out = dict(base)
    for key, value in override.items():
        out[key] = value
    return out


def describe(settings):
    """One line per key, sorted."""
    return "\\n".join(f"{k} = {v}" for k, v in sorted(settings.items()))


def save(path, settings):
    """Write ``settings`` to ``path``."""
    Path(path).write_text(json.dumps(settings))
'''

EDITS = [
    ("    text = Path(path).read_text()\n", "    text = Path(path).read_text(encoding=\"utf-8\")\n"),
    ("    for key, value in override.items():\n        out[key] = value\n",
     "    for key, value in override.items():\n        if isinstance(value, dict) and isinstance(out.get(key), dict):\n"
     "            out[key] = merge(out[key], value)\n        else:\n            out[key] = value\n"),
    ("    Path(path).write_text(json.dumps(settings))\n",
     "    Path(path).write_text(json.dumps(settings, indent=2) + \"\\n\")\n"),
]



def full_page(driver, path: Path) -> None:
    """The whole page at the phone's width: the viewport made as tall as the page for one shot (so the page's sticky
    answer bar sits at its end, not over a hunk), then the phone's 390×844 again."""
    height = driver.execute_script("return Math.max(document.documentElement.scrollHeight, "
                                   "document.body.scrollHeight)")
    metrics = {"width": 390, "height": int(height), "deviceScaleFactor": 2, "mobile": True}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        time.sleep(0.3)
        driver.save_screenshot(str(path))
    finally:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", dict(metrics, height=844))


def phone_shots(out: Path, tmp: Path) -> None:
    from selenium.webdriver.common.by import By

    from desktop_agent.host.inbox import Inbox
    from desktop_agent.host.remote.server import RemoteServer
    from tests.host.questions import bash_request, start_edit
    from tests.host.remote.browser import LoopThread, phone_browser, serve_phone, wait

    loop = LoopThread()
    inbox = Inbox()

    server: RemoteServer = serve_phone(loop, inbox, tmp / "state")
    work = tmp / "settings-tool"
    work.mkdir()
    target = work / "settings.py"
    target.write_text(SETTINGS_PY)
    old = SETTINGS_PY[SETTINGS_PY.index("    text = Path"):]
    new = old
    for before, after in EDITS:
        new = new.replace(before, after)
    driver = phone_browser(server.ident.spki_sha256_b64, tmp / "profile")
    try:
        driver.get(server.pairing_url())
        wait(lambda: driver.find_element(By.ID, "pair-button").is_displayed(), what="the Pair button")
        driver.find_element(By.ID, "pair-button").click()
        wait(lambda: driver.find_element(By.TAG_NAME, "body").get_attribute("data-live") == "1", what="paired")
        task, edit_q = loop.run(start_edit(work, inbox, target, old, new, session_id="sess-settings"))
        async def ask_command():
            return inbox.ask("sess-tests", bash_request("pytest -q tests/test_settings.py"), title="run the tests")

        bash_q = loop.run(ask_command())
        for q in (edit_q, bash_q):
            wait(lambda q=q: driver.find_element(By.CSS_SELECTOR, f"li.question[data-request-id='{q.request_id}']"),
                 what="the question's row")
        time.sleep(0.3)
        driver.save_screenshot(str(out / "30-phone-inbox.png"))

        driver.find_element(By.CSS_SELECTOR, f"li.question[data-request-id='{edit_q.request_id}']").click()
        toggles = wait(lambda: driver.find_elements(By.CSS_SELECTOR, "button.hunk-toggle"), what="the hunks")
        print(f"the Edit's patch: {len(toggles)} hunks")
        driver.find_element(By.CSS_SELECTOR, "button.hunk-toggle[data-hunk='1']").click()  # reject the second
        wait(lambda: driver.find_element(By.ID, "allow").is_enabled(), what="Allow")
        time.sleep(0.3)
        full_page(driver, out / "31-phone-patch.png")  # every hunk: the phone's width, the page's whole length

        driver.find_element(By.ID, "allow").click()  # allow the rest: the file ends exactly as answered
        loop.run(asyncio.wait_for(task, 10))
        expected = SETTINGS_PY
        for i, (before, after) in enumerate(EDITS):
            if i != 1:
                expected = expected.replace(before, after)
        assert target.read_text() == expected, "the file is not as answered on the page"

        async def withdraw():
            inbox.withdraw(*bash_q.key)

        loop.run(withdraw())
    finally:
        driver.quit()
        loop.run(server.stop())
        loop.close()


DMENU_REAL = """#!/bin/sh
exec dmenu -b -l 8 -fn "DejaVu Sans Mono-11" -nb "#1e1f22" -nf "#e6e6e6" -sb "#d08a2e" -sf "#1e1f22" \
  -p "dunst: actions"
"""


def notification_shot(out: Path, tmp: Path) -> None:
    from desktop_agent.host.inbox import Inbox
    from desktop_agent.host.notify import Notifier
    from tests.host.dunst_session import DunstSession
    from tests.host.questions import bash_request, start_edit
    from tests.host.remote.browser import wait

    with DunstSession(tmp, size="900x460x24") as desktop:
        async def main() -> None:
            inbox = Inbox()
            notifier = Notifier(inbox, review=lambda q: None, bus_address=desktop.bus_address)
            await notifier.start()
            try:
                assert notifier.has_actions, "dunst did not announce the actions capability"
                work = tmp / "settings-tool"
                work.mkdir()
                target = work / "settings.py"
                target.write_text(SETTINGS_PY)
                before, after = EDITS[2]
                task, edit_q = await start_edit(work, inbox, target, before, after, session_id="sess-settings")
                bash_q = inbox.ask("sess-tests", bash_request("pytest -q tests/test_settings.py"),
                                   title="run the tests")
                while desktop.displayed() < 2:
                    await asyncio.sleep(0.05)
                for q in (edit_q, bash_q):
                    print(f"notification {notifier.sent_for(*q.key).notification_id}: "
                          f"{notifier.sent_for(*q.key).actions}")
                (tmp / "dmenu.sh").write_text(DMENU_REAL)  # dunst runs it afresh for each menu: real dmenu now
                await asyncio.to_thread(desktop.ctl, "context")
                await asyncio.to_thread(wait, lambda: subprocess.run(
                    ["xdotool", "search", "--class", "dmenu"], env=desktop.env, capture_output=True,
                    text=True).stdout.strip(), 10, "dmenu's window")
                await asyncio.sleep(0.5)
                await asyncio.to_thread(desktop.screenshot, out / "32-notification.png")
                subprocess.run(["xdotool", "key", "Escape"], env=desktop.env, timeout=10)  # nothing chosen
                assert inbox.get(*bash_q.key) is not None and inbox.get(*edit_q.key) is not None
                inbox.withdraw(*edit_q.key)
                inbox.withdraw(*bash_q.key)
                await asyncio.gather(task, return_exceptions=True)
            finally:
                await notifier.stop()

        asyncio.run(main())


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    lacking = [t for t in ("chromium", "chromedriver", "Xvfb", "dbus-daemon", "dunst", "dunstctl", "dmenu",
                           "xdotool", "import") if shutil.which(t) is None]
    if lacking:
        sys.exit(f"needs {' '.join(lacking)} (apt-get install chromium chromium-driver xvfb dbus-daemon dunst "
                 "suckless-tools xdotool imagemagick)")
    tmp = Path(tempfile.mkdtemp(prefix="remote-shots-"))
    os.environ.pop("DBUS_SESSION_BUS_ADDRESS", None)  # never the person's own desktop
    (tmp / "phone").mkdir()
    (tmp / "notify").mkdir()
    phone_shots(out, tmp / "phone")
    notification_shot(out, tmp / "notify")
    for name in ("30-phone-inbox.png", "31-phone-patch.png", "32-notification.png"):
        print(out / name)


if __name__ == "__main__":
    main()
