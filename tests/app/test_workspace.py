"""app.workspace: which transcript a session writes, and what a resume restores from it."""

from __future__ import annotations

import pytest

from desktop_agent.app import workspace
from desktop_agent.core.context import ReadFileState
from desktop_agent.core.messages import assistant_entry, tool_result_block, user_entry
from desktop_agent.permissions.context import PermissionContext


def test_unknown_id_and_nothing_to_continue_are_session_errors(workdir):
    with pytest.raises(workspace.SessionError, match="No conversation found with session ID: nope"):
        workspace.open_transcript(str(workdir), resume="nope", continue_latest=False, session_id=None)
    with pytest.raises(workspace.SessionError, match="No conversation found to continue"):
        workspace.open_transcript(str(workdir), resume=None, continue_latest=True, session_id=None)


def test_a_new_transcript_then_resumed_by_id_and_by_continue(workdir):
    new = workspace.open_transcript(str(workdir), resume=None, continue_latest=False, session_id=None)
    assert new.resumed is None and new.store.session_id == new.session_id
    new.store.record(user_entry("hello"))
    new.store.close()
    with pytest.raises(workspace.SessionError):  # that id is in use
        workspace.open_transcript(str(workdir), resume=None, continue_latest=False, session_id=new.session_id)
    by_id = workspace.open_transcript(str(workdir), resume=new.session_id, continue_latest=False, session_id=None)
    assert by_id.session_id == new.session_id and by_id.resumed is not None
    by_id.store.close()
    latest = workspace.open_transcript(str(workdir), resume=None, continue_latest=True, session_id=None)
    assert latest.session_id == new.session_id
    latest.store.close()


def test_permission_state_round_trip_and_an_explicit_mode_wins(workdir):
    pc = PermissionContext(str(workdir), mode="acceptEdits")
    pc.add_rules(["Bash(npm test)"], "allow", "session")
    state = workspace.permission_state(pc, "claude-x")
    assert state["mode"] == "acceptEdits" and state["model"] == "claude-x"
    again = PermissionContext(str(workdir))
    workspace.restore_permission_state(again, state, keep_mode=False)
    assert again.mode == "acceptEdits" and again.to_json() == pc.to_json()
    explicit = PermissionContext(str(workdir), mode="plan")
    workspace.restore_permission_state(explicit, state, keep_mode=True)
    assert explicit.mode == "plan" and explicit.to_json()["session_rules"] == pc.to_json()["session_rules"]


def _read(path, id_, **inp):
    call = assistant_entry([{"type": "tool_use", "id": id_, "name": "Read", "input": {"file_path": path, **inp}}])
    result = user_entry([tool_result_block(id_, "…")], toolUseResult={"type": "text", "file": {"content": "x\n"}})
    return [call, result]


def test_full_reads_are_restored_partial_reads_and_later_writes_are_not(workdir):
    a, b, c = (str(workdir / n) for n in ("a.txt", "b.txt", "c.txt"))
    edit = assistant_entry([{"type": "tool_use", "id": "e1", "name": "Edit", "input": {"file_path": c}}])
    messages = [*_read(a, "r1"), *_read(b, "r2", limit=5), *_read(c, "r3"), edit,
                user_entry([tool_result_block("e1", "ok")])]
    state = ReadFileState()
    workspace.restore_read_state(messages, str(workdir), state)
    assert a in state and b not in state and c not in state
    entry = state.get(a)
    assert entry is not None and entry.content == "x\n" and entry.offset == 1 and entry.limit is None
