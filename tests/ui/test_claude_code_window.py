"""The window with Claude Code as the executor (``--executor claude``), against the fake Anthropic server.

Claude Code (``@anthropic-ai/claude-code`` from npm, installed by ``bench/reference_setup.sh`` into a cache
outside the repository; ``REFERENCE_CLAUDE`` names a binary instead) runs as
``claude -p --input-format stream-json --output-format stream-json --permission-prompt-tool stdio`` with
``ANTHROPIC_BASE_URL`` pointing at the fake. Its ``can_use_tool`` carries no patch: the dialog shows the patch
computed here (and says so); Allow writes the file (Claude Code's own Edit), Deny with feedback leaves it and the
model gets the message; the changes panel is fed from each tool result's ``tool_use_result`` (its
``structuredPatch``); resume (Claude Code's session id) shows its transcript and continues; Stop interrupts a
running Bash and the executor stays up. Claude Code's side calls (titles and the like: requests without tools) get a short text.

Issue 21 (the executor tells the truth): rejected hunks reach its model through our PostToolUse hook callback and
the panel marks them (also after a resume); every request carries the model from Settings (``--model``), the
toolbar's (``set_model``) or Settings' saved during a turn; "Allow for session" adds only the call's rule, the
mode switch is its own guarded button; its sessions are listed in the sidebar (off the Qt thread) and resumed by id.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt

import tests.fakes.anthropic_server as fa
from desktop_agent.config import AppSettings
from desktop_agent.ui.window.main_window import MainWindow
from desktop_agent.util.diff import rejected_hunks_sentence
from tests.ui.flow import ORIGINAL, changed_text, open_and_send, result_text, wait_dialog, wait_for, reject_hunks_2_and_4_then_allow

ROOT = Path(__file__).resolve().parents[2]
CACHED = Path(os.path.expanduser("~/.cache/desktop-agent-bench/reference/node_modules/.bin/claude"))


def find_claude() -> str:
    if os.environ.get("REFERENCE_CLAUDE"):
        return os.environ["REFERENCE_CLAUDE"]
    if CACHED.exists():
        return str(CACHED)
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm are not installed: Claude Code cannot be installed here")
    p = subprocess.run([str(ROOT / "bench" / "reference_setup.sh")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip(), f"reference_setup.sh failed: {p.stderr[-800:]}"
    return p.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def claude_bin() -> str:
    return find_claude()


class MainLoopFake(fa.FakeAnthropic):
    """Scripted steps for the agent loop's requests (those offering the Edit tool); side calls get a text."""

    def __init__(self) -> None:
        super().__init__(chunk_size=5, validate=False)
        self.main: list[fa.RecordedRequest] = []

    def next_step(self, record: fa.RecordedRequest) -> fa.Reply | None:
        names = {t.get("name") for t in record.body.get("tools") or []}
        if "Edit" not in names:
            with self._lock:
                self.requests.append(record)
            return fa.reply(fa.text("Side call."))
        with self._lock:
            self.main.append(record)
        return super().next_step(record)


@pytest.fixture
def fake(monkeypatch):
    with MainLoopFake() as server:
        for k in list(os.environ):
            if k.startswith(("ANTHROPIC_", "CLAUDE_CODE_")):
                monkeypatch.delenv(k)
        for k, v in dict(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.base_url, DISABLE_TELEMETRY="1",
                         DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1", CLAUDE_CODE_MAX_RETRIES="0",
                         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", NO_COLOR="1", IS_SANDBOX="1").items():
            monkeypatch.setenv(k, v)
        yield server


def edit(path: Path, old: str, new: str, id: str) -> fa.Reply:
    return fa.reply(fa.text("Changing it."), fa.tool_use("Edit", {"file_path": str(path), "old_string": old,
                                                                  "new_string": new}, id=id))


def last_tool_result(record: fa.RecordedRequest) -> dict:
    blocks = [b for b in record.messages[-1]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert len(blocks) == 1
    return blocks[0]


@pytest.mark.timeout(600)  # the first test may install Claude Code from npm (reference_setup.sh)
def test_claude_code_allow_then_deny_an_edit(qtbot, qloop, fake, claude_bin, workdir, tmp_path):
    app_ts = workdir / "app.ts"
    app_ts.write_text("export const value = 1\nexport const other = 1\n")
    fake.script([edit(app_ts, "export const value = 1", "export const value = 2", "toolu_cc1"),
                 fa.reply(fa.text("Changed `value` to 2.")),
                 edit(app_ts, "export const other = 1", "export const other = 9", "toolu_cc2"),
                 fa.reply(fa.text("OK, I left other alone.")),
                 fa.reply(fa.text("Resumed with Claude Code."))])
    settings = QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings, executor="claude", executor_path=claude_bin)
    qtbot.addWidget(win)
    win.show()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change value to 2")
        session = win.controller.session
        assert session.executor == "claude" and session.pid
        dlg = await wait_dialog(win)
        assert dlg.windowTitle() == "Allow Edit: app.ts?"
        assert dlg.request.computed_here and dlg.computed_label.isVisible()
        assert "computed here" in dlg.computed_label.text()
        diff = dlg.diff_view.toPlainText()
        assert "export const value = 1" in diff and "export const value = 2" in diff
        assert "pending" in win.diff_panel.text_content()
        assert app_ts.read_text() == "export const value = 1\nexport const other = 1\n"
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 60)
        assert app_ts.read_text() == "export const value = 2\nexport const other = 1\n"
        assert win.conversation.cards["toolu_cc1"].state == "done"
        assert "Changed value to 2." in win.conversation.text_content()
        change = win.diff_panel.changes[0]
        assert change.status == "applied" and change.counts == (1, 1)

        qtbot.keyClicks(win.prompt, "Now change other to 9")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        task = win.controller._task
        dlg = await wait_dialog(win)
        assert dlg.request.computed_here and "export const other = 9" in dlg.diff_view.toPlainText()
        qtbot.keyClicks(dlg.feedback, "leave other alone")
        qtbot.mouseClick(dlg.deny_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 60)
        return session

    session = qloop.run_until_complete(scenario())
    assert app_ts.read_text() == "export const value = 2\nexport const other = 1\n"
    allowed = last_tool_result(fake.main[1])
    assert not allowed.get("is_error") and "updated" in result_text(allowed)
    denied = last_tool_result(fake.main[3])
    assert denied.get("is_error") and "leave other alone" in result_text(denied)
    assert win.conversation.cards["toolu_cc2"].state == "denied"
    assert [c.status for c in win.diff_panel.changes] == ["applied", "rejected"]
    assert "OK, I left other alone." in win.conversation.text_content()
    assert win.controller.status == "idle"

    # resume (Claude Code's own session id): its transcript on screen, and the next request carries the history
    sid = session.session_id

    async def resume():
        assert await win.close_live(win.live)  # open sessions are shown, not opened twice: close it, then resume
        assert await win.folders.open_folder(str(workdir), resume=sid)
        assert not session.alive  # the first executor ended with its session
        resumed = win.controller.session
        assert resumed is not session and resumed.session_id == sid and resumed.executor == "claude"
        conv = win.conversation.text_content()
        assert "you: Change value to 2" in conv and "OK, I left other alone." in conv
        assert win.conversation.cards["toolu_cc1"].state == "done"
        assert [c.status for c in win.diff_panel.changes][:1] == ["applied"]
        qtbot.keyClicks(win.prompt, "still there?")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 60)
        return resumed

    resumed = qloop.run_until_complete(resume())
    assert "Resumed with Claude Code." in win.conversation.text_content()
    assert "Change value to 2" in str(fake.main[4].messages) and "leave other alone" in str(fake.main[4].messages)
    fake.assert_done()
    qloop.run_until_complete(win.controller.end_session("prompt_input_exit", timeout=15))
    assert not resumed.alive


@pytest.mark.timeout(600)  # the first test may install Claude Code from npm (reference_setup.sh)
def test_claude_code_stop_during_a_tool(qtbot, qloop, fake, claude_bin, workdir, tmp_path):
    """Stop (Esc) sends the control ``interrupt``: Claude Code ends its Bash, the window is idle, and the
    executor stays up for the next prompt."""
    marker = workdir / "late.txt"
    fake.script([fa.reply(fa.tool_use("Bash", {"command": f"sleep 8 && echo late > {marker}"}, id="toolu_sleep")),
                 fa.reply(fa.text("Still here."))])
    settings = QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings, executor="claude", executor_path=claude_bin,
                     session_kwargs={"permission_mode": "bypassPermissions"})
    qtbot.addWidget(win)
    win.show()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Run the slow thing")
        card = await wait_for(lambda: win.conversation.cards.get("toolu_sleep"), timeout=60, what="Bash card")
        await wait_for(lambda: card.state == "running", what="running Bash")
        await asyncio.sleep(1.0)
        t0 = time.monotonic()
        qtbot.keyClick(win.prompt, Qt.Key.Key_Escape)
        await asyncio.wait_for(task, 10)
        elapsed = time.monotonic() - t0
        assert win.controller.session.alive
        qtbot.keyClicks(win.prompt, "are you there?")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 60)
        return elapsed

    elapsed = qloop.run_until_complete(scenario())
    assert elapsed < 4
    assert win.conversation.cards["toolu_sleep"].state in ("cancelled", "error")
    assert "Still here." in win.conversation.text_content()
    time.sleep(0.5)
    assert not marker.exists()
    fake.assert_done()
    qloop.run_until_complete(win.controller.end_session("prompt_input_exit", timeout=15))


# ----- issue 21: Claude Code as the executor tells the truth ---------------------------------------------------
SETTINGS_MODEL = "claude-settings-model-21"
TOOLBAR_MODEL = "claude-toolbar-model-21"


def claude_window(qtbot, tmp_path, claude_bin, **session_kwargs) -> MainWindow:
    settings = QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings, executor="claude", executor_path=claude_bin, session_kwargs=session_kwargs)
    qtbot.addWidget(win)
    win.show()
    return win


def text_of_request(record: fa.RecordedRequest) -> str:
    """Everything the model is sent after its last reply (tool results, additional context, reminders)."""
    messages = record.messages
    last_assistant = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return json.dumps(messages[last_assistant + 1:], ensure_ascii=False)


@pytest.mark.timeout(300)
def test_claude_code_rejected_hunks_reach_the_model_and_the_panel(qtbot, qloop, fake, claude_bin, workdir, tmp_path):
    """Reject 2 of 5 hunks: the file holds the 3 accepted, the model's next request carries our Edit tool's own
    rejection sentence (PostToolUse ``additionalContext`` from our hook callback), the panel marks them ✗, and
    every main-loop request goes out with the model chosen in Settings (``--model``)."""
    AppSettings(model=SETTINGS_MODEL).save()
    path = workdir / "lines.txt"
    path.write_text(ORIGINAL)
    old = "".join(f"line {i}\n" for i in range(5, 54))
    new = "".join(f"line {i} changed\n" if i in (5, 17, 29, 41, 53) else f"line {i}\n" for i in range(5, 54))
    fake.script([fa.reply(fa.tool_use("Read", {"file_path": str(path)}, id="toolu_read")),
                 edit(path, old, new, "toolu_five"),
                 fa.reply(fa.text("Understood: three of five."))])
    win = claude_window(qtbot, tmp_path, claude_bin)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change five lines")
        dlg = await wait_dialog(win, 60)
        view = dlg.diff_view
        assert dlg.per_hunk and dlg.request.computed_here and len(view.hunks) == 5
        reject_hunks_2_and_4_then_allow(qtbot, dlg)
        await asyncio.wait_for(task, 60)

    qloop.run_until_complete(scenario())
    assert path.read_text() == changed_text(keep=(5, 29, 53))
    sentence = rejected_hunks_sentence([(14, 20), (38, 44)], 5)
    assert sentence == "The user rejected 2 of 5 hunks (lines 14\u201320, 38\u201344); those parts were NOT written."
    after_edit = text_of_request(fake.main[2])
    assert sentence in after_edit, after_edit
    assert {r.body.get("model") for r in fake.main} == {SETTINGS_MODEL}
    assert win.controller.session.model == SETTINGS_MODEL
    change = win.diff_panel.changes[0]
    assert change.status == "applied" and change.rejected == [(14, 20), (38, 44)] and change.total_hunks == 5
    hunks, accepted = change.review()
    assert accepted == [True, False, True, False, True]
    panel = win.diff_panel.text_content()
    assert panel.count("\u2717") >= 2 and "rejected: not written" in panel
    assert "Understood: three of five." in win.conversation.text_content()
    # resumed (Claude Code's transcript: our hook's context is an attachment there): the panel still says so
    session = win.controller.session

    async def resume():
        assert await win.folders.open_folder(str(workdir), resume=session.session_id)

    qloop.run_until_complete(resume())
    [change] = win.diff_panel.changes
    assert change.status == "applied" and change.rejected == [(14, 20), (38, 44)] and change.total_hunks == 5
    assert "2 of 5 hunks rejected" in win.diff_panel.text_content()
    fake.assert_done()
    qloop.run_until_complete(win.controller.end_session("prompt_input_exit", timeout=15))


@pytest.mark.timeout(300)
def test_claude_code_allow_for_session_adds_only_this_files_rule(qtbot, qloop, fake, claude_bin, workdir, tmp_path):
    """Claude Code suggests ``setMode acceptEdits``; "Allow for session" adds ``Edit(//<this file>)`` only: a second
    Edit of the same file is not asked, an Edit of another file is, and the mode stays default. The mode switch is
    a separate button."""
    app_ts, other = workdir / "app.ts", workdir / "other.ts"
    app_ts.write_text("a = 1\nb = 1\n")
    other.write_text("c = 1\n")
    fake.script([fa.reply(fa.tool_use("Read", {"file_path": str(app_ts)}, id="toolu_r1")),
                 edit(app_ts, "a = 1", "a = 2", "toolu_e1"),
                 edit(app_ts, "b = 1", "b = 2", "toolu_e2"),
                 fa.reply(fa.tool_use("Read", {"file_path": str(other)}, id="toolu_r2")),
                 edit(other, "c = 1", "c = 2", "toolu_e3"),
                 fa.reply(fa.text("Left other.ts alone."))])
    win = claude_window(qtbot, tmp_path, claude_bin)
    opened: list = []
    win.controller.dialog_opened.connect(opened.append)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change a and b, then c")
        dlg = await wait_dialog(win, 60)
        rule = f"Edit(/{app_ts})"
        assert dlg.session_rules == [rule]
        assert dlg.rule_label.text() == f"Allow for session adds: {rule}"
        assert "acceptEdits" not in dlg.rule_label.text()
        assert dlg.allow_mode_button is not None and "acceptEdits" in dlg.allow_mode_button.text()
        qtbot.mouseClick(dlg.allow_session_button, Qt.MouseButton.LeftButton)
        dlg2 = await wait_for(lambda: win.controller.current_dialog if len(opened) == 2 else None, 60,
                              "the dialog for other.ts")
        assert dlg2.request.input["file_path"] == str(other)
        assert win.controller.session.permission_mode == "default"
        qtbot.mouseClick(dlg2.deny_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 60)

    qloop.run_until_complete(scenario())
    assert app_ts.read_text() == "a = 2\nb = 2\n" and other.read_text() == "c = 1\n"
    assert len(opened) == 2  # the second Edit of app.ts ran under the session rule, unasked
    assert not last_tool_result(fake.main[3]).get("is_error")
    assert last_tool_result(fake.main[5]).get("is_error")
    assert win.controller.session.permission_mode == "default"
    assert win.toolbar.mode_combo.currentData() == "default"
    fake.assert_done()
    qloop.run_until_complete(win.controller.end_session("prompt_input_exit", timeout=15))


@pytest.mark.timeout(300)
def test_claude_code_toolbar_model_switch_mid_session(qtbot, qloop, fake, claude_bin, workdir, tmp_path):
    """The toolbar's model box sends ``set_model``: the next request goes out with the new model, same process."""
    AppSettings(model=SETTINGS_MODEL).save()
    fake.script([fa.reply(fa.text("First.")), fa.reply(fa.text("Second."))])
    win = claude_window(qtbot, tmp_path, claude_bin)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "hello")
        await asyncio.wait_for(task, 60)
        pid = win.controller.session.pid
        win.toolbar.model_combo.setFocus()
        win.toolbar.model_combo.lineEdit().selectAll()
        qtbot.keyClicks(win.toolbar.model_combo.lineEdit(), TOOLBAR_MODEL)
        qtbot.keyClick(win.toolbar.model_combo.lineEdit(), Qt.Key.Key_Return)
        assert await win.controller.session.set_model(TOOLBAR_MODEL)  # the executor's control_response
        qtbot.keyClicks(win.prompt, "again")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 60)
        return pid

    pid = qloop.run_until_complete(scenario())
    assert [r.body.get("model") for r in fake.main] == [SETTINGS_MODEL, TOOLBAR_MODEL]
    assert win.controller.session.pid == pid and win.controller.session.model == TOOLBAR_MODEL
    fake.assert_done()
    qloop.run_until_complete(win.controller.end_session("prompt_input_exit", timeout=15))


@pytest.mark.timeout(300)
def test_claude_code_sessions_in_the_sidebar_and_resumed_by_id(qtbot, qloop, fake, claude_bin, workdir, tmp_path,
                                                              monkeypatch):
    """Claude Code's sessions of the folder (its ``projects/<slug>/*.jsonl``) are listed in the sidebar, read on a
    worker thread; activating one resumes it by id (``--resume``): its transcript on screen and in the next request."""
    from desktop_agent.client import subprocess as client_subprocess

    listed_on: list[bool] = []
    real_list = client_subprocess.claude_code.list_sessions

    def list_sessions(folder):
        listed_on.append(threading.current_thread() is threading.main_thread())
        return real_list(folder)

    monkeypatch.setattr(client_subprocess.claude_code, "list_sessions", list_sessions)
    fake.script([fa.reply(fa.text("Noted the first.")), fa.reply(fa.text("Noted the second.")),
                 fa.reply(fa.text("Back in the first."))])
    win = claude_window(qtbot, tmp_path, claude_bin)

    def rows() -> list[tuple[str, str]]:
        items = [win.sessions.item(i) for i in range(win.sessions.count())]
        return [(it.text(), str(it.data(Qt.ItemDataRole.UserRole) or "")) for it in items]

    async def scenario():
        await asyncio.wait_for(await open_and_send(qtbot, win, workdir, "first session prompt"), 60)
        first = win.controller.session.session_id
        slug_dir = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(workdir))
        assert (slug_dir / f"{first}.jsonl").exists(), sorted(p.name for p in slug_dir.parent.iterdir())
        await asyncio.wait_for(await open_and_send(qtbot, win, workdir, "second session prompt"), 60)
        second = win.controller.session.session_id
        assert second != first
        await wait_for(lambda: {sid for _, sid in rows()} >= {first, second}, 10, "both sessions listed")
        listed = dict((sid, text) for text, sid in rows())
        assert "first session prompt" in listed[first] and listed[second].startswith("\u25cf second session prompt")
        assert len(win.lives) == 2 and win.lives[0].session_id == first  # the first one still open beside it
        assert await win.close_live(win.lives[0])  # closed: the sidebar's row resumes it by id
        item = next(win.sessions.item(i) for i in range(win.sessions.count())
                    if win.sessions.item(i).data(Qt.ItemDataRole.UserRole) == first)
        win.sessions.itemActivated.emit(item)
        await asyncio.wait_for(win.open_task, 60)
        assert win.controller.session.session_id == first
        assert "you: first session prompt" in win.conversation.text_content()
        assert "second session prompt" not in win.conversation.text_content()
        qtbot.keyClicks(win.prompt, "back again")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 60)
        return first

    first = qloop.run_until_complete(scenario())
    assert listed_on and not any(listed_on)  # never on the Qt thread
    assert "first session prompt" in json.dumps(fake.main[2].messages)
    assert "second session prompt" not in json.dumps(fake.main[2].messages)
    assert "Back in the first." in win.conversation.text_content()
    assert win.controller.session.session_id == first
    qloop.run_until_complete(win.controller.end_session("prompt_input_exit", timeout=15))

    # a new window whose first session resumes it (``--resume`` at launch): its transcript read through the handle
    (tmp_path / "again").mkdir()
    fresh = claude_window(qtbot, tmp_path / "again", claude_bin)

    async def relaunch():
        assert await fresh.folders.open_folder(str(workdir), resume=first)
        assert fresh.controller.session.session_id == first and fresh.controller.session.executor == "claude"

    qloop.run_until_complete(relaunch())
    conv = fresh.conversation.text_content()
    assert "you: first session prompt" in conv and "Back in the first." in conv
    assert any(sid == first for sid in (fresh.sessions.item(i).data(Qt.ItemDataRole.UserRole)
                                        for i in range(fresh.sessions.count())))
    fake.assert_done()
    qloop.run_until_complete(fresh.controller.end_session("prompt_input_exit", timeout=15))


@pytest.mark.timeout(300)
def test_claude_code_mode_switch_only_when_picked(qtbot, qloop, fake, claude_bin, workdir, tmp_path):
    """The mode switch Claude Code suggests is its own button: picked, the session is in acceptEdits (the toolbar
    says so) and the Edit of another file runs unasked."""
    app_ts, other = workdir / "app.ts", workdir / "other.ts"
    app_ts.write_text("a = 1\n")
    other.write_text("c = 1\n")
    fake.script([fa.reply(fa.tool_use("Read", {"file_path": str(app_ts)}, id="toolu_r1")),
                 edit(app_ts, "a = 1", "a = 2", "toolu_e1"),
                 fa.reply(fa.tool_use("Read", {"file_path": str(other)}, id="toolu_r2")),
                 edit(other, "c = 1", "c = 2", "toolu_e2"),
                 fa.reply(fa.text("Both changed."))])
    win = claude_window(qtbot, tmp_path, claude_bin)
    opened: list = []
    win.controller.dialog_opened.connect(opened.append)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change a and c")
        dlg = await wait_dialog(win, 60)
        assert dlg.allow_mode_button.text() == "Allow, then acceptEdits for the session"
        qtbot.mouseClick(dlg.allow_mode_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 60)

    qloop.run_until_complete(scenario())
    assert app_ts.read_text() == "a = 2\n" and other.read_text() == "c = 2\n"
    assert len(opened) == 1
    assert win.controller.session.permission_mode == "acceptEdits"
    assert win.toolbar.mode_combo.currentData() == "acceptEdits"
    fake.assert_done()
    qloop.run_until_complete(win.controller.end_session("prompt_input_exit", timeout=15))


def test_the_mode_switch_button_is_as_guarded_as_allow(qtbot, monkeypatch, tmp_path):
    """The dialog alone: the mode switch (Claude Code's ``setMode`` suggestion, after narrowing) is inert within the
    safety delay, never pressed by Space or Enter, and gives only the mode update; "Allow for session" only the
    file's rule."""
    from desktop_agent.client.claude_code import narrow_suggestions
    from desktop_agent.core.permission import PermissionRequest, PermissionUpdate
    from desktop_agent.ui.dialogs.permission import PermissionDialog

    monkeypatch.setattr(PermissionDialog, "safety_delay_ms", 700)
    target = tmp_path / "app.ts"
    target.write_text("a = 1\n")
    request = narrow_suggestions(PermissionRequest(
        tool_name="Edit", tool_use_id="t", cwd=str(tmp_path),
        input={"file_path": str(target), "old_string": "a = 1", "new_string": "a = 2"},
        suggestions=[PermissionUpdate(type="setMode", mode="acceptEdits", destination="session")]))
    replies: list = []
    for pick in ("mode", "session"):
        dlg = PermissionDialog(request)
        qtbot.addWidget(dlg)
        dlg.decided.connect(replies.append)
        dlg.open()
        qtbot.waitUntil(dlg.isActiveWindow)
        assert not dlg.allow_mode_button.hasFocus() and not dlg.allow_mode_button.isDefault()
        qtbot.mouseClick(dlg.allow_mode_button, Qt.MouseButton.LeftButton)  # within the delay: nothing
        dlg.allow_mode_button.setFocus()
        qtbot.keyClick(dlg.allow_mode_button, Qt.Key.Key_Space)
        assert replies == [] if pick == "mode" else len(replies) == 1
        qtbot.waitUntil(dlg.is_ready, timeout=2000)
        qtbot.keyClick(dlg.allow_mode_button, Qt.Key.Key_Space)  # Space never presses it
        assert len(replies) == (0 if pick == "mode" else 1)
        qtbot.waitUntil(dlg.is_ready, timeout=2000)  # the key restarted the wait (the second line)
        button = dlg.allow_mode_button if pick == "mode" else dlg.allow_session_button
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    mode_reply, session_reply = replies
    assert [u.to_wire() for u in mode_reply.updated_permissions] == [
        {"type": "setMode", "mode": "acceptEdits", "destination": "session"}]
    assert [str(r) for u in session_reply.updated_permissions for r in u.rules or []] == [f"Edit(/{target})"]
    assert all(u.type == "addRules" for u in session_reply.updated_permissions)


@pytest.mark.timeout(300)
def test_claude_code_allow_for_session_on_bash_adds_its_rule_for_the_session(qtbot, qloop, fake, claude_bin, workdir,
                                                                              tmp_path):
    """A Bash ask: "Allow for session" names Claude Code's own rule for the command, for the session (no settings
    file is written), and nothing else; the same command again is not asked; the mode stays default."""
    fake.script([fa.reply(fa.tool_use("Bash", {"command": "touch marker-1.txt"}, id="toolu_b1")),
                 fa.reply(fa.tool_use("Bash", {"command": "touch marker-1.txt"}, id="toolu_b2")),
                 fa.reply(fa.text("Touched twice."))])
    win = claude_window(qtbot, tmp_path, claude_bin)
    opened: list = []
    win.controller.dialog_opened.connect(opened.append)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "touch it twice")
        dlg = await wait_dialog(win, 60)
        # Claude Code suggests the exact command, its folder as a directory and setMode acceptEdits: only the rule
        assert [u.to_wire() for u in dlg.session_updates] == [{
            "type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch marker-1.txt"}],
            "behavior": "allow", "destination": "session"}]
        assert dlg.rule_label.text() == "Allow for session adds: Bash(touch marker-1.txt)"
        qtbot.mouseClick(dlg.allow_session_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 60)

    qloop.run_until_complete(scenario())
    assert (workdir / "marker-1.txt").exists() and len(opened) == 1
    assert win.controller.session.permission_mode == "default"
    assert not (workdir / ".claude" / "settings.local.json").exists()
    fake.assert_done()
    qloop.run_until_complete(win.controller.end_session("prompt_input_exit", timeout=15))


@pytest.mark.timeout(300)
def test_claude_code_settings_model_saved_during_a_turn_is_sent_with_set_model(qtbot, qloop, fake, claude_bin,
                                                                               workdir, tmp_path):
    """Settings saved with another model while a turn runs (a Bash): ``set_model`` to the running executor, so the
    request after the Bash goes out with it (idle, saving opens a new session with ``--model``)."""
    AppSettings(model=SETTINGS_MODEL).save()
    fake.script([fa.reply(fa.tool_use("Bash", {"command": "sleep 2"}, id="toolu_sleep")),
                 fa.reply(fa.text("Slept."))])
    win = claude_window(qtbot, tmp_path, claude_bin, permission_mode="bypassPermissions")

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "sleep a bit")
        pid = win.controller.session.pid
        card = await wait_for(lambda: win.conversation.cards.get("toolu_sleep"), timeout=60, what="Bash card")
        await wait_for(lambda: card.state == "running", what="running Bash")
        dlg = win.show_settings()
        dlg.model_combo.setCurrentText(TOOLBAR_MODEL)
        dlg._save()
        assert win.toolbar.model_combo.currentText() == TOOLBAR_MODEL
        await asyncio.wait_for(task, 60)
        return pid

    pid = qloop.run_until_complete(scenario())
    assert [r.body.get("model") for r in fake.main] == [SETTINGS_MODEL, TOOLBAR_MODEL]
    assert win.controller.session.pid == pid and AppSettings.load().model == TOOLBAR_MODEL
    fake.assert_done()
    qloop.run_until_complete(win.controller.end_session("prompt_input_exit", timeout=15))
