"""The window's UI flows with the session in this process and in an executor process (our CLI as a child,
``--executor process``): one parametrised suite, the same clicks on the real dialog and the same assertions on
widgets and on the files on disk, against the fake Anthropic server (the child reaches it through
``ANTHROPIC_BASE_URL``). Plus isolation through the window: kill -9 the executor while the dialog is open — the
window stays responsive, the dialog closes as a deny, the banner names the process and its signal, and
"Restart session" resumes the session in a new process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from PySide6.QtCore import QSettings, Qt

from desktop_agent.session.resume import load_conversation_for_resume
from desktop_agent.session.store import read_transcript
from desktop_agent.ui.window.main_window import MainWindow
from tests.faults.util import api_pairing_problems
from tests.fakes.anthropic_server import reply, text, tool_use
from tests.ui.flow import (
    ORIGINAL, READ, changed_text, edit, open_and_send, reject_hunks_2_and_4_then_allow, result_text, tool_results,
    wait_dialog, wait_for,
)

EXECUTORS = ["inprocess", "process"]


@pytest.fixture
def fake(fake, monkeypatch):
    """The conftest's fake API, also reachable by an executor child through its environment."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    return fake


def transcript_messages(win) -> list[dict]:
    path = win.controller.session.transcript_path
    assert path and os.path.exists(path)
    messages = load_conversation_for_resume(read_transcript(path)).messages
    assert api_pairing_problems(messages) == []
    return messages


def _check_executor(win, executor: str) -> None:
    session = win.controller.session
    if executor == "process":
        assert session.executor == "process" and session.pid and session.pid != os.getpid()
    else:  # the host in this process, over the memory transport: no process of its own
        assert session.executor == "inprocess" and session.state.pid is None


@pytest.mark.parametrize("executor", EXECUTORS)
def test_allow_writes_file_and_shows_hunk(qtbot, qloop, fake, make_window, workdir, executor):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, "export const value = 1", "export const value = 2"),
                 reply(text("Changed `value` to **2**."))])
    win = make_window(executor)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change value to 2")
        _check_executor(win, executor)
        dlg = await wait_dialog(win)
        assert dlg.windowTitle() == "Allow Edit: app.ts?"
        diff_text = dlg.diff_view.toPlainText()
        assert "export const value = 1" in diff_text and "export const value = 2" in diff_text
        assert not dlg.computed_label.isVisible()  # both send their patch with the request
        assert win.conversation.cards["toolu_edit"].state == "waiting"
        assert "pending" in win.diff_panel.text_content()
        assert app_ts.read_text() == "export const value = 1"
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 20)

    qloop.run_until_complete(scenario())
    assert app_ts.read_text() == "export const value = 2"
    assert win.controller.status == "idle"
    panel = win.diff_panel.text_content()
    assert "app.ts" in panel and "applied" in panel and "export const value = 2" in panel
    assert win.diff_panel.changes[0].counts == (1, 1)
    assert "Changed value to 2." in win.conversation.text_content()
    assert win.conversation.cards["toolu_edit"].state == "done"
    assert win.controller.tokens > 0
    fake.assert_done()


@pytest.mark.parametrize("executor", EXECUTORS)
def test_deny_with_feedback_keeps_file_and_tells_model(qtbot, qloop, fake, make_window, workdir, executor):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, "export const value = 1", "export const value = 2"),
                 reply(text("OK, I left it alone."))])
    win = make_window(executor)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change value to 2")
        dlg = await wait_dialog(win)
        qtbot.keyClicks(dlg.feedback, "keep it at one")
        qtbot.mouseClick(dlg.deny_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 20)

    qloop.run_until_complete(scenario())
    assert app_ts.read_text() == "export const value = 1"
    results = tool_results(fake, 2)
    assert len(results) == 1 and results[0]["is_error"]
    assert "User denied via UI" in result_text(results[0]) and "keep it at one" in result_text(results[0])
    assert "rejected" in win.diff_panel.text_content()
    assert win.conversation.cards["toolu_edit"].state == "denied"
    assert "keep it at one" in win.conversation.text_content()
    assert win.controller.status == "idle"
    fake.assert_done()


@pytest.mark.parametrize("executor", EXECUTORS)
def test_allow_for_session_skips_second_ask(qtbot, qloop, fake, make_window, workdir, executor):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, "export const value = 1", "export const value = 2", id="toolu_e1"),
                 edit(app_ts, "export const value = 2", "export const value = 3", id="toolu_e2"),
                 reply(text("Both edits done."))])
    win = make_window(executor)
    dialogs = []
    win.controller.dialog_opened.connect(dialogs.append)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Bump value twice")
        dlg = await wait_dialog(win)
        assert dlg.session_rules and dlg.session_rules[0] in dlg.rule_label.text()
        qtbot.mouseClick(dlg.allow_session_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 20)

    qloop.run_until_complete(scenario())
    assert len(dialogs) == 1
    assert app_ts.read_text() == "export const value = 3"
    assert [c.status for c in win.diff_panel.changes] == ["applied", "applied"]
    fake.assert_done()


@pytest.mark.parametrize("executor", EXECUTORS)
def test_edited_proposal_is_written_and_reported(qtbot, qloop, fake, make_window, workdir, executor):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, "export const value = 1", "export const value = 2"),
                 reply(text("Noted your change."))])
    win = make_window(executor)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change value to 2")
        dlg = await wait_dialog(win)
        qtbot.mouseClick(dlg.edit_button, Qt.MouseButton.LeftButton)
        dlg.editor.setPlainText("export const value = 42")
        dlg._update_preview()
        assert "value = 42" in dlg.diff_view.toPlainText()
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 20)

    qloop.run_until_complete(scenario())
    assert app_ts.read_text() == "export const value = 42"
    assert "user modified" in result_text(tool_results(fake, 2)[0]).lower()
    change = win.diff_panel.changes[0]
    assert change.user_modified and change.status == "applied"
    assert "edited by you" in win.diff_panel.text_content()
    fake.assert_done()


@pytest.mark.needs_sandbox
@pytest.mark.parametrize("executor", EXECUTORS)
def test_stop_during_tool_run_leaves_ui_idle(qtbot, qloop, fake, make_window, workdir, executor):
    marker = workdir / "marker.txt"
    fake.script([reply(tool_use("Bash", {"command": f"sleep 8 && echo late > {marker}"}, id="toolu_sleep"))])
    win = make_window(executor, permission_mode="bypassPermissions")

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Run the slow thing")
        card = await wait_for(lambda: win.conversation.cards.get("toolu_sleep"), timeout=20, what="Bash card")
        await wait_for(lambda: card.state == "running", what="running Bash")
        await asyncio.sleep(0.5)
        assert win.stop_action.isEnabled()
        t0 = time.monotonic()
        qtbot.keyClick(win.prompt, Qt.Key.Key_Escape)
        await asyncio.wait_for(task, 8)
        return time.monotonic() - t0

    elapsed = qloop.run_until_complete(scenario())
    assert elapsed < 4
    assert win.controller.status == "idle" and not win.controller.busy
    assert win.conversation.cards["toolu_sleep"].state in ("cancelled", "error")
    assert "Interrupted" in win.conversation.text_content()
    if executor == "process":
        assert win.controller.session.alive  # Stop stopped the executor's tool, not the executor
    msgs = transcript_messages(win)  # the tool_use has its tool_result
    contents = [(m.get("message") or m).get("content") for m in msgs]
    assert any(isinstance(c, list) and any(b.get("type") == "tool_result" and b.get("tool_use_id") == "toolu_sleep"
                                           for b in c) for c in contents)
    time.sleep(0.2)
    assert not marker.exists()
    fake.assert_done()


@pytest.mark.parametrize("executor", EXECUTORS)
def test_resume_replays_history_and_continues(qtbot, qloop, fake, make_window, workdir, executor):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), reply(text("It exports value.")), reply(text("Still here."))])
    win = make_window(executor)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "What is in app.ts?")
        await asyncio.wait_for(task, 20)
        sid = win.controller.session.session_id
        assert await win.folders.open_folder(str(workdir))  # a new session
        assert win.conversation.text_content() == ""
        assert await win.folders.open_folder(str(workdir), resume=sid)
        assert win.controller.session.session_id == sid
        qtbot.keyClicks(win.prompt, "and now?")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 20)

    qloop.run_until_complete(scenario())
    conv = win.conversation.text_content()
    assert "you: What is in app.ts?" in conv and "It exports value." in conv and "Still here." in conv
    assert win.conversation.cards["toolu_read"].state == "done"
    sent = fake.request_messages(2)  # the resumed session's request carries the earlier conversation
    assert sent[0]["content"][0]["text"].endswith("What is in app.ts?") or "What is in app.ts?" in str(sent[0])
    fake.assert_done()


@pytest.mark.parametrize("executor", EXECUTORS)
def test_per_hunk_partial_allow_writes_only_accepted_hunks(qtbot, qloop, fake, make_window, workdir, executor):
    path = workdir / "lines.txt"
    path.write_text(ORIGINAL)
    fake.script([READ(path), reply(text("Five changes."), tool_use("Write", {"file_path": str(path),
                                                                            "content": changed_text()}, id="toolu_w")),
                 reply(text("Understood."))])
    win = make_window(executor)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change five lines")
        dlg = await wait_dialog(win)
        view = dlg.diff_view
        assert dlg.per_hunk and len(view.hunks) == 5
        reject_hunks_2_and_4_then_allow(qtbot, dlg)
        await asyncio.wait_for(task, 20)

    qloop.run_until_complete(scenario())
    assert path.read_text() == changed_text(keep=(5, 29, 53))
    msg = result_text(tool_results(fake, 2)[0])
    assert "The user rejected 2 of 5 hunks (lines 14\u201320, 38\u201344)" in msg
    change = win.diff_panel.changes[0]
    assert change.status == "applied" and change.user_modified
    fake.assert_done()


def test_kill_executor_with_dialog_open_then_restart(qtbot, qloop, fake, make_window, workdir):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, "export const value = 1", "export const value = 2"),
                 reply(text("Back, and fine."))])
    win = make_window("process")

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change value to 2")
        dlg = await wait_dialog(win)
        session = win.controller.session
        pid = session.pid
        os.kill(pid, signal.SIGKILL)
        await asyncio.wait_for(task, 10)
        assert not dlg.isVisible() and win.controller.current_dialog is None
        banner = await wait_for(lambda: win.conversation.banners.get("error:executor"), what="executor banner")
        assert f"pid {pid}" in banner.text_plain and "signal 9 (SIGKILL)" in banner.text_plain
        assert ("restart", "Restart session") in banner.links
        # the window stays responsive: the prompt takes text, the panel shows the change as not applied
        qtbot.keyClicks(win.prompt, "typing works")
        assert win.prompt.toPlainText() == "typing works"
        win.prompt.clear()
        assert win.diff_panel.changes[0].status == "rejected"
        assert win.conversation.cards["toolu_edit"].state != "waiting"
        assert "you: Change value to 2" in win.conversation.text_content()  # the conversation is kept
        transcript_messages(win)
        banner.linkActivated.emit("restart")
        await asyncio.wait_for(win.restart_task, 30)
        assert session.alive and session.pid != pid
        assert "error:executor" not in win.conversation.banners
        assert win.controller.status == "idle"
        qtbot.keyClicks(win.prompt, "go on")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 20)
        return pid

    qloop.run_until_complete(scenario())
    assert app_ts.read_text() == "export const value = 1"
    assert "Back, and fine." in win.conversation.text_content()
    assert "Change value to 2" in str(fake.request_messages(2))  # resumed: the earlier turn is in the request
    fake.assert_done()


def test_executor_dying_between_turns_is_reported(qtbot, qloop, fake, make_window, workdir):
    fake.script([reply(text("hello"))])
    win = make_window("process")

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "hi")
        await asyncio.wait_for(task, 20)
        pid = win.controller.session.pid
        os.kill(pid, signal.SIGKILL)
        banner = await wait_for(lambda: win.conversation.banners.get("error:executor"), what="executor banner")
        assert f"pid {pid}" in banner.text_plain
        assert win.controller.can_restart
        task = win.folders.restart_session()
        await asyncio.wait_for(task, 30)
        assert win.controller.session.alive

    qloop.run_until_complete(scenario())
    fake.assert_done()


def test_kill_executor_while_a_tool_runs(qtbot, qloop, fake, make_window, workdir):
    fake.script([reply(tool_use("Bash", {"command": "sleep 30"}, id="toolu_sleep")), reply(text("Resumed."))])
    win = make_window("process", permission_mode="bypassPermissions")

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Run the slow thing")
        card = await wait_for(lambda: win.conversation.cards.get("toolu_sleep"), timeout=20, what="Bash card")
        await wait_for(lambda: card.state == "running", what="running Bash")
        pid = win.controller.session.pid
        t0 = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        await asyncio.wait_for(task, 10)
        assert time.monotonic() - t0 < 5
        banner = await wait_for(lambda: win.conversation.banners.get("error:executor"), what="executor banner")
        assert f"pid {pid}" in banner.text_plain
        assert win.controller.status == "error" and not win.controller.busy
        assert not win.stop_action.isEnabled()
        transcript_messages(win)  # still a valid conversation (the running tool_use is paired on resume)
        await asyncio.wait_for(win.folders.restart_session(), 30)
        qtbot.keyClicks(win.prompt, "go on")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 20)

    qloop.run_until_complete(scenario())
    assert "Resumed." in win.conversation.text_content()
    fake.assert_done()


def test_settings_choose_where_sessions_run(qtbot, qloop, fake, tmp_path, workdir):
    """Settings' Run sessions: saved to settings.json; the window's next session runs there."""
    from desktop_agent.config import AppSettings
    from desktop_agent.ui.dialogs.settings import SettingsDialog

    dlg = SettingsDialog()
    qtbot.addWidget(dlg)
    labels = [dlg.executor_combo.itemText(i) for i in range(dlg.executor_combo.count())]
    assert labels == ["in this window (default)", "in a separate process", "with Claude Code"]
    assert dlg.executor_combo.currentData() == "inprocess" and not dlg.claude_path_edit.isEnabled()
    dlg.executor_combo.setCurrentIndex(dlg.executor_combo.findData("claude"))
    assert dlg.claude_path_edit.isEnabled()
    dlg.claude_path_edit.setText(str(tmp_path / "no-such-claude"))
    dlg._save()
    assert not dlg.error_label.isHidden() and "Not an executable" in dlg.error_label.text()
    dlg.executor_combo.setCurrentIndex(dlg.executor_combo.findData("process"))
    dlg.claude_path_edit.clear()
    dlg._save()
    assert AppSettings.load().executor == "process"

    settings = QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings)
    qtbot.addWidget(win)
    assert win.folders.executor_choice() == ("process", None)
    assert qloop.run_until_complete(win.folders.open_folder(str(workdir)))
    session = win.controller.session
    assert session.executor == "process" and session.alive
    qloop.run_until_complete(win.controller.end_session("prompt_input_exit"))
    assert not session.alive
    tour = MainWindow(settings=settings, demo=True)
    qtbot.addWidget(tour)
    assert tour.folders.executor_choice() == ("inprocess", None)  # the tour stays in this process


def test_executor_flag_on_the_command_line():
    from desktop_agent.cli.argv import USAGE, parse_args

    ns = parse_args(["--executor", "claude", "--claude-path", "/opt/claude", "proj", "--resume", "abc"]).window()
    assert (ns.executor, ns.claude_path, ns.folder, ns.resume) == ("claude", "/opt/claude", "proj", "abc")
    assert parse_args(["proj"]).window().executor is None
    opts = parse_args(["--executor", "process", "proj"])  # the window's flag is the one parser's
    assert not opts.headless and opts.positionals == ["proj"] and opts.window().executor == "process"
    assert "--executor inprocess|process|claude" in USAGE
