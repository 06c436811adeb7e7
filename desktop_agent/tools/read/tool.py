"""The Read tool (SPEC §3.5, §3.6, Appendix A "Read", B.1).

Owns reading a file for the model: text as ``<n>\\t<line>`` numbered lines (offset/limit, the
256 KB whole-file cap, the 25,000-token output cap), the ``file_unchanged`` stub for repeated reads,
the empty / past-the-end notices, binary refusal (by extension and by content), images as base64
image blocks fitted to the API's limits with Pillow (long edge ≤ 1568 px, ≤ 5 MB of base64; re-encoded,
JPEG at falling qualities if need be), PDFs as the text of their pages through pypdf (``pages``, at
most 20 a request; a longer PDF needs ``pages``), Jupyter notebooks as cells with their outputs, and a
sentence for directories. FIFOs, sockets and devices are refused, never opened for reading (``os.stat``
in ``validate_input``; files are opened with O_NONBLOCK and ``fstat``'ed, so a FIFO swapped in after the
check cannot hang the read). Every text read records what the model saw in ``ctx.read_file_state``;
Edit and Write rely on it.

Nothing of a Read runs on the event loop (the GUI's): stat and reading run on an I/O thread pool
(parallel Reads overlap their waits), decoding, splitting and numbering on one CPU thread (so the loop
is not starved of the GIL). Images are decoded, scaled and encoded on the I/O pool (Pillow releases the
GIL for that work); PDF bytes are read there and parsed by pypdf (pure Python) on the CPU thread. The
numbered text travels to ``map_result_to_block`` on the result data (``ReadData.rendered``).
"""

from __future__ import annotations

import math
import os
import stat
from typing import Any

from pydantic import Field

from desktop_agent.core.context import FileStateEntry, ToolUseContext
from desktop_agent.core.errors import ToolError
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.core.tool import Tool, ToolInput, ToolResult, ValidationResult
from desktop_agent.tools.read.files import (BLOCKED_DEVICE_PATHS, DENIED_MESSAGE, Guard, open_regular, opened_guard,
                                            run_cpu, run_io, special_file_message, stat_regular_file)
from desktop_agent.tools.read.media import (PDF_MAX_PAGES_PER_READ, image_metadata_text, parse_pdf_page_range,
                                            read_image, read_pdf)
from desktop_agent.tools.read.notebook import cell_blocks, read_notebook
from desktop_agent.tools.read.text import (MAX_FILE_SIZE_BYTES, SIZE_TAIL, STREAM_THRESHOLD_BYTES, TextRange,
                                           add_line_numbers, binary_message, finish_text, load_text, max_output_tokens,
                                           text_range_from_bytes)
from desktop_agent.util import fileio

FILE_UNCHANGED_STUB = (
    "Wasted call — file unchanged since your last Read. Refer to that earlier tool_result instead."
)
EMPTY_FILE_NOTICE = "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"


class ReadInput(ToolInput):
    file_path: str = Field(description="The absolute path to the file to read")
    offset: int | None = Field(
        None, ge=0,
        description="The line number to start reading from. Only provide if the file is too large to read at once")
    limit: int | None = Field(
        None, gt=0,
        description="The number of lines to read. Only provide if the file is too large to read at once.")
    pages: str | None = Field(
        None,
        description='Page range for PDF files (e.g., "1-5", "3", "10-20"). Only applicable to PDF files. '
                    'Maximum 20 pages per request.')


def _stat_or_none(abs_path: str) -> os.stat_result | None:
    try:
        return os.stat(abs_path)
    except (OSError, ValueError):
        return None


def _image_job(abs_path: str, cwd: str, guard: Guard) -> dict[str, Any]:
    stat_regular_file(abs_path, cwd)
    return read_image(abs_path, guard)


def _io_job(abs_path: str, cwd: str, offset: int | None, limit: int | None, max_tokens: int,
            entry: FileStateEntry | None, guard: Guard) -> tuple[str, Any]:
    """Stage 1: checks and the raw bytes. ``("file_unchanged", None)``, ``("bytes", (data, mtime, size))``,
    or ``("text", TextRange)`` for a range of a very large file (streamed here, line by line)."""
    st = stat_regular_file(abs_path, cwd)
    effective_offset = offset if offset is not None else 1
    # Repeated read of the same range of an unchanged file: a stub instead of the same text again.
    if (entry is not None and not entry.is_partial_view and entry.offset is not None
            and entry.offset == effective_offset and entry.limit == limit
            and st.st_mtime_ns // 1_000_000 == entry.timestamp):
        return "file_unchanged", None
    if limit is None and st.st_size > MAX_FILE_SIZE_BYTES:
        raise ToolError(
            f"File content ({fileio.format_file_size(st.st_size)}) exceeds maximum allowed size "
            f"({fileio.format_file_size(MAX_FILE_SIZE_BYTES)}). {SIZE_TAIL}", wrap=False)
    if limit is not None and st.st_size > STREAM_THRESHOLD_BYTES:
        return "text", load_text(abs_path, offset, limit, max_tokens, sniff_ext=fileio.extension(abs_path),
                                 guard=guard)
    with open_regular(abs_path, guard) as fh:
        data = fh.read()
        st = os.fstat(fh.fileno())
    return "bytes", (data, st.st_mtime_ns // 1_000_000, st.st_size)


def _cpu_job(data: bytes, mtime: int, size: int, ext: str, offset: int | None, limit: int | None,
             max_tokens: int) -> tuple[str, Any]:
    """Stage 2: binary sniffing, notebook cells or the text range, token cap, numbering."""
    if ext == fileio.NOTEBOOK_EXTENSION:
        text = fileio.normalize_newlines(fileio.decode_bytes(data)[0])
        return "notebook", (text, mtime, read_notebook(text))
    if fileio.looks_binary(data[:8192]):
        raise ToolError(binary_message(ext))
    return "text", finish_text(text_range_from_bytes(data, offset, limit, mtime, size), offset, max_tokens)


# ---------------------------------------------------------------- the tool


class ReadData(dict):
    """Read's result data (a plain dict for JSON) carrying the numbered text built off the event loop."""

    rendered: str | None = None



class ReadTool(Tool):
    name = "Read"
    input_model = ReadInput
    max_result_size_chars = math.inf

    def is_concurrency_safe(self, input: Any) -> bool:
        return True

    def is_read_only(self, input: Any) -> bool:
        return True

    async def validate_input(self, input: ReadInput, ctx: ToolUseContext) -> ValidationResult:
        if input.pages is not None:
            parsed = parse_pdf_page_range(input.pages)
            if parsed is None:
                return ValidationResult.fail(
                    f'Invalid pages parameter: "{input.pages}". Use formats like "1-5", "3", or "10-20". '
                    "Pages are 1-indexed.", 7)
            first, last = parsed
            if last is None or last - first + 1 > PDF_MAX_PAGES_PER_READ:
                return ValidationResult.fail(
                    f'Page range "{input.pages}" exceeds maximum of {PDF_MAX_PAGES_PER_READ} pages per request. '
                    "Please use a smaller range.", 8)
        if "\x00" in input.file_path:  # run_tool_use refuses this first; a direct call gets it here
            return ValidationResult.fail("The file path contains a NUL character (\\0), which no path can contain.", 10)
        abs_path = ctx.expand(input.file_path)
        if ctx.path_denied(abs_path, "read"):
            return ValidationResult.fail(DENIED_MESSAGE, 1)
        ext = fileio.extension(abs_path)
        if ext in fileio.BINARY_EXTENSIONS:
            return ValidationResult.fail(binary_message(ext), 4)
        if abs_path in BLOCKED_DEVICE_PATHS:
            return ValidationResult.fail(
                f"Cannot read '{abs_path}': this device file would block or produce infinite output.", 9)
        # FIFOs, sockets and devices are refused before any permission prompt (stat never blocks;
        # ``call`` checks again on the opened descriptor).
        st = await run_io(_stat_or_none, abs_path)
        if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            return ValidationResult.fail(special_file_message(abs_path, st.st_mode), 9)
        return ValidationResult.ok()

    def permission_target(self, input: ReadInput, ctx: ToolUseContext) -> PermissionTarget:
        return PermissionTarget(kind="read", path=ctx.expand(input.file_path), summary=input.file_path)

    async def call(self, input: ReadInput, ctx: ToolUseContext) -> ToolResult:
        abs_path = ctx.expand(input.file_path)
        ext = fileio.extension(abs_path)
        guard = opened_guard(ctx)  # what is opened is checked again: a name swapped since the decision is caught
        if ext in fileio.IMAGE_EXTENSIONS:
            return ToolResult(await run_io(_image_job, abs_path, ctx.cwd, guard))
        if ext == fileio.PDF_EXTENSION:
            await run_io(stat_regular_file, abs_path, ctx.cwd)
            return ToolResult(await read_pdf(abs_path, input.pages, guard))

        offset = input.offset if input.offset is not None else 1
        limit = input.limit
        entry = ctx.read_file_state.get(abs_path)
        kind, payload = await run_io(_io_job, abs_path, ctx.cwd, input.offset, limit, max_output_tokens(), entry,
                                     guard)
        if kind == "bytes":
            data_bytes, mtime, size = payload
            kind, payload = await run_cpu(_cpu_job, data_bytes, mtime, size, ext, input.offset, limit,
                                          max_output_tokens())
        if kind == "file_unchanged":
            return ToolResult({"type": "file_unchanged", "file": {"filePath": input.file_path}})
        if kind == "notebook":
            text, mtime, cells = payload
            ctx.read_file_state.set(abs_path, FileStateEntry(content=text, timestamp=mtime, offset=offset,
                                                             limit=limit))
            return ToolResult({"type": "notebook", "file": {"filePath": input.file_path, "cells": cells}})
        rng: TextRange = payload
        ctx.read_file_state.set(abs_path, FileStateEntry(content=rng.content, timestamp=rng.mtime, offset=offset,
                                                         limit=limit))
        data = ReadData({
            "type": "text",
            "file": {"filePath": input.file_path, "content": rng.content, "numLines": rng.num_lines,
                     "startLine": offset, "totalLines": rng.total_lines},
        })
        data.rendered = rng.rendered
        return ToolResult(data)

    def map_result_to_block(self, data: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
        kind = data.get("type")
        file = data.get("file", {})
        if kind == "file_unchanged":
            content: Any = FILE_UNCHANGED_STUB
        elif kind == "image":
            content = [{"type": "image", "source": {"type": "base64", "data": file["base64"],
                                                    "media_type": file["type"]}}]
            note = image_metadata_text(file.get("dimensions"))
            if note:
                content.append({"type": "text", "text": note})
        elif kind == "pdf":
            if any(p["text"] for p in file["pages"]):
                content = "\n\n".join(f'<page number="{p["page"]}">\n{p["text"]}\n</page>' for p in file["pages"])
            else:
                content = ("<system-reminder>Warning: the PDF has no extractable text in this range (its pages may "
                           "be scanned images).</system-reminder>")
        elif kind == "notebook":
            blocks = [b for cell in file["cells"] for b in cell_blocks(cell)]
            content = blocks or EMPTY_FILE_NOTICE
        else:
            rendered = data.rendered if isinstance(data, ReadData) else None  # a resumed result is a plain dict
            if file["numLines"] > 0:
                content = rendered if rendered is not None else fileio.to_display(
                    add_line_numbers(file["content"], max(file["startLine"], 1)))
            elif file["totalLines"] == 0:
                content = EMPTY_FILE_NOTICE
            else:
                content = (
                    "<system-reminder>Warning: the file exists but is shorter than the provided offset "
                    f"({file['startLine']}). The file has {file['totalLines']} lines.</system-reminder>")
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
