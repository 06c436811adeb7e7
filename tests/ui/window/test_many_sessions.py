"""Many sessions at once in one window (issue 24): each in its own git worktree (or the folder), each with its own
script on the fake API. Opening another session never stops one that runs; the sidebar's Running list shows each
state (Working, Needs you (n), Done); the inbox lists the questions of every session and answering one there writes
the right file in the right worktree — never in another, never in the main checkout. The real window, engine, git
worktrees and permission dialogs; clicks on the real sidebar rows.
"""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from desktop_agent.client import review as client_review
from desktop_agent.ui.dialogs.permission import PermissionDialog
from tests.fakes.anthropic_server import reply, text
from tests.ui.flow import READ, edit, git_repo, wait_for


def _repo(tmp_path):
    return git_repo(tmp_path, {name: f"{name} line one\n" for name in ("a.txt", "b.txt")})


def _click_row(qtbot, widget, row):
    item = widget.item(row)
    rect = widget.visualItemRect(item)
    qtbot.mouseClick(widget.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


async def _send(qtbot, win, prompt):
    win.prompt.setFocus()
    qtbot.keyClicks(win.prompt, prompt)
    qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
    await wait_for(lambda: win.controller.busy, what=f"the turn of {prompt!r}")


def _labels(win):
    return {row.title.split(":")[0]: row.label.split(" · ")[0] for row in win.sessions_pane.live_rows}


def _visible_dialogs():
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, PermissionDialog) and w.isVisible()]


def test_three_sessions_two_waiting_answered_from_the_inbox(qtbot, qloop, fake, make_window, tmp_path):
    repo = _repo(tmp_path)
    win = make_window()

    async def scenario():
        wt_a = await client_review.new_worktree(str(repo), "alpha")
        wt_b = await client_review.new_worktree(str(repo), "beta")
        a_file, b_file = f"{wt_a.path}/a.txt", f"{wt_b.path}/b.txt"
        fake.script_for("alpha:", [READ(a_file, id="toolu_ra"), edit(a_file, "a.txt line one", "a.txt changed by alpha", id="toolu_a"),
                                   reply(text("alpha done"))])
        fake.script_for("beta:", [READ(b_file, id="toolu_rb"), edit(b_file, "b.txt line one", "b.txt changed by beta", id="toolu_b"),
                                  reply(text("beta done"))])
        fake.script_for("gamma:", [reply(text("A long answer. " * 30), delay=0.04)])

        assert await win.folders.open_folder(wt_a.path)
        await _send(qtbot, win, "alpha: change a")
        first = await wait_for(lambda: win.controller.current_dialog, what="alpha's question")
        session_a = win.controller.session

        # a new session beside alpha's: alpha keeps waiting, not stopped
        assert await win.folders.open_folder(wt_b.path)
        assert len(win.lives) == 2 and win.lives[0].controller.session is session_a
        assert win.lives[0].controller.busy and not first.isVisible()  # its dialog went back to the inbox
        await _send(qtbot, win, "beta: change b")
        await wait_for(lambda: win.controller.current_dialog, what="beta's question")

        assert await win.folders.open_folder(str(repo))  # the third, in the folder itself
        await _send(qtbot, win, "gamma: tell a story")
        assert len(win.lives) == 3 and all(live.controller.busy for live in win.lives)
        await wait_for(lambda: _labels(win) == {"alpha": "Needs you (1)", "beta": "Needs you (1)",
                                                "gamma": "Working"}, what="the sidebar states")
        assert win.sessions_pane.live_list.isVisible()
        inbox = win.sessions_pane.inbox
        assert inbox.isVisible() and inbox.count() == 2
        assert not _visible_dialogs()  # the session in view asks nothing: the others wait in the inbox
        assert [r.tool for r in win.sessions_pane.inbox_rows] == ["Edit", "Edit"]
        assert [r.session.split(":")[0] for r in win.sessions_pane.inbox_rows] == ["alpha", "beta"]

        # answer beta's first, from the inbox: its session comes into view with its dialog
        _click_row(qtbot, inbox, 1)
        dialog = await wait_for(lambda: win.controller.current_dialog if win.controller.current_dialog is not None
                                and win.controller.current_dialog.isVisible() else None, what="beta's dialog")
        assert win.live is win.lives[1] and dialog.request.input["file_path"] == b_file
        qtbot.mouseClick(dialog.allow_button, Qt.MouseButton.LeftButton)
        await wait_for(lambda: not win.lives[1].controller.busy, what="beta's turn to end")
        await wait_for(lambda: inbox.count() == 1, what="beta's question out of the inbox")

        _click_row(qtbot, inbox, 0)
        dialog = await wait_for(lambda: win.controller.current_dialog if win.controller.current_dialog is not None
                                and win.controller.current_dialog.isVisible() else None, what="alpha's dialog")
        assert win.live is win.lives[0] and dialog.request.input["file_path"] == a_file
        qtbot.mouseClick(dialog.allow_button, Qt.MouseButton.LeftButton)
        await wait_for(lambda: not any(live.controller.busy for live in win.lives), timeout=20,
                       what="every turn to end")
        try:
            await wait_for(lambda: _labels(win) == {"alpha": "Done", "beta": "Done", "gamma": "Done"},
                           what="every session done")
        except AssertionError:
            raise AssertionError(f"sidebar: {_labels(win)}; {[l.last_reason for l in win.lives]}")
        assert not inbox.isVisible()
        return wt_a, wt_b

    wt_a, wt_b = qloop.run_until_complete(asyncio.wait_for(scenario(), 60))
    assert (repo / "a.txt").read_text() == "a.txt line one\n"  # the main checkout: untouched
    assert (repo / "b.txt").read_text() == "b.txt line one\n"
    with open(f"{wt_a.path}/a.txt") as f:
        assert f.read() == "a.txt changed by alpha\n"
    with open(f"{wt_a.path}/b.txt") as f:
        assert f.read() == "b.txt line one\n"  # beta's answer never landed in alpha's worktree
    with open(f"{wt_b.path}/b.txt") as f:
        assert f.read() == "b.txt changed by beta\n"
    with open(f"{wt_b.path}/a.txt") as f:
        assert f.read() == "a.txt line one\n"
    fake.assert_done()


def test_switching_and_closing_views_never_stop_another_session(qtbot, qloop, fake, make_window, tmp_path):
    """Switching in the Running list swaps only the pages; Close Session on an idle session leaves the running one
    running."""
    repo = _repo(tmp_path)
    win = make_window(permission_mode="bypassPermissions")

    async def scenario():
        fake.script_for("slow:", [reply(text("slowly " * 60), delay=0.03)])
        fake.script_for("quick:", [reply(text("quick answer"))])
        assert await win.folders.open_folder(str(repo))
        await _send(qtbot, win, "slow: take your time")
        slow = win.live
        win.folders.new_session()  # Ctrl+N while it runs: a new session, the slow one runs on
        await wait_for(lambda: len(win.lives) == 2 and win.live is not slow and win.controller.session is not None,
                       what="the second session")
        quick = win.live
        await _send(qtbot, win, "quick: answer")
        await wait_for(lambda: not quick.controller.busy, what="the quick turn")
        assert slow.controller.busy
        _click_row(qtbot, win.sessions_pane.live_list, 0)  # back to the slow one: still streaming
        assert win.live is slow and win.pages.currentWidget() is slow.page and slow.controller.busy
        assert await win.close_live(quick)  # closing an idle one asks nothing and stops nothing
        assert win.lives == [slow] and slow.controller.busy
        await wait_for(lambda: not slow.controller.busy, timeout=15, what="the slow turn to end by itself")
        assert "slowly slowly" in slow.conversation.text_content()  # rendered into its own page, out of view too

    qloop.run_until_complete(asyncio.wait_for(scenario(), 40))
    fake.assert_done()
