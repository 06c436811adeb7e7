"""``scan_shell``: a lexical pass of our own over the command text (quotes, ``$(…)``, backquotes, ``${…}``,
``$((…))``, process substitution, here-documents with quoted and unquoted delimiters, comments). It finds every place
the shell would run a command or expand something, also where bashlex does not look (inside ``${x:-$(…)}``, in an
unquoted here-document's body, in arithmetic). ``scan_expanding`` scans text as an arithmetic context expands it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache


@dataclass
class Scan:
    ok: bool = True
    subs: list[str] = field(default_factory=list)  # bodies of $(…), `…`, <(…), >(…) where the shell runs them
    arith: bool = False  # $((…)), $[…], ((…))
    param: bool = False  # $name, ${…} where the shell expands them
    quoted_code: bool = False  # $( or ` inside single quotes or a quoted here-document: code a builtin may run
    ansi_c: bool = False  # $'…'
    heredocs: list[tuple[str, bool, str]] = field(default_factory=list)  # (delimiter, quoted, body)
    quoted_heredoc_spans: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, bare delimiter)


class _ScanError(Exception):
    pass


class _Scanner:
    def __init__(self, s: str, out: Scan, top: bool = True):
        self.s, self.n, self.out, self.top = s, len(s), out, top
        self.pending: list[tuple[str, bool, bool]] = []

    def _literal_code(self, text: str) -> None:
        if "$(" in text or "`" in text or "$((" in text or "$[" in text:
            self.out.quoted_code = True

    def seq(self, i: int, stop: str | None) -> int:
        s = self.s
        depth = 0
        word_start = True
        while i < self.n:
            c = s[i]
            if stop == "`" and c == "`":
                return i + 1
            if c == "\\":
                i += 2
                word_start = False
                continue
            if c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    raise _ScanError("unterminated single quote")
                self._literal_code(s[i + 1:j])
                i, word_start = j + 1, False
                continue
            if c == '"':
                i, word_start = self.dquote(i + 1), False
                continue
            if c == "$":
                i, word_start = self.dollar(i), False
                continue
            if c == "`":
                j = self.seq(i + 1, "`")
                self.out.subs.append(s[i + 1:j - 1])
                i, word_start = j, False
                continue
            if c in "<>" and i + 1 < self.n and s[i + 1] == "(":
                j = self.seq(i + 2, ")")
                self.out.subs.append(s[i + 2:j - 1])
                i, word_start = j, False
                continue
            if s.startswith("<<", i) and not s.startswith("<<<", i):
                i, word_start = self.heredoc_op(i + 2), False
                continue
            if c == "#" and word_start:
                j = s.find("\n", i)
                i = self.n if j < 0 else j
                continue
            if c == "\n":
                i = self.bodies(i + 1)
                word_start = True
                continue
            if c == "(":
                if word_start and s.startswith("((", i):
                    self.out.arith = True
                depth += 1
            elif c == ")":
                if stop == ")" and depth == 0:
                    return i + 1
                depth = max(0, depth - 1)
            word_start = c in " \t;&|(){}!"
            i += 1
        if stop is not None:
            raise _ScanError(f"unterminated {stop}")
        if self.pending:
            self.bodies(self.n)
        return i

    def dquote(self, i: int) -> int:
        s = self.s
        while i < self.n:
            c = s[i]
            if c == "\\":
                i += 2
            elif c == '"':
                return i + 1
            elif c == "$":
                i = self.dollar(i)
            elif c == "`":
                j = self.seq(i + 1, "`")
                self.out.subs.append(s[i + 1:j - 1])
                i = j
            else:
                i += 1
        raise _ScanError("unterminated double quote")

    def dollar(self, i: int) -> int:
        s = self.s
        nxt = s[i + 1] if i + 1 < self.n else ""
        if s.startswith("$((", i):
            self.out.arith = True
            return self.seq(i + 2, ")")
        if nxt == "(":
            j = self.seq(i + 2, ")")
            self.out.subs.append(s[i + 2:j - 1])
            return j
        if nxt == "[":
            self.out.arith = True
            j = s.find("]", i)
            if j < 0:
                raise _ScanError("unterminated $[")
            _Scanner(s[i + 2:j], self.out, top=False).expanding_text()
            return j + 1
        if nxt == "{":
            self.out.param = True
            return self.brace(i + 2)
        if nxt == "'":
            self.out.ansi_c = True
            j = i + 2
            while j < self.n and s[j] != "'":
                j += 2 if s[j] == "\\" else 1
            if j >= self.n:
                raise _ScanError("unterminated $'")
            self._literal_code(s[i + 2:j])
            return j + 1
        if nxt == '"':
            return self.dquote(i + 2)
        if nxt and (nxt.isalnum() or nxt in "_@*#?-$!"):
            self.out.param = True
            return i + 2
        return i + 1

    def brace(self, i: int) -> int:
        """Inside ${…}: quotes are not trusted to stop anything (conservative)."""
        s = self.s
        depth = 1
        while i < self.n:
            c = s[i]
            if c == "\\":
                i += 2
                continue
            if c == '"':
                i = self.dquote(i + 1)
                continue
            if c == "$":
                i = self.dollar(i)
                continue
            if c == "`":
                j = self.seq(i + 1, "`")
                self.out.subs.append(s[i + 1:j - 1])
                i = j
                continue
            if c == "'":
                self._literal_code(s[i:])
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise _ScanError("unterminated ${")

    def heredoc_op(self, i: int) -> int:
        s = self.s
        strip = False
        if i < self.n and s[i] == "-":
            strip, i = True, i + 1
        while i < self.n and s[i] in " \t":
            i += 1
        start = i
        quoted = False
        delim = ""
        while i < self.n and s[i] not in " \t\n;&|<>()":
            c = s[i]
            if c in "'\"":
                quoted = True
                j = s.find(c, i + 1)
                if j < 0:
                    raise _ScanError("unterminated here-document delimiter")
                delim += s[i + 1:j]
                i = j + 1
                continue
            if c == "\\":
                quoted = True
                delim += s[i + 1:i + 2]
                i += 2
                continue
            delim += c
            i += 1
        if not delim:
            raise _ScanError("here-document without a delimiter")
        if quoted and self.top:
            self.out.quoted_heredoc_spans.append((start, i, delim))
        self.pending.append((delim, quoted, strip))
        return i

    def bodies(self, i: int) -> int:
        s = self.s
        for delim, quoted, strip in self.pending:
            lines: list[str] = []
            while i < self.n:
                j = s.find("\n", i)
                line = s[i:] if j < 0 else s[i:j]
                i = self.n if j < 0 else j + 1
                if (line.lstrip("\t") if strip else line) == delim:
                    break
                lines.append(line)
            body = "\n".join(lines)
            self.out.heredocs.append((delim, quoted, body))
            if quoted:
                self._literal_code(body)
            else:
                _Scanner(body, self.out, top=False).expanding_text()
        self.pending = []
        return i

    def expanding_text(self) -> None:
        """A here-document body (unquoted delimiter) or arithmetic text: only \\, $ and ` are special."""
        s = self.s
        i = 0
        while i < self.n:
            c = s[i]
            if c == "\\":
                i += 2
            elif c == "$":
                i = self.dollar(i)
            elif c == "`":
                j = self.seq(i + 1, "`")
                self.out.subs.append(s[i + 1:j - 1])
                i = j
            else:
                i += 1


@lru_cache(maxsize=2048)
def scan_shell(text: str) -> Scan:
    """Where ``text`` makes the shell run or expand something (cached: callers must not mutate the result)."""
    out = Scan()
    try:
        _Scanner(text, out).seq(0, None)
    except (_ScanError, RecursionError):
        out.ok = False
    return out


def scan_expanding(text: str) -> Scan:
    """``text`` as the shell would expand it in an arithmetic context (array subscripts of ``printf -v``)."""
    out = Scan()
    try:
        _Scanner(text, out, top=False).expanding_text()
    except (_ScanError, RecursionError):
        out.ok = False
    return out
