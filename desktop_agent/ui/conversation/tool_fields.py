"""What an expanded tool card shows, without Qt: the tool's name as a person reads it, its input as fields and the
failure line of its result.

- ``display_tool_name``: an MCP tool ``mcp__demo__echo`` reads ``demo · echo`` (the server, then the tool; the
  server is the part before the first ``__`` after ``mcp__``, as the reference splits it); built-in names as they are.
- ``input_fields``: the input as ``key: value`` rows in the input's order; strings as they are, other values as
  compact JSON (objects and arrays indented); a value that has a newline or is long is a *block* (shown under its
  key, monospace, wrapped) — never cut.
- ``exit_line``: a failed call's first line when it is the exit line (``Exit code 2``) or the error's first line,
  and the rest of the result: the card shows that line in the error colour and the output in the normal one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

MCP_PREFIX = "mcp__"
SEPARATOR = " · "
BLOCK_CHARS = 60  # a value longer than this is shown under its key

_ERROR_TAGS = re.compile(r"</?tool_use_error>")


def mcp_parts(name: str) -> tuple[str, str] | None:
    """``(server, tool)`` of an MCP tool name (``mcp__server__tool``), None for any other name."""
    if not name.startswith(MCP_PREFIX):
        return None
    rest = name[len(MCP_PREFIX):]
    server, sep, tool = rest.partition("__")
    if not sep or not server or not tool:
        return None
    return server, tool


def display_tool_name(name: str) -> str:
    """``demo · echo`` for ``mcp__demo__echo``; any other name unchanged."""
    parts = mcp_parts(name)
    return SEPARATOR.join(parts) if parts else name


@dataclass(frozen=True)
class Field:
    key: str
    text: str
    block: bool  # shown under its key (multi-line or long), else beside it


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)) and value:
        return json.dumps(value, indent=2, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def input_fields(inp: Any) -> list[Field]:
    """The input as fields, in its own order. Not an object (a malformed call): one field ``input``."""
    if not isinstance(inp, dict):
        text = _value_text(inp)
        return [Field("input", text, True)]
    out = []
    for key, value in inp.items():
        text = _value_text(value)
        out.append(Field(str(key), text, "\n" in text or len(text) > BLOCK_CHARS))
    return out


def exit_line(result: str, is_error: bool) -> tuple[str | None, str]:
    """``(line, rest)``: for a failed call the line to show in the error colour — ``Exit code N`` when the result
    starts with it, else the error's first line — and the rest of the result; for a call that worked ``(None,
    result)``."""
    if not is_error:
        return None, result
    text = _ERROR_TAGS.sub("", result).strip("\n")
    first, _, rest = text.partition("\n")
    if not first.strip():
        return None, text
    return first.strip(), rest


__all__ = ["Field", "display_tool_name", "exit_line", "input_fields", "mcp_parts"]
