"""Reverts and redos as facts of the session: the ``change-revert`` lines of the transcript, and the note that tells
the model about them.

The changes panel undoes a change (``action: revert``) or re-applies one it undid (``action: redo``) and hands the
session a ``core.messages.change_record_entry``: the change's ``toolUseId``, ``tool``, ``filePath`` (absolute), its
lines (``added``, ``removed``, ``ranges``: 1-based inclusive line ranges of the change in the file it wrote), what was
done (``outcome``: ``restored``/``deleted`` for a revert, ``reapplied``/``recreated`` for a redo) and the sha256 of
the file's bytes before and after (``hashBefore``/``hashAfter``, ``None`` for no file), with the file's ``encoding``,
``lineEnding`` and ``mode`` (so a redo can rebuild the exact bytes). ``TranscriptStore.record_change`` appends it as
its own line type, which the reference's loader skips (SPEC §5.3: only user/assistant/attachment/system entries
enter its message table) and which is no chain participant, so ``--resume`` of our CLI is unchanged by it.

The model is told once: ``ChangeNotes`` holds the records not told yet (thread-safe: the panel records from a
worker thread); the session's next user turn takes them as one note (``change_note``, wrapped in
``<system-reminder>`` as hook context is), an ``isMeta`` user entry written just before the prompt (so the
request's last user message starts with it) that names the records it told under ``changeRecords``. On resume
``pending_change_records`` gives back the records no such entry names: a revert made and the window closed before
the next message is still told.

A malformed record (a hand-edited transcript) is skipped: ``is_change_record`` fails closed.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Iterable

from desktop_agent.core.messages import CHANGE_RECORD, CHANGE_RECORDS_TOLD
from desktop_agent.util.diff import format_line_ranges

ACTIONS = ("revert", "redo", "review", "restore")
OUTCOMES = {"revert": ("restored", "deleted"), "redo": ("reapplied", "recreated"), "review": ("applied", "discarded"),
            "restore": ("restored", "undone")}


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _ranges(record: dict[str, Any]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for pair in record.get("ranges") or []:
        if isinstance(pair, (list, tuple)) and len(pair) == 2 and all(_is_count(v) for v in pair):
            out.append((int(pair[0]), int(pair[1])))
    return out


def is_change_record(entry: Any) -> bool:
    """A well-formed ``change-revert`` line (anything else of that type is ignored)."""
    if not isinstance(entry, dict) or entry.get("type") != CHANGE_RECORD:
        return False
    action = entry.get("action")
    if action not in ACTIONS or entry.get("outcome") not in OUTCOMES[action]:
        return False
    for key in ("recordId", "toolUseId", "filePath"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            return False
    return _is_count(entry.get("added")) and _is_count(entry.get("removed"))


def change_records(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The well-formed change records of a transcript, in file order."""
    return [e for e in entries if is_change_record(e)]


def told_record_ids(entries: Iterable[dict[str, Any]]) -> set[str]:
    told: set[str] = set()
    for e in entries:
        ids = e.get(CHANGE_RECORDS_TOLD) if e.get("type") == "user" else None
        if isinstance(ids, list):
            told.update(i for i in ids if isinstance(i, str))
    return told


def pending_change_records(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records no user entry has told the model about yet."""
    told = told_record_ids(entries)
    return [r for r in change_records(entries) if r["recordId"] not in told]


def _shown_path(path: str, cwd: str | None) -> str:
    if cwd:
        try:
            rel = os.path.relpath(path, cwd)
        except ValueError:
            return path
        if not rel.startswith(".."):
            return rel
    return path


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _review_files(items: Any) -> str:
    parts = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            continue
        path = _one_line(item["path"])
        kinds = [k for k in item.get("kinds") or [] if isinstance(k, str)]
        bits = []
        if isinstance(item.get("oldPath"), str) and "rename" in kinds:
            path = f"{_one_line(item['oldPath'])} \u2192 {path}"
            bits.append("renamed")
        if "add" in kinds:
            bits.append("new file")
        if "delete" in kinds:
            bits.append("deleted")
        if "binary" in kinds or "symlink" in kinds:
            bits.append("whole content")
        if "mode" in kinds:
            bits.append("mode")
        hunks, total = item.get("hunks"), item.get("totalHunks")
        if _is_count(hunks) and _is_count(total) and hunks:
            text = f"{hunks} of {total} hunk{'s' if total != 1 else ''}"
            ranges = _ranges(item)
            if ranges:
                text += f", {format_line_ranges(ranges)}"
            bits.append(text)
        parts.append(f"{path} ({'; '.join(bits)})" if bits else path)
    return ", ".join(parts)


def describe_review(record: dict[str, Any]) -> str:
    """A review's apply or discard as the model is told it (``session.review``)."""
    where = _one_line(str(record.get("filePath")))
    branch = _one_line(str(record.get("branch") or ""))
    folder = _one_line(str(record.get("folder") or ""))
    out = [f"The user reviewed your changes in the worktree {where}" + (f" (branch {branch})" if branch else "")]
    applied, discarded = _review_files(record.get("applied")), _review_files(record.get("discarded"))
    if applied:
        out.append(f"Applied to the folder {folder}: {applied}; only these parts were written there.")
    if discarded:
        out.append(f"Discarded from the worktree (the base's content is back there): {discarded}.")
    left = record.get("left")
    if _is_count(left) and left:
        out.append(f"{left} other change{'s stay' if left != 1 else ' stays'} in the worktree, not applied.")
    return ". ".join(out[:1]) + ". " + " ".join(out[1:])


def _names(items: Any, limit: int = 50) -> str:
    names = [_one_line(i) for i in items if isinstance(i, str)] if isinstance(items, list) else []
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def describe_restore(record: dict[str, Any]) -> str:
    """A restore of checkpointed files (``rewind_files``, the window's Rewind) or its undo, as the model is told it."""
    mid = record.get("messageId")
    if record.get("outcome") == "undone":
        what = "the state just before the previous restore (the user undid it)"
    else:
        what = f"the state just before user message {_one_line(str(mid))}" if isinstance(mid, str) and mid \
            else "an earlier checkpoint"
    text = (f"The user restored files in the working directory to {what}: {_names(record.get('files'))}. "
            "Do not rely on what you remember of these files; read them again before you edit them.")
    conflicts = _names(record.get("conflicts"))
    if conflicts:
        text += f" Left as the user had them (they changed them since): {conflicts}."
    return text


def describe(record: dict[str, Any], cwd: str | None = None) -> str:
    """One record as the model is told it."""
    if record.get("action") == "review":
        return describe_review(record)
    if record.get("action") == "restore":
        return describe_restore(record)
    # one line per record, whatever the path holds (a file name can contain a line break)
    path = _shown_path(str(record["filePath"]), cwd).replace("\r", "\\r").replace("\n", "\\n")
    tool = str(record.get("tool") or "change")
    if tool not in ("Edit", "Write", "MultiEdit", "NotebookEdit"):
        tool = "change"
    added, removed = int(record["added"]), int(record["removed"])
    lines = f"+{added} -{removed} lines" if removed else f"+{added} lines"
    ranges = _ranges(record)
    if ranges and record["outcome"] not in ("deleted", "recreated"):
        lines += f", {format_line_ranges(ranges)}"
    which = f"tool use {record['toolUseId']}; {lines}"
    outcome = record["outcome"]
    if outcome == "restored":
        return f"The user reverted your {tool} of {path} ({which}): the file is back to what it was before that change."
    if outcome == "deleted":
        return f"The user reverted your {tool} that created {path} ({which}): the file was deleted."
    if outcome == "reapplied":
        return (f"The user re-applied your {tool} of {path} ({which}) after reverting it: "
                "the file holds that change again.")
    return f"The user re-applied your {tool} that created {path} ({which}) after reverting it: the file exists again."


def change_note(records: list[dict[str, Any]], cwd: str | None = None) -> str:
    """The text of the note (the session wraps it in ``<system-reminder>``) that starts the next user message
    after reverts or redos."""
    restores = [r for r in records if r.get("action") == "restore"]
    records = [r for r in records if r.get("action") != "restore"]
    told = "\n".join(describe_restore(r) for r in restores)
    if not records:
        return told
    return _panel_note(records, cwd) + ("\n" + told if told else "")


def _panel_note(records: list[dict[str, Any]], cwd: str | None) -> str:
    body = "\n".join(f"- {describe(r, cwd)}" for r in records)
    if all(r.get("action") == "review" for r in records):
        return (f"Since your last turn the user reviewed your worktree changes:\n{body}\n"
                "Do not rely on what you remember of these files; read them again before you edit them.")
    return ("Since your last turn the user changed files from the changes panel:\n"
            f"{body}\nDo not rely on what you remember of these files; read them again before you edit them.")


class ChangeNotes:
    """The records the model has not been told about yet (added from any thread; taken by the next turn)."""

    def __init__(self, pending: Iterable[dict[str, Any]] = ()) -> None:
        self._lock = threading.Lock()
        self._pending: list[dict[str, Any]] = [r for r in pending if is_change_record(r)]

    def add(self, record: dict[str, Any]) -> None:
        if not is_change_record(record):
            raise ValueError("not a well-formed change record")
        with self._lock:
            self._pending.append(record)

    @property
    def pending(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._pending)

    def take(self, cwd: str | None = None) -> tuple[str, list[str]] | None:
        """The note for every pending record and their ids (now told), or None when there is nothing to tell."""
        with self._lock:
            records, self._pending = self._pending, []
        if not records:
            return None
        return change_note(records, cwd), [str(r["recordId"]) for r in records]


__all__ = ["ACTIONS", "OUTCOMES", "ChangeNotes", "change_note", "change_records", "describe", "is_change_record",
           "pending_change_records", "told_record_ids"]
