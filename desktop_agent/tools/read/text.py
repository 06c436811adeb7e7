"""Text for the model: a line range of a file (bytes split as bytes, only the range decoded; a range of a very
large file streamed), the 256 KB whole-file cap and the token cap, ``<n>\\t<line>`` numbering, binary refusal."""

from __future__ import annotations

import math
import operator
import os
import threading
from dataclasses import dataclass
from typing import Any

from desktop_agent.core.errors import ToolError
from desktop_agent.tools.read.files import Guard, open_regular
from desktop_agent.util import fileio

MAX_FILE_SIZE_BYTES = int(0.25 * 1024 * 1024)  # whole-file reads (no limit)
DEFAULT_MAX_OUTPUT_TOKENS = 25_000
MAX_LINES_TO_READ = 2000  # a hint in the prompt, not a hard limit
# Files read line by line instead of all at once when only a range is wanted.
STREAM_THRESHOLD_BYTES = 16 * 1024 * 1024
SIZE_TAIL = (
    "Use offset and limit parameters to read specific portions of the file, or search for specific content "
    "instead of reading the whole file."
)


def max_output_tokens() -> int:
    raw = os.environ.get("CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS", "").strip()
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_MAX_OUTPUT_TOKENS
    return value if value > 0 else DEFAULT_MAX_OUTPUT_TOKENS


def estimate_tokens(text: str) -> int:
    """A local token estimate (about four characters a token); no network round trip."""
    return math.ceil(len(text) / 4)


def add_line_numbers(content: str, start_line: int) -> str:
    """``<n>\\t<line>`` joined by ``\\n``, numbering from ``start_line`` (SPEC §3.6); ``""`` is one empty line."""
    lines = content.split("\n")
    return "\n".join(f"{n}\t{line}" for n, line in enumerate(lines, start_line))


# ---------------------------------------------------------------- text reading (worker thread)


@dataclass
class TextRange:
    content: str  # the selected lines joined by "\n" (raw: undecodable bytes as surrogates)
    num_lines: int
    start_line: int
    total_lines: int
    mtime: int
    size: int
    rendered: str | None = None  # the numbered text for the model (built in the worker thread)


def read_text_range(path: str, offset: int | None, limit: int | None, guard: Guard | None = None) -> TextRange:
    """Read lines ``[offset, offset+limit)`` (1-based; offset 0 means 1) of a text file.

    UTF-8 files are cut into lines as bytes and only the wanted range is decoded; a range of a very
    large file is streamed. ``total_lines`` counts the empty line after a final newline, as the
    numbered output shows it; an empty file has 0 lines.
    """
    start = 0 if not offset else offset - 1
    with open_regular(path, guard) as fh:
        st = os.fstat(fh.fileno())
        if limit is not None and st.st_size > STREAM_THRESHOLD_BYTES:
            head = fh.read(3)
            if not head.startswith(fileio.UTF16LE_BOM):
                fh.seek(3 if head.startswith(fileio.UTF8_BOM) else 0)
                return _stream_range(fh, start, limit, st)
            fh.seek(0)
        data = fh.read()
    return text_range_from_bytes(data, offset, limit, st.st_mtime_ns // 1_000_000, st.st_size)


def text_range_from_bytes(data: bytes, offset: int | None, limit: int | None, mtime: int, size: int) -> TextRange:
    """``read_text_range`` on bytes already read."""
    start = 0 if not offset else offset - 1
    if data.startswith(fileio.UTF16LE_BOM):
        return _range_of_text(fileio.normalize_newlines(fileio.decode_bytes(data)[0]), start, limit, mtime, size)
    if data.startswith(fileio.UTF8_BOM):
        data = data[3:]
    if not data:
        return TextRange("", 0, start + 1, 0, mtime, size)
    if start == 0:
        total = data.count(b"\n") + 1
        if limit is None or limit >= total:
            text = fileio.normalize_newlines(data.decode("utf-8", errors="surrogateescape"))
            return TextRange(text, total, 1, total, mtime, size)
        first = 0
    else:
        first = _line_start(data, start)
        if first == -1:
            return TextRange("", 0, start + 1, data.count(b"\n") + 1, mtime, size)
        total = start + data.count(b"\n", first) + 1  # one pass over the file in all
    after = -1 if limit is None else _line_start(data, limit, first)
    if after == -1:  # the range runs to the end of the file
        segment, count = data[first:], total - start
    else:
        assert limit is not None  # after == -1 whenever limit is None
        segment, count = data[first:after - 1], limit
        if segment.endswith(b"\r"):
            segment = segment[:-1]  # the CR of the CRLF that ends the range
    text = segment.decode("utf-8", errors="surrogateescape")
    return TextRange(fileio.normalize_newlines(text), count, start + 1, total, mtime, size)


def _line_start(data: bytes, n: int, pos: int = 0, step: int = 65536) -> int:
    """Index where the line ``n`` lines after the one starting at ``pos`` starts; -1 past the end.

    Counts newlines chunk by chunk at C speed and splits only the chunk that holds the answer.
    """
    if n == 0:
        return pos
    size = len(data)
    while pos < size:
        chunk_end = min(size, pos + step)
        found = data.count(b"\n", pos, chunk_end)
        if found >= n:
            rest = data[pos:chunk_end].split(b"\n", n)[n]
            return chunk_end - len(rest)
        n -= found
        pos = chunk_end
    return -1


def _range_of_text(text: str, start: int, limit: int | None, mtime: int, size: int) -> TextRange:
    if not text:
        return TextRange("", 0, start + 1, 0, mtime, size)
    lines = text.split("\n")
    total = len(lines)
    if start == 0 and (limit is None or limit >= total):
        return TextRange(text, total, 1, total, mtime, size)
    chosen = lines[start:start + limit] if limit is not None else lines[start:]
    return TextRange("\n".join(chosen), len(chosen), start + 1, total, mtime, size)


_prefixes: list[str] = []
_prefix_lock = threading.Lock()


def _line_prefixes(first: int, count: int) -> list[str]:
    """``["<n>\\t", ...]`` for lines first..first+count-1, from a cache grown on demand."""
    last = first + count
    if last > len(_prefixes) + 1:
        with _prefix_lock:
            if last > len(_prefixes) + 1:
                _prefixes.extend(f"{n}\t" for n in range(len(_prefixes) + 1, max(last, 2 * len(_prefixes)) + 1))
    return _prefixes[first - 1:last - 1]


def render_numbered(content: str, start_line: int) -> str:
    """``add_line_numbers`` for large outputs: same text, C-level concatenation."""
    lines = content.split("\n")
    return "\n".join(map(operator.add, _line_prefixes(start_line, len(lines)), lines))


def finish_text(rng: TextRange, offset: int | None, max_tokens: int) -> TextRange:
    """The token cap, then the numbered display text."""
    tokens = estimate_tokens(rng.content)
    if tokens > max_tokens:
        raise ToolError(
            f"File content ({tokens} tokens) exceeds maximum allowed tokens ({max_tokens}). {SIZE_TAIL}", wrap=False)
    if rng.num_lines:
        rng.rendered = fileio.to_display(render_numbered(rng.content, max(offset or 1, 1)))
    return rng


def load_text(path: str, offset: int | None, limit: int | None, max_tokens: int,
              sniff_ext: str | None = None, guard: Guard | None = None) -> TextRange:
    """A whole text Read in one call: binary sniffing (with ``sniff_ext``), range, token cap, numbering."""
    if sniff_ext is not None and fileio.sniff_binary_file(path):
        raise ToolError(binary_message(sniff_ext))
    return finish_text(read_text_range(path, offset, limit, guard), offset, max_tokens)


def _stream_range(fh: Any, start: int, limit: int, st: os.stat_result) -> TextRange:
    chosen: list[str] = []
    total = 0
    last_ended_with_newline = True
    for total, raw in enumerate(fh, 1):
        last_ended_with_newline = raw.endswith(b"\n")
        if start < total <= start + limit:
            if last_ended_with_newline:
                raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
            chosen.append(raw.decode("utf-8", errors="surrogateescape"))
    if total and last_ended_with_newline:
        total += 1  # the empty line after the final newline
        if start < total <= start + limit:
            chosen.append("")
    return TextRange("\n".join(chosen), len(chosen), start + 1, total, st.st_mtime_ns // 1_000_000, st.st_size)


def binary_message(ext: str) -> str:
    what = f"a binary {ext} file" if ext else "a binary file"
    return (f"This tool cannot read binary files. The file appears to be {what}. "
            "Please use appropriate tools for binary file analysis.")
