"""The window's desktop notifications (issue 26): the window, a notification and the phone are three clients of the
host's one inbox. With the window not active, a question that waits sends a notification through the real session
bus to a real daemon (dunst); its Deny, chosen through dunst's own menu, denies the call in the window's session —
the file is not written, the model is told, and the window's dialog for that question closes."""

from __future__ import annotations

import asyncio

import pytest

from tests.host.dunst_session import DunstSession, missing

pytestmark = pytest.mark.skipif(bool(missing()), reason=f"needs {' '.join(missing())}")


@pytest.fixture(scope="module")
def desktop(tmp_path_factory: pytest.TempPathFactory):
    with DunstSession(tmp_path_factory.mktemp("dunst")) as session:
        yield session


def test_deny_from_a_notification_denies_in_the_window_session(qtbot, qloop, fake, make_window, workdir, desktop,
                                                               monkeypatch, keep_app_running):
    from tests.fakes.anthropic_server import reply, text, tool_use
    from tests.ui.flow import open_and_send, wait_for

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", desktop.bus_address)
    desktop.ctl("close-all")
    target = workdir / "made.txt"
    fake.script([reply(tool_use("Write", {"file_path": str(target), "content": "x\n"}, id="toolu_w")),
                 reply(text("Not written."))])
    win = make_window()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "write it")
        notifier = await wait_for(lambda: win.controller.desktop_notifier, 10, "the notifier")
        assert notifier.has_actions
        host = win.controller.client.host
        question = await wait_for(lambda: (host.inbox.pending() or [None])[0], 10, "the question in the inbox")
        notifier.window_active = lambda: False  # the person is in another application (offscreen has no WM)
        await notifier.remind()
        assert question.session_id == win.controller.session.session_id
        sent = await wait_for(lambda: notifier.sent_for(*question.key), 10, "the notification")
        await wait_for(lambda: win.controller.current_dialog, 10, "the window's dialog")
        menu = await asyncio.to_thread(desktop.invoke, sent.notification_id, "deny")
        assert "#Deny" in menu and "always" not in menu.lower()
        assert "#Allow once" not in menu  # a write's patch does not fit in a notification
        await asyncio.wait_for(task, 20)
        await wait_for(lambda: win.controller.current_dialog is None, 10, "the dialog to close")
        assert not target.exists()
        results = [b for m in fake.requests[-1].body["messages"] for b in (m["content"] if isinstance(
            m["content"], list) else []) if b.get("type") == "tool_result"]
        assert results and results[-1]["is_error"] and "denied" in str(results[-1]["content"]).lower()

    qloop.run_until_complete(scenario())
