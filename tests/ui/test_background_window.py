"""The window with Settings ▸ "Keep sessions running when the window closes" (offscreen, the real host process
started on demand): closing the window leaves the session and its question running in the host and a notification
says so; a new window on the folder attaches, asks the question again, and answering it completes the turn."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from PySide6.QtCore import QSettings, Qt

from desktop_agent.host.daemon import control_request
from desktop_agent.ui.window.main_window import MainWindow
from tests.fakes.anthropic_server import reply, text
from tests.host.conftest import HostEnv, host_env  # noqa: F401 - the fixture
from tests.ui.flow import READ, edit, git_repo, open_and_send, wait_dialog, wait_for

BEFORE, AFTER = "export const value = 1", "export const value = 2"


def test_closing_the_window_leaves_the_session_running_and_a_new_window_answers_it(
        qtbot, qloop, fake, host_env: HostEnv, tmp_path, workdir, monkeypatch, keep_app_running):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)  # the host inherits it
    config = tmp_path / "home-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    (config / "desktop-agent").mkdir(parents=True)
    (config / "desktop-agent" / "settings.json").write_text(json.dumps({"keep_sessions_running": True}))
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, BEFORE, AFTER), reply(text("Done."))])
    settings = QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)
    first = MainWindow(settings=settings)
    qtbot.addWidget(first)
    first.show()
    notes: list[str] = []
    first.banners.notify = lambda title, message: notes.append(message)  # type: ignore[method-assign]

    async def ask_then_close() -> str:
        await open_and_send(qtbot, first, workdir, "Change value to 2")
        assert first.controller.session.state.executor == "host"
        session_id = first.controller.session.session_id
        await wait_dialog(first, 30)
        first.close()
        await wait_for(lambda: first._close_task is not None and first._close_task.done(), 20, "the window to close")
        return session_id

    session_id = qloop.run_until_complete(ask_then_close())
    assert not first.isVisible()
    assert notes and "keeps running in the background host" in notes[0] and "work" in notes[0]
    status = control_request("status")
    assert status is not None and status["pid"] != os.getpid()
    assert [s["session_id"] for s in status["sessions"]] == [session_id]
    assert [q["session_id"] for q in status["pending"]] == [session_id]  # the question waits in the host
    assert app_ts.read_text() == BEFORE

    second = MainWindow(settings=settings)
    qtbot.addWidget(second)
    second.show()

    async def reopen_and_answer() -> None:
        assert await second.folders.open_folder(str(workdir))
        assert second.controller.session.session_id == session_id  # attached, not a new session
        dlg = await wait_dialog(second, 30)
        assert dlg.request.tool_name == "Edit" and dlg.request.input["file_path"] == str(app_ts)
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await wait_for(lambda: app_ts.read_text() == AFTER, 20, "the edit")
        await wait_for(lambda: not control_request("status")["pending"], 20, "the question to be answered")
        await wait_for(lambda: not control_request("status")["sessions"][0]["busy"], 20, "the turn to complete")

    qloop.run_until_complete(reopen_and_answer())
    assert "Change value to 2" in second.conversation.text_content()  # its transcript, shown on attach
    fake.assert_done()
    qloop.run_until_complete(second.controller.detach_session())


def test_a_host_that_cannot_start_is_a_banner_naming_why(qtbot, qloop, host_env: HostEnv, tmp_path, workdir,
                                                       monkeypatch):
    """The host's directory is writable by others: nothing is started or connected there, and the window says why
    instead of opening the folder in this process behind the person's back."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    config = tmp_path / "home-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    (config / "desktop-agent").mkdir(parents=True)
    (config / "desktop-agent" / "settings.json").write_text(json.dumps({"keep_sessions_running": True}))
    host_env.host_dir.mkdir(mode=0o700)
    os.chmod(host_env.host_dir, 0o777)
    win = MainWindow(settings=QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    assert win.folders.executor_choice() == ("host", None)
    assert not qloop.run_until_complete(win.folders.open_folder(str(workdir)))
    banner = win.conversation.banners["setup"].text_plain
    assert "Could not open the session" in banner and "writable by other users" in banner
    assert win.controller.session is None
    assert not host_env.socket.exists() and control_request("status") is None
    tour = MainWindow(settings=QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat), demo=True)
    qtbot.addWidget(tour)
    assert tour.folders.executor_choice() == ("inprocess", None)  # the tour never leaves this process
    forced = MainWindow(settings=QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat),
                        executor="process")
    qtbot.addWidget(forced)
    assert forced.folders.executor_choice() == ("process", None)  # --executor wins over the setting


def test_three_sessions_in_the_background_host_come_back_when_the_window_reopens(
        qtbot, qloop, fake, host_env: HostEnv, tmp_path, monkeypatch, keep_app_running):
    """Issue 24: three sessions — two in git worktrees waiting for approval, one done in the folder — run in the
    background host; the window closes; a new window on the folder shows all three again (the Running list), with
    both questions in its inbox; answering each there writes the right file in the right worktree."""
    from desktop_agent.client import review as client_review

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    config = tmp_path / "home-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    (config / "desktop-agent").mkdir(parents=True)
    (config / "desktop-agent" / "settings.json").write_text(json.dumps({"keep_sessions_running": True}))
    repo = git_repo(tmp_path, {"a.txt": "one\n"})
    settings = QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)
    first = MainWindow(settings=settings)
    qtbot.addWidget(first)
    first.show()
    first.banners.notify = lambda title, message: None  # type: ignore[method-assign]

    async def three_then_close():
        trees = [await client_review.new_worktree(str(repo), name) for name in ("alpha", "beta")]
        for name, tree in zip(("alpha", "beta"), trees):
            path = f"{tree.path}/a.txt"
            fake.script_for(f"{name}:", [READ(path, id=f"toolu_r{name}"),
                                         edit(path, "one", f"one by {name}", id=f"toolu_e{name}"),
                                         reply(text(f"{name} done"))])
        fake.script_for("gamma:", [reply(text("gamma done"))])
        for folder, prompt in ((trees[0].path, "alpha: change a"), (trees[1].path, "beta: change a"),
                               (str(repo), "gamma: hello")):
            await open_and_send(qtbot, first, folder, prompt)
            assert first.controller.session.state.executor == "host"
        await wait_for(lambda: not first.lives[2].controller.busy, 30, "gamma's turn")
        await wait_for(lambda: len(control_request("status")["pending"]) == 2, 30, "both questions in the host")
        first.close()
        await wait_for(lambda: first._close_task is not None and first._close_task.done(), 30, "the window to close")
        return trees

    trees = qloop.run_until_complete(three_then_close())
    status = control_request("status")
    assert len(status["sessions"]) == 3 and len(status["pending"]) == 2

    second = MainWindow(settings=settings)
    qtbot.addWidget(second)
    second.show()

    async def reopen():
        assert await second.folders.open_folder(str(repo))
        await wait_for(lambda: second.attach_task is not None and second.attach_task.done(), 30, "the others back")
        assert len(second.lives) == 3
        assert {live.session_id for live in second.lives} == {s["session_id"] for s in status["sessions"]}
        await wait_for(lambda: second.sessions_pane.inbox.count() == 2, 30, "both questions in the inbox")
        labels = sorted(row.label.split(" · ")[0] for row in second.sessions_pane.live_rows)
        assert labels == ["Done", "Needs you (1)", "Needs you (1)"], labels
        for _ in range(2):
            row = second.sessions_pane.inbox_rows[0]
            assert second.answer_from_inbox(row.key, row.ref)
            dlg = await wait_dialog(second, 30)
            assert dlg.request.input["file_path"].startswith(row.ref.folder)
            qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
            await wait_for(lambda: not control_request("status")["pending"] or
                           len(control_request("status")["pending"]) == 1, 30, "the answer in the host")
        await wait_for(lambda: not control_request("status")["pending"], 30, "every question answered")
        await wait_for(lambda: not any(s["busy"] for s in control_request("status")["sessions"]), 30, "done")

    qloop.run_until_complete(reopen())
    for name, tree in zip(("alpha", "beta"), trees):
        with open(f"{tree.path}/a.txt") as f:
            assert f.read() == f"one by {name}\n"
    assert (repo / "a.txt").read_text() == "one\n"
    fake.assert_done()
    for live in second.lives:
        qloop.run_until_complete(live.controller.detach_session())


@pytest.fixture(scope="module")
def desktop(tmp_path_factory: pytest.TempPathFactory):
    from tests.host.dunst_session import DunstSession, missing

    if missing():
        pytest.skip(f"needs {' '.join(missing())}")
    with DunstSession(tmp_path_factory.mktemp("dunst")) as session:
        yield session


def test_an_inactive_window_gets_the_host_notification_and_review_raises_it_on_the_question(
        qtbot, qloop, fake, host_env: HostEnv, tmp_path, workdir, monkeypatch, keep_app_running, desktop):
    """Issue 26: the window stays open on two background-host sessions, the one that asks out of view (its question
    waits in the window's inbox), and another window has the focus: the host (a real process on a real session
    bus with dunst) notifies the question; Review, chosen in dunst's menu, raises this window with that session in
    view and its question's dialog up — no second window process — and the notification closes as the window
    becomes active; the dialog's Allow completes the edit."""
    import re
    import shlex
    import sys
    import time

    from PySide6.QtWidgets import QWidget

    from desktop_agent.ui.window.background import is_active

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", desktop.bus_address)  # the host started on demand inherits it
    windows = tmp_path / "windows.jsonl"
    monkeypatch.setenv("DESKTOP_AGENT_WINDOW_COMMAND", shlex.join([
        sys.executable, "-c", "import json, sys; open(sys.argv[1], 'a').write(json.dumps(sys.argv[2:]) + '\\n')",
        str(windows)]))
    config = tmp_path / "home-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    (config / "desktop-agent").mkdir(parents=True)
    (config / "desktop-agent" / "settings.json").write_text(json.dumps({"keep_sessions_running": True}))
    desktop.ctl("close-all")
    app_ts = workdir / "app.ts"
    other_folder = tmp_path / "other"
    other_folder.mkdir()
    fake.script_for("edit:", [READ(app_ts), edit(app_ts, BEFORE, AFTER), reply(text("Done."))])
    fake.script_for("hello:", [reply(text("Hello."))])
    win = MainWindow(settings=QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.banners.notify = lambda title, message: None  # type: ignore[method-assign]
    win.show()
    win.activateWindow()
    other = QWidget()  # "another application": a window that takes the focus from ours
    qtbot.addWidget(other)
    other.resize(200, 100)

    async def scenario() -> float:
        await wait_for(win.isActiveWindow, 10, "the window to be active")
        await open_and_send(qtbot, win, workdir, "edit: change value to 2")
        asking = win.live
        assert asking.controller.session.state.executor == "host"
        sid = asking.controller.session.session_id
        dlg = await wait_dialog(win, 30)
        assert dlg.request.tool_name == "Edit"
        key = (sid, dlg.request.request_id)
        await open_and_send(qtbot, win, other_folder, "hello: there")  # another session comes into view
        await wait_for(lambda: not win.lives[1].controller.busy, 30, "the other session's turn")
        await wait_for(lambda: win.questions.current_key is None, 10, "the dialog back in the inbox")
        assert win.live is not asking and win.sessions_pane.inbox.count() == 1
        await asyncio.sleep(0.5)
        assert desktop.displayed() == 0  # the window is active: it has the question, the host sends nothing

        other.show()
        other.activateWindow()
        await wait_for(lambda: not is_active(win), 10, "the window to lose the focus")
        await wait_for(lambda: desktop.displayed() == 1, 10, "the host's notification for the inactive window")
        assert control_request("status")["clients"] == 2  # both sessions still attached
        menu = await asyncio.to_thread(desktop.menu)
        ((nid, action),) = {(int(n), a) for n, a in re.findall(r"\[(\d+),(review)\]", menu)}
        assert f"({workdir.name} \u2014 Edit)" in menu and "always" not in menu.lower()
        assert "allow-once" not in menu  # an edit's patch is never answered from a notification

        chosen = time.monotonic()
        await asyncio.to_thread(desktop.invoke, nid, action)
        shown = await wait_dialog(win, 10)
        await wait_for(lambda: is_active(win), 10, "Review to raise the window")
        raised = time.monotonic() - chosen
        assert win.live is asking and win.questions.current_key == key and shown.request.request_id == key[1]
        await wait_for(lambda: desktop.displayed() == 0, 10, "the notification to close (the window is active)")
        await asyncio.sleep(1.0)
        assert not windows.exists()  # the window that was there took it: no second window process
        assert [q["request_id"] for q in control_request("status")["pending"]] == [key[1]]

        qtbot.mouseClick(shown.allow_button, Qt.MouseButton.LeftButton)
        await wait_for(lambda: app_ts.read_text() == AFTER, 20, "the edit")
        await wait_for(lambda: not control_request("status")["pending"], 20, "the question to be answered")
        await wait_for(lambda: not any(s["busy"] for s in control_request("status")["sessions"]), 20, "done")
        return raised

    raised = qloop.run_until_complete(scenario())
    print(f"Review → the window active on the question: {raised * 1000:.0f} ms")
    assert raised <= 1.0, raised
    fake.assert_done()
    for live in win.lives:
        qloop.run_until_complete(live.controller.detach_session())


def test_the_phone_page_runs_in_the_background_host_and_its_pairing_is_confirmed_in_the_window(
        qtbot, qloop, fake, host_env: HostEnv, tmp_path, workdir, monkeypatch, keep_app_running):
    """Issue 26: with the sessions in the background host, Settings → "Answer from my phone" starts the page in the
    host process (``BackgroundClient.phone``); a phone (real HTTPS and ECDH, in Python) pairing with the window's
    QR code gets the window's own focus-safe pairing dialog showing the phone's code; Pair pairs it, the devices
    list shows it, Revoke forgets it, and the switch off stops the page in the host."""
    import socket
    from types import SimpleNamespace

    from desktop_agent.client.phone import BackgroundPhone
    from desktop_agent.ui.dialogs.phone import PairingConfirmDialog
    from tests.host.remote.phone import Phone

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    config = tmp_path / "home-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    (config / "desktop-agent").mkdir(parents=True)
    (config / "desktop-agent" / "settings.json").write_text(json.dumps({"keep_sessions_running": True}))
    win = MainWindow(settings=QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.banners.notify = lambda title, message: None  # type: ignore[method-assign]
    win.show()

    async def scenario() -> None:
        assert await win.folders.open_folder(str(workdir))
        assert win.controller.session.state.executor == "host"
        dlg = win.show_settings()
        dlg.phone.switch.setChecked(True)
        page = await wait_for(lambda: getattr(win, "phone_server", None), 20, "the phone page")
        assert isinstance(page, BackgroundPhone) and dlg.phone.access is page
        dlg.phone.show_pairing()
        assert dlg.phone.qr.isVisibleTo(dlg) and not dlg.phone.qr.pixmap().isNull()
        where = SimpleNamespace(host=page.host, port=page.port, ident=SimpleNamespace(cert_pem=page.cert_pem))
        async with Phone(where, name="Pixel 8") as phone:  # type: ignore[arg-type]
            pairing = asyncio.ensure_future(phone.pair(page.pairing_url()))
            confirm = await wait_for(lambda: next((d for d in win.findChildren(PairingConfirmDialog)
                                                   if d.isVisible()), None), 10, "the window's pairing dialog")
            await wait_for(lambda: phone.verification, 5, "the phone's code")
            assert confirm.code.text() == phone.verification  # the same code on both sides
            await asyncio.sleep(0.6)  # the guarded dialog takes no click before it is ready
            qtbot.mouseClick(confirm.yes_button, Qt.MouseButton.LeftButton)
            device = await asyncio.wait_for(pairing, 10)
            await wait_for(lambda: device in dlg.phone.revoke_buttons, 10, "the device in Settings")
            qtbot.mouseClick(dlg.phone.revoke_buttons[device], Qt.MouseButton.LeftButton)
            await wait_for(lambda: not dlg.phone.revoke_buttons and page.list_devices() == [], 10, "the revoke")
        dlg.phone.switch.setChecked(False)
        await wait_for(lambda: getattr(win, "phone_server", None) is None, 10, "the page to stop")

        def refused() -> bool:
            try:
                socket.create_connection((page.host, page.port), timeout=2).close()
            except OSError:
                return True
            return False

        await wait_for(refused, 5, "the host's page to close its port")
        dlg.close()

    qloop.run_until_complete(scenario())
    qloop.run_until_complete(win.controller.detach_session())


def test_a_reconnect_with_a_question_pending_asks_it_again_and_the_window_answers_it(
        qtbot, qloop, fake, host_env: HostEnv, tmp_path, workdir, monkeypatch, keep_app_running):
    """Issue 26: the window's connection to the background host is made again (``restart()`` on its session handle)
    while the session's question waits: the old dialog closes with the old connection, the host sends the question
    again on the new one and the window shows it (not taken for the one it already closed); Allow there completes the
    host's turn — the edit lands and the question leaves the host."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    config = tmp_path / "home-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    (config / "desktop-agent").mkdir(parents=True)
    (config / "desktop-agent" / "settings.json").write_text(json.dumps({"keep_sessions_running": True}))
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, BEFORE, AFTER), reply(text("Done."))])
    win = MainWindow(settings=QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.banners.notify = lambda title, message: None  # type: ignore[method-assign]
    win.show()

    async def scenario() -> None:
        await open_and_send(qtbot, win, workdir, "Change value to 2")
        session = win.controller.session
        assert session.state.executor == "host"
        first = await wait_dialog(win, 30)
        request_id = first.request.request_id
        old_pid = control_request("status")["pid"]
        await session.restart()  # the same host, a new connection, the session attached again
        assert win.controller.session is session and session.alive
        status = control_request("status")
        assert status["pid"] == old_pid and [q["request_id"] for q in status["pending"]] == [request_id]
        await wait_for(lambda: not first.isVisible(), 10, "the old connection's dialog to close")
        again = await wait_for(lambda: d if (d := win.controller.current_dialog) is not None and d is not first
                               and d.isVisible() else None, 10, "the question asked again on the new connection")
        assert again.request.request_id == request_id
        assert [r.request_id for r in session.pending_questions] == [request_id]
        qtbot.mouseClick(again.allow_button, Qt.MouseButton.LeftButton)
        await wait_for(lambda: app_ts.read_text() == AFTER, 20, "the edit")
        await wait_for(lambda: not control_request("status")["pending"], 20, "the question to be answered")
        await wait_for(lambda: not control_request("status")["sessions"][0]["busy"], 20, "the turn to complete")
        assert not session.refusals  # the window's answer was taken, not refused as one for a closed question

    qloop.run_until_complete(scenario())
    fake.assert_done()
    qloop.run_until_complete(win.controller.detach_session())
