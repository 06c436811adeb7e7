"""The change log without widgets (ui/changes/log.py): permission and tool events become changes with
the right status, patch, new-file mark and per-hunk review; no QApplication is created."""

from __future__ import annotations

from desktop_agent.core.permission import PermissionRequest
from desktop_agent.ui.changes.log import (
    APPLIED, FAILED, INLINE_LINES, PENDING, REJECTED, ChangeLog, hunks_from_data,
)
from desktop_agent.util.diff import hunk_old_range, structured_patch

OLD = "".join(f"line {i}\n" for i in range(1, 41))
NEW = OLD.replace("line 3\n", "LINE 3\n").replace("line 20\n", "LINE 20\n").replace("line 37\n", "LINE 37\n")


def _request(tool_use_id: str = "t1", tool: str = "Edit", original: str | None = OLD, new: str = NEW,
             **inp: object) -> PermissionRequest:
    patch = structured_patch(original or "", new)
    return PermissionRequest(tool_name=tool, tool_use_id=tool_use_id, request_id="r-" + tool_use_id,
                             input={"file_path": "/p/a.py", **inp}, cwd="/p", file_path="/p/a.py",
                             structured_patch=patch, original_file=original)


def _data(new: str = NEW, **extra: object) -> dict:
    return {"filePath": "/p/a.py", "structuredPatch": structured_patch(OLD, new), "originalFile": OLD, **extra}


def test_a_request_is_pending_then_applied_with_the_written_patch():
    log = ChangeLog()
    change = log.on_permission_requested(_request(old_string="line 3", new_string="LINE 3"), turn=1)
    assert change is not None and change.status == PENDING and len(change.proposed or []) == 3
    assert log.live_counts() == (3, 3)
    assert log.on_permission_resolved("t1", allowed=True) is change and change.status == PENDING
    done = log.on_tool_finished("t1", "Edit", False, _data(), turn=1)
    assert done is change and change.status == APPLIED and change.data is not None
    assert change.counts == (3, 3) and not change.new_file and log.change_by_id(change.id) is change


def test_denied_stays_rejected_and_a_failure_keeps_its_message():
    log = ChangeLog()
    log.on_permission_requested(_request("t1"), turn=1)
    log.on_permission_resolved("t1", allowed=False)
    log.on_tool_finished("t1", "Edit", True, None, turn=1, content="denied")
    assert log.by_tool["t1"].status == REJECTED
    log.on_permission_requested(_request("t2"), turn=1)
    error = "<tool_use_error>File has been modified</tool_use_error>"
    log.on_tool_finished("t2", "Edit", True, None, turn=1, content=error)
    assert log.by_tool["t2"].status == FAILED and log.by_tool["t2"].note == "File has been modified"
    assert log.live_counts() == (0, 0)


def test_not_a_file_change_is_not_logged():
    log = ChangeLog()
    bash = PermissionRequest(tool_name="Bash", tool_use_id="b", request_id="rb", input={"command": "ls"}, cwd="/p")
    assert log.on_permission_requested(bash, turn=1) is None
    assert log.on_tool_finished("b", "Bash", False, {"stdout": ""}, turn=1) is None
    assert log.on_tool_finished("e", "Edit", True, _data(), turn=1) is None  # an error without a request
    assert log.on_permission_resolved("nope", allowed=True) is None and log.changes == []


def test_a_result_without_a_request_is_an_applied_change_and_a_new_file_is_marked():
    log = ChangeLog()
    write = {"type": "create", "filePath": "/p/new.py", "content": "a\nb\n", "structuredPatch": [],
             "originalFile": None}
    change = log.on_tool_finished("w", "Write", False, write, turn=2)
    assert change is not None and change.status == APPLIED and change.new_file and change.counts == (2, 0)
    new_req = _request("w2", tool="Write", original=None, new="x\n", content="x\n")
    assert log.on_permission_requested(new_req, turn=3).new_file  # type: ignore[union-attr]


def test_partly_allowed_review_marks_the_rejected_hunks():
    log = ChangeLog()
    change = log.on_permission_requested(_request(), turn=1)
    assert change is not None
    rejected = hunk_old_range((change.proposed or [])[1])
    log.on_tool_finished("t1", "Edit", False, _data(rejectedHunks=[list(rejected)], totalHunks=3), turn=1)
    hunks, accepted = change.review()
    assert hunks is change.proposed and accepted == [True, False, True]
    assert change.rejected == [rejected] and change.total_hunks == 3


def test_after_a_resume_the_written_hunks_are_shown_without_decisions():
    log = ChangeLog()
    change = log.on_tool_finished("t1", "Edit", False, _data(rejectedHunks=[[20, 20]], totalHunks=3), turn=1)
    assert change is not None and change.review() == (change.hunks, None) and change.rejected == [(20, 20)]


def test_big_changes_start_folded_and_turns_are_newest_first():
    log = ChangeLog()
    big_new = "".join(f"x{i}\n" for i in range(INLINE_LINES + 10))
    big = log.on_tool_finished("big", "Write", False, {"type": "create", "filePath": "/p/big.py",
                                                        "content": big_new, "structuredPatch": []}, turn=1)
    small = log.on_tool_finished("s", "Edit", False, _data(), turn=1)
    later = log.on_tool_finished("l", "Edit", False, _data(), turn=2)
    assert big is not None and big.big and big.collapsed and small is not None and not small.collapsed
    assert [(t, [c.tool_use_id for c in group]) for t, group in log.by_turn()] == [(2, ["l"]), (1, ["s", "big"])]
    log.clear()
    assert log.changes == [] and log.by_tool == {} and later is not None


def test_hunks_from_data_reads_either_spelling():
    patch = structured_patch(OLD, NEW)
    assert hunks_from_data({"structured_patch": patch}) == hunks_from_data({"structuredPatch": patch})
