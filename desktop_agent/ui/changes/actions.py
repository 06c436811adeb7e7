"""The changes panel's actions on one change: open in editor, copy patch, revert this change.

Owns what each action means, without widgets: ``unified_patch`` (the change as unified-diff text, git
style headers, ``/dev/null`` for a new file), ``revert_plan`` (whether a change can be reverted and
what reverting writes), ``revert_file`` (the worker-thread part: under the path's lock, re-read the
file, refuse when it is not what the change left — compared with the change's resulting content, or,
for an Edit whose result data holds no whole file, by diffing the original against what is on disk —
then write the original back through ``fileio.write_text_atomic`` keeping the file's encoding and
line endings, or delete a file the change created), and ``reverted_entry`` (the ``system`` transcript
entry of subtype ``change_reverted``; system entries never reach the API, and resume walks through
them like any chain entry). ``open_in_editor`` goes through ``QDesktopServices.openUrl``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QCoreApplication, QUrl
from PySide6.QtGui import QDesktopServices

from desktop_agent.core.messages import system_entry
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
    return RevertPlan(path, None if created else fileio.normalize_newlines(str(original)), None,
                      _hunk_key(written_hunks))


def revert_file(plan: RevertPlan) -> str:
    """Undo one change on disk (a worker thread: file I/O and, for an Edit, a diff). Returns what was
    done (``"restored"`` or ``"deleted"``); raises ``RevertRefused`` when the file is not as the change
    left it (nothing is written then)."""
    name = os.path.basename(plan.path)
    with fileio.path_lock(plan.path):
        try:
            current, encoding, ending = fileio.read_text_file(plan.path)
        except FileNotFoundError:
            raise RevertRefused(QCoreApplication.translate(
                "ChangeActions", "{0} no longer exists; nothing was reverted.").format(name)) from None
        except IsADirectoryError:
            raise RevertRefused(QCoreApplication.translate(
                "ChangeActions", "{0} is a directory now; nothing was reverted.").format(name)) from None
        if plan.result is not None:
            same = current == plan.result
        else:
            same = _hunk_key(structured_patch(plan.original or "", current)) == plan.hunks
        if not same:
            raise RevertRefused(_tr_changed().format(name))
        if plan.original is None:
            os.remove(plan.path)
            return "deleted"
        fileio.write_text_atomic(plan.path, plan.original, encoding, ending)
        return "restored"


def reverted_entry(file_path: str, tool_use_id: str, outcome: str) -> dict[str, Any]:
    """The transcript's record of a revert (``system`` / ``change_reverted``)."""
    what = "Deleted" if outcome == "deleted" else "Reverted"
    return system_entry("change_reverted", f"{what} the change to {file_path} (tool use {tool_use_id}).",
                        filePath=file_path, toolUseId=tool_use_id, outcome=outcome, level="info")


__all__ = ["RevertPlan", "RevertRefused", "revert_blocker", "revert_plan", "revert_file", "reverted_entry",
           "unified_patch", "open_in_editor", "absolute_path", "REVERTIBLE_TOOLS"]
