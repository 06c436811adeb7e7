"""Notification actions on a real D-Bus session bus with a real notification daemon (Debian's dunst under Xvfb):
Deny denies, Review calls back, Allow once only for whole-input requests, nothing for a question no longer
pending, the notification closed when the question is resolved elsewhere, forged signals ignored."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest

from desktop_agent.core.permission import PermissionReply
from desktop_agent.host.inbox import Inbox, PendingQuestion
from desktop_agent.host.notify import Notifier, notification_text, whole_input_text
from tests.host.dunst_session import DunstSession, missing
from tests.host.questions import bash_request, read_request, start_edit

pytestmark = pytest.mark.skipif(bool(missing()), reason=f"needs {' '.join(missing())}")


@pytest.fixture(scope="module")
def desktop(tmp_path_factory: pytest.TempPathFactory):
    with DunstSession(tmp_path_factory.mktemp("dunst")) as session:
        yield session


async def until(check: Callable[[], Any], timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.02)


def run_with_notifier(desktop: DunstSession, body: Callable[[Inbox, Notifier, list[PendingQuestion]], Awaitable[None]],
                      **kw: Any) -> None:
    async def main() -> None:
        desktop.ctl("close-all")
        inbox = Inbox()
        reviewed: list[PendingQuestion] = []
        notifier = Notifier(inbox, review=reviewed.append, bus_address=desktop.bus_address, **kw)
        await notifier.start()
        try:
            await body(inbox, notifier, reviewed)
        finally:
            await notifier.stop()

    asyncio.run(main())


async def sent(notifier: Notifier, q: PendingQuestion):
    return await until(lambda: notifier.sent_for(*q.key))


def test_dunst_offers_actions_and_deny_denies(desktop: DunstSession) -> None:
    async def body(inbox: Inbox, notifier: Notifier, reviewed: list) -> None:
        assert notifier.has_actions
        q = inbox.ask("sess-1", bash_request("rm -rf build"), title="clean up")
        s = await sent(notifier, q)
        assert await until(lambda: desktop.displayed() == 1)
        menu = await asyncio.to_thread(desktop.invoke, s.notification_id, "deny")
        assert f"[{s.notification_id},deny]" in menu and "#Deny" in menu and "#Allow once" in menu
        assert "always" not in menu.lower()
        reply = await asyncio.wait_for(inbox.wait(q), 5)
        assert reply.behavior == "deny" and reply.message == "User denied via UI"
        assert await until(lambda: desktop.displayed() == 0)  # resolved: closed
        assert reviewed == []

    run_with_notifier(desktop, body)


def test_review_calls_back_and_answers_nothing(desktop: DunstSession) -> None:
    async def body(inbox: Inbox, notifier: Notifier, reviewed: list) -> None:
        q = inbox.ask("sess-1", bash_request("make test"))
        s = await sent(notifier, q)
        await asyncio.to_thread(desktop.invoke, s.notification_id, "review")
        await until(lambda: reviewed)
        assert reviewed == [q] and inbox.get(*q.key) is q and not q.future.done()

    run_with_notifier(desktop, body)


def test_allow_once_only_where_the_whole_input_is_shown(desktop: DunstSession, tmp_path: Path) -> None:
    target = tmp_path / "parser.py"
    target.write_text("def parse(x):\n    return x\n")

    async def body(inbox: Inbox, notifier: Notifier, reviewed: list) -> None:
        read_q = inbox.ask("sess-1", read_request("/etc/hostname"))
        s = await sent(notifier, read_q)
        menu = await asyncio.to_thread(desktop.invoke, s.notification_id, "allow-once")
        assert "#Allow once" in menu
        assert (await asyncio.wait_for(inbox.wait(read_q), 5)).behavior == "allow"

        long_q = inbox.ask("sess-1", bash_request("echo " + "x" * 400))  # does not fit: no Allow once
        long_sent = await sent(notifier, long_q)
        assert "allow-once" not in long_sent.actions

        task, edit_q = await start_edit(tmp_path, inbox, target, "return x", "return x + 1")
        assert edit_q.request.structured_patch  # the Edit tool's own patch
        edit_sent = await sent(notifier, edit_q)
        assert edit_sent.actions == ("default", "review", "deny")
        title, text = notification_text(edit_q)
        assert text == "parser.py  +1 \u22121" and title.endswith("— Edit")
        menu = await asyncio.to_thread(desktop.invoke, edit_sent.notification_id, "allow-once")
        assert "Allow once" not in menu and not edit_q.future.done()
        # a forged "allow-once" for the edit, straight to the handler, is refused too
        assert notifier.invoke(edit_sent.notification_id, "allow-once") == "ignored"
        await asyncio.to_thread(desktop.invoke, edit_sent.notification_id, "deny")
        out = await asyncio.wait_for(task, 10)
        assert out.is_error and target.read_text() == "def parse(x):\n    return x\n"

    run_with_notifier(desktop, body)


def test_an_action_on_a_question_no_longer_pending_does_nothing(desktop: DunstSession) -> None:
    async def body(inbox: Inbox, notifier: Notifier, reviewed: list) -> None:
        withdrawn = inbox.ask("sess-1", bash_request("ls"))
        answered = inbox.ask("sess-1", bash_request("pwd"))
        other = inbox.ask("sess-2", bash_request("date"))
        s1, s2 = await sent(notifier, withdrawn), await sent(notifier, answered)
        await sent(notifier, other)
        assert await until(lambda: desktop.displayed() == 3)
        inbox.withdraw(*withdrawn.key)
        assert inbox.answer(*answered.key, PermissionReply(behavior="allow"), source="window") == "ok"
        assert await until(lambda: desktop.displayed() == 1)  # both closed by us
        # late actions (a click that raced the close): nothing happens
        for s in (s1, s2):
            for action in ("deny", "allow-once", "review"):
                assert notifier.invoke(s.notification_id, action) == "ignored"
        assert reviewed == [] and (await inbox.wait(answered)).behavior == "allow"
        assert inbox.get(*other.key) is other and not other.future.done()

    run_with_notifier(desktop, body)


def test_a_signal_forged_by_another_bus_client_is_ignored(desktop: DunstSession) -> None:
    from dbus_fast import Message, MessageType
    from dbus_fast.aio import MessageBus

    async def body(inbox: Inbox, notifier: Notifier, reviewed: list) -> None:
        q = inbox.ask("sess-1", bash_request("ls"))
        s = await sent(notifier, q)
        forger = await MessageBus(bus_address=desktop.bus_address).connect()
        try:
            await forger.send(Message(message_type=MessageType.SIGNAL, path="/org/freedesktop/Notifications",
                                      interface="org.freedesktop.Notifications", member="ActionInvoked",
                                      signature="us", body=[s.notification_id, "allow-once"]))
            await asyncio.sleep(0.3)
        finally:
            forger.disconnect()
        assert inbox.get(*q.key) is q and not q.future.done()

    run_with_notifier(desktop, body)


def test_no_notification_while_the_window_is_active(desktop: DunstSession) -> None:
    async def body(inbox: Inbox, notifier: Notifier, reviewed: list) -> None:
        q = inbox.ask("sess-1", bash_request("ls"))
        await asyncio.sleep(0.3)
        assert notifier.sent_for(*q.key) is None and desktop.displayed() == 0

    run_with_notifier(desktop, body, window_active=lambda: True)


def test_questions_asked_while_the_window_was_active_are_notified_when_it_is_left(desktop: DunstSession) -> None:
    active = [True]

    async def body(inbox: Inbox, notifier: Notifier, reviewed: list) -> None:
        q1 = inbox.ask("sess-1", bash_request("ls"))
        q2 = inbox.ask("sess-1", bash_request("pwd"))
        inbox.answer(*q2.key, PermissionReply(behavior="allow"), source="window")
        await asyncio.sleep(0.2)
        assert desktop.displayed() == 0
        active[0] = False
        assert await notifier.remind() == 1  # only the one still pending
        assert notifier.sent_for(*q1.key) is not None and await until(lambda: desktop.displayed() == 1)
        assert await notifier.remind() == 0  # never twice

    run_with_notifier(desktop, body, window_active=lambda: active[0])


def test_markup_in_a_command_is_shown_as_text() -> None:
    from desktop_agent.host.inbox import PendingQuestion

    q = PendingQuestion(session_id="s", request=bash_request("echo '<b>safe</b>' && curl x | sh"), title="t")
    assert notification_text(q)[1] == "echo '<b>safe</b>' && curl x | sh"  # escaped at send time (body-markup)
    assert whole_input_text(bash_request("ls\x1b[2J")) is None
    # a command that reads "ls # txt.sh" but runs otherwise (right-to-left override): no Allow once, shown as it is
    tricky = bash_request("ls #\u202ehs.txt")
    assert whole_input_text(tricky) is None
    assert notification_text(PendingQuestion(session_id="s", request=tricky))[1] == "ls #\u27e8U+202E\u27e9hs.txt"
    assert whole_input_text(bash_request("ls", dangerouslyDisableSandbox=True)) == "ls\ndangerouslyDisableSandbox: True"


def test_without_a_daemon_with_actions_a_plain_notification(tmp_path: Path) -> None:
    """A bus with no notification daemon: nothing offered, nothing raised, the question still waits."""
    import subprocess

    config = tmp_path / "bus.conf"  # a session bus without service activation: no daemon can be started on it
    config.write_text('<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" '
                      '"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd"><busconfig><type>session</type>'
                      f'<listen>unix:dir={tmp_path}</listen><auth>EXTERNAL</auth><policy context="default">'
                      '<allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>'
                      '</policy></busconfig>')
    bus = subprocess.Popen(["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
                           stdout=subprocess.PIPE, text=True)
    try:
        address = bus.stdout.readline().strip()

        async def main() -> None:
            inbox = Inbox()
            notifier = Notifier(inbox, review=lambda q: None, bus_address=address)
            await notifier.start()
            assert not notifier.has_actions
            q = inbox.ask("s", bash_request("ls"))
            await asyncio.sleep(0.2)
            assert notifier.sent_for(*q.key) is None and inbox.get(*q.key) is q
            await notifier.stop()

        asyncio.run(main())
    finally:
        bus.terminate()
        bus.wait(5)


def test_a_daemon_without_actions_gets_a_plain_notification(tmp_path: Path) -> None:
    """A notification daemon of our own on a fresh session bus, speaking the real interface with capabilities
    ``body`` only: the notification goes out with no action at all (nothing to press), and is still closed when
    the question is answered elsewhere."""
    import subprocess

    from dbus_fast.aio import MessageBus
    from dbus_fast.service import ServiceInterface, method

    class PlainDaemon(ServiceInterface):
        def __init__(self) -> None:
            super().__init__("org.freedesktop.Notifications")
            self.notified: list[tuple[str, str, list[str]]] = []
            self.closed: list[int] = []

        @method()
        def GetCapabilities(self) -> "as":  # noqa: F722,N802
            return ["body"]

        @method()
        def Notify(self, app: "s", replaces: "u", icon: "s", summary: "s", body: "s", actions: "as",  # noqa: F722,F821,N802
                   hints: "a{sv}", timeout: "i") -> "u":  # noqa: F722,F821
            self.notified.append((summary, body, list(actions)))
            return len(self.notified)

        @method()
        def CloseNotification(self, notification_id: "u"):  # noqa: F821,N802,ANN201
            self.closed.append(notification_id)

        @method()
        def GetServerInformation(self) -> "ssss":  # noqa: F821,N802
            return ["plain", "test", "1", "1.2"]

    bus_proc = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                                stdout=subprocess.PIPE, text=True)
    try:
        address = bus_proc.stdout.readline().strip()

        async def main() -> None:
            daemon_bus = await MessageBus(bus_address=address).connect()
            daemon = PlainDaemon()
            daemon_bus.export("/org/freedesktop/Notifications", daemon)
            await daemon_bus.request_name("org.freedesktop.Notifications")
            inbox = Inbox()
            notifier = Notifier(inbox, review=lambda q: None, bus_address=address)
            await notifier.start()
            try:
                assert notifier.capabilities == {"body"} and not notifier.has_actions
                q = inbox.ask("sess-1", bash_request("ls"), title="plain")
                s = await until(lambda: notifier.sent_for(*q.key))
                assert daemon.notified == [("plain — Bash", "ls", [])] and s.actions == ()
                assert notifier.invoke(s.notification_id, "allow-once") == "ignored"
                inbox.answer(*q.key, PermissionReply(behavior="allow"), source="window")
                await until(lambda: daemon.closed == [s.notification_id])
            finally:
                await notifier.stop()
                daemon_bus.disconnect()

        asyncio.run(main())
    finally:
        bus_proc.terminate()
        bus_proc.wait(5)
