"""Word-level shell knowledge: assignments (harmless or not), a command word's base name, the unquoted part of a
word, glob and brace detection, bash brace expansion, option matching, and wrapper stripping (``strip_wrappers``
for allow-rule matching, SPEC App. B §B.2; ``strip_for_deny`` for deny and ask rules).
"""

from __future__ import annotations

import re

from desktop_agent.shell.vocabulary import GLOB_CHARS, RUNNER_ENV, RUNNER_ENV_PREFIX, SAFE_ENV_VARS, WRAPPERS


def safe_assignment(assign: str) -> bool:
    name, _, value = assign.partition("=")
    return name in SAFE_ENV_VARS and "$" not in value and "`" not in value


def runner_env(name: str) -> bool:
    name = name.split("[", 1)[0].rstrip("+")
    return name in RUNNER_ENV or name.startswith(RUNNER_ENV_PREFIX)


def command_name_base(word: str) -> str:
    return word.rsplit("/", 1)[-1] if "/" in word and not word.endswith("/") else word


def unquoted_text(raw: str) -> str:
    """The characters of a word's source text that are outside quotes (escaped characters dropped)."""
    out, i, q = [], 0, ""
    while i < len(raw):
        c = raw[i]
        if q:
            if c == q:
                q = ""
            elif c == "\\" and q == '"':
                i += 1
        elif c in "'\"":
            q = c
        elif c == "\\":
            i += 1
        else:
            out.append(c)
        i += 1
    return "".join(out)


def has_glob(raw: str) -> bool:
    return GLOB_CHARS.search(unquoted_text(raw)) is not None


def has_brace(raw: str) -> bool:
    u = unquoted_text(raw)
    return "{" in u and "}" in u and ("," in u or ".." in u)


def brace_expand(word: str, limit: int = 64) -> list[str]:
    """Bash brace expansion of a (quote-free) word: ``{a,b}x`` → ``ax bx``, ``{1..3}``; capped at ``limit``."""
    m = None
    depth = 0
    start = -1
    for i, c in enumerate(word):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                body = word[start + 1:i]
                alts = _split_top(body)
                if len(alts) > 1:
                    m = (start, i, alts)
                    break
                r = re.fullmatch(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?", body)
                if r:
                    a, b = r.group(1), r.group(2)
                    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
                        lo, hi = int(a), int(b)
                        step = 1 if hi >= lo else -1
                        seq = [str(x) for x in range(lo, hi + step, step)][:limit]
                    elif a.isalpha() and b.isalpha():
                        step = 1 if ord(b) >= ord(a) else -1
                        seq = [chr(x) for x in range(ord(a), ord(b) + step, step)][:limit]
                    else:
                        seq = [body]
                    m = (start, i, seq)
                    break
    if m is None:
        return [word]
    s, e, alts = m
    out: list[str] = []
    for alt in alts:
        for w in brace_expand(word[:s] + alt + word[e + 1:], limit):
            out.append(w)
            if len(out) >= limit:
                return out
    return out


def _split_top(body: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for c in body:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    return parts


def skip_opts(argv: list[str], i: int, with_value: set[str] | frozenset[str]) -> int:
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if argv[i] == "--":
            return i + 1
        if argv[i] in with_value:
            i += 1
        i += 1
    return i


def strip_wrappers(argv: list[str], raw: list[str]) -> tuple[list[str], list[str]]:
    """Drop ``timeout``, ``time``, ``nice``, ``nohup``, ``stdbuf``, ``command``, ``builtin``, ``noglob`` and bare
    ``xargs`` (with their options) from the front, repeatedly (for allow-rule matching, SPEC App. B §B.2)."""
    changed = True
    while changed and argv:
        changed = False
        head = argv[0]
        i = 0
        if head == "timeout":
            i = skip_opts(argv, 1, {"-s", "--signal", "-k", "--kill-after"})
            i += 1  # the duration
        elif head == "time":
            i = skip_opts(argv, 1, set())
        elif head == "nice":
            i = skip_opts(argv, 1, {"-n", "--adjustment"})
        elif head == "stdbuf":
            i = skip_opts(argv, 1, {"-i", "-o", "-e"})
        elif head in ("nohup", "builtin", "noglob"):
            i = 1
        elif head == "command":
            if len(argv) > 1 and argv[1] in ("-v", "-V"):
                break
            i = skip_opts(argv, 1, set())
        elif head == "xargs" and len(argv) > 1 and not argv[1].startswith("-"):
            i = 1
        if 0 < i < len(argv):
            argv, raw = argv[i:], raw[i:]
            changed = True
    return argv, raw


def strip_for_deny(argv: list[str], raw: list[str]) -> tuple[list[str], list[str]]:
    """Every wrapper with its options and ``VAR=`` arguments, and a path on the command name (``/bin/rm`` →
    ``rm``): deny and ask rules must not be dodged by a prefix."""
    changed = True
    while changed and argv:
        changed = False
        argv, raw = strip_wrappers(argv, raw)
        head = command_name_base(argv[0]) if argv else ""
        if head in WRAPPERS:
            i = skip_opts(argv, 1, WRAPPERS[head])
            while i < len(argv) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[i]):
                i += 1
            if head == "timeout" or head == "chroot" or head == "flock" or head == "chrt":
                i += 1  # the duration / the new root / the lock file / the priority
            elif head == "taskset" and i < len(argv) and argv[i - 1:i] != ["-c"]:
                i += 1  # the mask
            if 0 < i < len(argv):
                argv, raw, changed = argv[i:], raw[i:], True
    if argv and "/" in argv[0] and not any(ch.isspace() for ch in argv[0]):
        base = argv[0].rsplit("/", 1)[1]
        if base:
            argv, raw = [base, *argv[1:]], [base, *raw[1:]]
    return argv, raw


def long_opt_hits(a: str, opts: tuple[str, ...]) -> bool:
    """``a`` is one of ``opts`` (also ``--opt=value`` and git's unambiguous abbreviations such as ``--out=``)."""
    if not a.startswith("--"):
        return False
    name = a.split("=", 1)[0]
    return any(name == o or (len(name) >= 5 and o.startswith(name)) for o in opts if o.startswith("--"))


def short_flag(args: list[str], letters: str) -> bool:
    return any(a.startswith("-") and not a.startswith("--") and any(c in a[1:] for c in letters) for a in args
               if a != "-")
