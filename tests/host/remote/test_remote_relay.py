"""The phone page served by the background host (``host.remote.relay``, ``client.phone``; issue 26):
``desktop-agent host --foreground`` as a real process, the window's side as ``BackgroundClient.phone`` in this
process, and a phone in Python (``tests/host/remote/phone.py``: real HTTPS, real ECDH pairing, real HMAC answers).
The pairing is confirmed by the window's ``confirm`` (the code it shows is the phone's); the paired phone sees the
question of a session of the host and its Allow runs the command there; with no window connected a pairing is
refused, while the paired phone keeps its page; revoke closes the phone's socket at once; off stops the page."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp

from desktop_agent.client.host_link import BackgroundClient
from desktop_agent.host.daemon import control_request
from tests.fakes.anthropic_server import reply, text, tool_use
from tests.host.remote.phone import Phone, fragment
from tests.host.test_background_engine import Wire, _start, engine_host  # noqa: F401 - the fixture


async def until(check: Any, what: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)
    return value


def test_the_background_hosts_phone_page_pairs_through_the_window_and_answers_from_the_phone(
        engine_host, workdir: Path, tmp_path: Path) -> None:
    host_env, fake = engine_host
    fake.script([reply(tool_use("Bash", {"command": "printf p > p.txt"}, id="toolu_p1")), reply(text("Ran it."))])
    host = _start(host_env)
    wire = Wire(host_env.socket)  # a session of the host with a question waiting
    info = wire.response_to(wire.request({"subtype": "desktop_agent_open", "folder": str(workdir),
                                          "settings": {"trusted": True}}))
    wire.send({"type": "user", "message": {"role": "user", "content": "run it"}})
    question = wire.question()
    prompts: list[Any] = []

    async def main() -> float:
        async def confirm(prompt: Any) -> bool:  # the window's focus-safe dialog, here: Pair
            prompts.append(prompt)
            return True

        page = await BackgroundClient().phone(str(tmp_path / "remote"), confirm)
        assert page.host and page.port and page.list_devices() == []
        changed: list[int] = []
        page.on_devices_changed = lambda: changed.append(len(page.list_devices()))
        where = SimpleNamespace(host=page.host, port=page.port, ident=SimpleNamespace(cert_pem=page.cert_pem))
        async with Phone(where, name="Anna's phone") as phone:  # type: ignore[arg-type]
            started = time.monotonic()
            url = page.pairing_url()
            assert url.startswith(page.base_url()) and fragment(url)[1] == page.fingerprint
            device = await phone.pair(url)
            paired = time.monotonic() - started
            assert [p.device_name for p in prompts] == ["Anna's phone"]
            assert prompts[0].verification == phone.verification  # confirmed in the window, the same code
            await until(lambda: [d["id"] for d in page.list_devices()] == [device], "the devices to reach the window")
            assert changed and "key" not in page.list_devices()[0]

            ws = await phone.events()
            (view,) = phone.snapshot["questions"]
            assert (view["session_id"], view["request_id"]) == (info["session_id"], question["request_id"])
            assert await phone.answer(view, "allow") == (200, {"outcome": "ok"})
            cancel = await asyncio.to_thread(wire.until, lambda m: m.get("type") == "control_cancel_request",
                                             "the window's ask withdrawn")
            assert cancel["request_id"] == question["request_id"]
            await until(lambda: (workdir / "p.txt").exists(), "the command to run in the host")

            url = page.pairing_url()  # a new offer, then the window goes: nobody can confirm a pairing
            await asyncio.sleep(0.2)
            await page.detach()
            await until(lambda: control_request("status")["clients"] == 1, "the window's phone link to go")
            async with Phone(where, name="Stranger") as other:  # type: ignore[arg-type]
                code, _fp = fragment(url)
                status, data, _keys = await other.begin_pairing(code)
                assert status == 200, data
                status, done = await other.post("/api/pair/wait", {"pairing": data["pairing"]})
                assert done == {"status": "refused"}
            assert [p.device_name for p in prompts] == ["Anna's phone"]

            again = await BackgroundClient().phone(str(tmp_path / "remote"), confirm)  # a window is back
            assert (again.host, again.port, again.fingerprint) == (page.host, page.port, page.fingerprint)
            assert [d["id"] for d in again.list_devices()] == [device]  # the page kept serving meanwhile
            assert await again.revoke(device)
            gone = await ws.receive_json(timeout=2)  # the answered question left the page …
            assert gone["type"] == "gone" and gone["request_id"] == question["request_id"]
            closed = await ws.receive(timeout=2)  # … and the revoked phone's socket is closed at once
            assert closed.type == aiohttp.WSMsgType.CLOSE and closed.data == 4001
            assert again.list_devices() == []
            await again.stop()
        try:
            async with Phone(where) as late:  # type: ignore[arg-type]
                await late.post("/api/pair", {})
            raise AssertionError("the page still serves after off")
        except aiohttp.ClientConnectorError:
            pass
        return paired

    paired = asyncio.run(main())
    print(f"pairing through the background host: {paired * 1000:.0f} ms")
    assert paired <= 10.0
    wire.close()
    fake.assert_done()
    assert host.poll() is None
