"""The sidebar's session actions (issue 24): Rename (kept beside the transcripts, shown in the Running and Earlier
lists, again after the window reopens), Archive / Show archived / Unarchive, Delete (a question first; the
transcript moves to the trash, nothing else is touched), the filter, and for a worktree session Archive Worktree
(branch and snapshot kept) and File ▸ Restore Worktree… bringing it back with its files. The real window, engine
and git worktrees."""

from __future__ import annotations

import asyncio
import os
import subprocess

from PySide6.QtCore import QSettings, Qt

from desktop_agent.client import review as client_review
from desktop_agent.session import names as session_names
from desktop_agent.util.dirs import data_dir
from tests.fakes.anthropic_server import reply, text
from tests.ui.flow import git_repo, wait_for


def _rows(win):
    lst = win.sessions_pane.list
    return [lst.item(i).text() for i in range(lst.count()) if not lst.item(i).isHidden()]


async def _session(qtbot, win, folder, prompt):
    assert await win.folders.open_folder(str(folder))
    win.prompt.setFocus()
    qtbot.keyClicks(win.prompt, prompt)
    qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
    await asyncio.wait_for(win.controller._task, 20)
    return win.controller.session.session_id


def test_rename_archive_filter_and_delete(qtbot, qloop, fake, make_window, workdir, tmp_path):
    fake.script_for("first:", [reply(text("one"))])
    fake.script_for("second:", [reply(text("two"))])
    win = make_window()

    async def scenario():
        first = await _session(qtbot, win, workdir, "first: hello")
        second = await _session(qtbot, win, workdir, "second: hello")
        assert await win.session_action("rename", first, "Alpha work")
        await wait_for(lambda: any("Alpha work" in r for r in _rows(win)), what="the name in the Earlier list")
        assert win.lives[0].title == "Alpha work"
        assert session_names.load().names.get(first) == "Alpha work"
        win.sessions_pane.filter.setText("alpha")
        assert len(_rows(win)) == 1 and "Alpha work" in _rows(win)[0]
        win.sessions_pane.filter.setText("")
        assert await win.session_action("archive", first)
        await wait_for(lambda: not any("Alpha work" in r for r in _rows(win)), what="archived: out of the list")
        win.sessions_pane.show_archived.setChecked(True)
        await wait_for(lambda: any("Alpha work" in r and "archived" in r for r in _rows(win)), what="shown archived")
        assert await win.session_action("unarchive", first)
        # Delete asks first; Cancel keeps it
        deleting = asyncio.ensure_future(win.session_action("delete", second))
        dialog = await wait_for(lambda: win.delete_dialog, what="the delete question")
        qtbot.mouseClick(dialog.no_button, Qt.MouseButton.LeftButton)
        assert not await deleting
        path = win.lives[1].controller.session.transcript_path
        assert os.path.exists(path)
        deleting = asyncio.ensure_future(win.session_action("delete", second))
        dialog = await wait_for(lambda: win.delete_dialog, what="the delete question")
        qtbot.mouseClick(dialog.yes_button, Qt.MouseButton.LeftButton)
        assert await deleting
        assert not os.path.exists(path) and len(win.lives) == 1  # its session closed, its transcript in the trash
        trashed = list((data_dir() / "trash").iterdir())
        assert len(trashed) == 1 and trashed[0].name.endswith(os.path.basename(path))
        await wait_for(lambda: len(_rows(win)) == 1, what="one session left in the list")
        return first

    first = qloop.run_until_complete(asyncio.wait_for(scenario(), 60))
    # a new window on the folder: the name is still there
    again = make_window()

    async def reopen():
        assert await again.folders.open_folder(str(workdir))
        await wait_for(lambda: any("Alpha work" in r for r in _rows(again)), what="the name after a reopen")

    qloop.run_until_complete(reopen())
    assert (workdir / "app.ts").exists()  # the folder's files untouched
    fake.assert_done()
    assert first


def test_archive_worktree_and_restore_it(qtbot, qloop, fake, make_window, tmp_path):
    repo = git_repo(tmp_path, {"a.txt": "one\n"})
    fake.script_for("wt:", [reply(text("ok"))])
    win = make_window()

    async def scenario():
        tree = await client_review.new_worktree(str(repo), "keepme")
        with open(f"{tree.path}/notes.txt", "w") as f:  # an untracked file of the session's: the snapshot keeps it
            f.write("draft\n")
        await _session(qtbot, win, tree.path, "wt: hello")
        live = win.live
        assert live.worktree is not None and live.worktree.slug == tree.slug
        assert await win.worktree_actions.archive_worktree(live)
        assert not os.path.exists(tree.path) and live not in win.lives
        branches = subprocess.run(["git", "-C", str(repo), "branch", "--list", "agent/*"], capture_output=True,
                                  text=True, check=True).stdout
        assert tree.branch in branches
        restoring = win.worktree_actions.restore_worktree()
        dialog = await wait_for(lambda: win.worktree_actions.restore_dialog, what="the restore question")
        dialog.setTextValue(tree.branch)
        dialog.accept()
        back = await asyncio.wait_for(restoring, 30)
        assert back and os.path.realpath(back) == os.path.realpath(tree.path)
        with open(f"{back}/notes.txt") as f:
            assert f.read() == "draft\n"
        assert os.path.realpath(win.folder) == os.path.realpath(back)

    qloop.run_until_complete(asyncio.wait_for(scenario(), 60))
    assert (repo / "a.txt").read_text() == "one\n"
    fake.assert_done()
