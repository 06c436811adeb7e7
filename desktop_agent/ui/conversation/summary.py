"""What a tool call shows, as text: its key argument (a path relative to the folder, the command),
its result as plain text and a word or two of summary for the collapsed card. No Qt: texts go
through the injected ``translate`` (``QCoreApplication.translate`` in the app, English in tests).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Callable

Translate = Callable[..., str]  # (context, source, disambiguation=None, n=-1) -> text, as QCoreApplication's


def english(context: str, source: str, disambiguation: str | None = None, n: int = -1) -> str:
    """No translation loaded: the source text with ``%n`` filled in, as Qt's ``translate`` does (the
    "(s)" plurals then fall back to English in ``_plural``)."""
    return source.replace("%n", str(n)) if n >= 0 else source


def rel_path(path: str, cwd: str | None) -> str:
    if cwd and path:
        try:
            rel = os.path.relpath(path, cwd)
            if not rel.startswith(".."):
                return rel
        except ValueError:
            pass
    return path


def key_argument(name: str, inp: dict[str, Any], cwd: str | None) -> str:
    """The one argument that says what a call does: a path relative to the folder, or the command."""
    for key in ("file_path", "path", "notebook_path"):
        if inp.get(key):
            arg = rel_path(str(inp[key]), cwd)
            if name in ("Grep", "Glob") and inp.get("pattern"):
                return str(inp["pattern"]) if arg in (".", "") else f"{inp['pattern']}  in {arg}"
            return arg
    for key in ("command", "pattern", "url", "query", "prompt", "description"):
        if inp.get(key):
            return str(inp[key]).replace("\n", " ⏎ ")
    return ""


def result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                parts.append(block.get("text") or (f"[{block.get('type')}]" if block.get("type") != "text" else ""))
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, indent=2, ensure_ascii=False)


def _plural(translated: str, n: int, one: str, many: str) -> str:
    """English fallback for Qt's "%n item(s)" plurals when no translation is loaded."""
    if "(s)" in translated:
        return f"{n} {one if n == 1 else many}"
    return translated


def _patch_counts(patch: Any) -> tuple[int, int]:
    """Lines added and removed by a structured patch (hunks in camelCase or snake_case)."""
    added = removed = 0
    for hunk in patch or []:
        for line in hunk.get("lines", []):
            line = str(line)
            if line.startswith("+"):
                added += 1
            elif line.startswith("-"):
                removed += 1
    return added, removed


def short_summary(name: str, content: str, data: dict[str, Any] | None, is_error: bool,
                  translate: Translate = english) -> str:
    """A word or two for the collapsed card (✓ 12 lines, ✓ +1 −1, ✗ first line of the error)."""
    if is_error:
        first = re.sub(r"</?tool_use_error>", "", content).strip().splitlines()
        return first[0] if first else translate("ConversationView", "error")
    if data and (data.get("structuredPatch") is not None):
        added, removed = _patch_counts(data.get("structuredPatch"))
        if data.get("type") == "create" and not added:
            added = len(str(data.get("content", "")).splitlines())
        return f"+{added} \u2212{removed}"
    if name == "Read":
        lines = content.splitlines()
        if lines and re.fullmatch(r"\d+\t", lines[-1]):  # the numbered empty line after a final newline
            lines.pop()
        n = len(lines)
        return _plural(translate("ConversationView", "%n line(s)", None, n), n, "line", "lines")
    if name in ("Grep", "Glob"):
        m = re.match(r"Found (\d+) (file|match|line)", content)
        if m:
            n = int(m.group(1))
            if m.group(2) == "file":
                return _plural(translate("ConversationView", "%n file(s)", None, n), n, "file", "files")
            return _plural(translate("ConversationView", "%n match(es)", None, n), n, "match", "matches")
        if content.startswith("No "):
            return translate("ConversationView", "no matches")
        n = len([x for x in content.splitlines() if x.strip()])
        return _plural(translate("ConversationView", "%n result(s)", None, n), n, "result", "results")
    if name == "Bash":
        lines = [x for x in content.splitlines() if x.strip()]
        if not lines or content.startswith("(Bash completed with no output"):
            return translate("ConversationView", "no output")
        n = len(lines)
        return _plural(translate("ConversationView", "%n line(s)", None, n), n, "line", "lines")
    return translate("ConversationView", "done")
