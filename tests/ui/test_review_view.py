"""The review view of a worktree session (issue 24): a real repository and worktree, the folder edited meanwhile;
the person rejects one hunk of three and leaves the new file out; Apply writes exactly the chosen parts into the
folder (its own edit kept), the model's record names them, the view reloads with what is left; a conflicting
apply lists the conflict and writes nothing; nothing of it runs git on the Qt thread.

``DESKTOP_AGENT_REVIEW_SHOT=path.png`` saves the partial apply's screenshot (run under Xvfb with
``QT_QPA_PLATFORM=xcb`` for the real rendering)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from desktop_agent.session import worktrees as W
from desktop_agent.ui.review.view import ReviewView

ID = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
BASE = "".join(f"def f{i}():\r\n    return {i}\r\n" for i in range(30))


@pytest.fixture
def session_repo(tmp_path, monkeypatch):
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(tmp_path / "data"))
    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "app.py").write_bytes(BASE.encode())
    (repo / "old_name.txt").write_bytes(b"to be renamed\n" * 4)
    (repo / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    (repo / ".gitignore").write_bytes(b"__pycache__/\n")  # a test run's build output is not offered for review
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env={**os.environ, **ID})
    wt = W.create(str(repo), "fix-login")
    text = BASE.replace("return 2\r\n", "return 'two'\r\n").replace("return 15\r\n", "return 'fifteen'\r\n") \
        .replace("return 28\r\n", "return 'twenty-eight'\r\n")
    Path(wt.path, "app.py").write_bytes(text.encode())
    subprocess.run(["git", "commit", "-qam", "session work"], cwd=wt.path, check=True, capture_output=True,
                   env={**os.environ, **ID})
    Path(wt.path, "notes.md").write_bytes(b"# from a Bash side effect\n")
    os.makedirs(os.path.join(wt.path, "__pycache__"))
    Path(wt.path, "__pycache__", "app.cpython-311.pyc").write_bytes(b"\0ignored build output")
    os.rename(os.path.join(wt.path, "old_name.txt"), os.path.join(wt.path, "new_name.txt"))
    os.chmod(os.path.join(wt.path, "run.sh"), 0o755)
    # the folder moved meanwhile: the person's own uncommitted edit, far from the session's hunks
    (repo / "app.py").write_bytes(BASE.replace("return 8\r\n", "return 'mine'\r\n").encode())
    return str(repo), wt


def _file_row(view: ReviewView, name: str) -> int:
    assert view.review is not None
    return next(i for i, f in enumerate(view.review.files) if f.path == name)


def test_a_partial_apply_writes_exactly_the_chosen_parts(qtbot, qloop, session_repo, monkeypatch):
    repo, wt = session_repo
    records: list[dict] = []
    git_threads: list[str] = []
    real_run = subprocess.run

    def watched(args, *a, **kw):  # every git call of the view happens off the Qt (main) thread
        if args and args[0] == "git":
            git_threads.append(threading.current_thread().name)
        return real_run(args, *a, **kw)

    monkeypatch.setattr(subprocess, "run", watched)
    view = ReviewView(repo, "fix-login", recorder=records.append)
    qtbot.addWidget(view)
    view.resize(1100, 640)
    view.show()
    qloop.run_until_complete(view.load())
    assert view.review is not None
    assert [f.path for f in view.review.files] == ["app.py", "new_name.txt", "notes.md", "run.sh"]
    assert "4 changed files, 6 changes" in view.title.text()
    # app.py: reject the second of its three hunks, in the diff view (its own toggle)
    view.files.setCurrentRow(_file_row(view, "app.py"))
    assert view.diff.toggles and len(view.diff.hunks) == 3
    view.diff.toggle(1)
    # notes.md: left out (its file checkbox)
    notes = view.files.item(_file_row(view, "notes.md"))
    notes.setCheckState(notes.checkState().__class__.Unchecked)
    assert view.apply_button.text() == "Apply 4 of 6 changes to the folder"
    view.files.setCurrentRow(_file_row(view, "app.py"))
    shot = os.environ.get("DESKTOP_AGENT_REVIEW_SHOT")
    if shot:  # the choice before Apply: hunk 2 of app.py rejected, notes.md left out
        qtbot.wait(300)
        view.grab().save(shot.replace(".png", "-choice.png"))
    ok = qloop.run_until_complete(view.run("apply"))
    assert ok, view.status.text()
    if shot:
        view.files.setCurrentRow(_file_row(view, "app.py"))
        qtbot.wait(300)
        view.grab().save(shot)
    want = BASE.replace("return 2\r\n", "return 'two'\r\n").replace("return 28\r\n", "return 'twenty-eight'\r\n") \
        .replace("return 8\r\n", "return 'mine'\r\n")
    assert Path(repo, "app.py").read_bytes() == want.encode()  # CRLF kept, the folder's own edit kept
    assert not os.path.exists(os.path.join(repo, "notes.md"))
    assert Path(repo, "new_name.txt").read_bytes() == b"to be renamed\n" * 4
    assert not os.path.exists(os.path.join(repo, "old_name.txt"))
    assert os.stat(os.path.join(repo, "run.sh")).st_mode & 0o111
    # the model is told with its next message
    assert len(records) == 1 and records[0]["type"] == "change-revert" and records[0]["action"] == "review"
    assert "app.py (2 of 3 hunks, lines 6, 58)" in view.status.text().replace("&#x27;", "'")
    # what is left: the rejected hunk and the new file
    assert [f.path for f in view.review.files] == ["app.py", "notes.md"]
    assert view.review.unit_count == 2
    assert git_threads and "MainThread" not in git_threads


def test_a_conflict_is_shown_and_nothing_is_written(qtbot, qloop, session_repo):
    repo, _wt = session_repo
    # the folder changed the very line the session changed
    Path(repo, "app.py").write_bytes(BASE.replace("return 15\r\n", "return 'folder'\r\n").encode())
    before = {p: Path(repo, p).read_bytes() for p in os.listdir(repo) if os.path.isfile(os.path.join(repo, p))}
    view = ReviewView(repo, "fix-login")
    qtbot.addWidget(view)
    qloop.run_until_complete(view.load())
    ok = qloop.run_until_complete(view.run("apply"))
    assert not ok
    assert "nothing was written" in view.status.text() and "app.py" in view.status.text()
    after = {p: Path(repo, p).read_bytes() for p in os.listdir(repo) if os.path.isfile(os.path.join(repo, p))}
    assert after == before and not os.path.exists(os.path.join(repo, "notes.md"))
    assert view.apply_button.isEnabled()  # the person can change the selection and try again


def test_discard_drops_the_chosen_parts_from_the_worktree(qtbot, qloop, session_repo):
    repo, wt = session_repo
    view = ReviewView(repo, "fix-login")
    qtbot.addWidget(view)
    qloop.run_until_complete(view.load())
    assert view.review is not None
    view.selected = {(_file_row(view, "notes.md"), 0)}
    assert qloop.run_until_complete(view.run("discard"))
    assert not os.path.exists(os.path.join(wt.path, "notes.md"))
    assert not os.path.exists(os.path.join(repo, "notes.md"))
    assert "notes.md" not in [f.path for f in view.review.files]


def test_the_window_starts_a_worktree_session_and_reviews_it(make_window, qloop, qtbot, fake, session_repo):
    """File ▸ New Session in Worktree… opens a session whose folder is a new worktree of the folder; the model's
    Write lands there, not in the folder; File ▸ Review Worktree Changes… opens its review, and Apply records the
    outcome in that session (the model is told with the next message)."""
    from tests.fakes.anthropic_server import reply, text, tool_use

    repo, _wt = session_repo
    win = make_window()
    assert qloop.run_until_complete(win.folders.open_folder(repo))
    menu_texts = [a.text() for a in win.menuBar().actions()[0].menu().actions()]
    assert "New Session in &Worktree…" in menu_texts and "&Review Worktree Changes…" in menu_texts
    before = set(w.slug for w in W.list_worktrees(repo))
    async def until(cond, timeout=15.0):
        deadline = asyncio.get_running_loop().time() + timeout
        while not cond():
            assert asyncio.get_running_loop().time() < deadline, "timed out"
            await asyncio.sleep(0.05)

    win.new_worktree_action.trigger()
    qloop.run_until_complete(until(lambda: win.folder not in (None, repo) and win.controller.session is not None
                                   and win.controller.session.cwd == win.folder))
    [slug] = set(w.slug for w in W.list_worktrees(repo)) - before
    wt = W.get(repo, slug)
    assert os.path.realpath(win.folder) == os.path.realpath(wt.path)
    fake.script([reply(tool_use("Write", {"file_path": os.path.join(wt.path, "from_model.txt"),
                                          "content": "model\n"}, id="w1")), reply(text("done"))])
    win.controller.set_permission_mode("acceptEdits")
    win.send("write a file")
    qloop.run_until_complete(until(lambda: not win.controller.busy
                                   and os.path.exists(os.path.join(wt.path, "from_model.txt"))))
    assert not os.path.exists(os.path.join(repo, "from_model.txt"))
    view = qloop.run_until_complete(win.worktree_actions.review(win.folder))
    assert view is not None and view.review is not None
    assert [f.path for f in view.review.files] == ["from_model.txt"]
    assert qloop.run_until_complete(view.run("apply"))
    assert Path(repo, "from_model.txt").read_text() == "model\n"
    pending = engine_of(win).change_notes.pending
    assert pending and pending[-1]["action"] == "review"
    # the next message to the model starts with what was applied
    fake.script([reply(text("noted"))])
    win.send("what now?")
    qloop.run_until_complete(until(lambda: not win.controller.busy and len(fake.requests) >= 3))
    sent = json.dumps(fake.requests[-1].body["messages"][-1])
    assert "Since your last turn the user reviewed your worktree changes" in sent
    assert "from_model.txt (new file)" in sent and "Applied to the folder" in sent
    for dlg in list(win.worktree_actions.review_windows):
        dlg.close()


def engine_of(win):
    """The window's session's engine (``AgentSession``), in the host in this process."""
    return win.controller.client.host.sessions[win.controller.session.session_id].session
