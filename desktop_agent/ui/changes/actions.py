"""The changes panel's actions on one change: open in editor, copy patch, revert this change, redo a revert.

Owns what each action means, without widgets: ``unified_patch`` (the change as unified-diff text, git
style headers, ``/dev/null`` for a new file), ``revert_plan`` (whether a change can be reverted and
what reverting writes), ``revert_file`` (the worker-thread part: under the path's lock, re-read the
file, refuse when it is not what the change left — compared with the change's resulting content, or,
for an Edit whose result data holds no whole file, by diffing the original against what is on disk —
then write the original back atomically (``fileio.write_bytes_atomic``: permission bits kept) in the
file's encoding and line endings, or delete a file the change created), ``redo_file`` (re-apply a
reverted change: only when the file's bytes still hash as the revert left them, writing back bytes that
hash as the change had left them, rebuilt from the result data) — these two only when the session's checkpoint
store holds no snapshot of the call; otherwise the revert and the redo are the checkpoint restore's
(``app.rewind``), and ``file_state`` / ``restored_change`` read what it did for the record — and ``change_record`` (the
``change-revert`` transcript line of either, ``session.changes``: never sent to the API; the session
tells the model about it once, with the next prompt). ``open_in_editor`` goes through
``QDesktopServices.openUrl``.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QCoreApplication, QUrl
from PySide6.QtGui import QDesktopServices

from desktop_agent.core.messages import change_record_entry
from desktop_agent.util import fileio
from desktop_agent.util.diff import structured_patch
from desktop_agent.ui import highlight

REVERTIBLE_TOOLS = ("Edit", "Write", "MultiEdit")


def _tr_changed() -> str:
    first = QCoreApplication.translate("ChangeActions", "{0} changed since this change (by you or a later change);")
    then = QCoreApplication.translate("ChangeActions", "nothing was reverted. Revert the later changes first.")
    return first + " " + then


class RevertRefused(Exception):
    """Reverting would lose work (the file changed since), or cannot be done; the message says why."""


def absolute_path(file_path: str, cwd: str | None) -> str:
    if os.path.isabs(file_path) or not cwd:
        return file_path
    return os.path.normpath(os.path.join(cwd, file_path))


def unified_patch(hunks: list[dict[str, Any]], rel: str, new_file: bool = False) -> str:
    """The hunks as a unified diff ``git apply`` takes: ``--- a/rel`` / ``+++ b/rel`` (``/dev/null``
    for a new file), one ``@@`` header per hunk, a newline at the end."""
    rel = rel.replace(os.sep, "/")
    out = ["--- /dev/null" if new_file else f"--- a/{rel}", f"+++ b/{rel}"]
    for h in hunks:
        old_start = 0 if new_file else h["oldStart"]
        out.append(f"@@ -{old_start},{h['oldLines']} +{h['newStart']},{h['newLines']} @@")
        out.extend(h["lines"])
    return "\n".join(out) + "\n"


def open_in_editor(path: str) -> bool:
    """Open ``path`` with the desktop's handler for it (the user's editor)."""
    return bool(QDesktopServices.openUrl(QUrl.fromLocalFile(path)))


@dataclass(frozen=True)
class RevertPlan:
    path: str  # absolute
    original: str | None  # the file before the change (LF line breaks); None: the change created it
    result: str | None  # the file as the change left it (LF), when the result data holds it
    hunks: tuple[tuple[int, int, int, int, tuple[str, ...]], ...]  # the written patch, to compare by diff
    edit: tuple[str, str, bool] | None = None  # an Edit's (old_string, new_string, replace_all): to redo it


@dataclass(frozen=True)
class Undone:
    """What a revert or redo did on disk, for its transcript record: ``outcome`` (``restored``/``deleted``,
    ``reapplied``/``recreated``) and the file's bytes' sha256 before and after (None: no file), with the
    encoding, line ending and permission bits a redo needs to rebuild the same bytes."""

    outcome: str
    hash_before: str | None
    hash_after: str | None
    encoding: str
    line_ending: str
    mode: int


def _hunk_key(hunks: list[dict[str, Any]]) -> tuple[tuple[int, int, int, int, tuple[str, ...]], ...]:
    return tuple((h["oldStart"], h["oldLines"], h["newStart"], h["newLines"], tuple(h["lines"]))
                 for h in highlight.normalize_hunks(hunks))


def revert_blocker(tool: str, data: dict[str, Any] | None) -> str | None:
    """Why a finished change cannot be reverted (a sentence), or None; cheap (the panel asks on
    every render)."""
    if tool not in REVERTIBLE_TOOLS:
        return QCoreApplication.translate("ChangeActions", "A {0} change cannot be reverted from here.").format(tool)
    if not data:
        return QCoreApplication.translate("ChangeActions", "This change has no recorded result to revert.")
    if not (data.get("filePath") or data.get("file_path")):
        return QCoreApplication.translate("ChangeActions", "This change has no file path.")
    if tool == "Write":
        if not isinstance(data.get("content"), str):
            return QCoreApplication.translate("ChangeActions", "The transcript does not hold what this change wrote.")
    elif not isinstance(data.get("originalFile"), str):
        return QCoreApplication.translate("ChangeActions",
                                          "The transcript does not hold the file as it was before this change.")
    return None


def revert_plan(tool: str, data: dict[str, Any] | None, written_hunks: list[dict[str, Any]],
                cwd: str | None) -> RevertPlan | str:
    """What reverting a finished change writes, or why it cannot be reverted (a sentence)."""
    blocker = revert_blocker(tool, data)
    if blocker is not None or data is None:
        return blocker or ""
    path = absolute_path(str(data.get("filePath") or data.get("file_path")), cwd)
    original = data.get("originalFile")
    if tool == "Write":
        created = data.get("type") == "create" or original is None
        return RevertPlan(path, None if created else fileio.normalize_newlines(str(original)),
                          fileio.normalize_newlines(str(data["content"])), _hunk_key(written_hunks))
    created = original == "" and data.get("oldString") == ""
    old, new = data.get("oldString"), data.get("newString")
    edit = (fileio.normalize_newlines(old), fileio.normalize_newlines(new), bool(data.get("replaceAll"))) \
        if isinstance(old, str) and isinstance(new, str) else None
    return RevertPlan(path, None if created else fileio.normalize_newlines(str(original)), None,
                      _hunk_key(written_hunks), edit)


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _encode(text: str, encoding: str, ending: str) -> bytes:
    if ending == "CRLF":
        text = fileio.normalize_newlines(text).replace("\n", "\r\n")
    return fileio.encode_text(text, encoding)


def _read(path: str, name: str, redo: bool = False) -> tuple[bytes, os.stat_result]:
    """The file's bytes and status, or ``RevertRefused`` saying why there is nothing to work on."""
    try:
        with open(path, "rb") as fh:
            return fh.read(), os.fstat(fh.fileno())
    except FileNotFoundError:
        text = QCoreApplication.translate("ChangeActions", "{0} no longer exists; nothing was re-applied.") \
            if redo else QCoreApplication.translate("ChangeActions", "{0} no longer exists; nothing was reverted.")
        raise RevertRefused(text.format(name)) from None
    except IsADirectoryError:
        text = QCoreApplication.translate("ChangeActions", "{0} is a directory now; nothing was re-applied.") \
            if redo else QCoreApplication.translate("ChangeActions", "{0} is a directory now; nothing was reverted.")
        raise RevertRefused(text.format(name)) from None


def revert_file(plan: RevertPlan) -> Undone:
    """Undo one change on disk (a worker thread: file I/O and, for an Edit, a diff). Raises
    ``RevertRefused`` when the file is not as the change left it (nothing is written then)."""
    name = os.path.basename(plan.path)
    with fileio.path_lock(plan.path):
        data, st = _read(plan.path, name)
        text, encoding = fileio.decode_bytes(data)
        ending = fileio.detect_line_ending(text)
        current = fileio.normalize_newlines(text)
        if plan.result is not None:
            same = current == plan.result
        else:
            same = _hunk_key(structured_patch(plan.original or "", current)) == plan.hunks
        if not same:
            raise RevertRefused(_tr_changed().format(name))
        mode = stat.S_IMODE(st.st_mode) & 0o777
        if plan.original is None:
            os.remove(plan.path)
            return Undone("deleted", _sha(data), None, encoding, ending, mode)
        out = _encode(plan.original, encoding, ending)
        fileio.write_bytes_atomic(plan.path, out)
        return Undone("restored", _sha(data), _sha(out), encoding, ending, mode)


def _apply_written(original: str, hunks: tuple[tuple[int, int, int, int, tuple[str, ...]], ...]) -> list[str] | None:
    """``original``'s lines with the written hunks applied, or None when they do not fit it."""
    old = original.split("\n")
    if original.endswith("\n"):
        old.pop()
    if original == "":
        old = []
    out: list[str] = []
    pos = offset = 0
    for old_start, old_lines, new_start, new_lines, lines in hunks:
        at = old_start - 1 if old_lines > 0 else new_start - 1 - offset
        if at < pos or at > len(old):
            return None
        out.extend(old[pos:at])
        for line in lines:
            sign, body = line[:1], line[1:]
            if sign == "+":
                out.append(body)
            elif sign in (" ", "-"):
                if at >= len(old) or old[at] != body:
                    return None
                if sign == " ":
                    out.append(body)
                at += 1
        pos = at
        offset += new_lines - old_lines
    out.extend(old[pos:])
    return out


def _redo_candidates(plan: RevertPlan) -> list[str]:
    """What the change wrote (LF), rebuilt from its result data: the one whose bytes hash as recorded wins."""
    original = plan.original or ""
    out: list[str] = []
    if plan.result is not None:
        out.append(plan.result)
    if plan.edit is not None:
        old, new, replace_all = plan.edit
        if old == "" and original == "":
            out.append(new)
        elif old and old in original:
            out.append(original.replace(old, new, -1 if replace_all else 1))
    lines = _apply_written(original, plan.hunks)
    if lines is not None:
        body = "\n".join(lines)
        out.extend([body + "\n", body] if lines else [""])
    return out


def redo_file(plan: RevertPlan, record: dict[str, Any]) -> Undone:
    """Re-apply a change that ``record`` (its revert) undid, on a worker thread: only when the file is still as the
    revert left it (its bytes hash as ``hashAfter``; a deleted file is still absent), writing back the exact bytes
    the change had left (they hash as ``hashBefore``), atomically, with the file's encoding, line endings and mode.
    Raises ``RevertRefused`` otherwise; nothing is written then."""
    name = os.path.basename(plan.path)
    encoding, ending = str(record.get("encoding")), str(record.get("lineEnding"))
    if encoding not in ("utf-8", "utf-8-sig", "utf-16le") or ending not in ("LF", "CRLF") \
            or not isinstance(record.get("hashBefore"), str):
        raise RevertRefused(QCoreApplication.translate(
            "ChangeActions", "The transcript's record of the revert is incomplete; nothing was re-applied."))
    with fileio.path_lock(plan.path):
        if record.get("outcome") == "deleted":
            if os.path.lexists(plan.path):
                raise RevertRefused(QCoreApplication.translate(
                    "ChangeActions", "{0} exists again since the revert (by you or a later change); "
                                     "nothing was re-applied.").format(name))
            before: str | None = None
        else:
            data, _ = _read(plan.path, name, redo=True)
            before = _sha(data)
            if before != record.get("hashAfter"):
                raise RevertRefused(QCoreApplication.translate(
                    "ChangeActions", "{0} changed since the revert (by you or a later change); "
                                     "nothing was re-applied.").format(name))
        for text in _redo_candidates(plan):
            out = _encode(text, encoding, ending)
            if _sha(out) == record["hashBefore"]:
                break
        else:
            raise RevertRefused(QCoreApplication.translate(
                "ChangeActions", "What this change wrote to {0} cannot be rebuilt from the transcript; "
                                 "nothing was re-applied.").format(name))
        if before is None:
            mode = record.get("mode")
            fileio.write_bytes_atomic(plan.path, out, mode=mode & 0o777 if isinstance(mode, int) else None)
            return Undone("recreated", None, _sha(out), encoding, ending, int(mode or 0))
        fileio.write_bytes_atomic(plan.path, out)
        return Undone("reapplied", before, _sha(out), encoding, ending, int(record.get("mode") or 0))


@dataclass(frozen=True)
class FileState:
    """A file's bytes' sha256, encoding, line ending and permission bits as a restore found or left it (None: no
    file there)."""

    sha: str
    encoding: str
    line_ending: str
    mode: int


def file_state(path: str) -> FileState | None:
    """The file at ``path`` now (a worker thread), or None when there is none."""
    try:
        with open(path, "rb") as fh:
            data, st = fh.read(), os.fstat(fh.fileno())
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    text, encoding = fileio.decode_bytes(data)
    return FileState(_sha(data), encoding, fileio.detect_line_ending(text), stat.S_IMODE(st.st_mode) & 0o777)


def restored_change(action: str, path: str, answer: dict[str, Any], before: FileState | None,
                    after: FileState | None) -> Undone:
    """What a revert or redo that went through the checkpoint restore did (the host's ``answer``: ``files``,
    ``conflicts``, ``skippedLinks``, paths relative to the folder), or ``RevertRefused`` when it left the file as
    it was: the person changed it since in a way that cannot be merged (a conflict), or a link is in the way."""
    name = os.path.basename(path)
    conflicts = [str(c) for c in answer.get("conflicts") or []]
    if conflicts:
        if action == "revert":
            raise RevertRefused(_tr_changed().format(name))
        raise RevertRefused(QCoreApplication.translate(
            "ChangeActions", "{0} changed since the revert (by you or a later change); "
                             "nothing was re-applied.").format(name))
    if not answer.get("files") and int(answer.get("skippedLinks") or 0):
        raise RevertRefused(QCoreApplication.translate(
            "ChangeActions", "{0} is behind a link or is no longer a plain file; nothing was written.").format(name))
    state = after or before
    encoding = state.encoding if state else "utf-8"
    ending = state.line_ending if state else "LF"
    mode = state.mode if state else 0
    if action == "revert":
        outcome = "deleted" if after is None else "restored"
    else:
        outcome = "recreated" if before is None else "reapplied"
    return Undone(outcome, before.sha if before else None, after.sha if after else None, encoding, ending, mode)


def change_ranges(hunks: list[dict[str, Any]]) -> list[list[int]]:
    """The lines of each hunk in the file the change wrote (1-based, inclusive, as its header names them)."""
    out = []
    for h in highlight.normalize_hunks(hunks):
        start, count = int(h["newStart"]), int(h["newLines"])
        out.append([max(start, 1), max(start, 1) + max(count, 1) - 1])
    return out


def change_record(action: str, tool: str, tool_use_id: str, path: str, counts: tuple[int, int],
                  hunks: list[dict[str, Any]], done: Undone) -> dict[str, Any]:
    """The transcript's record of a revert or redo (a ``change-revert`` line, ``session.changes``)."""
    return change_record_entry(action, toolUseId=tool_use_id, tool=tool, filePath=path, added=counts[0],
                               removed=counts[1], ranges=change_ranges(hunks), outcome=done.outcome,
                               hashBefore=done.hash_before, hashAfter=done.hash_after, encoding=done.encoding,
                               lineEnding=done.line_ending, mode=done.mode)


__all__ = ["FileState", "RevertPlan", "RevertRefused", "Undone", "file_state", "restored_change", "revert_blocker", "revert_plan", "revert_file", "redo_file",
           "change_record", "change_ranges", "unified_patch", "open_in_editor", "absolute_path", "REVERTIBLE_TOOLS"]
