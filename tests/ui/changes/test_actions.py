"""Revert and Redo on disk (``ui.changes.actions``), with real files: a redo writes back exactly the bytes the change
had left (rebuilt from the result data and checked against the revert's hash), keeps encoding, line endings and
mode, and writes nothing when the file is not as the revert left it; the log replays records only onto the change
and file they name."""

from __future__ import annotations

import os

import pytest

from desktop_agent.core.messages import change_record_entry
from desktop_agent.util.diff import apply_hunks, structured_patch
from desktop_agent.ui.changes.actions import (
    RevertRefused, change_record, redo_file, revert_file, revert_plan,
)
from desktop_agent.ui.changes.log import APPLIED, REVERTED, ChangeLog, hunks_from_data


@pytest.fixture(autouse=True)
def _app(qapp):
    yield


def _edit(path, original: str, updated: str, old: str, new: str, **extra) -> dict:
    return {"filePath": str(path), "oldString": old, "newString": new, "originalFile": original,
            "structuredPatch": structured_patch(original, updated), "userModified": False, "replaceAll": False,
            **extra}


def _revert_then_redo(tool: str, data: dict, path) -> tuple[dict, dict]:
    hunks = hunks_from_data(data)
    plan = revert_plan(tool, data, hunks, str(path.parent))
    assert not isinstance(plan, str)
    done = revert_file(plan)
    record = change_record("revert", tool, "toolu_x", plan.path, (1, 1), hunks, done)
    again = redo_file(plan, record)
    return record, change_record("redo", tool, "toolu_x", plan.path, (1, 1), hunks, again)


@pytest.mark.parametrize("with_strings", [True, False])
def test_redo_of_an_edit_at_a_last_line_without_newline(tmp_path, with_strings):
    path = tmp_path / "a.txt"
    original, updated = "one\ntwo", "one\nTWO"  # no newline at the end: the hunk lines alone cannot tell
    path.write_bytes(updated.encode())
    data = _edit(path, original, updated, "two", "TWO")
    if not with_strings:  # rebuilt from the written hunks alone; the recorded hash picks the right ending
        del data["oldString"], data["newString"]
    record, redo = _revert_then_redo("Edit", data, path)
    assert record["outcome"] == "restored" and redo["outcome"] == "reapplied"
    assert path.read_bytes() == b"one\nTWO"
    assert redo["hashAfter"] == record["hashBefore"] and redo["hashBefore"] == record["hashAfter"]


def test_redo_of_a_partly_allowed_edit_rebuilds_only_the_written_hunks(tmp_path):
    path = tmp_path / "lines.txt"
    original = "".join(f"line {i}\n" for i in range(1, 41))
    proposed = original.replace("line 3\n", "line 3 changed\n").replace("line 30\n", "line 30 changed\n")
    hunks = structured_patch(original, proposed)
    written = apply_hunks(original, proposed, hunks, [True, False])  # the person rejected the second hunk
    path.write_bytes(written.replace("\n", "\r\n").encode("utf-16-le").join([b"\xff\xfe", b""]))
    data = _edit(path, original, written, "line 3\nline 30\n", "x", rejectedHunks=[[27, 33]], totalHunks=2)
    record, redo = _revert_then_redo("Edit", data, path)
    assert (record["encoding"], record["lineEnding"]) == ("utf-16le", "CRLF")
    assert path.read_bytes() == b"\xff\xfe" + written.replace("\n", "\r\n").encode("utf-16-le")


def test_redo_recreates_a_file_the_change_created_with_its_mode(tmp_path):
    path = tmp_path / "tool.sh"
    path.write_bytes(b"#!/bin/sh\necho hi\n")
    os.chmod(path, 0o750)
    data = {"type": "create", "filePath": str(path), "content": "#!/bin/sh\necho hi\n", "originalFile": None,
            "structuredPatch": structured_patch("", "#!/bin/sh\necho hi\n")}
    record, redo = _revert_then_redo("Write", data, path)
    assert record["outcome"] == "deleted" and record["hashAfter"] is None and record["mode"] == 0o750
    assert redo["outcome"] == "recreated"
    assert path.read_bytes() == b"#!/bin/sh\necho hi\n" and os.stat(path).st_mode & 0o777 == 0o750


def test_redo_writes_nothing_when_the_file_is_not_as_the_revert_left_it(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("new\n")
    data = {"type": "update", "filePath": str(path), "content": "new\n", "originalFile": "old\n",
            "structuredPatch": structured_patch("old\n", "new\n")}
    hunks = hunks_from_data(data)
    plan = revert_plan("Write", data, hunks, str(tmp_path))
    record = change_record("revert", "Write", "toolu_w", plan.path, (1, 1), hunks, revert_file(plan))
    assert path.read_text() == "old\n"
    path.write_text("old\nmine\n")
    with pytest.raises(RevertRefused, match="changed since the revert"):
        redo_file(plan, record)
    assert path.read_text() == "old\nmine\n"
    os.remove(path)
    with pytest.raises(RevertRefused, match="no longer exists"):
        redo_file(plan, record)
    assert not path.exists()
    path.write_text("old\n")  # as the revert left it, but the record was tampered with: nothing to match
    with pytest.raises(RevertRefused, match="cannot be rebuilt"):
        redo_file(plan, {**record, "hashBefore": "sha256:" + "0" * 64})
    with pytest.raises(RevertRefused, match="incomplete"):
        redo_file(plan, {**record, "encoding": "latin-1"})
    assert path.read_text() == "old\n"


def test_redo_of_a_deleted_file_refuses_when_it_exists_again(tmp_path):
    path = tmp_path / "n.txt"
    path.write_text("x\n")
    data = {"type": "create", "filePath": str(path), "content": "x\n", "originalFile": None,
            "structuredPatch": structured_patch("", "x\n")}
    hunks = hunks_from_data(data)
    plan = revert_plan("Write", data, hunks, str(tmp_path))
    record = change_record("revert", "Write", "toolu_n", plan.path, (1, 0), hunks, revert_file(plan))
    path.write_text("someone else's\n")
    with pytest.raises(RevertRefused, match="exists again"):
        redo_file(plan, record)
    assert path.read_text() == "someone else's\n"


def test_the_log_replays_records_only_onto_their_change_and_file(tmp_path):
    log = ChangeLog()
    path = tmp_path / "a.txt"
    log.on_tool_finished("toolu_a", "Edit", False, _edit(path, "a\n", "b\n", "a", "b"), 1)
    fields = dict(tool="Edit", added=1, removed=1, outcome="restored", hashBefore="sha256:1", hashAfter="sha256:2")
    other_file = change_record_entry("revert", toolUseId="toolu_a", filePath=str(tmp_path / "b.txt"), **fields)
    other_tool = change_record_entry("revert", toolUseId="toolu_zz", filePath=str(path), **fields)
    assert log.apply_records([other_file, other_tool], str(tmp_path)) == 0
    change = log.by_tool["toolu_a"]
    assert change.status == APPLIED and change.undo is None
    revert = change_record_entry("revert", toolUseId="toolu_a", filePath=str(path), **fields)
    assert log.apply_records([revert], str(tmp_path)) == 1
    assert change.status == REVERTED and change.undo is revert
    redo = change_record_entry("redo", toolUseId="toolu_a", filePath=str(path), **{**fields, "outcome": "reapplied"})
    log.apply_records([redo], str(tmp_path))
    assert change.status == APPLIED and change.undo is None
