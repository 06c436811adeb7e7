"""``parse_command`` (bashlex) flattens a command line into simple commands — through lists (``&&``, ``||``,
``;``, ``&``, newlines), pipelines (each command knows what feeds its stdin), subshells, groups, loops and
command/process substitutions — keeping each word's literal value and source text, assignments, redirections and
here-document / here-string bodies. Anything bashlex cannot parse is "unparsed" (``ParsedCommand.ok`` false).
Also ``split_command`` (the sub-commands as source text, for the dialog) and ``fallback_parts`` (a crude split for
deny matching when the real parse fails).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from desktop_agent.shell.scan import scan_shell
from desktop_agent.shell.words import safe_assignment, strip_wrappers


@dataclass
class Redirect:
    op: str
    target: str | None  # None for fd duplication (2>&1) and here-documents
    dynamic: bool = False
    raw: str | None = None

    @property
    def is_output(self) -> bool:
        return ">" in self.op and self.target is not None


@dataclass
class SimpleCommand:
    argv: list[str]  # literal values (quotes removed), assignments excluded
    raw: list[str]  # source text of each argv word
    assignments: list[str]
    redirects: list[Redirect]
    dynamic: list[bool]  # per argv word: contains an expansion or substitution
    text: str
    stdin_script: str | None = None  # a here-document body or here-string fed on stdin
    stdin_kind: str = ""  # "", "heredoc", "herestring", "file", "pipe"
    pipe_from: "SimpleCommand | None" = None  # the command whose output is piped into this one (if simple)

    def stripped(self, any_env: bool) -> tuple[list[str], list[str], bool]:
        """argv/raw without leading env assignments and wrapper commands. The bool says whether every
        assignment could be stripped (``any_env`` strips all of them; otherwise only safe ones)."""
        clean = all(safe_assignment(a) for a in self.assignments)
        argv, raw = strip_wrappers(self.argv, self.raw)
        return argv, raw, (any_env or clean)


@dataclass
class ParsedCommand:
    ok: bool
    commands: list[SimpleCommand] = field(default_factory=list)
    error: str | None = None


def parse_command(command: str) -> ParsedCommand:
    """The flattened parse of ``command`` (cached: the result is shared, callers must not mutate it)."""
    return _parse_cached(command)


def _bashlex_text(command: str) -> str | None:
    """bashlex cannot parse a quoted here-document delimiter (``<<'EOF'``): the same text with the delimiter
    unquoted and padded to the same length (positions stay valid), or None when there is none."""
    spans = scan_shell(command).quoted_heredoc_spans
    if not spans:
        return None
    text = command
    for start, end, delim in sorted(spans, reverse=True):
        if len(delim) > end - start:
            return None
        text = text[:start] + delim.ljust(end - start) + text[end:]
    return text


@lru_cache(maxsize=2048)
def _parse_cached(command: str) -> ParsedCommand:
    from desktop_agent.shell.bashlex_tables import import_bashlex

    bashlex = import_bashlex()  # a missing parser is a start-up error, never a silent fallback; tables cached

    src = command
    try:
        trees = bashlex.parse(command)
    except Exception as exc:  # bashlex raises its own errors and sometimes plain ones
        alt = _bashlex_text(command)
        if alt is None:
            return ParsedCommand(False, error=str(exc) or type(exc).__name__)
        try:
            trees = bashlex.parse(alt)
            src = alt
        except Exception as exc2:
            return ParsedCommand(False, error=str(exc2) or type(exc2).__name__)
    out: list[SimpleCommand] = []
    try:
        for t in trees:
            _walk(t, src, out)
    except Exception as exc:  # an unexpected node shape (or nesting too deep): treat as unparsable
        return ParsedCommand(False, error=str(exc) or type(exc).__name__)
    return ParsedCommand(True, out)


def _word_info(node: Any, src: str, out: list[SimpleCommand]) -> tuple[str, str, bool]:
    dynamic = False
    for part in getattr(node, "parts", None) or []:
        kind = part.kind
        if kind in ("commandsubstitution", "processsubstitution"):
            dynamic = True
            _walk(part.command, src, out)
        elif kind == "tilde":
            pass
        else:
            dynamic = True
    raw = src[node.pos[0]:node.pos[1]]
    if "`" in raw or "$(" in raw or "${" in raw or "$'" in raw or '$"' in raw or re.search(r"\$[\w@*#?!$-]", raw):
        # a `$` inside single quotes is literal: only when the word has no single-quoted part can we be sure
        dynamic = dynamic or "'" not in raw or "$'" in raw or '"' in raw or "`" in raw
    return node.word, raw, dynamic


def _heredoc_body(part: Any) -> str:
    hd = getattr(part, "heredoc", None)
    value = getattr(hd, "value", "") if hd is not None else ""
    lines = value.split("\n")
    return "\n".join(lines[:-1]) if len(lines) > 1 else ""


def _walk(node: Any, src: str, out: list[SimpleCommand]) -> None:
    kind = node.kind
    if kind == "command":
        argv: list[str] = []
        raw: list[str] = []
        dyn: list[bool] = []
        assigns: list[str] = []
        redirects: list[Redirect] = []
        pending: list[SimpleCommand] = []
        stdin_script, stdin_kind = None, ""
        for part in node.parts:
            if part.kind == "assignment" and not argv:
                assigns.append(part.word)
                for sub in getattr(part, "parts", None) or []:
                    if sub.kind in ("commandsubstitution", "processsubstitution"):
                        _walk(sub.command, src, pending)
            elif part.kind in ("word", "assignment"):
                w, r, d = _word_info(part, src, pending)
                argv.append(w)
                raw.append(r)
                dyn.append(d)
            elif part.kind == "redirect":
                target = part.output
                if part.type in ("<<", "<<-"):
                    redirects.append(Redirect(part.type, None))
                    stdin_script, stdin_kind = _heredoc_body(part), "heredoc"
                elif isinstance(target, int) or target is None:
                    redirects.append(Redirect(part.type, None))
                else:
                    w, r, d = _word_info(target, src, pending)
                    if part.type == "<<<":
                        redirects.append(Redirect(part.type, None))
                        stdin_script, stdin_kind = (None if d else w), "herestring"
                    elif part.type in (">&", "<&") and w.isdigit() or w == "-":
                        redirects.append(Redirect(part.type, None))
                    else:
                        redirects.append(Redirect(part.type, w, d, r))
                        if part.type == "<":
                            stdin_kind = "file"
            else:
                _walk(part, src, pending)
        out.append(SimpleCommand(argv, raw, assigns, redirects, dyn, src[node.pos[0]:node.pos[1]],
                                 stdin_script=stdin_script, stdin_kind=stdin_kind))
        out.extend(pending)
        return
    if kind == "pipeline":
        prev: SimpleCommand | None = None
        first = True
        for part in node.parts:
            if part.kind == "pipe":
                continue
            start = len(out)
            _walk(part, src, out)
            head = out[start] if len(out) > start else None
            if not first and head is not None:
                if part.kind == "command":
                    head.stdin_kind = head.stdin_kind or "pipe"
                    head.pipe_from = prev
                else:  # a compound fed by a pipe: every command in it may read the stream
                    for c in out[start:]:
                        c.stdin_kind = c.stdin_kind or "pipe"
            prev = head if part.kind == "command" else None
            first = False
        return
    if kind in ("operator", "pipe", "reservedword", "heredoc", "tilde", "parameter"):
        return
    if kind == "word":
        _word_info(node, src, out)
        return
    if kind == "redirect":  # on a compound: (...) > file
        target = node.output
        if not isinstance(target, int) and target is not None and node.type not in ("<<", "<<-", "<<<"):
            w, r, d = _word_info(target, src, out)
            out.append(SimpleCommand([], [], [], [Redirect(node.type, w, d, r)], [], src[node.pos[0]:node.pos[1]]))
        return
    children = list(getattr(node, "parts", None) or []) + list(getattr(node, "list", None) or [])
    children += list(getattr(node, "redirects", None) or [])
    if kind == "function":
        body = getattr(node, "body", None)
        if body is not None:
            children.append(body)
    for child in children:
        if isinstance(child, list):
            for c in child:
                _walk(c, src, out)
        elif hasattr(child, "kind"):
            _walk(child, src, out)


def split_command(command: str) -> list[str]:
    """The sub-commands of a command line as source text (for the dialog); the whole line when unparsable."""
    parsed = parse_command(command)
    if not parsed.ok:
        return [command]
    return [c.text for c in parsed.commands if c.argv or c.redirects] or [command]


def fallback_parts(command: str) -> list[SimpleCommand]:
    """A crude split for deny matching when the real parse fails (deny must still hold)."""
    out: list[SimpleCommand] = []
    for piece in re.split(r"&&|\|\||[;&|\n]|\$\(|`|\)|\(|<<<|\{|\}", command):
        piece = piece.strip()
        if not piece:
            continue
        try:
            words = shlex.split(piece)
        except ValueError:
            words = piece.split()
        assigns = []
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            assigns.append(words.pop(0))
        out.append(SimpleCommand(words, list(words), assigns, [], [False] * len(words), piece))
    return out
