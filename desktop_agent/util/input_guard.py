"""Tool input no schema check should ever see, and JSON depth measured without recursion (issue 12 item 7).

Owns ``hostile_input_error`` (run by ``run_tool_use`` before pydantic: over-deep input, a NUL in a
path parameter, a path parameter longer than any path), ``MAX_INPUT_DEPTH`` (how many levels of
objects and arrays a tool input may have; deeper input is an InputValidationError), ``too_deep``
(the first over-deep path of a Python value, iterative), ``clip_json_text`` (JSON text whose values
nested deeper than a limit are replaced by a marker string, so ``json.loads`` never recurses that
far: the model's stream parser uses it) and ``clip_depth`` (the same on a Python value, for writers
that ``json.dumps`` what they were given), and ``fix_surrogates`` (lone UTF-16 surrogates, which
JSON can carry and no UTF-8 writer can encode, replaced by U+FFFD).

Python's ``json`` recurses once per level and raises ``RecursionError`` near 1,000 levels; a model
that sends a tool input nested 10,000 levels deep must get an error tool_result, not a crash.
"""

from __future__ import annotations

import json
import re
from typing import Any


MAX_INPUT_DEPTH = 64
"""Levels of objects/arrays a tool input may have (the input object itself is level 1)."""

CLIPPED_MARKER = "[value nested too deeply: cut]"

# A JSON string (escapes included) or one bracket; everything else is skipped over by finditer.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def too_deep(value: Any, limit: int = MAX_INPUT_DEPTH) -> list[Any] | None:
    """The path (keys and indexes) to the first container deeper than ``limit``, or None.

    ``value`` itself is level 1 when it is a dict or a list. Iterative: safe on any depth, and on
    self-referencing values (they count as infinitely deep)."""
    if not isinstance(value, (dict, list, tuple)):
        return None
    stack: list[tuple[Any, int, list[Any]]] = [(value, 1, [])]
    while stack:
        node, depth, path = stack.pop()
        if depth > limit:
            return path
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            if isinstance(child, (dict, list, tuple)):
                stack.append((child, depth + 1, path + [key]))
    return None


def clip_json_text(text: str, limit: int) -> str:
    """``text`` with every object/array nested deeper than ``limit`` replaced by ``CLIPPED_MARKER``.

    Text with at most ``limit`` brackets is returned as is (the common case costs two ``count``s).
    An unterminated over-deep container is dropped with the rest of the text, so the result stays
    invalid JSON (``json.loads`` raises ``ValueError``, not ``RecursionError``)."""
    if text.count("{") + text.count("[") <= limit:
        return text
    out: list[str] = []
    last = 0
    depth = 0
    cut_start = -1
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok[0] == '"':
            continue
        if tok in "[{":
            depth += 1
            if depth == limit + 1 and cut_start < 0:
                cut_start = m.start()
        else:
            if depth == limit + 1 and cut_start >= 0:
                out.append(text[last:cut_start])
                out.append(json.dumps(CLIPPED_MARKER))
                last = m.end()
                cut_start = -1
            depth -= 1
    if cut_start >= 0:
        out.append(text[last:cut_start])
        return "".join(out)
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def clip_depth(value: Any, limit: int = MAX_INPUT_DEPTH) -> Any:
    """A copy of ``value`` with containers deeper than ``limit`` replaced by ``CLIPPED_MARKER``
    (``value`` itself when nothing is too deep). Iterative."""
    if too_deep(value, limit) is None:
        return value

    def empty(node: Any) -> Any:
        return {} if isinstance(node, dict) else []

    root = empty(value)
    stack: list[tuple[Any, Any, int]] = [(value, root, 1)]
    while stack:
        src, dst, depth = stack.pop()
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for key, child in items:
            if isinstance(child, (dict, list, tuple)):
                new: Any = CLIPPED_MARKER if depth + 1 > limit else empty(child)
                if not isinstance(new, str):
                    stack.append((child, new, depth + 1))
            else:
                new = child
            if isinstance(dst, dict):
                dst[key] = new
            else:
                dst.append(new)
    return root


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def has_surrogate_escape(json_text: str) -> bool:
    """JSON text with a ``\\udXXX`` escape, which may decode to a lone surrogate (cheap pre-check)."""
    return "\\u" in json_text and _SURROGATE_ESCAPE.search(json_text) is not None


def fix_surrogates(value: Any) -> Any:
    """``value`` with lone UTF-16 surrogates replaced by U+FFFD (and split pairs joined), in every string,
    key and nested value. JSON may carry ``"\\ud800"``; Python decodes it to a string that no UTF-8
    writer (stdout, the transcript, the next request) can encode, and ``os`` functions would turn
    ``\\udcXX`` into a raw byte of a file name. Iterative; ``value`` itself when nothing needs fixing."""

    def fix(text: str) -> str:
        if _SURROGATE.search(text) is None:
            return text
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")

    if isinstance(value, str):
        return fix(value)
    if not isinstance(value, (dict, list)):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        src, dst = stack.pop()
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for key, child in items:
            if isinstance(child, (dict, list)):
                new: Any = {} if isinstance(child, dict) else []
                stack.append((child, new))
            else:
                new = fix(child) if isinstance(child, str) else child
            if isinstance(dst, dict):
                dst[fix(key) if isinstance(key, str) else key] = new
            else:
                dst.append(new)
    return root


# Parameters that name a file system path: a NUL character in one can never name a file.
PATH_PARAMETERS = ("file_path", "path", "notebook_path")
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux; a longer path names no file (and its error would echo it)


def hostile_input_error(tool_name: str, raw: Any) -> str | None:
    """The InputValidationError text (SPEC §3.4 shape, unwrapped: the caller puts it in <tool_use_error>)
    for input no schema check should ever see, or None.

    Checked before pydantic and before anything ``json.dumps`` the input: a value nested more than
    ``MAX_INPUT_DEPTH`` levels (Python's json and pydantic recurse per level), and a NUL character in
    a path parameter (``os.stat`` and ``execve`` raise ``ValueError: embedded null byte`` on it), and a
    path parameter longer than ``MAX_PATH_CHARS`` (megabytes the OS error would echo back)."""
    issues: list[str] = []
    path = too_deep(raw, MAX_INPUT_DEPTH)
    if path is not None:
        where = f"The parameter `{path[0]}`" if path and isinstance(path[0], str) else "The input"
        issues.append(f"{where} is nested more than {MAX_INPUT_DEPTH} levels deep")
    elif isinstance(raw, dict):
        for key in PATH_PARAMETERS:
            value = raw.get(key)
            if not isinstance(value, str):
                continue
            if "\x00" in value:
                issues.append(f"The parameter `{key}` contains a NUL character (\\0), which no path can contain")
            elif len(value) > MAX_PATH_CHARS:
                issues.append(f"The parameter `{key}` is {len(value)} characters long; a path can be at most "
                              f"{MAX_PATH_CHARS}")
    if not issues:
        return None
    word = "issue" if len(issues) == 1 else "issues"
    return f"InputValidationError: {tool_name} failed due to the following {word}:\n" + "\n".join(issues)
