"""The phone page's state across starts and processes (issue 26): the port is kept in the state directory and taken
again when free (a phone's key belongs to the page's origin), any free port when it is taken; ``devices.json``
changed by another process — a real one, through its own ``DeviceStore`` — is read again: a device revoked there is
refused here and its open events socket closed, one paired there answers here, and neither side's change is lost
when both write."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp

from desktop_agent.host.inbox import Inbox
from desktop_agent.host.remote.server import PORT_FILE, RemoteServer
from desktop_agent.host.remote.view import question_view
from tests.host.questions import bash_request
from tests.host.remote.phone import Phone, wait_for, yes

ROOT = Path(__file__).resolve().parents[3]

OTHER_PROCESS = """
import base64, json, os, sys
from pathlib import Path
from desktop_agent.host.remote.devices import DeviceStore
store = DeviceStore(Path(sys.argv[1]))
if sys.argv[2] == "add":
    key = os.urandom(32)
    device = store.add("Other window's phone", key)
    print(json.dumps({"id": device.id, "key": base64.b64encode(key).decode()}))
else:
    print(json.dumps({"revoked": store.revoke(sys.argv[3])}))
"""


def other_process(store: Path, *args: str) -> dict[str, Any]:
    """``DeviceStore`` in another process on the same file (as a second window's or the background host's page)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(store), *args], env=env, capture_output=True,
                         text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def test_the_port_is_kept_across_starts_and_another_taken_when_it_is_busy(tmp_path: Path) -> None:
    async def main() -> None:
        state = tmp_path / "state"
        first = RemoteServer(Inbox(), state, host="127.0.0.1")
        await first.start()
        port = first.port
        origin = first.origin
        await first.stop()
        assert json.loads((state / PORT_FILE).read_text()) == {"port": port}

        again = RemoteServer(Inbox(), state, host="127.0.0.1")
        await again.start()
        try:
            assert again.port == port and again.origin == origin  # the paired phone's origin still holds
        finally:
            await again.stop()

        with socket.socket() as squatter:  # another program listens there now
            squatter.bind(("127.0.0.1", port))
            squatter.listen(1)
            moved = RemoteServer(Inbox(), state, host="127.0.0.1")
            await moved.start()
            try:
                assert moved.port not in (0, port)
                assert json.loads((state / PORT_FILE).read_text()) == {"port": moved.port}
            finally:
                await moved.stop()

        explicit = RemoteServer(Inbox(), state, host="127.0.0.1", port=0)
        await explicit.start()  # port 0 = "ours": the remembered one again (free now)
        try:
            assert explicit.port == moved.port
        finally:
            await explicit.stop()

    asyncio.run(main())


def test_devices_changed_by_another_process_are_read_again(tmp_path: Path) -> None:
    async def main() -> None:
        inbox = Inbox()
        state = tmp_path / "state"
        server = RemoteServer(inbox, state, host="127.0.0.1", confirm=yes)
        await server.start()
        changes: list[int] = []
        server.on_devices_changed = lambda: changes.append(len(server.list_devices()))
        store = state / "devices.json"
        try:
            async with Phone(server, name="Pixel 8") as phone:
                await phone.pair(server.pairing_url())
                ws = await phone.events()

                # paired by another process: this page accepts its answers
                other = await asyncio.to_thread(other_process, store, "add")
                q = inbox.ask("sess-1", bash_request("ls"), title="t")
                async with Phone(server, name="other") as elsewhere:
                    elsewhere.device_id, elsewhere.key = other["id"], base64.b64decode(other["key"])
                    status, body = await elsewhere.answer(question_view(q), "allow")
                assert status == 200 and body["outcome"] == "ok"
                assert {d["name"] for d in server.list_devices()} == {"Pixel 8", "Other window's phone"}

                # revoked by another process: its socket here is closed, its answers refused
                revoked = await asyncio.to_thread(other_process, store, "revoke", phone.device_id)
                assert revoked == {"revoked": True}
                msg = await asyncio.wait_for(ws.receive(), 5)
                while msg.type == aiohttp.WSMsgType.TEXT:  # the questions asked meanwhile, then the close
                    msg = await asyncio.wait_for(ws.receive(), 5)
                assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)
                assert ws.close_code == 4001
                q2 = inbox.ask("sess-1", bash_request("pwd"), title="t")
                status, _ = await phone.answer(question_view(q2), "allow")
                assert status == 401 and inbox.get(*q2.key) is not None
                assert [d["name"] for d in server.list_devices()] == ["Other window's phone"]
                await wait_for(lambda: changes and changes[-1] == 1, 3)

                # both sides write: a device paired there and one revoked here are both kept
                third = await asyncio.to_thread(other_process, store, "add")
                assert await server.revoke(other["id"])  # here, without having read the file since
                on_disk = {d["id"] for d in json.loads(store.read_text())["devices"]}
                assert on_disk == {third["id"]}
                assert [d["id"] for d in server.list_devices()] == [third["id"]]
        finally:
            await server.stop()

    asyncio.run(main())
