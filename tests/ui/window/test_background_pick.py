"""Which running session of the background host a window opening a folder attaches to (``pick_running``)."""

from __future__ import annotations

from desktop_agent.ui.window.background import pick_running


def _status(*sessions):
    return {"sessions": [dict(session_id=sid, cwd=cwd, busy=busy, pending=pending)
                         for sid, cwd, busy, pending in sessions]}


def test_pick_running_prefers_questions_then_a_running_turn_then_the_newest(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert pick_running(None, a) is None
    assert pick_running(_status(), a) is None
    assert pick_running(_status(("s1", b, True, 2)), a) is None  # another folder's
    assert pick_running(_status(("s1", a, False, 0), ("s2", a, False, 0)), a) == "s2"
    assert pick_running(_status(("s1", a, True, 0), ("s2", a, False, 0)), a) == "s1"
    assert pick_running(_status(("s1", a, True, 0), ("s2", a, False, 1), ("s3", a, False, 0)), a) == "s2"
    assert pick_running(_status(("s1", a + "/", False, 0)), a) == "s1"  # the same folder, spelled otherwise
    # a session asked for by id: that one when the host runs it there, else none (the window resumes it itself)
    assert pick_running(_status(("s1", a, False, 1), ("s2", a, False, 0)), a, resume="s2") == "s2"
    assert pick_running(_status(("s1", a, False, 1)), a, resume="gone") is None
    assert pick_running(_status(("s1", b, False, 1)), a, resume="s1") is None
