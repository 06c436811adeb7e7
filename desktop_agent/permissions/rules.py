"""Permission rule syntax and matching (SPEC §4.6, App. B §B.2).

- ``parse_rule`` turns ``Tool`` / ``Tool(content)`` into a ``RuleValue`` (``Tool(*)`` and ``Tool()`` are whole-tool).
- ``bash_pattern_matches`` matches a Bash rule's content against one (already split and normalized)
  sub-command: ``*`` anywhere (also across spaces), a trailing `` *`` is a word boundary (``ls *`` matches
  ``ls`` and ``ls -la`` but not ``lsof``), the legacy ``:*`` is the same but only at the very end.
- ``PathPattern`` compiles a Read/Edit rule's content (gitignore syntax) against its roots: ``//abs``,
  ``~/home``, ``/relative-to-settings-source``, ``./x`` and ``x`` relative to cwd; bare names match at any
  depth; a single-segment pattern (``src/**``) is anchored for allow but any depth for deny/ask.
- ``CompiledRule`` keeps a ``PermissionRule`` together with its compiled matcher; compiling is cached so a
  decision over hundreds of rules stays well under a millisecond. ``RuleSource`` is what a lookup reads of a
  holder of compiled rules (``context.PermissionContext``).

Matching for deny/ask rules is deliberately *broader* than for allow rules: deny/ask path patterns match
case-insensitively on NFKC-normalized text with zero-width characters removed, allow patterns match exactly.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Protocol

from desktop_agent.core.permission import PermissionRule, RuleBehavior, RuleValue

# Tools whose rule content is a path (gitignore syntax).
READ_PATH_TOOLS = frozenset({"Read", "Grep", "Glob", "LS", "NotebookRead"})
EDIT_PATH_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
# Path rules written on these names are accepted but never consulted (App. B §B.2).
INERT_PATH_RULE_TOOLS = frozenset({"Write", "Glob", "MultiEdit"})
# Primary input fields that cannot be used as ``Tool(param:value)`` parameter rules.
PRIMARY_FIELDS = frozenset({"command", "file_path", "path", "url"})

_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)


def fold(text: str) -> str:
    """NFKC, zero-width characters removed, case-folded: the form deny/ask matching compares."""
    return unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH).casefold()


# --------------------------------------------------------------------------- parsing
_RULE_RE = re.compile(r"^\s*([^()\s]+)\s*\((.*)\)\s*$", re.S)


def parse_rule(text: str) -> RuleValue:
    """``"Bash(npm test:*)"`` → RuleValue(tool_name="Bash", rule_content="npm test:*")."""
    text = text.strip()
    m = _RULE_RE.match(text)
    if not m:
        return RuleValue(tool_name=text)
    name, content = m.group(1), m.group(2)
    content = content.replace("\\(", "(").replace("\\)", ")")
    if content.strip() in ("", "*"):
        return RuleValue(tool_name=name)
    return RuleValue(tool_name=name, rule_content=content)


def split_rule_list(values: list[str] | str | None) -> list[str]:
    """CLI lists: ``["Bash(git log *),Edit", "Read"]`` → each rule once (commas/whitespace outside parens)."""
    if not values:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        depth, cur = 0, ""
        for ch in value:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            if depth == 0 and (ch == "," or ch.isspace()):
                if cur.strip():
                    out.append(cur.strip())
                cur = ""
                continue
            cur += ch
        if cur.strip():
            out.append(cur.strip())
    return out


# --------------------------------------------------------------------------- tool names
def mcp_rule_name(rule_tool: str) -> str:
    """An ``mcp__<server>[__<tool>]`` rule with the server and tool named as the tools are: each character
    outside ``A-Za-z0-9_-`` (and ``*``) becomes ``_``, so ``mcp__my.fs`` — the server as configured — names
    the tools ``mcp__my_fs__…`` it really has."""
    if not rule_tool.startswith("mcp__"):
        return rule_tool
    server, sep, tool = rule_tool[5:].partition("__")
    return "mcp__" + _MCP_UNSAFE.sub("_", server) + sep + _MCP_UNSAFE.sub("_", tool)


_MCP_UNSAFE = re.compile(r"[^A-Za-z0-9_*-]")


# The tool names of the reference agent and ours. Names are case-sensitive (``bash`` names no tool); a deny or ask
# rule that spells one of these in another case is read as that tool's rule when it is loaded (``canonical_tool_name``,
# ``settings``), so it is never silently inert; an allow rule in the wrong case is skipped.
KNOWN_TOOL_NAMES = frozenset({
    "Agent", "Bash", "BashOutput", "Edit", "ExitPlanMode", "Glob", "Grep", "KillBash", "KillShell", "LS", "MultiEdit",
    "NotebookEdit", "NotebookRead", "Read", "Skill", "SlashCommand", "Task", "TodoWrite", "WebFetch", "WebSearch",
    "Write",
})
_KNOWN_FOLDED = {n.casefold(): n for n in KNOWN_TOOL_NAMES}


def canonical_tool_name(name: str) -> str | None:
    """The known tool ``name`` spells in another case (``bash`` → ``Bash``); None when it names none or is exact."""
    known = _KNOWN_FOLDED.get(name.strip().casefold())
    return known if known is not None and known != name.strip() else None


def tool_name_matches(rule_tool: str, tool_name: str, behavior: str) -> bool:
    """Exact names; ``mcp__server`` covers its tools; globs (``*``, ``mcp__*``) for deny/ask, and for
    allow only after a literal ``mcp__<server>__``. MCP names are compared as normalised (``mcp_rule_name``)."""
    rule_tool = mcp_rule_name(rule_tool)
    if rule_tool == tool_name:
        return True
    if rule_tool.startswith("mcp__") and "*" not in rule_tool and rule_tool.count("__") == 1:
        return tool_name.startswith(rule_tool + "__")
    if "*" in rule_tool:
        if behavior == "allow":
            m = re.match(r"^mcp__[^_*]+(?:_[^_*]+)*__", rule_tool)
            if not m or "*" in m.group(0):
                return False
        regex = "^" + ".*".join(re.escape(p) for p in rule_tool.split("*")) + "$"
        return re.match(regex, tool_name) is not None
    return False


# --------------------------------------------------------------------------- Bash patterns
@lru_cache(maxsize=8192)
def _bash_regex(pattern: str) -> re.Pattern[str]:
    p = pattern.strip()
    optional_tail = False
    if p.endswith(":*"):
        p = p[:-2].rstrip()
        optional_tail = True
    elif p.endswith(" *") and not p.endswith("\\ *"):
        p = p[:-2].rstrip()
        optional_tail = True
    parts: list[str] = []
    i = 0
    buf = ""
    while i < len(p):
        ch = p[i]
        if ch == "\\" and i + 1 < len(p) and p[i + 1] == "*":
            buf += "*"
            i += 2
            continue
        if ch == "*":
            parts.append(re.escape(buf))
            parts.append(".*")
            buf = ""
        else:
            buf += ch
        i += 1
    parts.append(re.escape(buf))
    regex = "".join(parts)
    if optional_tail:
        regex += r"(?:\s.*)?" if regex else ".*"
    return re.compile(regex, re.S)


def bash_pattern_matches(pattern: str, command: str) -> bool:
    """One Bash rule content against one normalized sub-command (full match)."""
    return _bash_regex(pattern).fullmatch(command.strip()) is not None


# --------------------------------------------------------------------------- path patterns
def _glob_to_regex(pat: str) -> str:
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        ch = pat[i]
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            j = pat.find("]", i + 2 if i + 1 < n and pat[i + 1] in "!^" else i + 1)
            if j == -1:
                out.append(re.escape(ch))
                i += 1
            else:
                body = pat[i + 1:j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j + 1
        elif ch == "\\" and i + 1 < n:
            out.append(re.escape(pat[i + 1]))
            i += 2
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)


def normalize_windows(content: str) -> str:
    """``C:\\x\\y`` → ``/c/x/y``."""
    m = re.match(r"^([A-Za-z]):[\\/]", content)
    if m:
        content = "/" + m.group(1).lower() + "/" + content[3:]
        content = "/" + content  # absolute from the root: //c/x
    return content.replace("\\", "/") if m else content


@dataclass(frozen=True)
class PathPattern:
    """A compiled Read/Edit path rule: matches absolute paths."""

    raw: str
    root: str
    anchored: bool
    regex: re.Pattern[str]
    folded: bool  # deny/ask: case-insensitive on folded text
    root_folded: str = ""
    glob: str = ""  # the gitignore pattern relative to ``root`` (for ripgrep exclusions)

    def matches(self, abs_path: str, folded_path: str | None = None) -> bool:
        """``folded_path``: ``fold(abs_path)`` when the caller already has it (one fold per decision)."""
        return self.match(abs_path, folded_path) is not None

    def match(self, abs_path: str, folded_path: str | None = None) -> re.Match[str] | None:
        if self.folded:
            path = folded_path if folded_path is not None else fold(abs_path)
            root = self.root_folded
        else:
            path, root = abs_path, self.root
        if root == "/":
            rel = path.lstrip("/")
        elif path == root:
            rel = ""
        elif path.startswith(root.rstrip("/") + "/"):
            rel = path[len(root.rstrip("/")) + 1:]
        elif not self.anchored and self.folded:
            rel = path.lstrip("/")  # unanchored deny/ask patterns fire anywhere; allow stays under its root
        else:
            return None
        return self.regex.fullmatch(rel)


@lru_cache(maxsize=8192)
def compile_path_pattern(content: str, behavior: str, source_root: str, cwd: str, home: str) -> PathPattern:
    c = normalize_windows(content.strip())
    explicit = True
    if c.startswith("//"):
        root, pat = "/", c[2:].lstrip("/")
    elif c == "~" or c.startswith("~/"):
        root, pat = home, c[2:]
    elif c.startswith("/"):
        root, pat = source_root, c[1:]
    elif c.startswith("./"):
        root, pat = cwd, c[2:]
    else:
        root, pat = cwd, c
        explicit = False
    pat = pat.rstrip("/") if pat not in ("", "/") else ""
    while pat.startswith("./"):
        pat = pat[2:]
    anchored = True
    if not explicit:
        stem = re.sub(r"(/\*\*?)+$", "", pat)
        if "/" not in pat:
            anchored = False  # bare name: any depth
        elif "/" not in stem and behavior in ("deny", "ask"):
            anchored = False  # single-segment deny/ask: any depth
    folded = behavior in ("deny", "ask")
    glob = pat
    if folded:
        pat = fold(pat)
    body = _glob_to_regex(pat) if pat else ""
    if body:
        regex = ("(?:.*/)?" if not anchored else "") + body + "(?:/.*)?"
    else:
        regex = ".*"
    root = os.path.normpath(root)
    return PathPattern(content, root, anchored, re.compile(regex, re.S | (re.IGNORECASE if folded else 0)), folded,
                       fold(root), glob)


# --------------------------------------------------------------------------- compiled rules
def source_root_for(rule: PermissionRule, project_dir: str, cwd: str, user_dir: str) -> str:
    """What a leading ``/`` in a path rule is relative to, for this rule's source."""
    if rule.source == "projectSettings":
        return project_dir
    if rule.source == "userSettings":
        return user_dir
    if rule.source in ("policySettings", "flagSettings") and rule.source_path and os.path.isfile(rule.source_path):
        return os.path.dirname(rule.source_path)
    return cwd


@dataclass
class CompiledRule:
    rule: PermissionRule
    tool_name: str
    content: str | None
    behavior: RuleBehavior
    source_root: str
    _path: PathPattern | None = field(default=None, repr=False)
    _path_key: tuple[str, str] | None = field(default=None, repr=False)
    _param: tuple[tuple[str, str] | None] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, rule: PermissionRule, source_root: str) -> CompiledRule:
        return cls(rule, rule.value.tool_name, rule.value.rule_content, rule.behavior, source_root)

    def path_pattern(self, cwd: str, home: str) -> PathPattern:
        if self._path is None or self._path_key != (cwd, home):
            self._path = compile_path_pattern(self.content or "**", self.behavior, self.source_root, cwd, home)
            self._path_key = (cwd, home)
        return self._path

    def path_matches(self, paths: list[str], cwd: str, home: str, folded: list[str] | None = None) -> bool:
        pp = self.path_pattern(cwd, home)
        if folded is None:
            return any(pp.matches(p) for p in paths)
        return any(pp.matches(p, f) for p, f in zip(paths, folded))

    def param_rule(self) -> tuple[str, str] | None:
        """``Tool(param:value)`` parameter rules (deny/ask only)."""
        if self._param is None:
            parsed = _parse_param_rule(self.content, self.behavior)
            if parsed is not None and self.tool_name == "Bash" and parsed[1] == "*":
                parsed = None  # `Bash(timeout:*)` is the legacy command prefix, not a parameter rule
            self._param = (parsed,)
        return self._param[0]



class RuleSource(Protocol):
    """What a path-rule lookup reads of a holder of compiled rules (``context.PermissionContext``): its rules of
    one behaviour and tool, a cache of what is derived from them, and the roots the rules are relative to."""

    @property
    def original_cwd(self) -> str: ...
    @property
    def home(self) -> str: ...

    def content_rules(self, behavior: str, tool_name: str) -> list[CompiledRule]: ...
    def cached(self, key: tuple[Any, ...], build: Any) -> Any: ...
    def lasting(self, key: tuple[Any, ...], build: Any) -> Any: ...


def _parse_param_rule(content: str | None, behavior: str) -> tuple[str, str] | None:
    if content is None or behavior == "allow":
        return None
    m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):(.*)$", content, re.S)
    if not m or m.group(1) in PRIMARY_FIELDS:
        return None
    return m.group(1), m.group(2)


def param_rule_matches(key: str, pattern: str, input: dict[str, Any]) -> bool:
    if key not in input:
        return False
    value = input[key]
    text = "true" if value is True else "false" if value is False else str(value)
    regex = "^" + ".*".join(re.escape(p) for p in pattern.split("*")) + "$"
    return re.match(regex, text, re.S) is not None


def generic_content_matches(content: str, value: str) -> bool:
    """Content rules of tools without their own matcher: exact, or ``*`` wildcards; ``domain:x`` for URLs."""
    if content.startswith("domain:") and "://" in value:
        from urllib.parse import urlparse

        host = (urlparse(value).hostname or "").lower()
        dom = content[len("domain:"):].lower()
        if dom.startswith("*."):
            return host.endswith(dom[1:])
        return host == dom
    regex = "^" + ".*".join(re.escape(p) for p in content.split("*")) + "$"
    return re.match(regex, value, re.S) is not None


Matcher = Callable[[str], bool]


# --------------------------------------------------------------------------- combined matchers (speed)
class CombinedPathMatcher:
    """All path rules of one lookup folded into a few alternation regexes (one per root/anchoring/case
    group). ``first_match`` runs the combined regexes and scans rule by rule only on a hit, so a decision
    over hundreds of rules costs a handful of regex calls."""

    def __init__(self, rules: list[CompiledRule], cwd: str, home: str):
        self.rules = rules
        self.cwd, self.home = cwd, home
        groups: dict[tuple[str, bool, bool], list[str]] = {}
        for i, r in enumerate(rules):
            pp = r.path_pattern(cwd, home)
            groups.setdefault((pp.root, pp.anchored, pp.folded), []).append(f"(?P<r{i}>{pp.regex.pattern})")
        self.groups = [
            PathPattern("", root, anchored, re.compile("|".join(pats), re.S | (re.IGNORECASE if folded else 0)),
                        folded, fold(root))
            for (root, anchored, folded), pats in groups.items()
        ]

    def first_match(self, paths: list[str], folded: list[str] | None = None) -> CompiledRule | None:
        """The rule (named group) matching any of ``paths``; None when none does."""
        folded = folded if folded is not None else [fold(p) for p in paths]
        for p, f in zip(paths, folded):
            for g in self.groups:
                m = g.match(p, f)
                if m is not None and m.lastgroup:
                    return self.rules[int(m.lastgroup[1:])]
        return None


class CombinedBashMatcher:
    """All Bash rule contents of one behavior as one alternation; per-rule scan only on a hit."""

    def __init__(self, rules: list[CompiledRule]):
        self.rules = [r for r in rules if r.content is not None]
        pats = [f"(?P<r{i}>{_bash_regex(r.content).pattern})" for i, r in enumerate(self.rules)]
        self.regex = re.compile("|".join(pats), re.S) if pats else None

    def first_match(self, forms: list[str]) -> CompiledRule | None:
        if self.regex is None:
            return None
        for f in forms:
            m = self.regex.fullmatch(f.strip())
            if m is not None and m.lastgroup:
                return self.rules[int(m.lastgroup[1:])]
        return None
