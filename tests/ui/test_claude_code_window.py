"""The window with Claude Code as the executor (``--executor claude``), against the fake Anthropic server.

Claude Code (``@anthropic-ai/claude-code`` from npm, installed by ``bench/reference_setup.sh`` into a cache
outside the repository; ``REFERENCE_CLAUDE`` names a binary instead) runs as
``claude -p --input-format stream-json --output-format stream-json --permission-prompt-tool stdio`` with
``ANTHROPIC_BASE_URL`` pointing at the fake. Its ``can_use_tool`` carries no patch: the dialog shows the patch
computed here (and says so); Allow writes the file (Claude Code's own Edit), Deny with feedback leaves it and the
model gets the message; the changes panel is fed from each tool result's ``tool_use_result`` (its
``structuredPatch``); resume (Claude Code's session id) shows its transcript and continues; Stop interrupts a
running Bash and the executor stays up. Claude Code's side calls (titles and the like: requests without tools) get a short text.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt

import tests.fakes.anthropic_server as fa
from desktop_agent.ui.window.main_window import MainWindow
from tests.ui.flow import open_and_send, result_text, wait_dialog, wait_for

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
        assert await win.open_folder(str(workdir), resume=sid)
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
