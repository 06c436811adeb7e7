"""Answer from anywhere (issue 26): how fast pairing, the phone page and a notification action are, end to end.

``.venv/bin/python bench/bench_remote.py [--repeat N] [--shots DIR]``

- **pairing**: the browser (headless chromium at a phone viewport) opens the QR's URL, taps Pair, the desktop
  confirms, the page is live on the inbox — target ≤ 10 s; baseline: the same browser loading the page alone.
- **question on the page**: from ``Inbox.ask`` to the question's row in the page's DOM — target ≤ 1 s; baseline: a
  WebSocket client in Python hearing the same ``asked`` event.
- **notification action**: from choosing Deny in dunst's menu (``dunstctl context``, on a private session bus under
  Xvfb) to the question resolved in the inbox — target ≤ 1 s; baseline: the ``dunstctl`` call alone.

- **the background host's notification** (``host.away``): the same Deny, on a question of a session in a real
  ``desktop-agent host`` process that no client is attached to, to the host's inbox empty (its ``--status``,
  polled) — target ≤ 1 s; baseline: one ``--status`` request.

``--shots DIR`` also saves the page (question with a rejected hunk) and a screen with our notifications.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import report, result  # noqa: E402


def wait(check, timeout: float = 15.0):  # type: ignore[no-untyped-def]
    """The shared page poll (``tests.host.remote.browser.wait``), every 5 ms: the bench times what it waits for."""
    from tests.host.remote.browser import wait as poll

    return poll(check, timeout, poll=0.005)



def bench_page(repeat: int, shots: Path | None) -> list[dict]:
    from selenium.webdriver.common.by import By

    from desktop_agent.host.inbox import Inbox
    from desktop_agent.host.remote.server import RemoteServer
    from tests.host.questions import FIVE_HUNKS_OLD, bash_request, five_hunk_edit, start_edit
    from tests.host.remote.browser import LoopThread, phone_browser, serve_phone
    from tests.host.remote.phone import Phone

    tmp = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    loop = LoopThread()
    inbox = Inbox()

    server: RemoteServer = serve_phone(loop, inbox, tmp / "state")
    pair_s: list[float] = []
    load_s: list[float] = []
    page_s: list[float] = []
    ws_s: list[float] = []
    try:
        for i in range(repeat):
            driver = phone_browser(server.ident.spki_sha256_b64, tmp / f"profile{i}")
            try:
                t0 = time.perf_counter()
                driver.get(server.base_url())
                wait(lambda: driver.find_element(By.ID, "unpaired-view").is_displayed())
                load_s.append(time.perf_counter() - t0)
                url = server.pairing_url()
                t0 = time.perf_counter()
                driver.get(url)
                wait(lambda: driver.find_element(By.ID, "pair-button").is_displayed())
                driver.find_element(By.ID, "pair-button").click()
                wait(lambda: driver.find_element(By.TAG_NAME, "body").get_attribute("data-live") == "1")
                pair_s.append(time.perf_counter() - t0)

                async def phone_ws():
                    phone = Phone(server)
                    await phone.__aenter__()
                    await phone.pair(server.pairing_url())
                    return phone, await phone.events()

                phone, ws = loop.run(phone_ws())
                for j in range(5):
                    async def ask_and_hear(k: str = f"{i}-{j}"):
                        t = time.perf_counter()
                        q = inbox.ask(f"bench-{k}", bash_request(f"echo {k}"), title="bench")
                        while True:
                            m = await ws.receive_json(timeout=5)
                            if m["type"] == "asked" and m["question"]["request_id"] == q.request_id:
                                return q, t, time.perf_counter() - t

                    q, t_asked, heard = loop.run(ask_and_hear())
                    ws_s.append(heard)
                    wait(lambda: driver.find_element(By.CSS_SELECTOR,
                                                     f"li.question[data-request-id='{q.request_id}']"))
                    page_s.append(time.perf_counter() - t_asked)

                    async def withdraw(q=q):
                        inbox.withdraw(*q.key)
                        while (await ws.receive_json(timeout=5))["type"] != "gone":
                            pass

                    loop.run(withdraw())

                async def close_phone():
                    await ws.close()
                    await phone.__aexit__()

                loop.run(close_phone())
                if shots is not None and i == 0:
                    work = tmp / "work"
                    work.mkdir(exist_ok=True)
                    target = work / "numbers.py"
                    target.write_text(FIVE_HUNKS_OLD)
                    old, new = five_hunk_edit()
                    task, q = loop.run(start_edit(work, inbox, target, old, new))
                    wait(lambda: driver.find_element(By.CSS_SELECTOR,
                                                     f"li.question[data-request-id='{q.request_id}']"))
                    shots.mkdir(parents=True, exist_ok=True)
                    driver.save_screenshot(str(shots / "phone-inbox.png"))
                    driver.find_element(By.CSS_SELECTOR, f"li.question[data-request-id='{q.request_id}']").click()
                    wait(lambda: driver.find_elements(By.CSS_SELECTOR, "button.hunk-toggle"))
                    driver.find_element(By.CSS_SELECTOR, "button.hunk-toggle[data-hunk='1']").click()
                    wait(lambda: driver.find_element(By.ID, "allow").is_enabled())
                    driver.save_screenshot(str(shots / "phone-question.png"))
                    driver.find_element(By.ID, "allow").click()
                    loop.run(asyncio.wait_for(task, 10))
            finally:
                driver.quit()
    finally:
        loop.run(server.stop())
        loop.close()
    return [
        result("remote: pairing end to end (browser)", pair_s, target=10.0, baseline=load_s),
        result("remote: question on the page after ask", page_s, target=1.0, baseline=ws_s),
    ]


def bench_notification(repeat: int, shots: Path | None) -> list[dict]:
    from desktop_agent.host.inbox import Inbox
    from desktop_agent.host.notify import Notifier
    from tests.host.dunst_session import DunstSession
    from tests.host.questions import bash_request, start_edit

    tmp = Path(tempfile.mkdtemp(prefix="bench-notify-"))
    act_s: list[float] = []
    ctl_s: list[float] = []
    with DunstSession(tmp) as desktop:
        async def main() -> None:
            inbox = Inbox()
            notifier = Notifier(inbox, review=lambda q: None, bus_address=desktop.bus_address)
            await notifier.start()
            try:
                for i in range(repeat * 3):
                    q = inbox.ask("bench", bash_request(f"rm -rf build-{i}"), title="clean up")
                    while notifier.sent_for(*q.key) is None:
                        await asyncio.sleep(0.005)
                    sent = notifier.sent_for(*q.key)
                    t0 = time.perf_counter()
                    await asyncio.to_thread(desktop.invoke, sent.notification_id, "deny")
                    await asyncio.wait_for(inbox.wait(q), 5)
                    act_s.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    await asyncio.to_thread(desktop.ctl, "count", "displayed")
                    ctl_s.append(time.perf_counter() - t0)
                if shots is not None:
                    work = tmp / "work"
                    work.mkdir()
                    target = work / "parser.py"
                    target.write_text("def parse(text):\n    return text.split()\n")
                    task, edit_q = await start_edit(work, inbox, target, "return text.split()",
                                                    "tokens = text.split()\n    return [t for t in tokens if t]")
                    inbox.ask("sess-2", bash_request("pytest -q tests/parser"), title="run the tests")
                    while desktop.displayed() < 2:
                        await asyncio.sleep(0.05)
                    await asyncio.sleep(0.5)
                    shots.mkdir(parents=True, exist_ok=True)
                    await asyncio.to_thread(desktop.screenshot, shots / "notifications.png")
                    inbox.withdraw(*edit_q.key)
                    await asyncio.gather(task, return_exceptions=True)
            finally:
                await notifier.stop()

        asyncio.run(main())
    return [result("notify: Deny from dunst's menu resolves the question", act_s, target=1.0, baseline=ctl_s)]


def bench_away(repeat: int) -> list[dict]:
    """The background host (a real ``desktop-agent host --foreground`` process) notifying a question nobody is
    attached to: from choosing Deny in dunst's menu to the host's inbox empty (its ``--status``, polled)."""
    import json
    import os
    import re
    import signal
    import socket
    import subprocess

    from desktop_agent.host.daemon import control_request
    from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
    from tests.host.dunst_session import DunstSession

    tmp = Path(tempfile.mkdtemp(prefix="bench-away-"))
    (tmp / "run").mkdir(mode=0o700)
    work = tmp / "work"
    work.mkdir()
    saved = {k: os.environ.get(k) for k in ("XDG_RUNTIME_DIR", "DESKTOP_AGENT_STATE_DIR")}
    os.environ.update(XDG_RUNTIME_DIR=str(tmp / "run"), DESKTOP_AGENT_STATE_DIR=str(tmp / "state"))
    act_s: list[float] = []
    ctl_s: list[float] = []
    n = repeat * 3
    try:
        with DunstSession(tmp) as desktop, FakeAnthropic() as fake:
            fake.script([step for i in range(n) for step in (
                reply(tool_use("Write", {"file_path": str(work / f"w{i}.txt"), "content": "x"}, id=f"toolu_{i}")),
                reply(text("Not written.")))])
            env = dict(os.environ, ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=fake.base_url,
                       DBUS_SESSION_BUS_ADDRESS=desktop.bus_address, DISPLAY=desktop.display,
                       XDG_DATA_HOME=str(tmp / "data"), XDG_CONFIG_HOME=str(tmp / "config"),
                       CLAUDE_CONFIG_DIR=str(tmp / "claude"),  # the sessions' transcripts and settings: not the user's
                       PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
            host = subprocess.Popen([sys.executable, "-m", "desktop_agent", "host", "--foreground"], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait(lambda: control_request("status"), 60)
                for i in range(n):
                    sock = socket.socket(socket.AF_UNIX)
                    sock.settimeout(30)  # a host that never asks fails the bench rather than hanging it
                    sock.connect(str(tmp / "run" / "desktop-agent" / "host.sock"))
                    f = sock.makefile("rwb")
                    f.write(json.dumps({"type": "control_request", "request_id": "o", "request": {
                        "subtype": "desktop_agent_open", "folder": str(work), "settings": {"trusted": True}}})
                        .encode() + b"\n")
                    f.flush()
                    for line in f:  # the session is open: the prompt; the question reached this client: it goes
                        if b'"request_id": "o"' in line:
                            f.write(json.dumps({"type": "user", "message": {"role": "user",
                                                                            "content": f"write {i}"}}).encode()
                                    + b"\n")
                            f.flush()
                        if b'"can_use_tool"' in line:
                            break
                    sock.shutdown(socket.SHUT_RDWR)
                    sock.close()
                    wait(lambda: desktop.displayed() == 1)
                    (nid,) = {int(m) for m in re.findall(r"\[(\d+),deny\]", desktop.menu())}
                    t0 = time.perf_counter()
                    desktop.invoke(nid, "deny")
                    wait(lambda: not control_request("status")["pending"])
                    act_s.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    control_request("status")
                    ctl_s.append(time.perf_counter() - t0)
                    wait(lambda: desktop.displayed() == 0)
            finally:
                host.send_signal(signal.SIGTERM)
                host.wait(30)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return [result("away: Deny from the background host's notification resolves the question", act_s, target=1.0,
                   baseline=ctl_s)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shots", type=Path, default=None)
    args = parser.parse_args()
    items = bench_page(args.repeat, args.shots) + bench_notification(args.repeat, args.shots) + bench_away(args.repeat)
    report(items)


if __name__ == "__main__":
    main()
