"""The Write tool (Appendix A "Edit / Write", B.1 ``FileWriteOutput``).

Owns creating a file (with missing parent directories) or replacing a file the model has read.
The read-before-write and staleness rules are Edit's (shared helpers in ``edit.py``), except that
only a read of the whole file counts (a range read does not, B.1); the patch is
computed before the permission ask (``permission_extras``); ``call`` does the awaitable work first
(directories, file-history backup), then one synchronous critical section under the path's lock:
re-read, re-check, patch, atomic write. An overwritten file keeps its encoding (UTF-8 / UTF-8 BOM /
UTF-16LE BOM), its line-ending style (a CRLF file stays CRLF) and its mode bits.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import ToolError
from desktop_agent.core.tool import current_call
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.util import fileio
from desktop_agent.core.tool import Tool, ToolInput, ToolResult, ValidationResult
from desktop_agent.tools.edit import (
    MODIFIED_SINCE_READ_MESSAGE,
    NOT_READ_MESSAGE,
    UNEXPECTEDLY_MODIFIED_MESSAGE,
    USER_MODIFIED_NOTE,
    directory_message,
    forget_stale_view,
    is_full_read,
    is_stale,
    prepare_write,
    rejected_fields,
    rejected_note,
    WriteGuard,
    take_snapshot,
    write_guard,
    written_state,
)
from desktop_agent.util.diff import apply_hunks, structured_patch
from desktop_agent.tools.read.files import DENIED_MESSAGE


class WriteInput(ToolInput):
    file_path: str = Field(description="The absolute path to the file to write (must be absolute, not relative)")
    content: str = Field(description="The content to write to the file")


@dataclass
class WriteOutcome:
    existed: bool
    original: str
    content: str  # as written, with LF line endings
    patch: list[dict[str, Any]]
    mtime: int


def write_critical_section(abs_path: str, content: str, entry: Any, guard: WriteGuard | None = None) -> WriteOutcome:
    """Re-read, re-check, patch, write — synchronously, under the path's lock.

    A file that exists now must have been read and be unchanged since (a file that appeared after
    validation fails too). A file deleted meanwhile is simply created again.
    """
    with fileio.path_lock(abs_path):
        if guard is not None:
            guard(abs_path)
        snap = take_snapshot(abs_path)
        if snap.is_dir:
            raise ToolError(directory_message(abs_path))
        if snap.special:
            raise ToolError(snap.special)
        if snap.exists and (entry is None or not is_full_read(entry) or is_stale(entry, snap)):
            raise ToolError(UNEXPECTEDLY_MODIFIED_MESSAGE)
        text = fileio.normalize_newlines(content)
        patch = structured_patch(snap.text, text)
        if guard is not None:
            guard(abs_path)
        if snap.exists:
            mtime = fileio.write_text_atomic(abs_path, content, snap.encoding, snap.line_ending)
        else:
            mtime = fileio.write_text_atomic(abs_path, content, "utf-8", "LF")
        return WriteOutcome(snap.exists, snap.text, text, patch, mtime)


def partial_write_input(original: str | None, input: dict[str, Any], hunks: list[dict[str, Any]],
                        accepted: list[bool]) -> dict[str, Any]:
    """The Write input that writes only the accepted hunks: the original file with those applied
    (``hunks`` = the permission patch of ``original`` → ``content``)."""
    old = original or ""
    new = fileio.normalize_newlines(str(input.get("content", "")))
    return dict(input, content=apply_hunks(old, new, hunks, accepted))


class WriteTool(Tool):
    name = "Write"
    input_model = WriteInput
    max_result_size_chars = 100_000

    async def validate_input(self, input: WriteInput, ctx: ToolUseContext) -> ValidationResult:
        abs_path = ctx.expand(input.file_path)
        if ctx.path_denied(abs_path, "edit"):
            return ValidationResult.fail(DENIED_MESSAGE, 1)
        head = take_snapshot(abs_path, read=False)
        if not head.exists:
            return ValidationResult.ok()
        if head.is_dir:
            return ValidationResult.fail(directory_message(abs_path), 2)
        if head.special:
            return ValidationResult.fail(head.special, 2)
        entry = ctx.read_file_state.get(abs_path)
        # Replacing a whole file needs a view of the whole file: a range read does not count (B.1).
        if entry is None or not is_full_read(entry):
            return ValidationResult.fail(NOT_READ_MESSAGE, 2)
        # The content decides for a whole-file view, even when the mtime did not move (see ``is_stale``).
        snap = await asyncio.to_thread(take_snapshot, abs_path) if head.size > 256 * 1024 else take_snapshot(abs_path)
        if is_stale(entry, snap):
            forget_stale_view(entry)
            return ValidationResult.fail(MODIFIED_SINCE_READ_MESSAGE, 3)
        return ValidationResult.ok()

    def permission_target(self, input: WriteInput, ctx: ToolUseContext) -> PermissionTarget:
        return PermissionTarget(kind="write", path=ctx.expand(input.file_path), summary=input.file_path)

    def permission_extras(self, input: WriteInput, ctx: ToolUseContext) -> dict[str, Any]:
        abs_path = ctx.expand(input.file_path)
        snap = take_snapshot(abs_path)
        text = fileio.normalize_newlines(input.content)
        return {"file_path": abs_path, "structured_patch": structured_patch(snap.text, text),
                "original_file": snap.text if snap.exists else None}

    async def call(self, input: WriteInput, ctx: ToolUseContext) -> ToolResult:
        abs_path = ctx.expand(input.file_path)
        await prepare_write(abs_path, ctx)
        entry = ctx.read_file_state.get(abs_path)
        try:
            outcome = await asyncio.to_thread(write_critical_section, abs_path, input.content, entry, write_guard(ctx))
        except ToolError as exc:
            if exc.message == UNEXPECTEDLY_MODIFIED_MESSAGE:
                forget_stale_view(entry)
            raise
        ctx.read_file_state.set(abs_path, written_state(outcome.content, outcome.mtime))
        return ToolResult({
            "type": "update" if outcome.existed else "create",
            "filePath": input.file_path,
            "content": input.content,
            "structuredPatch": outcome.patch,
            "originalFile": outcome.original if outcome.existed else None,
            **rejected_fields(current_call()),
        })

    def map_result_to_block(self, data: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
        if data["type"] == "create":
            text = f"File created successfully at: {data['filePath']}"
        else:
            text = f"The file {data['filePath']} has been updated successfully."
        if data.get("rejectedHunks"):  # the user took only some hunks: their edit of the proposal
            text = text[:-1] + USER_MODIFIED_NOTE + "." + rejected_note(data)
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}


__all__ = ["WriteTool", "WriteInput", "write_critical_section", "partial_write_input"]
