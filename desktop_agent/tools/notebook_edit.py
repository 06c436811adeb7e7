"""The NotebookEdit tool (the reference's ``NotebookEdit``): replace, insert or delete one cell of a ``.ipynb``.

Input: ``notebook_path`` (absolute), ``cell_id`` (a cell's ``id``, or ``cell-N`` for the cell at index N,
as the Read tool shows them), ``new_source``, ``cell_type`` (``code``/``markdown``; required to insert),
``edit_mode`` (``replace`` default, ``insert`` after ``cell_id`` or at the start, ``delete``).

Rules, as Edit's: the notebook must have been read (a whole-file view) and be unchanged since; a
path deny rule on Edit blocks it; permission is Edit's write check (acceptEdits allows it in the
working directories). The patch shown in the dialog and the changes panel is the cell's source
(``structured_patch`` of old → new source, the cell named in the file path). ``call`` re-reads and
re-checks under the path's lock, then writes atomically **keeping the notebook's format**: its JSON
indent (nbformat's 1 by default), key order, ``source`` as a list of lines or a string as the cell had
it, non-ASCII kept, the trailing newline, encoding and line endings. A replaced code cell loses its
outputs and execution count (they no longer match its source); a new cell gets an ``id`` when the
notebook is nbformat ≥ 4.5.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from typing import Any, Literal

from pydantic import Field

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import ToolError
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.util import fileio
from desktop_agent.core.tool import Tool, ToolInput, ToolResult, ValidationResult
from desktop_agent.tools.edit import (
    MODIFIED_SINCE_READ_MESSAGE, NOT_READ_MESSAGE, UNEXPECTEDLY_MODIFIED_MESSAGE, forget_stale_view, is_stale,
    prepare_write, take_snapshot, write_guard, written_state,
)
from desktop_agent.util.diff import structured_patch
from desktop_agent.tools.read.files import DENIED_MESSAGE

NOT_NOTEBOOK_MESSAGE = "File must be a Jupyter notebook (.ipynb file). For editing other file types, use the FileEdit tool."
MISSING_MESSAGE = "Notebook file does not exist."
INVALID_JSON_MESSAGE = "Notebook is not valid JSON."
CELL_TYPE_REQUIRED_MESSAGE = "Cell type is required when using edit_mode=insert."
CELL_ID_REQUIRED_MESSAGE = "Cell ID must be specified when not inserting a new cell."
_INDEX_ID = re.compile(r"^cell-(\d+)$")


class NotebookEditInput(ToolInput):
    notebook_path: str = Field(description="The absolute path to the Jupyter notebook file to edit "
                                           "(must be absolute, not relative)")
    cell_id: str | None = Field(default=None, description=(
        "The ID of the cell to edit. When inserting a new cell, the new cell will be inserted after the cell "
        "with this ID, or at the beginning if not specified."))
    new_source: str = Field(description="The new source for the cell")
    cell_type: Literal["code", "markdown"] | None = Field(default=None, description=(
        "The type of the cell (code or markdown). If not specified, it defaults to the current cell type. "
        "If using edit_mode=insert, this is required."))
    edit_mode: Literal["replace", "insert", "delete"] | None = Field(default=None, description=(
        "The type of edit to make (replace, insert, delete). Defaults to replace."))


def find_cell(cells: list[dict[str, Any]], cell_id: str) -> int | None:
    for i, cell in enumerate(cells):
        if cell.get("id") == cell_id:
            return i
    m = _INDEX_ID.match(cell_id)
    if m and int(m.group(1)) < len(cells):
        return int(m.group(1))
    return None


def _source_text(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _as_source(text: str, like: Any) -> Any:
    """``text`` in the cell's own ``source`` form: nbformat's list of lines, or a plain string."""
    if isinstance(like, str):
        return text
    return text.splitlines(keepends=True)


def _indent_of(text: str) -> int | None:
    m = re.search(r"\n( +)\"", text)
    if m:
        return len(m.group(1))
    return None if "\n" not in text.strip() else 0


def dump_notebook(nb: dict[str, Any], original_text: str) -> str:
    indent = _indent_of(original_text)
    out = json.dumps(nb, indent=indent if indent is not None else 1, ensure_ascii=False)
    return out + "\n" if original_text.endswith("\n") else out


def edit_notebook(text: str, input: NotebookEditInput) -> tuple[str, dict[str, Any]]:
    """The notebook text after the edit, and the result facts (cell id, old/new source, type, language)."""
    try:
        nb = json.loads(text)
    except (ValueError, RecursionError):  # a hostile file nested thousands deep is not a notebook either
        raise ToolError(INVALID_JSON_MESSAGE) from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ToolError(INVALID_JSON_MESSAGE)
    cells: list[dict[str, Any]] = nb["cells"]
    mode = input.edit_mode or "replace"
    language = ((nb.get("metadata") or {}).get("language_info") or {}).get("name") or "python"
    index = None
    if input.cell_id is not None:
        index = find_cell(cells, input.cell_id)
        if index is None:
            raise ToolError(f'Cell with ID "{input.cell_id}" not found in notebook.')
    elif mode != "insert":
        raise ToolError(CELL_ID_REQUIRED_MESSAGE)
    old_source = ""
    if mode == "insert":
        if input.cell_type is None:
            raise ToolError(CELL_TYPE_REQUIRED_MESSAGE)
        at = 0 if index is None else index + 1
        like = cells[at - 1].get("source", []) if at and cells else []
        cell: dict[str, Any] = {"cell_type": input.cell_type}
        if (nb.get("nbformat", 4), nb.get("nbformat_minor", 0)) >= (4, 5):
            cell["id"] = uuid.uuid4().hex[:8]
        cell["metadata"] = {}
        if input.cell_type == "code":
            cell["execution_count"] = None
            cell["outputs"] = []
        cell["source"] = _as_source(input.new_source, like)
        cells.insert(at, cell)
        cell_id = cell.get("id") or f"cell-{at}"
        cell_type = input.cell_type
    else:
        assert index is not None
        cell = cells[index]
        cell_id = cell.get("id") or f"cell-{index}"
        old_source = _source_text(cell)
        cell_type = cell.get("cell_type", "code")
        if mode == "delete":
            del cells[index]
        else:
            new_type = input.cell_type or cell_type
            cell["source"] = _as_source(input.new_source, cell.get("source", []))
            if new_type != cell_type:
                cell["cell_type"] = new_type
            if new_type == "code":
                cell["execution_count"] = None
                cell["outputs"] = []
            else:
                cell.pop("execution_count", None)
                cell.pop("outputs", None)
            cell_type = new_type
    new_source = "" if mode == "delete" else input.new_source
    facts = {"cell_id": cell_id, "cell_type": cell_type, "language": language, "edit_mode": mode,
             "old_source": old_source, "new_source": new_source}
    return dump_notebook(nb, text), facts


class NotebookEditTool(Tool):
    name = "NotebookEdit"
    input_model = NotebookEditInput
    max_result_size_chars = 100_000

    async def validate_input(self, input: NotebookEditInput, ctx: ToolUseContext) -> ValidationResult:
        abs_path = ctx.expand(input.notebook_path)
        if ctx.path_denied(abs_path, "edit"):
            return ValidationResult.fail(DENIED_MESSAGE, 1)
        if os.path.splitext(abs_path)[1] != fileio.NOTEBOOK_EXTENSION:
            return ValidationResult.fail(NOT_NOTEBOOK_MESSAGE, 2)
        snap = await asyncio.to_thread(take_snapshot, abs_path)
        if snap.special:
            return ValidationResult.fail(snap.special, 1)
        if not snap.exists or snap.is_dir:
            return ValidationResult.fail(MISSING_MESSAGE, 1)
        entry = ctx.read_file_state.get(abs_path)
        if entry is None or entry.is_partial_view:
            return ValidationResult.fail(NOT_READ_MESSAGE, 9)
        if is_stale(entry, snap):
            forget_stale_view(entry)
            return ValidationResult.fail(MODIFIED_SINCE_READ_MESSAGE, 10)
        try:
            edit_notebook(snap.text, input)
        except ToolError as exc:
            return ValidationResult.fail(exc.message, 8)
        return ValidationResult.ok()

    def permission_target(self, input: NotebookEditInput, ctx: ToolUseContext) -> PermissionTarget:
        return PermissionTarget(kind="write", path=ctx.expand(input.notebook_path), summary=input.notebook_path)

    def summary(self, input: dict[str, Any]) -> str:
        return str(input.get("notebook_path", ""))

    def permission_extras(self, input: NotebookEditInput, ctx: ToolUseContext) -> dict[str, Any]:
        """The cell's source before and after, as the dialog's patch."""
        abs_path = ctx.expand(input.notebook_path)
        snap = take_snapshot(abs_path)
        try:
            _, facts = edit_notebook(snap.text, input)
        except ToolError:
            facts = {"old_source": "", "new_source": input.new_source, "cell_id": input.cell_id}
        return {"file_path": abs_path, "cell_id": facts["cell_id"],
                "structured_patch": structured_patch(facts["old_source"], facts["new_source"]),
                "original_file": facts["old_source"]}

    async def call(self, input: NotebookEditInput, ctx: ToolUseContext) -> ToolResult:
        abs_path = ctx.expand(input.notebook_path)
        await prepare_write(abs_path, ctx)
        entry = ctx.read_file_state.get(abs_path)

        guard = write_guard(ctx)

        def critical() -> tuple[str, dict[str, Any], int]:
            with fileio.path_lock(abs_path):
                guard(abs_path)
                snap = take_snapshot(abs_path)
                if snap.special:
                    raise ToolError(snap.special)
                if not snap.exists or is_stale(entry, snap):
                    raise ToolError(UNEXPECTEDLY_MODIFIED_MESSAGE)
                text, facts = edit_notebook(snap.text, input)
                guard(abs_path)
                mtime = fileio.write_text_atomic(abs_path, text, snap.encoding, snap.line_ending)
                return text, facts, mtime

        try:
            text, facts, mtime = await asyncio.to_thread(critical)
        except ToolError as exc:
            if exc.message == UNEXPECTEDLY_MODIFIED_MESSAGE:
                forget_stale_view(entry)
            raise
        ctx.read_file_state.set(abs_path, written_state(text, mtime))
        return ToolResult({
            "filePath": input.notebook_path, "notebook_path": input.notebook_path, **facts,
            "structuredPatch": structured_patch(facts["old_source"], facts["new_source"]),
        })

    def map_result_to_block(self, data: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
        mode, cell_id = data["edit_mode"], data["cell_id"]
        if mode == "delete":
            text = f"Deleted cell {cell_id}"
        elif mode == "insert":
            text = f"Inserted cell {cell_id} with {data['new_source']}"
        else:
            text = f"Updated cell {cell_id} with {data['new_source']}"
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}


__all__ = ["NotebookEditTool", "NotebookEditInput", "edit_notebook"]
