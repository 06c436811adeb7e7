"""Rewind in the real window: a turn whose Bash call deletes a file and creates another, the checkpoint marker under
the prompt (``checkpoint · 2 files …``), "Rewind…" opening the dry run, "Restore files" putting the folder back, the
"Undo restore" banner putting the agent's result back byte for byte, and "Rewind conversation" opening a fork of the
session from before the message (the original transcript unchanged)."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.session.checkpoint_helpers import make_repo, manifest
from tests.ui.flow import open_and_send, wait_for


@pytest.mark.needs_sandbox
def test_marker_dry_run_restore_and_undo(qtbot, qloop, fake, make_window, tmp_path):
    folder = make_repo(tmp_path / "proj", {"app.ts": "export const value = 1\n", "notes.md": "keep\n"})
    fake.script([reply(tool_use("Bash", {"command": "rm app.ts && echo fresh > new.txt"}, id="toolu_bash")),
                 reply(text("Done."))])
    win = make_window(allowed_tools=["Bash"])
    before = manifest(folder)

    async def scenario():
        task = await open_and_send(qtbot, win, folder, "Clean up")
        await asyncio.wait_for(task, 20)
        after = manifest(folder)
        assert after != before and not (folder / "app.ts").exists()
        marker = await wait_for(lambda: next(iter(win.conversation.markers.values()), None), 10, "marker")
        assert marker.label.text() == "checkpoint · 2 files +1 \u22121"
        assert sorted(marker.files) == ["app.ts", "new.txt"]
        assert win.conversation.column.index_of(marker) == win.conversation.column.index_of(
            win.conversation.last_user_block) + 1, "the marker sits under its prompt"
        qtbot.mouseClick(marker.rewind_button, Qt.MouseButton.LeftButton)
        dialog = await wait_for(lambda: win.rewind.dialog if win.rewind.dialog is not None
                                and win.rewind.dialog.isVisible() else None, 10, "rewind dialog")
        rows = [dialog.files.item(i).text() for i in range(dialog.files.count())]
        assert any("app.ts" in r and "create" in r for r in rows) and any("new.txt" in r and "delete" in r
                                                                          for r in rows)
        assert manifest(folder) == after, "the dry run wrote nothing"
        qtbot.keyClick(dialog, Qt.Key.Key_Return)  # Enter answers nothing
        assert dialog.isVisible()
        qtbot.mouseClick(dialog.files_button, Qt.MouseButton.LeftButton)
        assert await asyncio.wait_for(win.rewind.task, 20) == "files"
        assert manifest(folder) == before
        banner = win.conversation.banners["restore"]
        # the count includes the empty mount points the sandbox left in the folder during the turn (gone now)
        assert banner.text_plain.startswith(f"Restored {dialog.files.count()} files (+1 −1)")
        (action,) = [a for _label, a in banner.links]
        win.banners.on_banner_action(action)
        await wait_for(lambda: "Restore undone" in win.conversation.banners["restore"].text_plain, 20, "undo restore")
        assert manifest(folder) == after

    qloop.run_until_complete(scenario())
    fake.assert_done()


@pytest.mark.needs_sandbox
def test_rewind_conversation_opens_a_fork(qtbot, qloop, fake, make_window, tmp_path, keep_app_running):
    folder = make_repo(tmp_path / "proj", {"app.ts": "export const value = 1\n"})
    fake.script([reply(text("First answer.")), reply(tool_use("Bash", {"command": "echo x > made.txt"},
                                                                id="toolu_bash")), reply(text("Made it."))])
    win = make_window(allowed_tools=["Bash"])

    async def scenario():
        task = await open_and_send(qtbot, win, folder, "Hello")
        await asyncio.wait_for(task, 20)
        qtbot.keyClicks(win.prompt, "Make a file")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 20)
        assert (folder / "made.txt").exists()
        original = win.controller.session
        original_path = original.state.transcript_path
        original_text = open(original_path).read()
        marker = await wait_for(lambda: next(iter(reversed(list(win.conversation.markers.values()))), None)
                                if len(win.conversation.markers) >= 2 else None, 10, "marker")
        qtbot.mouseClick(marker.rewind_button, Qt.MouseButton.LeftButton)
        dialog = await wait_for(lambda: win.rewind.dialog if win.rewind.dialog is not None
                                and win.rewind.dialog.isVisible() else None, 10, "rewind dialog")
        qtbot.mouseClick(dialog.both_button, Qt.MouseButton.LeftButton)
        assert await asyncio.wait_for(win.rewind.task, 20) == "both"
        assert not (folder / "made.txt").exists()
        await wait_for(lambda: win.controller.session is not None and win.controller.session is not original
                       and not win.controller.busy, 20, "the fork opened")
        fork = win.controller.session
        assert fork.session_id != original.session_id
        from desktop_agent.protocol.control import HistoryRequest

        history = (await fork.request(HistoryRequest()))["entries"]
        texts = str(history)
        assert "Hello" in texts and "First answer." in texts and "Make a file" not in texts
        assert open(original_path).read().startswith(original_text), "the original transcript is kept"

    qloop.run_until_complete(scenario())
