"""One inbox for two windows (issue 24): 20 sessions, 10 in each window (File ▸ New Window: the same host), each
asking 5 questions one after another (a Write each). The questions are answered in random order, each from a row
clicked in the inbox of a window picked at random — often the other window's session: its window comes forward on
that session with the question's dialog. Every answer lands in its own session (the file in its own folder, with its
own content), none twice (each tool_use answered exactly once in its transcript), and no question is left."""

from __future__ import annotations

import asyncio
import json
import random

from PySide6.QtCore import Qt

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.ui.flow import wait_for

SESSIONS, QUESTIONS = 20, 5


def _click_row(qtbot, widget, row):
    rect = widget.visualItemRect(widget.item(row))
    qtbot.mouseClick(widget.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_twenty_sessions_five_questions_each_answered_from_two_windows(qtbot, qloop, fake, make_window, tmp_path):
    rng = random.Random(24)
    folders = []
    for i in range(SESSIONS):
        folder = tmp_path / f"s{i:02d}"
        folder.mkdir()
        folders.append(folder)
        steps = [reply(tool_use("Write", {"file_path": str(folder / f"q{j}.txt"), "content": f"s{i:02d} q{j}\n"},
                                id=f"toolu_s{i:02d}q{j}")) for j in range(QUESTIONS)]
        fake.script_for(f"s{i:02d}:", steps + [reply(text(f"s{i:02d} done"))])
    one = make_window()
    two = one.new_window()
    qtbot.addWidget(two)
    windows = [one, two]
    answered: list[tuple[str, str]] = []

    async def scenario():
        for i, folder in enumerate(folders):
            win = windows[i % 2]
            assert await win.folders.open_folder(str(folder))
            win.prompt.setFocus()
            qtbot.keyClicks(win.prompt, f"s{i:02d}: write five files")
            qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        assert [len(w.lives) for w in windows] == [10, 10]
        while len(answered) < SESSIONS * QUESTIONS:
            await wait_for(lambda: one.sessions_pane.inbox.count() > 0 or
                           not any(live.controller.busy for w in windows for live in w.lives), 30,
                           "a question in the inbox")
            here = rng.choice(windows)
            await wait_for(lambda: here.sessions_pane.inbox.count() > 0, 30, "the inbox of the window picked")
            assert here.sessions_pane.inbox.count() == one.sessions_pane.inbox.count()  # the same inbox in both
            row = rng.randrange(here.sessions_pane.inbox.count())
            picked = here.sessions_pane.inbox_rows[row]
            _click_row(qtbot, here.sessions_pane.inbox, row)
            owner = next(w for w in windows if picked.ref in w.lives)
            dialog = await wait_for(
                lambda: owner.controller.current_dialog if owner.controller.current_dialog is not None
                and owner.controller.current_dialog.isVisible() else None, 10, "the picked question's dialog")
            assert owner.live is picked.ref  # its session in view, in the window that holds it
            assert (picked.ref.session_id, dialog.request.request_id) == picked.key
            answered.append(picked.key)
            qtbot.mouseClick(dialog.allow_button, Qt.MouseButton.LeftButton)
            await wait_for(lambda: picked.key not in [r.key for r in one.sessions_pane.inbox_rows], 10,
                           "the answered question out of the inbox")
        await wait_for(lambda: not any(live.controller.busy for w in windows for live in w.lives), 30,
                       "every session done")

    qloop.run_until_complete(asyncio.wait_for(scenario(), 240))
    assert len(set(answered)) == SESSIONS * QUESTIONS  # none twice
    for i, folder in enumerate(folders):
        assert sorted(p.name for p in folder.iterdir()) == [f"q{j}.txt" for j in range(QUESTIONS)]
        for j in range(QUESTIONS):
            assert (folder / f"q{j}.txt").read_text() == f"s{i:02d} q{j}\n"
    assert one.sessions_pane.inbox.count() == two.sessions_pane.inbox.count() == 0
    for win in windows:  # each tool_use answered exactly once in its own session's transcript
        for live in win.lives:
            entries = qloop.run_until_complete(win.controller.client.history(live.folder, live.session_id))
            results = [b["tool_use_id"] for e in entries if e.get("type") == "user"
                       and isinstance(e["message"]["content"], list) for b in e["message"]["content"]
                       if isinstance(b, dict) and b.get("type") == "tool_result"]
            tag = live.title.split(":")[0]
            assert results == [f"toolu_{tag}q{j}" for j in range(QUESTIONS)], (tag, json.dumps(results))
    fake.assert_done()
