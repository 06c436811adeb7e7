"""The background host's own notifications (``host.away``, issue 26): ``desktop-agent host --foreground`` as a real
process on a private D-Bus session bus with Debian's dunst (``tests/host/dunst_session.py``), the fake Messages API,
and raw protocol clients on its socket. A question waits while a client is attached: no notification; the client
goes: a notification with Review / Deny (and Allow once only for a whole-input command); Review starts a window on
``<folder> --resume <session id>``; a client attaching closes the notification, its going sends it again; Allow once
runs the command, Deny on a question asked after the client went denies the Write — each through dunst's own menu."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
from pathlib import Path

import pytest

from desktop_agent.host.daemon import control_request
from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.host.conftest import HostEnv
from tests.host.dunst_session import DunstSession, missing
from tests.host.test_background_engine import Wire, _start

pytestmark = pytest.mark.skipif(bool(missing()), reason=f"needs {' '.join(missing())}")

RECORD_ARGV = "import json, sys; open(sys.argv[1], 'a').write(json.dumps(sys.argv[2:]) + '\\n')"


@pytest.fixture(scope="module")
def desktop(tmp_path_factory: pytest.TempPathFactory):
    with DunstSession(tmp_path_factory.mktemp("dunst")) as session:
        yield session


@pytest.fixture
def away_host(host_env: HostEnv, desktop: DunstSession, tmp_path: Path):
    desktop.ctl("close-all")
    fake = FakeAnthropic()
    fake.__enter__()
    windows = tmp_path / "windows.jsonl"
    host_env.env.update(ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=fake.base_url,
                        HOME=os.environ["HOME"], XDG_DATA_HOME=os.environ["XDG_DATA_HOME"],
                        XDG_CONFIG_HOME=os.environ["XDG_CONFIG_HOME"],
                        CLAUDE_CONFIG_DIR=os.environ["CLAUDE_CONFIG_DIR"],
                        DBUS_SESSION_BUS_ADDRESS=desktop.bus_address, DISPLAY=desktop.display,
                        DESKTOP_AGENT_WINDOW_COMMAND=shlex.join([sys.executable, "-c", RECORD_ARGV, str(windows)]))
    try:
        yield host_env, fake, windows
    finally:
        fake.__exit__(None, None, None)
        desktop.ctl("close-all")


def until(check, timeout: float = 10.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
    return value


def actions(menu: str) -> dict[int, set[str]]:
    """notification id → the actions dunst's menu offers for it."""
    out: dict[int, set[str]] = {}
    for nid, action in re.findall(r"\[(\d+),([^\]]+)\]", menu):
        out.setdefault(int(nid), set()).add(action)
    return out


def open_session(host_env: HostEnv, folder: Path, prompt: str) -> tuple[Wire, str]:
    wire = Wire(host_env.socket)
    info = wire.response_to(wire.request({"subtype": "desktop_agent_open", "folder": str(folder),
                                          "settings": {"trusted": True}}))
    wire.send({"type": "user", "message": {"role": "user", "content": prompt}})
    return wire, info["session_id"]


def drop(wire: Wire) -> None:
    import socket

    wire.sock.shutdown(socket.SHUT_RDWR)  # as a closed window's socket goes
    wire.close()
    until(lambda: control_request("status")["clients"] == 0, 5, "the client to detach")


def pending() -> list[dict]:
    return control_request("status")["pending"]


def test_a_question_nobody_is_attached_to_is_notified_and_allow_once_runs_it(away_host, desktop, workdir):
    host_env, fake, windows = away_host
    fake.script([reply(tool_use("Bash", {"command": "printf ran > ran.txt"}, id="toolu_b1")),
                 reply(text("Ran it."))])
    host = _start(host_env)
    wire, sid = open_session(host_env, workdir, "run it")
    question = wire.question()
    assert question["request"]["tool_name"] == "Bash"
    time.sleep(0.5)
    assert desktop.displayed() == 0  # a client is attached: it asks; the host sends nothing

    drop(wire)
    until(lambda: desktop.displayed() == 1, 5, "the host's notification")
    menu = desktop.menu()
    ((nid, offered),) = actions(menu).items()
    assert {"review", "deny", "allow-once"} <= offered  # the whole command is in the notification
    assert "always" not in menu.lower()
    assert f"({workdir.name} \u2014 Bash)" in menu  # the title: the session and the tool

    desktop.invoke(nid, "review")
    argv = until(lambda: windows.exists() and windows.read_text().splitlines(), 10, "the window to be started")
    assert json.loads(argv[0]) == [str(workdir), "--resume", sid]
    assert [q["request_id"] for q in pending()] == [question["request_id"]]  # Review answers nothing

    wire = Wire(host_env.socket)  # the window attaches: it is asked again, the notification closes
    wire.response_to(wire.request({"subtype": "desktop_agent_attach", "session_id": sid}))
    assert wire.question()["request_id"] == question["request_id"]
    until(lambda: desktop.displayed() == 0, 5, "the notification to close")

    drop(wire)  # gone again with the question pending: notified again
    until(lambda: desktop.displayed() == 1, 5, "the notification again")
    ((nid2, offered),) = actions(desktop.menu()).items()
    assert nid2 != nid and "allow-once" in offered
    chosen = time.monotonic()
    desktop.invoke(nid2, "allow-once")
    until(lambda: not pending(), 5, "the question to be answered")
    resolved = time.monotonic() - chosen
    until(lambda: (workdir / "ran.txt").exists(), 10, "the command to run")
    assert (workdir / "ran.txt").read_text() == "ran"
    until(lambda: len(fake.requests) == 2, 10, "the model's next request")
    results = [b for m in fake.requests[-1].messages if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert results and not results[-1].get("is_error")
    until(lambda: desktop.displayed() == 0, 5, "the answered question's notification to close")
    assert resolved <= 1.0, resolved
    fake.assert_done()
    assert host.poll() is None


def test_deny_from_the_host_notification_denies_a_write_asked_after_the_window_went(away_host, desktop, workdir):
    host_env, fake, _windows = away_host
    target = workdir / "never.txt"
    fake.script([reply(tool_use("Write", {"file_path": str(target), "content": "x\n"}, id="toolu_w1")),
                 reply(text("Not written."))])
    _start(host_env)
    wire, sid = open_session(host_env, workdir, "write it")
    drop(wire)  # the window closed before the model asked
    until(lambda: pending(), 20, "the question")
    until(lambda: desktop.displayed() == 1, 5, "the host's notification")
    menu = desktop.menu()
    ((nid, offered),) = actions(menu).items()
    assert {"review", "deny"} <= offered and "allow-once" not in offered  # a write's content is not all shown
    assert f"({workdir.name} \u2014 Write)" in menu and "always" not in menu.lower()
    desktop.invoke(nid, "deny")
    until(lambda: not pending(), 5, "the question to be denied")
    until(lambda: len(fake.requests) == 2, 10, "the model's next request")
    results = [b for m in fake.requests[-1].messages if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert results and results[-1]["is_error"] and "denied" in str(results[-1]["content"]).lower()
    assert not target.exists()
    fake.assert_done()
    until(lambda: desktop.displayed() == 0, 5, "the answered question's notification to close")
    assert [s["session_id"] for s in control_request("status")["sessions"]] == [sid]  # the session runs on


def test_a_window_attached_but_inactive_is_notified_and_review_raises_it_instead_of_a_new_window(
        away_host, desktop, workdir):
    """The window says it is inactive (``desktop_agent_client_active``): its session's question is notified while
    it stays attached; active again, the notification closes. Review sends the attached window
    ``desktop_agent_review`` (no window process started); a window that refuses it gets a new window started."""
    host_env, fake, windows = away_host
    fake.script([reply(tool_use("Bash", {"command": "printf x > x.txt"}, id="toolu_i1")), reply(text("Fine."))])
    _start(host_env)
    wire, sid = open_session(host_env, workdir, "run it")
    question = wire.question()
    time.sleep(0.5)
    assert desktop.displayed() == 0  # active by default: it asks, nothing is sent

    wire.response_to(wire.request({"subtype": "desktop_agent_client_active", "active": False}))
    until(lambda: desktop.displayed() == 1, 5, "the notification for the inactive window")
    assert control_request("status")["clients"] == 1  # still attached
    wire.response_to(wire.request({"subtype": "desktop_agent_client_active", "active": True}))
    until(lambda: desktop.displayed() == 0, 5, "the notification to close when the window is active")
    wire.response_to(wire.request({"subtype": "desktop_agent_client_active", "active": False}))
    until(lambda: desktop.displayed() == 1, 5, "the notification again")
    ((nid, offered),) = actions(desktop.menu()).items()
    assert {"review", "deny", "allow-once"} <= offered

    desktop.invoke(nid, "review")
    review = wire.until(lambda m: m.get("type") == "control_request"
                        and m["request"].get("subtype") == "desktop_agent_review", "desktop_agent_review")
    assert review["request"] == {"subtype": "desktop_agent_review", "session_id": sid,
                                 "request_id": question["request_id"]}
    wire.send({"type": "control_response", "response": {"subtype": "success", "request_id": review["request_id"],
                                                        "response": {}}})
    time.sleep(1.0)
    assert not windows.exists()  # the attached window took it: no second window process
    assert [q["request_id"] for q in pending()] == [question["request_id"]]  # Review answers nothing
    assert desktop.displayed() == 1  # still inactive: the notification stays

    desktop.invoke(nid, "review")  # a window that cannot show it (an older one): a window is started after all
    review = wire.until(lambda m: m.get("type") == "control_request"
                        and m["request"].get("subtype") == "desktop_agent_review", "desktop_agent_review")
    wire.send({"type": "control_response", "response": {"subtype": "error", "request_id": review["request_id"],
                                                        "error": "This window cannot show that question"}})
    argv = until(lambda: windows.exists() and windows.read_text().splitlines(), 10, "the window to be started")
    assert json.loads(argv[0]) == [str(workdir), "--resume", sid]

    desktop.invoke(nid, "deny")  # answered from the notification: the attached window's ask is withdrawn
    cancel = wire.until(lambda m: m.get("type") == "control_cancel_request", "control_cancel_request")
    assert cancel["request_id"] == question["request_id"]
    until(lambda: not pending(), 5, "the question to be denied")
    until(lambda: desktop.displayed() == 0, 5, "the answered question's notification to close")
    until(lambda: len(fake.requests) == 2, 10, "the model's next request")
    assert not (workdir / "x.txt").exists()
    fake.assert_done()
    wire.close()


def test_the_client_library_tells_activity_again_after_a_reconnect_and_takes_review(away_host, desktop, workdir):
    """``BackgroundClient``'s session (the window's): ``set_client_active(False)`` notifies; after ``restart()`` (a
    new connection, which the host counts as active) it is told again, so the notification stays; Review reaches
    ``SessionOptions.on_review`` with the question's ids; Deny there denies it."""
    import asyncio

    from desktop_agent.client.base import SessionOptions
    from desktop_agent.client.host_link import BackgroundClient
    from desktop_agent.core.events import PermissionRequested

    host_env, fake, windows = away_host
    fake.script([reply(tool_use("Bash", {"command": "printf y > y.txt"}, id="toolu_c1")), reply(text("No."))])
    _start(host_env)
    reviews: list[tuple[str, str]] = []

    async def scenario() -> None:
        options = SessionOptions(trusted=True, on_review=lambda sid, rid: reviews.append((sid, rid)) or True)
        session = await BackgroundClient().open(workdir, options)
        events: asyncio.Queue = asyncio.Queue()

        async def turn() -> None:
            async for event in session.submit("run it"):
                events.put_nowait(event)

        running = asyncio.ensure_future(turn())
        while not isinstance(event := await asyncio.wait_for(events.get(), 20), PermissionRequested):
            pass
        rid = event.request.request_id
        await asyncio.sleep(0.5)
        assert desktop.displayed() == 0
        await session.set_client_active(False)
        await wait(lambda: desktop.displayed() == 1, "the notification")
        await session.restart()
        await asyncio.sleep(1.0)
        assert desktop.displayed() == 1  # told again on the new connection: still away
        ((nid, offered),) = actions(await asyncio.to_thread(desktop.menu)).items()
        await asyncio.to_thread(desktop.invoke, nid, "review")
        await wait(lambda: reviews, "Review to reach the session")
        assert reviews == [(session.session_id, rid)]
        await asyncio.to_thread(desktop.invoke, nid, "deny")
        await wait(lambda: not pending(), "the answer")
        await wait(lambda: desktop.displayed() == 0, "the notification to close")
        running.cancel()
        await session.detach()

    async def wait(check, what: str) -> None:
        deadline = time.monotonic() + 10
        while not await asyncio.to_thread(check):
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.05)

    asyncio.run(scenario())
    assert not windows.exists()  # the session's client took Review
    assert not (workdir / "y.txt").exists()
