"""End to end: the real window, the real engine and AnthropicClient against the fake Anthropic server.

Each test types a prompt, waits for cards and the permission dialog, clicks the real buttons while
the engine awaits the decision, and checks the file on disk, the diff panel, the conversation and
what the model received. Sync tests drive the qasync loop with ``run_until_complete``.
"""

from __future__ import annotations

import asyncio
import json
import time

from PySide6.QtCore import QPoint, QSettings, Qt

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.ui.flow import READ, edit, open_and_send, result_text, tool_results, wait_dialog, wait_for
from desktop_agent.protocol.control import HistoryRequest


def test_allow_writes_file_and_shows_hunk(qtbot, qloop, fake, make_window, workdir):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, "export const value = 1", "export const value = 2"),
                 reply(text("Changed `value` to **2**."))])
    win = make_window()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change value to 2")
        card = await wait_for(lambda: win.conversation.cards.get("toolu_read"), what="Read card")
        assert card.name == "Read" and card.arg == "app.ts"
        dlg = await wait_dialog(win)
        assert dlg.isModal()
        assert dlg.windowTitle() == "Allow Edit: app.ts?"
        diff_text = dlg.diff_view.toPlainText()
        assert "export const value = 1" in diff_text and "export const value = 2" in diff_text
        assert "waiting for approval" in win.windowTitle().lower()
        assert win.conversation.cards["toolu_edit"].state == "waiting"
        assert "pending" in win.diff_panel.text_content()
        assert app_ts.read_text() == "export const value = 1"  # nothing written before Allow
        assert not task.done()
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 10)

    qloop.run_until_complete(scenario())
    assert app_ts.read_text() == "export const value = 2"
    assert win.controller.status == "idle"
    assert "waiting" not in win.windowTitle().lower()
    panel = win.diff_panel.text_content()
    assert "app.ts" in panel and "applied" in panel and "export const value = 2" in panel
    assert win.diff_panel.changes[0].counts == (1, 1)
    conv = win.conversation.text_content()
    assert "Changed value to 2." in conv
    assert win.conversation.cards["toolu_read"].state == "done"
    assert win.conversation.cards["toolu_edit"].state == "done"
    assert win.controller.tokens > 0
    # clicking the Edit card selects its change in the panel; selecting the change selects the card
    win.diff_panel.selected_id = None
    qtbot.mouseClick(win.conversation.cards["toolu_edit"], Qt.MouseButton.LeftButton, pos=QPoint(120, 12))
    assert win.diff_panel.selected_id == win.diff_panel.changes[0].id
    assert win.conversation.selected is win.conversation.cards["toolu_edit"]
    fake.assert_done()


def test_deny_keeps_file_and_tells_model(qtbot, qloop, fake, make_window, workdir):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, "export const value = 1", "export const value = 2"),
                 reply(text("OK, I left it alone."))])
    win = make_window()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change value to 2")
        dlg = await wait_dialog(win)
        qtbot.keyClicks(dlg.feedback, "keep it at one")
        qtbot.mouseClick(dlg.deny_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 10)

    qloop.run_until_complete(scenario())
    assert app_ts.read_text() == "export const value = 1"
    results = tool_results(fake, 2)
    assert len(results) == 1 and results[0]["is_error"]
    assert "User denied via UI" in result_text(results[0])
    assert "keep it at one" in result_text(results[0])
    assert "rejected" in win.diff_panel.text_content()
    assert win.conversation.cards["toolu_edit"].state == "denied"
    assert win.controller.status == "idle"
    fake.assert_done()


def test_escape_in_dialog_denies(qtbot, qloop, fake, make_window, workdir):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, "export const value = 1", "export const value = 2"),
                 reply(text("Left alone."))])
    win = make_window()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change value to 2")
        dlg = await wait_dialog(win)
        qtbot.keyClick(dlg, Qt.Key.Key_Escape)
        await asyncio.wait_for(task, 10)

    qloop.run_until_complete(scenario())
    assert app_ts.read_text() == "export const value = 1"
    assert "User denied via UI" in result_text(tool_results(fake, 2)[0])


def test_allow_for_session_skips_second_ask(qtbot, qloop, fake, make_window, workdir):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, "export const value = 1", "export const value = 2", id="toolu_e1"),
                 edit(app_ts, "export const value = 2", "export const value = 3", id="toolu_e2"),
                 reply(text("Both edits done."))])
    win = make_window()
    dialogs = []
    win.controller.dialog_opened.connect(dialogs.append)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Bump value twice")
        dlg = await wait_dialog(win)
        assert dlg.session_rules, "the request should carry a suggested rule"
        assert dlg.session_rules[0] in dlg.rule_label.text()
        qtbot.mouseClick(dlg.allow_session_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 10)

    qloop.run_until_complete(scenario())
    assert len(dialogs) == 1
    assert app_ts.read_text() == "export const value = 3"
    assert [c.status for c in win.diff_panel.changes] == ["applied", "applied"]
    fake.assert_done()


def test_edited_proposal_is_written_and_reported(qtbot, qloop, fake, make_window, workdir):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, "export const value = 1", "export const value = 2"),
                 reply(text("Noted your change."))])
    win = make_window()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change value to 2")
        dlg = await wait_dialog(win)
        qtbot.mouseClick(dlg.edit_button, Qt.MouseButton.LeftButton)
        assert dlg.editor.isVisible()
        dlg.editor.setPlainText("export const value = 42")
        dlg._update_preview()
        assert "value = 42" in dlg.diff_view.toPlainText()
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 10)

    qloop.run_until_complete(scenario())
    assert app_ts.read_text() == "export const value = 42"
    msg = result_text(tool_results(fake, 2)[0])
    assert "user modified" in msg.lower()
    change = win.diff_panel.changes[0]
    assert change.user_modified and change.status == "applied"
    assert "edited by you" in win.diff_panel.text_content()


def test_stop_during_tool_run_leaves_ui_idle(qtbot, qloop, fake, make_window, workdir):
    fake.script([reply(tool_use("Bash", {"command": "sleep 8"}, id="toolu_sleep"))])
    win = make_window(permission_mode="bypassPermissions")

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Run the slow thing")
        card = await wait_for(lambda: win.conversation.cards.get("toolu_sleep"), what="Bash card")
        assert card.state == "running"
        await asyncio.sleep(0.3)
        assert win.stop_action.isEnabled()
        t0 = time.monotonic()
        qtbot.keyClick(win.prompt, Qt.Key.Key_Escape)
        await asyncio.wait_for(task, 6)
        return time.monotonic() - t0

    elapsed = qloop.run_until_complete(scenario())
    assert elapsed < 4
    assert win.controller.status == "idle" and not win.controller.busy
    assert not win.stop_action.isEnabled()
    assert win.conversation.cards["toolu_sleep"].state in ("cancelled", "error")
    assert "Interrupted" in win.conversation.text_content()
    # The transcript stays valid: the tool_use has its tool_result.
    msgs = qloop.run_until_complete(win.controller.session.request(HistoryRequest()))["entries"]
    uses = {b["id"] for m in msgs if m.get("type") == "assistant" for b in m["message"]["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"}
    results = {b["tool_use_id"] for m in msgs if m.get("type") == "user" and isinstance(m["message"]["content"], list)
               for b in m["message"]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"}
    assert uses <= results
    fake.assert_done()


def test_stop_while_dialog_open_denies_and_closes_it(qtbot, qloop, fake, make_window, workdir):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), edit(app_ts, "export const value = 1", "export const value = 2")])
    win = make_window()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change value to 2")
        dlg = await wait_dialog(win)
        win.stop()
        await asyncio.wait_for(task, 6)
        return dlg

    dlg = qloop.run_until_complete(scenario())
    assert not dlg.isVisible()
    assert app_ts.read_text() == "export const value = 1"
    assert win.controller.status == "idle"
    assert win.diff_panel.changes[0].status == "rejected"


def test_model_error_shows_banner_and_window_stays_usable(qtbot, qloop, fake, make_window, workdir):
    from tests.fakes.anthropic_server import http_error

    fake.script([http_error(401), reply(text("Second try works."))])
    win = make_window()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "hello")
        await asyncio.wait_for(task, 10)
        assert any(getattr(w, "kind", "") == "error" for w in win.conversation.column.items)
        qtbot.keyClicks(win.prompt, "again")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 10)

    qloop.run_until_complete(scenario())
    assert "Second try works." in win.conversation.text_content()
    assert win.controller.status == "idle"


def test_prompt_keys_and_state_persist(qtbot, qloop, fake, make_window, workdir, tmp_path):
    fake.script([reply(text("one")), reply(text("two"))])
    win = make_window()

    async def scenario():
        await win.folders.open_folder(str(workdir))
        qtbot.keyClicks(win.prompt, "first line")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
        qtbot.keyClicks(win.prompt, "second")
        assert win.prompt.toPlainText() == "first line\nsecond"
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 10)
        qtbot.keyClick(win.prompt, Qt.Key.Key_Up)
        assert win.prompt.toPlainText() == "first line\nsecond"
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 10)

    qloop.run_until_complete(scenario())
    assert win.conversation.text_content().count("you: first line\nsecond") == 2
    # the sessions list shows this folder's session; state is saved
    assert win.sessions.count() >= 1
    win.save_state()
    settings = QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)
    assert settings.value("session/lastFolder") == str(workdir)
    assert settings.value("window/splitter") is not None
    fake.assert_done()


def test_mode_selector_sets_session_mode(qtbot, qloop, fake, make_window, workdir):
    win = make_window()
    qloop.run_until_complete(win.folders.open_folder(str(workdir)))
    win.toolbar.mode_combo.setCurrentIndex(win.toolbar.mode_combo.findData("acceptEdits"))
    assert win.controller.session.permission_mode == "acceptEdits"
    win.toolbar.cycle_mode()
    assert win.controller.session.permission_mode == "plan"


def test_resume_replays_history(qtbot, qloop, fake, make_window, workdir):
    app_ts = workdir / "app.ts"
    fake.script([READ(app_ts), reply(text("It exports value."))])
    win = make_window()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "What is in app.ts?")
        await asyncio.wait_for(task, 10)
        sid = win.controller.session.session_id
        assert await win.folders.open_folder(str(workdir))  # new session
        assert win.conversation.text_content() == ""
        assert await win.folders.open_folder(str(workdir), resume=sid)

    qloop.run_until_complete(scenario())
    conv = win.conversation.text_content()
    assert "you: What is in app.ts?" in conv and "It exports value." in conv
    assert win.conversation.cards["toolu_read"].state == "done"


def test_trust_question_for_folder_with_allow_rules(qtbot, qloop, fake, make_window, workdir):
    (workdir / ".claude").mkdir()
    (workdir / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash(ls:*)"]}}))
    win = make_window()

    async def scenario():
        task = asyncio.ensure_future(win.folders.open_folder(str(workdir)))
        box = await wait_for(lambda: win.trust_box if win.trust_box is not None and win.trust_box.isVisible()
                             else None, what="trust question")
        trust_button = box.trust_button
        assert "Trust" in trust_button.text()
        qtbot.mouseClick(trust_button, Qt.MouseButton.LeftButton)
        return await asyncio.wait_for(task, 5)

    assert qloop.run_until_complete(scenario()) is True
    from desktop_agent.permissions import trust

    assert trust.is_trusted(str(workdir))
    assert not trust.needs_trust_prompt(str(workdir))


def test_model_box_switches_the_model_of_the_next_request(qtbot, qloop, fake, make_window, workdir):
    """The toolbar's model box: shows the session's model; a name typed (or picked) there is the model
    of the next request, and the system prompt is rebuilt for it."""
    fake.script([reply(text("first")), reply(text("second"))])
    win = make_window()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "hello")
        await asyncio.wait_for(task, 10)
        first_model = fake.requests[0].body["model"]
        assert win.toolbar.model_combo.isEnabled() and win.toolbar.model_combo.currentText() == first_model
        win.toolbar.model_combo.lineEdit().selectAll()
        qtbot.keyClicks(win.toolbar.model_combo.lineEdit(), "claude-haiku-4-5")
        qtbot.keyClick(win.toolbar.model_combo.lineEdit(), Qt.Key.Key_Return)
        assert win.controller.session.model == "claude-haiku-4-5"
        assert "claude-haiku-4-5" in win.status.currentMessage()
        win.prompt.setFocus()
        qtbot.keyClicks(win.prompt, "again")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 10)
        return first_model

    first_model = qloop.run_until_complete(scenario())
    fake.assert_done()
    assert fake.requests[1].body["model"] == "claude-haiku-4-5" != first_model
    assert f"You are powered by the model {first_model}." in json.dumps(fake.requests[0].body["system"])
    system = json.dumps(fake.requests[1].body["system"])
    assert "You are powered by the model claude-haiku-4-5." in system and first_model not in system
