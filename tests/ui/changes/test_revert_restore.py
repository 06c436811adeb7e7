"""The changes panel's per-change Revert goes through the checkpoint restore (issue 25), in the real window against
the fake Messages API: the agent edits a file and creates another, the person edits the same file elsewhere, and the
Revert undoes only the agent's change with their edit kept; an edit on the agent's own lines is a conflict that writes
nothing; a created file is deleted; Redo is that restore undone, byte for byte and with the file's mode, and each is
recorded (``restoreId``) and told to the model."""

from __future__ import annotations

import asyncio
import os

from PySide6.QtCore import Qt

from desktop_agent.session.store import read_transcript
from desktop_agent.ui.changes.panel import APPLIED, REVERTED
from tests.fakes.anthropic_server import reply, text, tool_use
from tests.ui.changes.test_revert_redo import _confirm, _last_user_text, _send
from tests.ui.flow import READ, edit, open_and_send, wait_dialog, wait_for

LINES = "".join(f"line {i}\r\n" for i in range(1, 21))  # CRLF: the bytes must come back as they were
AGENT = LINES.replace("line 3\r\n", "line three\r\n")
MINE = AGENT.replace("line 18\r\n", "line 18 (mine)\r\n")


def _staging_left(folder) -> list[str]:
    return [n for n in os.listdir(folder) if n.startswith(".desktop-agent-restore-")]


def test_revert_keeps_the_persons_later_edit_and_redo_is_the_restore_undone(qtbot, qloop, fake, make_window, workdir):
    path = workdir / "notes.txt"
    path.write_bytes(LINES.encode())
    os.chmod(path, 0o640)
    fake.script([READ(path), edit(path, "line 3", "line three", id="toolu_three"), reply(text("Renamed line 3.")),
                 reply(text("Understood."))])
    win = make_window()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Spell out line 3")
        qtbot.mouseClick((await wait_dialog(win)).allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 15)
        assert path.read_bytes() == AGENT.encode()
        panel = win.diff_panel
        change = panel.by_tool["toolu_three"]
        path.write_bytes(MINE.encode())  # the person edits the same file, far from the agent's line
        await _confirm(qtbot, panel.ask_revert(change))
        await wait_for(lambda: change.status == REVERTED and not change.busy, 15, "the revert")
        assert path.read_bytes() == MINE.replace("line three", "line 3").encode(), "their edit kept, the change undone"
        assert os.stat(path).st_mode & 0o777 == 0o640
        assert "your later edits in the file were kept" in panel.text_content()
        assert isinstance(change.undo, dict) and change.undo.get("restoreId"), "it went through the restore"
        assert not _staging_left(workdir)

        await _send(qtbot, win, "Look again")
        note, _prompt = _last_user_text(fake, 3)
        assert "The user reverted your Edit of notes.txt (tool use toolu_three" in note

        await _confirm(qtbot, panel.ask_redo(change))  # the revert undone: the bytes as they were before it
        await wait_for(lambda: change.status == APPLIED and not change.busy, 15, "the redo")
        assert path.read_bytes() == MINE.encode()
        assert os.stat(path).st_mode & 0o777 == 0o640
        return win.controller.session.transcript_path

    transcript = qloop.run_until_complete(scenario())
    records = [e for e in read_transcript(transcript, full=True) if e.get("type") == "change-revert"]
    assert [(r["action"], r["outcome"]) for r in records] == [("revert", "restored"), ("redo", "reapplied")]
    assert records[0]["restoreId"] and records[0]["hashBefore"] == records[1]["hashAfter"]
    fake.assert_done()


def test_a_conflicting_edit_writes_nothing_and_a_created_file_is_deleted_then_recreated(qtbot, qloop, fake,
                                                                                      make_window, workdir):
    path = workdir / "notes.txt"
    path.write_bytes(LINES.encode())
    made = workdir / "made.py"
    fake.script([READ(path), edit(path, "line 3", "line three", id="toolu_three"),
                 reply(tool_use("Write", {"file_path": str(made), "content": "print('made')\n"}, id="toolu_made")),
                 reply(text("Done."))])
    win = make_window()

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Two changes")
        qtbot.mouseClick((await wait_dialog(win)).allow_button, Qt.MouseButton.LeftButton)
        qtbot.mouseClick((await wait_dialog(win)).allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 15)
        panel = win.diff_panel
        three, created = panel.by_tool["toolu_three"], panel.by_tool["toolu_made"]
        clash = AGENT.replace("line three", "line THREE (mine)").encode()
        path.write_bytes(clash)  # the person rewrote the agent's own line
        await _confirm(qtbot, panel.ask_revert(three))
        await wait_for(lambda: not three.busy and three.note.startswith("Not reverted"), 15, "the refusal")
        assert three.status == APPLIED
        assert path.read_bytes() == clash, "nothing written in the conflicting file"
        assert not _staging_left(workdir)

        os.chmod(made, 0o600)
        made_bytes = made.read_bytes()
        await _confirm(qtbot, panel.ask_revert(created))
        await wait_for(lambda: created.status == REVERTED and not created.busy, 15, "the revert of the new file")
        assert not made.exists()
        assert "Deleted the file this change created." in panel.text_content()
        await _confirm(qtbot, panel.ask_redo(created))
        await wait_for(lambda: created.status == APPLIED and not created.busy, 15, "the redo")
        assert made.read_bytes() == made_bytes and os.stat(made).st_mode & 0o777 == 0o600
        return win.controller.session.transcript_path

    transcript = qloop.run_until_complete(scenario())
    records = [e for e in read_transcript(transcript, full=True) if e.get("type") == "change-revert"]
    assert [(r["toolUseId"], r["action"], r["outcome"]) for r in records] == [
        ("toolu_made", "revert", "deleted"), ("toolu_made", "redo", "recreated")]  # a refusal is not recorded
    fake.assert_done()
