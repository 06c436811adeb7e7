"""The change log of a session, built from its events — no widgets: ``ChangeLog`` turns the permission
and tool events into ``Change``s (one per tool call that touches a file), and ``DiffPanel`` (panel.py)
shows them.

A change comes from a tool's structured patch — from ``PermissionRequested`` before the write (status
*pending*, the proposed patch kept) and from ``ToolCallFinished.data`` after it (*applied* or *failed*,
the written patch); a denied proposal stays as *rejected*, a reverted one as *reverted*. A partly
allowed change keeps the proposed patch and the original line ranges of the result's ``rejectedHunks``
of ``totalHunks``, so ``Change.review()`` can mark each proposed hunk accepted or rejected.

A revert or redo is a fact of the transcript (a ``change-revert`` line, ``session.changes``): after a resume
``apply_records`` replays them in file order, so a reverted change shows *reverted* again and keeps the record its
Redo needs (``Change.undo``). A record that names no change of the log, or another file, is ignored.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from desktop_agent.core.messages import CHANGE_RECORD
from desktop_agent.core.permission import PermissionRequest
from desktop_agent.ui import highlight
from desktop_agent.util.diff import hunk_old_range

INLINE_LINES = 300  # a change of at most this many diff lines opens in place; a bigger one starts folded


ChangeStatus = Literal["pending", "applied", "rejected", "failed", "reverted"]
PENDING: ChangeStatus = "pending"
APPLIED: ChangeStatus = "applied"
REJECTED: ChangeStatus = "rejected"
FAILED: ChangeStatus = "failed"
REVERTED: ChangeStatus = "reverted"
FILE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")


@dataclass
class Change:
    id: int
    tool_use_id: str
    tool: str
    turn: int
    file_path: str
    hunks: list[dict[str, Any]]
    status: ChangeStatus = PENDING
    created: float = field(default_factory=time.time)
    collapsed: bool = False
    user_modified: bool = False
    note: str = ""
    note_is_error: bool = True
    proposed: list[dict[str, Any]] | None = None  # the permission request's patch (every hunk)
    rejected: list[tuple[int, int]] = field(default_factory=list)  # original line ranges, from the result
    total_hunks: int | None = None
    data: dict[str, Any] | None = None  # the tool's result data (revert, copy)
    new_file: bool = False
    busy: bool = False  # a revert or redo is running
    undo: dict[str, Any] | None = None  # the record of the revert that made it *reverted* (what Redo checks)

    def review(self) -> tuple[list[dict[str, Any]], list[bool] | None]:
        """The hunks to show and, for a partly allowed change, which were accepted: the proposed
        patch with its rejected hunks (matched by original line range) when the request was seen,
        else the written hunks (``None``: no decisions to show)."""
        if self.rejected and self.proposed:
            wanted = {(int(a), int(b)) for a, b in self.rejected}
            flags = [hunk_old_range(h) not in wanted for h in self.proposed]
            if flags.count(False) == len(wanted):
                return self.proposed, flags
        return self.hunks, None

    @property
    def line_count(self) -> int:
        return highlight.diff_line_count(self.review()[0])

    @property
    def big(self) -> bool:
        return self.line_count > INLINE_LINES

    @property
    def counts(self) -> tuple[int, int]:
        # Cached per hunk list: the panel re-renders on every event of the turn, and counting a
        # 20,000-line change took ~5 ms each time.
        cached = self.__dict__.get("_counts")
        if cached is None or cached[0] is not self.hunks:
            cached = (self.hunks, highlight.count_changes(self.hunks))
            self.__dict__["_counts"] = cached
        return cached[1]


def hunks_from_data(data: dict[str, Any]) -> list[dict[str, Any]]:
    patch = data.get("structuredPatch", data.get("structured_patch"))
    hunks = highlight.normalize_hunks(patch)
    if not hunks and data.get("type") == "create" and data.get("content") is not None:
        hunks = highlight.hunks_for_new_file(str(data.get("content")))
    return hunks


def hunks_from_request(request: PermissionRequest) -> list[dict[str, Any]]:
    hunks = highlight.normalize_hunks(request.structured_patch)
    if not hunks and request.tool_name == "Write" and "content" in request.input and not request.original_file:
        hunks = highlight.hunks_for_new_file(str(request.input["content"]))
    return hunks


def is_new_request(request: PermissionRequest) -> bool:
    if request.tool_name == "Write":
        return request.original_file is None
    return request.tool_name == "Edit" and request.input.get("old_string") == "" and not request.original_file


def is_new_data(tool: str, data: dict[str, Any] | None) -> bool:
    if not data:
        return False
    if tool == "Write":
        return data.get("type") == "create" or ("originalFile" in data and data.get("originalFile") is None)
    return tool == "Edit" and data.get("oldString") == "" and data.get("originalFile") in ("", None)


class ChangeLog:
    """Every change of the session in arrival order, by tool call; fed the controller's events."""

    def __init__(self) -> None:
        self.changes: list[Change] = []
        self.by_tool: dict[str, Change] = {}
        self._next = 1

    def on_permission_requested(self, request: PermissionRequest, turn: int) -> Change | None:
        """A proposed file change: a *pending* change with the proposed patch (None: not a file change)."""
        path = request.file_path or request.input.get("file_path")
        if request.tool_name not in FILE_TOOLS or not path:
            return None
        change = self.by_tool.get(request.tool_use_id)
        hunks = hunks_from_request(request)
        if change is None:
            change = self._add(request.tool_use_id, request.tool_name, turn, str(path), hunks, PENDING)
        else:
            change.hunks, change.status = hunks, PENDING
            change.collapsed = change.big
        change.proposed = hunks
        change.new_file = is_new_request(request)
        return change

    def on_permission_resolved(self, tool_use_id: str, allowed: bool, user_modified: bool = False) -> Change | None:
        change = self.by_tool.get(tool_use_id)
        if change is None:
            return None
        if not allowed:
            change.status = REJECTED
        change.user_modified = change.user_modified or user_modified
        return change

    def on_tool_finished(self, tool_use_id: str, name: str, is_error: bool, data: dict[str, Any] | None,
                         turn: int, content: Any = None) -> Change | None:
        """The written patch (*applied*) or the error (*failed*); a file tool's result without a
        request (resumed, or allowed by a rule) is a new *applied* change. None: not a file change."""
        change = self.by_tool.get(tool_use_id)
        if change is None and (name not in FILE_TOOLS or not data or is_error):
            return None
        if change is None:
            assert data is not None
            path = data.get("filePath") or data.get("file_path") or ""
            change = self._add(tool_use_id, name, turn, str(path), hunks_from_data(data), APPLIED)
            self._take_data(change, data)
            change.collapsed = change.big
        elif change.status == REJECTED:
            pass
        elif is_error:
            change.status = FAILED
            if isinstance(content, str):
                change.note = content.replace("<tool_use_error>", "").replace("</tool_use_error>", "").strip()
        else:
            change.status = APPLIED
            if data:
                hunks = hunks_from_data(data)
                if hunks:
                    change.hunks = hunks
                change.user_modified = bool(data.get("userModified", change.user_modified))
                self._take_data(change, data)
        return change

    @staticmethod
    def _take_data(change: Change, data: dict[str, Any]) -> None:
        change.data = data
        ranges = data.get("rejectedHunks") or []
        try:
            change.rejected = [(int(a), int(b)) for a, b in ranges]
        except (TypeError, ValueError):
            change.rejected = []
        total = data.get("totalHunks")
        change.total_hunks = int(total) if isinstance(total, int) else (len(change.rejected) or None)
        change.new_file = change.new_file or is_new_data(change.tool, data)

    def _add(self, tool_use_id: str, tool: str, turn: int, path: str, hunks: list[dict[str, Any]],
             status: ChangeStatus) -> Change:
        # A big change starts folded ("▸ big.py +500 −500"), as GitHub does with large diffs: the
        # dialog shows it while it is reviewed; opened, it shows in full on the panel's change page.
        change = Change(self._next, tool_use_id, tool, turn, path, hunks, status,
                        collapsed=highlight.diff_line_count(hunks) > INLINE_LINES)
        self._next += 1
        self.changes.append(change)
        self.by_tool[tool_use_id] = change
        return change

    def apply_record(self, record: dict[str, Any], cwd: str | None = None) -> Change | None:
        """A revert or redo from the transcript: the change it names becomes *reverted* (keeping the record for
        Redo) or *applied* again. None (nothing changed) for a record of no change here, or of another file."""
        if not isinstance(record, dict) or record.get("type") != CHANGE_RECORD:
            return None
        change = self.by_tool.get(str(record.get("toolUseId")))
        path = record.get("filePath")
        if change is None or not isinstance(path, str) or change.status not in (APPLIED, REVERTED):
            return None
        mine = change.file_path if os.path.isabs(change.file_path) or not cwd else os.path.join(cwd, change.file_path)
        if os.path.normpath(mine) != os.path.normpath(path):
            return None
        if record.get("action") == "revert":
            change.status, change.undo = REVERTED, record
        elif record.get("action") == "redo":
            change.status, change.undo = APPLIED, None
        else:
            return None
        return change

    def apply_records(self, entries: list[dict[str, Any]], cwd: str | None = None) -> int:
        """Replay every change record of ``entries`` in order; returns how many applied."""
        return sum(1 for e in entries if self.apply_record(e, cwd) is not None)

    def clear(self) -> None:
        self.changes.clear()
        self.by_tool.clear()

    def change_by_id(self, cid: int) -> Change | None:
        for change in self.changes:
            if change.id == cid:
                return change
        return None

    def live_counts(self) -> tuple[int, int]:
        """Lines added and removed by the changes that are (or may be) on disk: applied and pending."""
        live = [ch for ch in self.changes if ch.status in (APPLIED, PENDING)]
        return sum(ch.counts[0] for ch in live), sum(ch.counts[1] for ch in live)

    def by_turn(self) -> list[tuple[int, list[Change]]]:
        """The changes grouped by turn, the newest turn first and the newest change first in each."""
        turns: dict[int, list[Change]] = {}
        for change in self.changes:
            turns.setdefault(change.turn, []).append(change)
        return [(turn, list(reversed(turns[turn]))) for turn in sorted(turns, reverse=True)]


__all__ = ["APPLIED", "FAILED", "FILE_TOOLS", "INLINE_LINES", "PENDING", "REJECTED", "REVERTED", "Change",
           "ChangeLog", "ChangeStatus", "hunks_from_data", "hunks_from_request"]
