"""The Edit tool (SPEC §3.7, Appendix A "Edit / Write", B.1 ``FileEditOutput``).

Owns exact string replacement in a file: the ten validation checks in the reference agent's order
and wording, read-before-edit and staleness against ``ctx.read_file_state``, curly-quote matching
(``find_actual_string``) with the file's quote style kept in the replacement, ``replace_all``,
creating a file with an empty ``old_string``, and encoding / CRLF preservation.

The structured patch is computed before the permission ask (``permission_extras``) so the dialog
shows exactly what will be written. ``call`` does the awaitable work first (parent directory,
file-history backup), then one synchronous critical section under a per-path lock, in a worker
thread: re-read, staleness re-check, recompute, patch, atomic write. Nothing awaits inside it.

The staleness helpers and texts here are shared with Write.
"""

from __future__ import annotations

import asyncio
import os
import stat
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import Field

from desktop_agent.core.context import FileStateEntry, ToolUseContext
from desktop_agent.core.errors import ToolError
from desktop_agent.core.tool import CallInfo, current_call
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.util import fileio, placeholders
from desktop_agent.core.tool import Tool, ToolInput, ToolResult, ValidationResult
from desktop_agent.util.diff import apply_hunks, rejected_hunks_sentence, split_lines_keepends, structured_patch
from desktop_agent.tools.read.files import DENIED_MESSAGE, file_not_found_message, special_file_message

MAX_EDIT_FILE_SIZE = 1024 * 1024 * 1024  # 1 GiB

NOT_READ_MESSAGE = "File has not been read yet. Read it first before writing to it."
MODIFIED_SINCE_READ_MESSAGE = (
    "File has been modified since read, either by the user or by a linter. Read it again before attempting to "
    "write it."
)
UNEXPECTEDLY_MODIFIED_MESSAGE = "File has been unexpectedly modified. Read it again before attempting to write it."
NO_CHANGES_MESSAGE = "No changes to make: old_string and new_string are exactly the same."
ALREADY_EXISTS_MESSAGE = "Cannot create new file - file already exists."
NOTEBOOK_MESSAGE = "File is a Jupyter Notebook. Use the NotebookEdit to edit this file."
USER_MODIFIED_NOTE = ".  The user modified your proposed changes before accepting them. "

LEFT_SINGLE_CURLY_QUOTE = "\u2018"
RIGHT_SINGLE_CURLY_QUOTE = "\u2019"
LEFT_DOUBLE_CURLY_QUOTE = "\u201c"
RIGHT_DOUBLE_CURLY_QUOTE = "\u201d"
_QUOTES = str.maketrans({LEFT_SINGLE_CURLY_QUOTE: "'", RIGHT_SINGLE_CURLY_QUOTE: "'",
                         LEFT_DOUBLE_CURLY_QUOTE: '"', RIGHT_DOUBLE_CURLY_QUOTE: '"'})


class EditInput(ToolInput):
    file_path: str = Field(description="The absolute path to the file to modify")
    old_string: str = Field(description="The text to replace")
    new_string: str = Field(description="The text to replace it with (must be different from old_string)")
    replace_all: bool = Field(False, description="Replace all occurrences of old_string (default false)")


# ---------------------------------------------------------------- quotes and replacement


def normalize_quotes(text: str) -> str:
    """Curly quotes to straight ones (one character for one, so indices carry over)."""
    return text.translate(_QUOTES)


def find_actual_string(content: str, search: str) -> str | None:
    """``search`` itself if present; else the file's text that matches it after quote normalization."""
    if search in content:
        return search
    normalized_search = normalize_quotes(search)
    index = normalize_quotes(content).find(normalized_search)
    if index == -1:
        return None
    return content[index:index + len(search)]


def _is_opening_context(chars: str, i: int) -> bool:
    if i == 0:
        return True
    return chars[i - 1] in " \t\n\r([{\u2014\u2013"


def _curly_double(text: str) -> str:
    return "".join(
        (LEFT_DOUBLE_CURLY_QUOTE if _is_opening_context(text, i) else RIGHT_DOUBLE_CURLY_QUOTE) if c == '"' else c
        for i, c in enumerate(text))


def _curly_single(text: str) -> str:
    out = []
    for i, c in enumerate(text):
        if c != "'":
            out.append(c)
            continue
        prev_letter = i > 0 and text[i - 1].isalpha()
        next_letter = i + 1 < len(text) and text[i + 1].isalpha()
        if prev_letter and next_letter:  # an apostrophe: don't, it's
            out.append(RIGHT_SINGLE_CURLY_QUOTE)
        else:
            out.append(LEFT_SINGLE_CURLY_QUOTE if _is_opening_context(text, i) else RIGHT_SINGLE_CURLY_QUOTE)
    return "".join(out)


def preserve_quote_style(old_string: str, actual_old_string: str, new_string: str) -> str:
    """When the match needed quote normalization, write ``new_string`` in the file's curly style."""
    if old_string == actual_old_string:
        return new_string
    has_double = LEFT_DOUBLE_CURLY_QUOTE in actual_old_string or RIGHT_DOUBLE_CURLY_QUOTE in actual_old_string
    has_single = LEFT_SINGLE_CURLY_QUOTE in actual_old_string or RIGHT_SINGLE_CURLY_QUOTE in actual_old_string
    result = new_string
    if has_double:
        result = _curly_double(result)
    if has_single:
        result = _curly_single(result)
    return result


def apply_edit_to_file(content: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
    """Replace the first (or every) occurrence; deleting a whole line also removes its newline."""
    count = -1 if replace_all else 1
    if new_string == "" and old_string and not old_string.endswith("\n") and (old_string + "\n") in content:
        return content.replace(old_string + "\n", new_string, count)
    if old_string == "":  # creating, or filling an empty file
        return new_string + content
    return content.replace(old_string, new_string, count)


def not_found_message(old_string: str) -> str:
    return f"String to replace not found in file.\nString: {old_string}"


def multiple_matches_message(matches: int, old_string: str) -> str:
    return (f"Found {matches} matches of the string to replace, but replace_all is false. To replace all "
            "occurrences, set replace_all to true. To replace only one occurrence, please provide more context "
            f"to uniquely identify the instance.\nString: {old_string}")


# ---------------------------------------------------------------- file snapshots and staleness (shared with Write)


@dataclass
class Snapshot:
    """The file as it is now: ``exists`` False for a missing file (text ``""``, UTF-8, LF)."""

    exists: bool
    is_dir: bool = False
    size: int = 0
    text: str = ""
    encoding: str = "utf-8"
    line_ending: str = "LF"
    mtime: int = 0
    special: str = ""  # a FIFO, socket or device: why it is refused (never opened)


def take_snapshot(abs_path: str, read: bool = True) -> Snapshot:
    try:
        st = os.stat(abs_path)
    except (FileNotFoundError, NotADirectoryError):
        return Snapshot(False)
    if stat.S_ISDIR(st.st_mode):  # the sandbox's placeholder for a missing protected file is no file yet
        return Snapshot(False) if placeholders.is_placeholder(abs_path, "file") else Snapshot(True, is_dir=True)
    if not stat.S_ISREG(st.st_mode):  # opening a FIFO waits for a writer; a device never ends
        return Snapshot(True, special=special_file_message(abs_path, st.st_mode))
    if not read:
        return Snapshot(True, size=st.st_size, mtime=st.st_mtime_ns // 1_000_000)
    text, encoding, ending, mtime = fileio.read_text_file_with_mtime(abs_path)
    return Snapshot(True, False, st.st_size, text, encoding, ending, mtime)


def is_full_read(entry: FileStateEntry) -> bool:
    """A Read of the whole file (no limit, from line 1) or a write by Edit/Write."""
    return entry.limit is None and (entry.offset is None or entry.offset <= 1) and not entry.is_partial_view


def is_stale(entry: FileStateEntry | None, snap: Snapshot) -> bool:
    """True when the model's view of the file is missing or out of date (SPEC §3.7 checks 7–8).

    A newer mtime is forgiven when the model saw the whole file and its content is unchanged.
    When the model saw the whole file its content decides whatever the mtime says: a write within the
    same mtime tick as the Read (a fast formatter, a file system with coarse timestamps) or one that
    restored an older mtime (``cp -p``) leaves the mtime not newer, yet the model has not seen it
    (found by the fault suite: such a change was silently overwritten by Write). For a range view
    only the mtime can tell.
    """
    if entry is None or entry.is_partial_view:
        return True
    if is_full_read(entry):
        return snap.text != fileio.normalize_newlines(entry.content)
    return snap.mtime > entry.timestamp


def forget_stale_view(entry: FileStateEntry | None) -> None:
    """After a staleness failure the next Read must return the text, not the ``file_unchanged`` stub
    (which compares only the mtime, and the mtime may not have moved)."""
    if entry is not None:
        entry.timestamp = -1


def directory_message(abs_path: str) -> str:
    return f"{abs_path} is a directory, not a file. Give the path of a file inside it."


def written_state(text: str, mtime: int) -> FileStateEntry:
    return FileStateEntry(content=text, timestamp=mtime, offset=None, limit=None)


async def prepare_write(abs_path: str, ctx: ToolUseContext) -> None:
    """The awaitable work before a critical section: parent directories, then the file-history backup."""
    parent = os.path.dirname(abs_path)
    if parent and not os.path.isdir(parent):
        await asyncio.to_thread(os.makedirs, parent, exist_ok=True)
    if ctx.file_history is not None:
        await asyncio.to_thread(ctx.file_history.backup, abs_path)


WriteGuard = Callable[[str], None]


def write_guard(ctx: ToolUseContext) -> WriteGuard:
    """Checked inside the critical section, before the file is read and again before it is written: the path as
    it resolves *now* (a name swapped for a symlink since the decision), its identity and its real folders must
    not be denied for edits. Raises the denied message."""
    def guard(abs_path: str) -> None:
        target = os.path.realpath(abs_path)
        if ctx.path_denied(target, "edit") or (target != abs_path and ctx.path_denied(abs_path, "edit")):
            raise ToolError(DENIED_MESSAGE)
    return guard


def _lf(text: str) -> str:
    return fileio.normalize_newlines(text)


# ---------------------------------------------------------------- the tool


@dataclass
class EditOutcome:
    original: str
    updated: str
    actual_old: str
    patch: list[dict[str, Any]]
    mtime: int


def locate(content: str, old: str) -> tuple[str, int] | None:
    """(actual old string, index of its first occurrence), with quote normalization; None if absent."""
    index = content.find(old)
    if index != -1:
        return old, index
    actual = find_actual_string(content, old)
    if actual is None:
        return None
    return actual, content.find(actual)


def _compute(original: str, old: str, new: str, replace_all: bool,
             shown_old: str | None = None) -> tuple[str, str, int, int]:
    """(actual old string, updated file, same-prefix length, same-suffix length).

    Raises ToolError like validation would (quoting ``shown_old``, the model's own string). The two lengths are
    what is known to be unchanged at the start and end of the file (a hint for the patch; 0 when unknown).
    """
    if old == "":
        return "", apply_edit_to_file(original, "", new), 0, 0
    shown = old if shown_old is None else shown_old
    found = locate(original, old)
    if found is None:
        raise ToolError(not_found_message(shown))
    actual, index = found
    if not replace_all and original.find(actual, index + len(actual)) != -1:
        raise ToolError(multiple_matches_message(original.count(actual), shown))
    new_actual = preserve_quote_style(old, actual, new)
    if not replace_all and new_actual != "":
        # The common case: one occurrence, already located; splice instead of searching again.
        end = index + len(actual)
        return actual, original[:index] + new_actual + original[end:], index, len(original) - end
    return actual, apply_edit_to_file(original, actual, new_actual, replace_all), 0, 0


def edit_critical_section(abs_path: str, input: EditInput, entry: FileStateEntry | None,
                          guard: WriteGuard | None = None) -> EditOutcome:
    """Re-read, re-check, recompute, patch, write — synchronously, under the path's lock."""
    old, new = _lf(input.old_string), _lf(input.new_string)
    with fileio.path_lock(abs_path):
        if guard is not None:
            guard(abs_path)
        snap = take_snapshot(abs_path)
        if snap.is_dir:
            raise ToolError(directory_message(abs_path))
        if snap.special:
            raise ToolError(snap.special)
        if snap.exists:
            if old == "" and snap.text.strip() == "":
                # Filling an empty file needs no (fresh) Read, as in validation check 5: an older view of the
                # file must not fail the call that validation accepted (found by the stateful fuzz test).
                pass
            elif entry is None or is_stale(entry, snap):
                raise ToolError(UNEXPECTEDLY_MODIFIED_MESSAGE)
        elif old != "":  # deleted since validation
            raise ToolError(UNEXPECTEDLY_MODIFIED_MESSAGE)
        if old == "" and snap.text.strip() != "":
            raise ToolError(ALREADY_EXISTS_MESSAGE)
        actual, updated, same_prefix, same_suffix = _compute(snap.text, old, new, input.replace_all,
                                                             input.old_string)
        if snap.exists and updated == snap.text and old != new:
            raise ToolError("String not found in file. Failed to apply edit.")
        patch = structured_patch(snap.text, updated, same_prefix=same_prefix, same_suffix=same_suffix)
        if guard is not None:
            guard(abs_path)
        mtime = fileio.write_text_atomic(abs_path, updated, snap.encoding, snap.line_ending)
        return EditOutcome(snap.text, updated, actual, patch, mtime)


def proposed_file(original: str, input: dict[str, Any]) -> str:
    """The whole file as an Edit input would leave it (what its permission patch shows); ``original``
    unchanged when the edit does not apply."""
    try:
        return _compute(original, _lf(str(input.get("old_string", ""))), _lf(str(input.get("new_string", ""))),
                        bool(input.get("replace_all")))[1]
    except ToolError:
        return original


def edit_input_for_text(original: str, target: str, input: dict[str, Any]) -> dict[str, Any]:
    """An Edit input that turns ``original`` into ``target`` (the file with only the accepted hunks).

    ``old_string`` is the whole lines around every change between the two (taken from the file
    itself, so no quote normalization is needed), grown a line at a time until it occurs once; the
    whole file at worst. ``replace_all`` is off: the one region holds every change.
    """
    if target == original:
        return dict(input)
    a = split_lines_keepends(original)
    b = split_lines_keepends(target)
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    s = 0
    while s < min(len(a), len(b)) - p and a[len(a) - 1 - s] == b[len(b) - 1 - s]:
        s += 1
    lo, hi_a, hi_b = p, len(a) - s, len(b) - s  # changed lines [lo, hi) on each side
    while True:
        old_string = "".join(a[lo:hi_a])
        if old_string and original.count(old_string) == 1:
            break
        if lo == 0 and hi_a == len(a):
            old_string = original
            break
        if lo > 0:
            lo -= 1
        if hi_a < len(a):
            hi_a += 1
            hi_b += 1
    new_string = "".join(b[lo:hi_b]) if old_string != original else target
    out = {k: v for k, v in input.items() if k not in ("old_string", "new_string", "replace_all")}
    out.update(old_string=old_string, new_string=new_string)
    return out


def partial_edit_input(original: str, input: dict[str, Any], hunks: list[dict[str, Any]],
                       accepted: list[bool]) -> dict[str, Any]:
    """The Edit input that writes only the accepted hunks of its patch (``hunks`` against ``original``)."""
    updated = proposed_file(original, input)
    return edit_input_for_text(original, apply_hunks(original, updated, hunks, accepted), input)


def rejected_note(data: dict[str, Any]) -> str:
    """`` The user rejected 2 of 5 hunks (lines 12–18, 40–41); those parts were NOT written.`` or ``""``."""
    ranges = data.get("rejectedHunks")
    if not ranges:
        return ""
    return " " + rejected_hunks_sentence([(int(a), int(b)) for a, b in ranges],
                                         int(data.get("totalHunks") or len(ranges)))


def rejected_fields(info: CallInfo | None) -> dict[str, Any]:
    """``rejectedHunks`` / ``totalHunks`` for a tool's result data, from the permission decision."""
    decision = info.decision if info is not None else None
    ranges = decision.rejected_hunks if decision is not None else None
    if not ranges or decision is None:
        return {}
    return {"rejectedHunks": [[int(a), int(b)] for a, b in ranges],
            "totalHunks": int(decision.total_hunks or len(ranges))}


class EditTool(Tool):
    name = "Edit"
    input_model = EditInput
    strict = True
    max_result_size_chars = 100_000

    async def validate_input(self, input: EditInput, ctx: ToolUseContext) -> ValidationResult:
        old = _lf(input.old_string)
        # 1
        if input.old_string == input.new_string:
            return ValidationResult.fail(NO_CHANGES_MESSAGE, 1)
        abs_path = ctx.expand(input.file_path)
        # 2
        if ctx.path_denied(abs_path, "edit"):
            return ValidationResult.fail(DENIED_MESSAGE, 2)
        # 3
        head = take_snapshot(abs_path, read=False)
        if head.exists and not head.is_dir and head.size > MAX_EDIT_FILE_SIZE:
            return ValidationResult.fail(
                f"File is too large to edit ({fileio.format_file_size(head.size)}). Maximum editable file size is "
                f"{fileio.format_file_size(MAX_EDIT_FILE_SIZE)}.", 10)
        # 4
        if not head.exists:
            if old == "":
                return ValidationResult.ok()
            return ValidationResult.fail(file_not_found_message(abs_path, ctx.cwd), 4)
        if head.is_dir:
            return ValidationResult.fail(directory_message(abs_path), 4)
        if head.special:
            return ValidationResult.fail(head.special, 4)
        snap = await asyncio.to_thread(take_snapshot, abs_path) if head.size > 256 * 1024 else take_snapshot(abs_path)
        # 5
        if old == "":
            if snap.text.strip() != "":
                return ValidationResult.fail(ALREADY_EXISTS_MESSAGE, 3)
            return ValidationResult.ok()
        # 6
        if abs_path.endswith(".ipynb"):
            return ValidationResult.fail(NOTEBOOK_MESSAGE, 5)
        # 7
        entry = ctx.read_file_state.get(abs_path)
        if entry is None or entry.is_partial_view:
            return ValidationResult.fail(NOT_READ_MESSAGE, 6)
        # 8
        if is_stale(entry, snap):
            forget_stale_view(entry)
            return ValidationResult.fail(MODIFIED_SINCE_READ_MESSAGE, 7)
        # 9
        found = locate(snap.text, old)
        if found is None:
            return ValidationResult.fail(not_found_message(input.old_string), 8)
        actual, index = found
        # 10
        if not input.replace_all and snap.text.find(actual, index + len(actual)) != -1:
            return ValidationResult.fail(multiple_matches_message(snap.text.count(actual), input.old_string), 9)
        return ValidationResult.ok(meta={"actual_old_string": actual})

    def permission_target(self, input: EditInput, ctx: ToolUseContext) -> PermissionTarget:
        return PermissionTarget(kind="write", path=ctx.expand(input.file_path), summary=input.file_path)

    def permission_extras(self, input: EditInput, ctx: ToolUseContext) -> dict[str, Any]:
        """What the dialog shows: the exact patch against the file as it is now."""
        abs_path = ctx.expand(input.file_path)
        snap = take_snapshot(abs_path)
        try:
            _, updated, same_prefix, same_suffix = _compute(snap.text, _lf(input.old_string), _lf(input.new_string),
                                                            input.replace_all)
        except ToolError:
            updated, same_prefix, same_suffix = snap.text, 0, 0
        patch = structured_patch(snap.text, updated, same_prefix=same_prefix, same_suffix=same_suffix)
        return {"file_path": abs_path, "structured_patch": patch,
                "original_file": snap.text}

    async def call(self, input: EditInput, ctx: ToolUseContext) -> ToolResult:
        abs_path = ctx.expand(input.file_path)
        info = current_call()
        user_modified = bool(info and info.user_modified)
        await prepare_write(abs_path, ctx)
        entry = ctx.read_file_state.get(abs_path)
        try:
            outcome = await asyncio.to_thread(edit_critical_section, abs_path, input, entry, write_guard(ctx))
        except ToolError as exc:
            if exc.message == UNEXPECTEDLY_MODIFIED_MESSAGE:
                forget_stale_view(entry)
            raise
        ctx.read_file_state.set(abs_path, written_state(outcome.updated, outcome.mtime))
        return ToolResult({
            "filePath": input.file_path,
            "oldString": outcome.actual_old,
            "newString": input.new_string,
            "originalFile": outcome.original,
            "structuredPatch": outcome.patch,
            "userModified": user_modified,
            "replaceAll": input.replace_all,
            **rejected_fields(info),
        })

    def map_result_to_block(self, data: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
        note = USER_MODIFIED_NOTE if data.get("userModified") else ""
        path = data["filePath"]
        if data.get("replaceAll"):
            text = f"The file {path} has been updated{note}. All occurrences were successfully replaced."
        else:
            text = f"The file {path} has been updated successfully{note}."
        text += rejected_note(data)
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}


__all__ = ["EditTool", "EditInput", "proposed_file", "partial_edit_input", "edit_input_for_text", "find_actual_string",
           "preserve_quote_style", "apply_edit_to_file", "normalize_quotes", "is_stale", "take_snapshot",
           "edit_critical_section", "write_guard"]
