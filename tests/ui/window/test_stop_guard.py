"""Nothing kills a running turn silently (issue 21 item 5), and since many sessions run side by side (issue 24)
nothing but the person stops one: Ctrl+N, another session from the sidebar, another folder open a new session beside
the running one, which runs on to its end. Closing a session whose turn runs (the Running list's Close Session)
asks "Stop the running turn?" first. Cancel (the default; Enter, Space and Escape land on it) leaves the turn running
to its end; Stop stops it the way Stop does, then the session closes; its transcript is valid and, opened again from
the sidebar, shows no red error (the interrupted Bash call reads "stopped", not its first output line as a failure).

The real window, engine, Bash and transcript, against the fake Anthropic server.
"""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from desktop_agent.ui.dialogs.permission import PermissionDialog
from desktop_agent.ui.dialogs.stop_turn import StopTurnDialog
from tests.fakes.anthropic_server import reply, text, tool_use
from tests.ui.flow import READ, open_and_send, wait_dialog, wait_for

CTRL = Qt.KeyboardModifier.ControlModifier


def _bash(command, id="toolu_bash"):
    return reply(text("Running it."), tool_use("Bash", {"command": command}, id=id))


async def _question(win):
    return await wait_for(lambda: win.stop_question if win.stop_question is not None
                          and win.stop_question.isVisible() else None, what="the stop question")


def _results(entries):
    uses = [b["id"] for e in entries if e.get("type") == "assistant" for b in e["message"]["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"]
    results = [b["tool_use_id"] for e in entries if e.get("type") == "user"
               and isinstance(e["message"]["content"], list) for b in e["message"]["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    return uses, results


@pytest.mark.needs_sandbox
def test_closing_a_running_session_asks_and_cancel_keeps_the_turn(qtbot, qloop, fake, make_window, workdir):
    marker = workdir / "finished.txt"
    fake.script([_bash(f"echo first line; sleep 1.5; echo ok > {marker}"), reply(text("All done."))])
    win = make_window(permission_mode="bypassPermissions")

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Run the slow script")
        session = win.controller.session
        await wait_for(lambda: win.conversation.cards.get("toolu_bash"), what="Bash card")
        await wait_for(lambda: win.controller.status == "tool", what="running the tool")
        live = win.live
        closing = asyncio.ensure_future(win.close_live(live))
        dlg = await _question(win)
        assert isinstance(dlg, StopTurnDialog) and dlg.isModal()
        assert dlg.windowTitle() == "Stop the running turn?"
        body = dlg.message.text()
        assert "Run the slow script" in body and "running Bash" in body and "the session closes" in body
        assert dlg.cancel_button.isDefault() and not dlg.stop_button.isDefault()
        assert QApplication.focusWidget() is dlg.cancel_button or dlg.focusWidget() is dlg.cancel_button
        assert [w for w in QApplication.topLevelWidgets() if isinstance(w, StopTurnDialog) and w.isVisible()] == [dlg]
        for key in (Qt.Key.Key_Return, Qt.Key.Key_Space):  # a stray key lands on Cancel, never on Stop
            qtbot.keyClick(dlg.focusWidget() or dlg, key)
            assert not await asyncio.wait_for(closing, 5)  # kept
            assert not dlg.isVisible() and win.stop_question is None
            assert win.controller.busy and win.controller.session is session and win.lives == [live]
            win.activateWindow()  # offscreen, closing a dialog activates no window (a window manager would)
            await wait_for(win.isActiveWindow, what="the window active again")
            closing = asyncio.ensure_future(win.close_live(live))
            dlg = await _question(win)
        qtbot.keyClick(dlg, Qt.Key.Key_Escape)  # Escape: keep running
        assert not await asyncio.wait_for(closing, 5)
        assert not dlg.isVisible() and win.controller.busy
        await asyncio.wait_for(task, 15)
        await asyncio.sleep(0.05)
        return session

    session = qloop.run_until_complete(scenario())
    assert win.controller.session is session  # no new session
    assert marker.read_text() == "ok\n"  # the command ran to its end
    assert win.conversation.cards["toolu_bash"].state == "done"
    assert "All done." in win.conversation.text_content() and "Interrupted" not in win.conversation.text_content()
    fake.assert_done()


def test_stop_closes_the_session_and_reopened_it_shows_no_red_error(qtbot, qloop, fake, make_window, workdir):
    fake.script([_bash("echo first line; echo second; sleep 8")])
    win = make_window(permission_mode="bypassPermissions")
    live_states = []

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Run the long script")
        old = win.controller.session
        card = await wait_for(lambda: win.conversation.cards.get("toolu_bash"), what="Bash card")
        await wait_for(lambda: "first line" in "\n".join(card.tail), what="first output line")
        win.controller.agent_event.connect(lambda e: live_states.append(card.state))
        closing = asyncio.ensure_future(win.close_live(win.live))
        dlg = await _question(win)
        qtbot.mouseClick(dlg.stop_button, Qt.MouseButton.LeftButton)
        assert await asyncio.wait_for(closing, 15)
        assert task.done()
        assert win.controller.session is None and len(win.lives) == 1  # an empty view on the folder is left
        assert not win.controller.busy and win.controller.status == "idle"
        assert win.conversation.cards == {}
        return old.session_id

    old_id = qloop.run_until_complete(scenario())
    assert "error" not in live_states  # live, the cut-short call never read as a failure
    entries = qloop.run_until_complete(win.controller.client.history(str(workdir), old_id))
    uses, results = _results(entries)
    assert uses == ["toolu_bash"] and results == ["toolu_bash"]  # the transcript is valid
    assert any(e.get("isInterrupt") for e in entries)  # the normal interrupt path wrote its marker

    # Back to the old session from the sidebar (nothing runs now: no question).
    item = next(win.sessions.item(i) for i in range(win.sessions.count())
                if win.sessions.item(i).data(Qt.ItemDataRole.UserRole) == old_id)
    win.sessions.itemActivated.emit(item)
    assert win.stop_question is None
    assert qloop.run_until_complete(asyncio.wait_for(win.open_task, 15))
    assert win.controller.session.session_id == old_id
    card = win.conversation.cards["toolu_bash"]
    assert card.state == "cancelled" and card.summary == "stopped"
    assert "first line" in card.result  # the output is still there, in the body
    kinds = [getattr(i, "kind", None) for i in win.conversation.presenter.items]
    assert "error" not in kinds and "interrupted" in kinds
    assert not any(getattr(i, "state", None) == "error" for i in win.conversation.presenter.items)
    fake.assert_done()


def test_switching_or_opening_while_a_turn_runs_asks_nothing_and_stops_nothing(qtbot, qloop, fake, make_window,
                                                                                workdir, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    fake.script([reply(text("One.")), _bash("sleep 1.5", id="toolu_slow"), reply(text("Two."))])
    win = make_window(permission_mode="bypassPermissions")

    async def scenario():
        first = await open_and_send(qtbot, win, workdir, "First session")
        await asyncio.wait_for(first, 10)
        first_id = win.controller.session.session_id
        assert await win.folders.open_folder(str(workdir))  # a new session beside the first
        task = await open_and_send(qtbot, win, workdir, "Second session")
        second = win.live
        await wait_for(lambda: win.controller.status == "tool", what="running the tool")
        win.folders.on_session_activated(first_id)  # the first is open: shown at once, no question
        assert win.stop_question is None and win.controller.session.session_id == first_id
        assert second.controller.busy
        qtbot.keyClick(win.prompt, Qt.Key.Key_N, CTRL)  # Ctrl+N: the first has run, so a third opens
        await asyncio.wait_for(win.open_task, 15)
        assert win.stop_question is None and len(win.lives) == 3 and second.controller.busy
        assert await win.folders.open_folder(str(other))  # the third had not started: it is replaced by this folder's
        assert len(win.lives) == 3 and win.folder == str(other) and second.controller.busy
        await asyncio.wait_for(task, 10)
        assert second.controller.status == "idle" and "Two." in second.conversation.text_content()

    qloop.run_until_complete(scenario())
    fake.assert_done()


def test_the_question_closes_when_the_turn_ends_by_itself(qtbot, qloop, fake, make_window, workdir, tmp_path):
    fake.script([_bash("sleep 0.8"), reply(text("Done."))])
    win = make_window(permission_mode="bypassPermissions")

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Short job")
        old = win.controller.session
        await wait_for(lambda: win.controller.status == "tool", what="running the tool")
        closing = asyncio.ensure_future(win.close_live(win.live))
        dlg = await _question(win)
        assert "the session closes" in dlg.message.text()
        await asyncio.wait_for(task, 10)  # the turn finishes while the question is open
        assert await asyncio.wait_for(closing, 15)  # the question is moot: it closes, and so does the session
        assert not dlg.isVisible() and win.stop_question is None
        return old

    old = qloop.run_until_complete(scenario())
    assert win.controller.session is not old and len(win.lives) == 1
    assert "Interrupted" not in "\n".join(str(getattr(i, "text", "")) for i in win.conversation.presenter.items)
    fake.assert_done()


@pytest.mark.parametrize("answer", ["cancel", "stop"])
def test_a_permission_question_waits_behind_the_stop_question(qtbot, qloop, fake, make_window, workdir, answer):
    app_ts = workdir / "app.ts"
    slow = reply(text("Let me think about the change before making it. " * 4),
                 tool_use("Edit", {"file_path": str(app_ts), "old_string": "value = 1", "new_string": "value = 2"},
                          id="toolu_ask"), delay=0.03)
    fake.script([READ(app_ts), slow] + ([reply(text("Fine, left alone."))] if answer == "cancel" else []))
    win = make_window()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Look around")
        old = win.controller.session
        await wait_for(lambda: win.controller.status == "streaming", what="the reply streaming")
        closing = asyncio.ensure_future(win.close_live(win.live))
        stop_dlg = await _question(win)
        assert "writing its reply" in stop_dlg.message.text()
        await wait_for(lambda: len(win.controller.questions) == 2, 15, "the Bash question queued behind it")
        await asyncio.sleep(0.2)
        assert win.controller.current_dialog is None and stop_dlg.isVisible()  # one dialog: the stop question
        assert not [w for w in QApplication.topLevelWidgets() if isinstance(w, PermissionDialog) and w.isVisible()]
        if answer == "cancel":
            qtbot.mouseClick(stop_dlg.cancel_button, Qt.MouseButton.LeftButton)
            dlg = await wait_dialog(win)
            assert dlg.request.tool_use_id == "toolu_ask" and not dlg.waiting_label.isVisible()
            qtbot.mouseClick(dlg.deny_button, Qt.MouseButton.LeftButton)
            await asyncio.wait_for(task, 10)
            assert win.controller.session is old and not await asyncio.wait_for(closing, 5)
        else:
            qtbot.mouseClick(stop_dlg.stop_button, Qt.MouseButton.LeftButton)
            assert await asyncio.wait_for(closing, 15)
            assert task.done() and win.controller.session is not old
            await asyncio.sleep(0.4)  # nothing else opens
            assert win.controller.current_dialog is None and len(win.controller.questions) == 0
        return old.session_id

    old_id = qloop.run_until_complete(scenario())
    entries = qloop.run_until_complete(win.controller.client.history(str(workdir), old_id))
    uses, results = _results(entries)
    assert uses == results == ["toolu_read", "toolu_ask"]  # the Edit answered exactly once (deny), in both cases
    assert app_ts.read_text() == "export const value = 1"
    fake.assert_done()


def test_closing_right_after_stop_asks_nothing(qtbot, qloop, fake, make_window, workdir):
    fake.script([_bash("sleep 8")])
    win = make_window(permission_mode="bypassPermissions")

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Sleep")
        old = win.controller.session
        await wait_for(lambda: win.controller.status == "tool", what="running the tool")
        win.stop()  # the person stopped it; the turn is winding down
        closing = asyncio.ensure_future(win.close_live(win.live))
        await asyncio.sleep(0)
        assert win.stop_question is None
        assert await asyncio.wait_for(closing, 15)
        assert task.done() and win.controller.session is not old

    qloop.run_until_complete(scenario())
    fake.assert_done()
