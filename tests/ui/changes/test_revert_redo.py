"""Reverts are facts (issue 21, item 4), through the real window against the fake Messages API: the agent edits a
file, the person reverts it in the changes panel, closes the window, resumes the session in a new window — the
panel shows the change reverted with Redo in Revert's place, and the model's next request starts with the note
naming the revert. Redo re-applies the exact bytes and the model is told; a revert or redo after the person edited
the file writes nothing and says why."""

from __future__ import annotations

import asyncio
import os

from PySide6.QtCore import Qt

from desktop_agent.session.store import read_transcript
from desktop_agent.ui.changes.panel import APPLIED, REVERTED
from desktop_agent.ui.dialogs.revert import RevertDialog
from tests.fakes.anthropic_server import reply, text
from tests.ui.flow import READ, edit, open_and_send, wait_dialog, wait_for

BEFORE = "def total(items):\r\n    s = 0\r\n    for x in items:\r\n        s -= x\r\n    return s\r\n"
AFTER = "def total(items):\r\n    s = 0\r\n    for x in items:\r\n        s += x  # was a bug\r\n    return s\r\n"
SHOTS = os.environ.get("REVERT_SHOTS_DIR", "")


async def _confirm(qtbot, dlg: RevertDialog | None) -> None:
    assert isinstance(dlg, RevertDialog)
    await wait_for(dlg.is_ready, what="the confirmation")
    qtbot.mouseClick(dlg.revert_button, Qt.MouseButton.LeftButton)


async def _send(qtbot, win, prompt: str) -> None:
    qtbot.keyClicks(win.prompt, prompt)
    qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
    await asyncio.wait_for(win.controller._task, 15)


def _last_user_text(fake, n: int) -> tuple[str, str]:
    """The n-th request's last user message: its first text block (the note) and its last (the prompt)."""
    last = fake.request_messages(n)[-1]
    assert last["role"] == "user"
    texts = [b["text"] for b in last["content"] if b.get("type") == "text"]
    return texts[0], texts[-1]


def test_revert_close_resume_then_redo_and_the_model_is_told(qtbot, qloop, fake, make_window, workdir,
                                                             keep_app_running):
    path = workdir / "calc.py"
    path.write_bytes(BEFORE.encode("utf-8"))
    os.chmod(path, 0o640)
    fake.script([READ(path), edit(path, "        s -= x", "        s += x  # was a bug", id="toolu_fix"),
                 reply(text("Fixed the sign.")),
                 reply(text("Understood, it is reverted.")),
                 reply(text("Noted, it is back."))])
    first = make_window()
    state: dict = {}

    async def before_closing():
        task = await open_and_send(qtbot, first, workdir, "Fix the sum")
        dlg = await wait_dialog(first)
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 15)
        assert path.read_bytes() == AFTER.encode("utf-8")
        change = first.diff_panel.by_tool["toolu_fix"]
        assert change.status == APPLIED and "Revert…" in first.diff_panel.text_content()
        await _confirm(qtbot, first.diff_panel.ask_revert(change))
        await wait_for(lambda: change.status == REVERTED and not change.busy, what="the revert")
        assert "The agent is told with your next message." in first.diff_panel.text_content()
        state["sid"] = first.controller.session.session_id
        state["transcript"] = first.controller.session.transcript_path
        first.close()  # before any further message
        await wait_for(lambda: not first.isVisible(), what="the window to close")

    qloop.run_until_complete(before_closing())
    assert path.read_bytes() == BEFORE.encode("utf-8")  # CRLF kept
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert len(fake.requests) == 3

    second = make_window()

    async def after_resuming():
        assert await second.folders.open_folder(str(workdir), resume=state["sid"])
        panel = second.diff_panel
        change = panel.by_tool["toolu_fix"]
        assert change.status == REVERTED and change.undo is not None
        shown = panel.text_content()
        assert "Redo…" in shown and "Revert…" not in shown and "reverted" in shown
        assert panel.ask_revert(change) is None  # a second Revert is not offered
        panel.open_change(change)  # the change page: Redo in Revert's place
        assert panel.detail.buttons["redo"].isVisibleTo(panel) and panel.detail.buttons["redo"].isEnabled()
        assert not panel.detail.buttons["revert"].isVisibleTo(panel)
        if SHOTS:
            second.resize(1280, 800)
            await asyncio.sleep(0.2)
            panel.grab().save(os.path.join(SHOTS, "detail-redo.png"))
            panel.show_list()
            await asyncio.sleep(0.2)
            panel.grab().save(os.path.join(SHOTS, "panel-reverted-redo.png"))
        panel.show_list()

        await _send(qtbot, second, "Why did you stop?")
        note, prompt = _last_user_text(fake, 3)
        assert prompt == "Why did you stop?"
        assert note.startswith("<system-reminder>\nSince your last turn the user changed files from the changes panel:")
        assert ("The user reverted your Edit of calc.py (tool use toolu_fix; +1 -1 lines, lines 1\u20135): "
                "the file is back to what it was before that change.") in note

        await _confirm(qtbot, panel.ask_redo(change))
        await wait_for(lambda: change.status == APPLIED and not change.busy, what="the redo")
        assert "Re-applied: the file holds this change again." in panel.text_content()
        assert "Revert…" in panel.text_content() and "Redo…" not in panel.text_content()
        await _send(qtbot, second, "It is back.")
        note, prompt = _last_user_text(fake, 4)
        assert prompt == "It is back."
        assert "The user re-applied your Edit of calc.py (tool use toolu_fix; +1 -1 lines, lines 1\u20135) after " \
               "reverting it: the file holds that change again." in note
        assert "The user reverted" not in note  # each record is told once

    qloop.run_until_complete(after_resuming())
    assert path.read_bytes() == AFTER.encode("utf-8")  # the exact bytes again, CRLF and all
    assert os.stat(path).st_mode & 0o777 == 0o640
    records = [e for e in read_transcript(state["transcript"], full=True) if e.get("type") == "change-revert"]
    assert [(r["action"], r["outcome"]) for r in records] == [("revert", "restored"), ("redo", "reapplied")]
    assert records[0]["hashBefore"] == records[1]["hashAfter"] and records[0]["hashAfter"] == records[1]["hashBefore"]
    assert records[0]["restoreId"], "the revert went through the checkpoint restore (issue 25); after the resume too"
    fake.assert_done()


def test_revert_and_redo_refuse_when_the_person_edited_the_file(qtbot, qloop, fake, make_window, workdir):
    path = workdir / "calc.py"
    path.write_bytes(BEFORE.encode("utf-8"))
    fake.script([READ(path), edit(path, "        s -= x", "        s += x  # was a bug", id="toolu_fix"),
                 reply(text("Fixed."))])
    win = make_window()
    mine = AFTER.replace("return s", "return s  # mine")

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Fix the sum")
        qtbot.mouseClick((await wait_dialog(win)).allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 15)
        panel = win.diff_panel
        change = panel.by_tool["toolu_fix"]
        path.write_bytes(mine.encode("utf-8"))  # the person edits the file meanwhile
        await _confirm(qtbot, panel.ask_revert(change))
        await wait_for(lambda: not change.busy and change.note.startswith("Not reverted"), what="the refusal")
        assert change.status == APPLIED
        assert ("Not reverted: calc.py changed since this change (by you or a later change); nothing was reverted."
                in panel.text_content())
        assert path.read_bytes() == mine.encode("utf-8")

        path.write_bytes(AFTER.encode("utf-8"))  # undone by hand: now the revert goes through
        await _confirm(qtbot, panel.ask_revert(change))
        await wait_for(lambda: change.status == REVERTED and not change.busy, what="the revert")
        edited = BEFORE + "# added by hand\r\n"
        path.write_bytes(edited.encode("utf-8"))
        await _confirm(qtbot, panel.ask_redo(change))
        await wait_for(lambda: not change.busy and change.note.startswith("Not re-applied"), what="the refusal")
        assert change.status == REVERTED and "Redo…" in panel.text_content()
        assert ("Not re-applied: calc.py changed since the revert (by you or a later change); nothing was "
                "re-applied.") in panel.text_content()
        assert path.read_bytes() == edited.encode("utf-8")
        return win.controller.session.transcript_path

    transcript = qloop.run_until_complete(scenario())
    records = [e for e in read_transcript(transcript, full=True) if e.get("type") == "change-revert"]
    assert [r["action"] for r in records] == ["revert"]  # refusals are not recorded
    assert records[0]["restoreId"]  # through the checkpoint restore (issue 25)
    fake.assert_done()
