"""Bash command analysis: a real parse (bashlex), read-only classification, rule matching, path checks.

- ``parse_command`` flattens a command line into simple commands — through lists (``&&``, ``||``, ``;``,
  ``&``, newlines), pipelines, subshells, groups, loops and command/process substitutions — keeping each
  word's literal value and source text, assignments and redirections. Anything bashlex cannot parse is
  "unparsed", and an unparsed command is never allowed (it is asked).
- ``is_read_only_command``: every simple command is on the read-only list (or a read-only git subcommand),
  with no file output redirection and only safe environment assignments.
- ``check_bash_permission`` (§4.8, App. B §B.2): deny rules (any ``VAR=`` prefix and wrappers stripped) →
  ask rules → path constraints (deny rules on paths; outside the working dirs → ask; ``cd`` then a write →
  ask; ``rm``/``rmdir`` of critical dirs and writes to protected files → ask with ``safetyCheck``) → every
  part read-only or matched by an allow rule (safe env assignments and wrappers stripped) → allow;
  otherwise passthrough with ``This command requires approval`` (or the multi-part text) and narrow
  suggestions (up to 5 per-part rules, destination ``localSettings``).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.paths import (in_working_dirs, is_inside, matching_path_rule, paths_to_check,
                                             protected_reason)
from desktop_agent.permissions.rules import CombinedBashMatcher, bash_pattern_matches
from desktop_agent.permissions.types import DecisionReason, PermissionDecision, PermissionUpdate, RuleValue

REQUIRES_APPROVAL = "This command requires approval"

READ_ONLY_COMMANDS = frozenset({
    "ls", "cat", "echo", "pwd", "head", "tail", "grep", "egrep", "fgrep", "rg", "find", "wc", "which", "diff",
    "stat", "du", "cd", "true", "false", "test", "[", "basename", "dirname", "realpath", "readlink", "file",
    "tree", "whoami", "date", "uname", "printf", "nl", "cmp", "type", "id", "hostname", "df", "sleep",
})
GIT_READ_ONLY = frozenset({"status", "log", "diff", "show", "blame", "rev-parse", "ls-files", "describe",
                           "shortlog", "grep", "ls-tree", "cat-file", "reflog", "whatchanged", "merge-base",
                           "rev-list", "count-objects", "check-ignore", "name-rev"})
FIND_UNSAFE = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})
SAFE_ENV_VARS = frozenset({
    "GOEXPERIMENT", "GOOS", "GOARCH", "CGO_ENABLED", "GO111MODULE", "RUST_BACKTRACE", "RUST_LOG", "NODE_ENV",
    "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_DEBUG", "LANG",
    "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_TIME", "CHARSET", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TZ",
    "LS_COLORS", "LSCOLORS", "GREP_COLOR", "GREP_COLORS", "GCC_COLORS", "TIME_STYLE", "BLOCK_SIZE", "BLOCKSIZE",
})
# Commands whose "allow for session" suggestion is the exact command, never a prefix.
NO_PREFIX_SUGGESTION = frozenset({
    "sh", "bash", "zsh", "fish", "dash", "ksh", "python", "python3", "node", "ruby", "perl", "php", "eval", "exec",
    "sudo", "su", "doas", "env", "xargs", "ssh", "watch", "setsid", "nohup", "source", ".", "rm", "curl", "wget",
})
ACCEPT_EDITS_COMMANDS = frozenset({"mkdir", "touch", "mv", "cp"})
_DEV_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


@dataclass
class Redirect:
    op: str
    target: str | None  # None for fd duplication (2>&1)
    dynamic: bool = False

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

    def stripped(self, any_env: bool) -> tuple[list[str], list[str], bool]:
        """argv/raw without leading env assignments and wrapper commands. The bool says whether every
        assignment could be stripped (``any_env`` strips all of them; otherwise only safe ones)."""
        clean = all(_safe_assignment(a) for a in self.assignments)
        argv, raw = strip_wrappers(self.argv, self.raw)
        return argv, raw, (any_env or clean)


@dataclass
class ParsedCommand:
    ok: bool
    commands: list[SimpleCommand] = field(default_factory=list)
    error: str | None = None


def _safe_assignment(assign: str) -> bool:
    name, _, value = assign.partition("=")
    return name in SAFE_ENV_VARS and "$" not in value and "`" not in value


# --------------------------------------------------------------------------- parsing
def parse_command(command: str) -> ParsedCommand:
    """The flattened parse of ``command`` (cached: the result is shared, callers must not mutate it)."""
    return _parse_cached(command)


@lru_cache(maxsize=2048)
def _parse_cached(command: str) -> ParsedCommand:
    try:
        import bashlex

        trees = bashlex.parse(command)
    except Exception as exc:  # bashlex raises its own errors and sometimes plain ones
        return ParsedCommand(False, error=str(exc) or type(exc).__name__)
    out: list[SimpleCommand] = []
    try:
        for t in trees:
            _walk(t, command, out)
    except Exception as exc:  # an unexpected node shape: treat as unparsable
        return ParsedCommand(False, error=str(exc))
    return ParsedCommand(True, out)


def _word_info(node: Any, src: str, out: list[SimpleCommand]) -> tuple[str, str, bool]:
    dynamic = False
    for part in getattr(node, "parts", None) or []:
        kind = part.kind
        if kind in ("commandsubstitution", "processsubstitution"):
            dynamic = True
            _walk(part.command, src, out)
        elif kind == "parameter":
            dynamic = True
        elif kind == "tilde":
            pass
        else:
            dynamic = True
    raw = src[node.pos[0]:node.pos[1]]
    if "`" in raw or "$" in raw and "'" not in raw:
        dynamic = dynamic or ("`" in raw or "$(" in raw or "${" in raw or re.search(r"\$\w", raw) is not None)
    return node.word, raw, dynamic


def _walk(node: Any, src: str, out: list[SimpleCommand]) -> None:
    kind = node.kind
    if kind == "command":
        argv: list[str] = []
        raw: list[str] = []
        dyn: list[bool] = []
        assigns: list[str] = []
        redirects: list[Redirect] = []
        pending: list[SimpleCommand] = []
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
                elif isinstance(target, int) or target is None:
                    redirects.append(Redirect(part.type, None))
                else:
                    w, r, d = _word_info(target, src, pending)
                    if part.type in (">&", "<&") and w.isdigit() or w == "-":
                        redirects.append(Redirect(part.type, None))
                    else:
                        redirects.append(Redirect(part.type, w, d))
            else:
                _walk(part, src, pending)
        out.append(SimpleCommand(argv, raw, assigns, redirects, dyn, src[node.pos[0]:node.pos[1]]))
        out.extend(pending)
        return
    if kind in ("operator", "pipe", "reservedword", "heredoc", "tilde", "parameter"):
        return
    if kind == "word":
        _word_info(node, src, out)
        return
    if kind == "redirect":  # on a compound: (...) > file
        target = node.output
        if not isinstance(target, int) and target is not None and node.type not in ("<<", "<<-"):
            w, _r, d = _word_info(target, src, out)
            out.append(SimpleCommand([], [], [], [Redirect(node.type, w, d)], [], src[node.pos[0]:node.pos[1]]))
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


# --------------------------------------------------------------------------- wrappers
def _skip_opts(argv: list[str], i: int, with_value: set[str]) -> int:
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if argv[i] == "--":
            return i + 1
        if argv[i] in with_value:
            i += 1
        i += 1
    return i


def strip_wrappers(argv: list[str], raw: list[str]) -> tuple[list[str], list[str]]:
    """Drop ``timeout``, ``time``, ``nice``, ``nohup``, ``stdbuf``, ``command``, ``builtin``, ``noglob`` and bare
    ``xargs`` (with their options) from the front, repeatedly."""
    changed = True
    while changed and argv:
        changed = False
        head = argv[0]
        i = 0
        if head == "timeout":
            i = _skip_opts(argv, 1, {"-s", "--signal", "-k", "--kill-after"})
            i += 1  # the duration
        elif head == "time":
            i = _skip_opts(argv, 1, set())
        elif head == "nice":
            i = _skip_opts(argv, 1, {"-n", "--adjustment"})
        elif head == "stdbuf":
            i = _skip_opts(argv, 1, {"-i", "-o", "-e"})
        elif head in ("nohup", "builtin", "noglob"):
            i = 1
        elif head == "command":
            if len(argv) > 1 and argv[1] in ("-v", "-V"):
                break
            i = _skip_opts(argv, 1, set())
        elif head == "xargs" and len(argv) > 1 and not argv[1].startswith("-"):
            i = 1
        if 0 < i < len(argv):
            argv, raw = argv[i:], raw[i:]
            changed = True
    return argv, raw


def split_command(command: str) -> list[str]:
    """The sub-commands of a command line as source text (for the dialog); the whole line when unparsable."""
    parsed = parse_command(command)
    if not parsed.ok:
        return [command]
    return [c.text for c in parsed.commands if c.argv or c.redirects] or [command]


# --------------------------------------------------------------------------- read-only
def _git_read_only(argv: list[str]) -> bool:
    i = 1
    while i < len(argv) and argv[i] in ("--no-pager",):
        i += 1
    if i >= len(argv):
        return False
    sub, rest = argv[i], argv[i + 1:]
    if any(a.startswith("--output") or a.startswith("--ext-diff") or a == "--textconv" for a in rest):
        return False
    if sub in GIT_READ_ONLY:
        return True
    if sub == "branch":
        return all(a in ("-a", "-r", "-v", "-vv", "--list", "-l", "--show-current", "--all", "--remotes")
                   for a in rest)
    if sub == "remote":
        return all(a in ("-v", "--verbose") for a in rest)
    if sub == "tag":
        return all(a in ("-l", "--list") for a in rest)
    if sub == "config":
        return bool(rest) and rest[0] in ("--get", "--get-all", "--list", "-l")
    if sub == "stash":
        return bool(rest) and rest[0] in ("list", "show")
    return False


def simple_command_read_only(cmd: SimpleCommand) -> bool:
    if any(r.is_output and r.target not in _DEV_FILES for r in cmd.redirects):
        return False
    if not all(_safe_assignment(a) for a in cmd.assignments):
        return False
    argv, _raw = strip_wrappers(cmd.argv, cmd.raw)
    if not argv:
        return not cmd.assignments and not any(r.is_output for r in cmd.redirects)
    head = argv[0]
    if head == "git":
        return _git_read_only(argv)
    if head not in READ_ONLY_COMMANDS:
        return False
    if head == "find" and any(a in FIND_UNSAFE for a in argv[1:]):
        return False
    if head in ("rg",) and any(a.startswith("--pre") for a in argv[1:]):
        return False
    args = argv[1:]
    if head == "tree" and any(a == "-o" or a.startswith("-o") for a in args):
        return False
    if head == "date" and any(a in ("-s", "--set") or a.startswith("--set=") for a in args):
        return False
    if head == "hostname" and any(not a.startswith("-") for a in args):
        return False
    if head == "file" and any(a == "-C" or a == "--compile" for a in args):
        return False
    return True


def is_read_only_command(command: str) -> bool:
    """Read-only only if every part of a real parse is on the read-only list (SPEC §3.10, App. B §B.2)."""
    if not command.strip():
        return False
    parsed = parse_command(command)
    if not parsed.ok or not parsed.commands:
        return False
    return all(simple_command_read_only(c) for c in parsed.commands)


# --------------------------------------------------------------------------- rule matching
_DENY_EXTRA_WRAPPERS = {
    # command: options taking a value
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "sudo": {"-u", "-g", "-h", "-p", "-C", "-U", "-r", "-t", "-D", "--user", "--group", "--host"},
    "doas": {"-u", "-C"},
    "exec": {"-a"},
    "xargs": {"-n", "-I", "-P", "-L", "-d", "-E", "-s", "-a", "--max-args", "--max-procs", "--delimiter"},
}


def strip_for_deny(argv: list[str], raw: list[str]) -> tuple[list[str], list[str]]:
    """Wrappers, plus ``env``/``sudo``/``doas``/``exec``/``xargs`` with their options and ``VAR=`` arguments, and
    a path on the command name (``/bin/rm`` → ``rm``): deny and ask rules must not be dodged by a prefix."""
    changed = True
    while changed and argv:
        changed = False
        argv, raw = strip_wrappers(argv, raw)
        if argv and argv[0] in _DENY_EXTRA_WRAPPERS:
            i = _skip_opts(argv, 1, _DENY_EXTRA_WRAPPERS[argv[0]])
            while i < len(argv) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[i]):
                i += 1
            if 0 < i < len(argv):
                argv, raw, changed = argv[i:], raw[i:], True
    if argv and "/" in argv[0] and not any(ch.isspace() for ch in argv[0]):
        base = argv[0].rsplit("/", 1)[1]
        if base:
            argv, raw = [base, *argv[1:]], [base, *raw[1:]]
    return argv, raw


def _forms(cmd: SimpleCommand, for_deny: bool) -> list[str]:
    forms: list[str] = []
    full = " ".join([*cmd.assignments, *cmd.raw]).strip()
    if full:
        forms.append(full)
    argv, raw, stripped_env = cmd.stripped(any_env=for_deny)
    if stripped_env and raw:
        forms.append(" ".join(raw))
        if for_deny:  # also the literal values (quotes removed), so quoting cannot dodge a deny
            forms.append(" ".join(argv))
            dargv, draw = strip_for_deny(cmd.argv, cmd.raw)
            if dargv:
                forms.append(" ".join(draw))
                forms.append(" ".join(dargv))
    return forms


_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})


def _nested_parts(parts: list[SimpleCommand], depth: int = 0) -> list[SimpleCommand]:
    """Commands inside ``bash -c '...'`` and ``eval '...'`` (for deny/ask matching only)."""
    out: list[SimpleCommand] = []
    if depth > 2:
        return out
    for part in parts:
        argv, _raw = strip_for_deny(part.argv, part.raw)
        script = None
        if argv and argv[0] in _SHELLS and "-c" in argv[1:]:
            i = argv.index("-c", 1)
            script = argv[i + 1] if i + 1 < len(argv) else None
        elif argv and argv[0] == "eval" and len(argv) > 1:
            script = " ".join(argv[1:])
        if script:
            inner = parse_command(script)
            inner_parts = inner.commands if inner.ok else _fallback_parts(script)
            out.extend(inner_parts)
            out.extend(_nested_parts(inner_parts, depth + 1))
        if argv and argv[0] == "find":
            # find -exec/-execdir/-ok/-okdir CMD ... ; runs CMD: match deny rules against it too.
            i = 1
            while i < len(argv):
                if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                    j = i + 1
                    while j < len(argv) and argv[j] not in (";", "+", "\\;"):
                        j += 1
                    inner_argv = argv[i + 1:j]
                    if inner_argv:
                        sub = SimpleCommand(inner_argv, list(inner_argv), [], [], [False] * len(inner_argv),
                                            " ".join(inner_argv))
                        out.append(sub)
                        out.extend(_nested_parts([sub], depth + 1))
                    i = j
                i += 1
    return out


def _dynamic_command_name(part: SimpleCommand) -> bool:
    """True when the command name itself is built at run time (``$a x``, ``$(echo rm) x``, ``rm${IFS}x``):
    no deny rule can be checked against it."""
    _argv, raw = strip_for_deny(part.argv, part.raw)
    if not raw:
        return False
    return any(ch in raw[0] for ch in "$`") or raw[0].startswith(("<(", ">("))


def _match_rules(rules: Any, forms: list[str]) -> Any | None:
    """The first rule matching any form; ``rules`` is a list or a ``CombinedBashMatcher``."""
    if isinstance(rules, CombinedBashMatcher):
        return rules.first_match(forms)
    for r in rules:
        for f in forms:
            if bash_pattern_matches(r.content, f):
                return r
    return None


def _bash_rules(pc: Any, behavior: str) -> Any:
    rules = pc.content_rules(behavior, "Bash")
    if not rules:
        return []
    if hasattr(pc, "cached"):
        return pc.cached(("bashmatch", behavior), lambda: CombinedBashMatcher(rules))
    return rules


def _fallback_parts(command: str) -> list[SimpleCommand]:
    """A crude split for deny matching when the real parse fails (deny must still hold)."""
    out: list[SimpleCommand] = []
    for piece in re.split(r"&&|\|\||[;&|\n]|\$\(|`|\)", command):
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


# --------------------------------------------------------------------------- path extraction
def _non_options(args: list[str]) -> list[str]:
    out, ended = [], False
    for a in args:
        if not ended and a == "--":
            ended = True
        elif ended or not a.startswith("-") or a == "-":
            if a != "-":
                out.append(a)
    return out


def _grep_paths(args: list[str]) -> list[str]:
    has_pattern_opt = any(a in ("-e", "-f", "--regexp", "--file") or a.startswith(("--regexp=", "--file="))
                          for a in args)
    value_opts = {"-e", "-f", "-A", "-B", "-C", "-m", "--regexp", "--file", "-g", "--glob", "-t", "--type",
                  "--max-count", "-d", "-D", "--include", "--exclude", "-T"}
    out: list[str] = []
    skip = False
    pattern_seen = has_pattern_opt
    for a in args:
        if skip:
            skip = False
            continue
        if a in value_opts:
            skip = True
            continue
        if a.startswith("-") and a != "-":
            continue
        if not pattern_seen:
            pattern_seen = True
            continue
        out.append(a)
    return out


def extract_paths(argv: list[str]) -> list[tuple[str, str]]:
    """(path, op) for the commands we know; op is "read", "write" or "cd"."""
    if not argv:
        return []
    head, args = argv[0], argv[1:]
    if head == "cd":
        target = _non_options(args)
        return [(target[0] if target else "~", "cd")]
    if head in ("ls", "cat", "head", "tail", "wc", "stat", "du", "file", "tree", "less", "more", "diff", "nl",
                "realpath", "readlink", "cmp", "md5sum", "sha256sum", "strings", "od", "hexdump", "xxd"):
        return [(p, "read") for p in _non_options(args)]
    if head in ("grep", "egrep", "fgrep", "rg"):
        return [(p, "read") for p in _grep_paths(args)]
    if head == "find":
        out = []
        for a in args:
            if a.startswith("-") or a in ("(", "!", ")"):
                break
            out.append((a, "read"))
        return out or [(".", "read")]
    if head in ("touch", "mkdir", "rm", "rmdir", "tee", "mv", "shred", "truncate", "unlink"):
        return [(p, "write") for p in _non_options(args)]
    if head in ("cp", "ln", "install", "rsync"):
        ps = _non_options(args)
        return [(p, "read") for p in ps[:-1]] + [(p, "write") for p in ps[-1:]]
    if head in ("chmod", "chown", "chgrp"):
        return [(p, "write") for p in _non_options(args)[1:]]
    if head == "sed":
        inplace = any(a == "-i" or a.startswith("-i") or a.startswith("--in-place") for a in args)
        ps = _non_options(args)
        has_script_opt = any(a in ("-e", "-f") for a in args)
        files = ps if has_script_opt else ps[1:]
        return [(p, "write" if inplace else "read") for p in files]
    return []


_CRITICAL_TOP = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc",
                           "/root", "/sbin", "/srv", "/sys", "/usr", "/var", "/System", "/Users", "/Library",
                           "/Applications", "/private", "/tmp"})


def _is_critical(path: str, ctx: Any) -> bool:
    p = os.path.normpath(path)
    if p in _CRITICAL_TOP or p.count("/") <= 1:
        return True
    home = os.path.normpath(os.path.expanduser("~"))
    if p == home or is_inside(home, p):
        return True
    for wd in ctx_working_dirs(ctx):
        if is_inside(wd, p):  # the working dir itself or one of its ancestors
            return True
    return False


def _is_critical_word(word: str, path: str, ctx: Any) -> bool:
    """``rm`` of a critical directory, or of everything in one (``rm -rf *``, ``rm -rf ~/*``)."""
    if re.search(r"[*?\[]", word):
        last = word.rstrip("/").rsplit("/", 1)[-1]
        return last in ("*", ".*", "**", "*.*", ".[!.]*") and _is_critical(path, ctx)
    return _is_critical(path, ctx)


def ctx_working_dirs(ctx: Any) -> list[str]:
    from desktop_agent.permissions.paths import working_dirs

    return working_dirs(ctx)


def _resolve(word: str, base: str) -> str | None:
    """An absolute path for a literal word, or None when it cannot be known (``~user``)."""
    if word.startswith("~"):
        if word == "~" or word.startswith("~/"):
            word = os.path.expanduser("~") + word[1:]
        else:
            return None
    m = re.search(r"[*?\[]", word)
    if m:  # a glob: check the fixed directory part
        word = word[:m.start()]
        word = word.rsplit("/", 1)[0] if "/" in word else "."
        word = word or "/"
    return os.path.normpath(os.path.join(base, word))


@dataclass
class _PathFinding:
    kind: str  # deny, safety, ask
    message: str
    path: str | None = None
    rule: Any = None
    suggestion: PermissionUpdate | None = None


def check_path_constraints(command: str, ctx: ToolUseContext,
                           parsed: ParsedCommand | None = None) -> PermissionDecision:
    """§4.8 on its own: deny / ask / passthrough for the paths a command touches."""
    parsed = parsed or parse_command(command)
    if not parsed.ok:
        return PermissionDecision(behavior="passthrough", message=REQUIRES_APPROVAL)
    findings = _path_findings(command, parsed, ctx)
    return _findings_decision(command, findings) or PermissionDecision(behavior="passthrough")


def _path_findings(command: str, parsed: ParsedCommand, ctx: ToolUseContext) -> list[_PathFinding]:
    pc = ctx.permission_context
    findings: list[_PathFinding] = []
    cur = ctx.cwd
    cd_seen = False
    for cmd in parsed.commands:
        argv, _raw = strip_wrappers(cmd.argv, cmd.raw)
        dyn_by_word = dict(zip(cmd.argv, cmd.dynamic))
        items: list[tuple[str, str, bool]] = [(w, op, dyn_by_word.get(w, False)) for w, op in extract_paths(argv)]
        items += [(r.target, "write" if r.is_output else "read", r.dynamic) for r in cmd.redirects
                  if r.target is not None]
        head = argv[0] if argv else ""
        for word, op, dynamic in items:
            if word in _DEV_FILES:
                continue
            if op == "write" and cd_seen:
                findings.append(_PathFinding("ask", "Compound commands that change directory and then write to a "
                                             "file require approval, because the target cannot be resolved "
                                             "reliably."))
                continue
            path = None if dynamic else _resolve(word, cur)
            if path is None:
                findings.append(_PathFinding("ask", f"{REQUIRES_APPROVAL}: the path {word} cannot be confirmed "
                                             "safe before the command runs."))
                if op == "cd":
                    cur = ""
                continue
            if not cur and not os.path.isabs(word) and not word.startswith("~"):
                findings.append(_PathFinding("ask", f"{REQUIRES_APPROVAL}: {word} is relative to an unknown "
                                             "directory."))
                continue
            rule_op = "edit" if op == "write" else "read"
            deny = matching_path_rule(pc, path, rule_op, "deny") if pc is not None else None
            if deny is not None:
                findings.append(_PathFinding("deny", f"Permission to use Bash with command {command} has been "
                                             "denied.", path, deny))
                continue
            if op == "write" and head in ("rm", "rmdir") and word not in [r.target for r in cmd.redirects] \
                    and _is_critical_word(word, path, ctx):
                findings.append(_PathFinding("safety", f"Dangerous {head} operation on {path} requires explicit "
                                             "approval.", path))
                continue
            if op == "write" and protected_reason(path):
                findings.append(_PathFinding("safety", f"Claude requested permissions to edit {path} which is a "
                                             "sensitive file.", path))
                continue
            inside = in_working_dirs(path, ctx)
            if not inside:
                allowed = pc is not None and matching_path_rule(pc, path, rule_op, "allow") is not None
                if not allowed:
                    # narrow: an existing file's directory, else the path itself (a dir, or nothing yet)
                    target = os.path.dirname(path) if os.path.isfile(path) or op == "write" else path
                    tool = "Edit" if op == "write" else "Read"
                    sugg = PermissionUpdate(type="addRules", behavior="allow", destination="session",
                                            rules=[RuleValue(tool_name=tool,
                                                             rule_content="/" + target.rstrip("/") + "/**")])
                    verb = "write to" if op == "write" else "read from"
                    findings.append(_PathFinding("ask", f"{REQUIRES_APPROVAL}: it would {verb} {path}, which is "
                                                 "outside the allowed working directories.", path,
                                                 suggestion=sugg))
            if op == "cd":
                cd_seen = True
                cur = path
    return findings


def _findings_decision(command: str, findings: list[_PathFinding]) -> PermissionDecision | None:
    for kind in ("deny", "safety", "ask"):
        hits = [f for f in findings if f.kind == kind]
        if not hits:
            continue
        first = hits[0]
        if kind == "deny":
            return PermissionDecision(behavior="deny", message=first.message, blocked_path=first.path,
                                      decision_reason=DecisionReason(type="rule", rule=first.rule.rule))
        suggestions = [f.suggestion for f in findings if f.suggestion is not None]
        reason = DecisionReason(type="safetyCheck", reason=first.message) if kind == "safety" else \
            DecisionReason(type="workingDir" if first.path else "other", reason=first.message)
        return PermissionDecision(behavior="ask", message=first.message, blocked_path=first.path,
                                  decision_reason=reason, suggestions=suggestions)
    return None


def _always_prompts(argv: list[str]) -> bool:
    """``watch``, ``setsid``, ``find -exec/-delete``...: no allow rule approves these (App. B §B.2)."""
    head = argv[0]
    if head in ("watch", "setsid"):
        return True
    return head == "find" and any(a in FIND_UNSAFE for a in argv[1:])


# --------------------------------------------------------------------------- suggestions
def suggest_rule(cmd: SimpleCommand) -> str:
    argv, raw, _ = cmd.stripped(any_env=False)
    text = " ".join([*[a for a in cmd.assignments if not _safe_assignment(a)], *raw]).strip() or cmd.text
    if len(argv) >= 2 and argv[0] not in NO_PREFIX_SUGGESTION and all(_safe_assignment(a) for a in cmd.assignments) \
            and re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", argv[1]) and not any(cmd.dynamic[:2]):
        return f"Bash({raw[0]} {raw[1]}:*)"
    return "Bash(" + text.replace("*", "\\*") + ")"  # exact: a literal * must not become a wildcard


# --------------------------------------------------------------------------- the check
def check_bash_permission(input: dict[str, Any], ctx: ToolUseContext) -> PermissionDecision:
    command = str(input.get("command", "")).strip()
    pc = ctx.permission_context
    if pc is None or not hasattr(pc, "content_rules"):
        if is_read_only_command(command):
            return PermissionDecision(behavior="allow", updated_input=input)
        return PermissionDecision(behavior="passthrough", message=REQUIRES_APPROVAL, updated_input=input)
    decision = _decide(command, input, ctx, pc)
    decision.updated_input = input
    return decision


def _decide(command: str, input: dict[str, Any], ctx: ToolUseContext, pc: Any) -> PermissionDecision:
    parsed = parse_command(command)
    parts = parsed.commands if parsed.ok else _fallback_parts(command)
    whole = SimpleCommand([command], [command], [], [], [False], command)
    deny_rules = _bash_rules(pc, "deny")
    ask_rules = _bash_rules(pc, "ask")
    allow_rules = _bash_rules(pc, "allow")

    nested = _nested_parts(parts)
    # 1. deny rules: any part (VAR= prefixes and wrappers stripped), or the whole line
    if deny_rules:
        for part in [whole, *parts, *nested]:
            rule = _match_rules(deny_rules, _forms(part, for_deny=True))
            if rule is not None:
                return PermissionDecision(behavior="deny",
                                          message=f"Permission to use Bash with command {command} has been denied.",
                                          decision_reason=DecisionReason(type="rule", rule=rule.rule))
    # 2. ask rules
    if ask_rules:
        for part in [whole, *parts, *nested]:
            rule = _match_rules(ask_rules, _forms(part, for_deny=True))
            if rule is not None:
                return PermissionDecision(behavior="ask", message=REQUIRES_APPROVAL,
                                          decision_reason=DecisionReason(type="rule", rule=rule.rule),
                                          suggestions=_suggest(parts if parsed.ok else [], command))
    # 2b. with deny/ask rules in force, a command whose name is built at run time cannot be checked against
    # them: ask, as a safety check that neither bypass mode nor a broader allow rule can skip.
    if deny_rules or ask_rules:
        for part in [*parts, *nested]:
            if _dynamic_command_name(part):
                return PermissionDecision(
                    behavior="ask", message=REQUIRES_APPROVAL,
                    decision_reason=DecisionReason(
                        type="safetyCheck",
                        reason=f"the command name in `{part.text}` is built at run time, so the deny and ask "
                               f"rules cannot be checked against it"),
                    suggestions=[])
    if not parsed.ok:
        exact = _match_rules([r for r in pc.content_rules("allow", "Bash") if "*" not in (r.content or "")],
                             [command])
        if exact is not None:
            return PermissionDecision(behavior="allow", decision_reason=DecisionReason(type="rule", rule=exact.rule))
        return PermissionDecision(behavior="passthrough", message=REQUIRES_APPROVAL,
                                  decision_reason=DecisionReason(type="other", reason="the command could not be parsed"),
                                  suggestions=_suggest([], command))
    if not parsed.commands:
        return PermissionDecision(behavior="passthrough", message=REQUIRES_APPROVAL)

    # 3. path constraints
    findings = _path_findings(command, parsed, ctx)
    path_decision = _findings_decision(command, findings)
    if path_decision is not None and path_decision.behavior == "deny":
        return path_decision

    # 4. every part read-only, allowed by a rule, or (acceptEdits) a file command inside the working dirs
    mode = getattr(pc, "mode", "default")
    unapproved: list[SimpleCommand] = []
    redirect_suggestions: list[PermissionUpdate] = []
    matched_rule = None
    for part in parsed.commands:
        if not part.argv and not part.redirects:
            continue
        bare = SimpleCommand(part.argv, part.raw, part.assignments, [r for r in part.redirects if not r.is_output],
                             part.dynamic, part.text)
        ok = (simple_command_read_only(bare) and bool(part.argv)) or (not part.argv and not part.assignments)
        argv, _raw, _ = part.stripped(any_env=False)
        if not ok and argv and not _always_prompts(argv):
            rule = _match_rules(allow_rules, _forms(part, for_deny=False))
            if rule is not None:
                ok, matched_rule = True, matched_rule or rule
            elif mode == "acceptEdits" and argv[0] in ACCEPT_EDITS_COMMANDS \
                    and all(_safe_assignment(a) for a in part.assignments):
                ok = True  # its paths were checked above (inside the working dirs)
        # output redirections are writes: acceptEdits inside the working dirs, or an Edit allow rule
        for r in part.redirects:
            if not r.is_output or r.target in _DEV_FILES:
                continue
            path = None if r.dynamic else _resolve(r.target, ctx.cwd)  # type: ignore[arg-type]
            if path is None:
                ok = False
                continue
            if (mode == "acceptEdits" and in_working_dirs(path, ctx)) or \
                    matching_path_rule(pc, path, "edit", "allow") is not None:
                continue
            ok = False
            from desktop_agent.permissions.paths import write_suggestions

            redirect_suggestions.extend(write_suggestions(path, ctx))
        if not ok:
            unapproved.append(part)

    if path_decision is not None:  # ask (safety or outside): merge the parts' suggestions in
        path_decision.suggestions = [*path_decision.suggestions, *_suggest(unapproved, command),
                                     *redirect_suggestions]
        return path_decision
    if not unapproved:
        reason = DecisionReason(type="rule", rule=matched_rule.rule) if matched_rule is not None else \
            DecisionReason(type="other", reason="read-only command")
        return PermissionDecision(behavior="allow", decision_reason=reason)
    real_parts = [p for p in parsed.commands if p.argv or p.redirects]
    if len(real_parts) > 1:
        message = ("This Bash command contains multiple operations. The following parts require approval: "
                   + ", ".join(p.text for p in unapproved))
    else:
        message = REQUIRES_APPROVAL
    return PermissionDecision(behavior="passthrough", message=message,
                              suggestions=[*_suggest(unapproved, command), *redirect_suggestions])


def _suggest(parts: list[SimpleCommand], command: str) -> list[PermissionUpdate]:
    rules: list[str] = []
    for p in parts:
        if not p.argv:
            continue
        r = suggest_rule(p)
        if r not in rules:
            rules.append(r)
    if not parts:
        rules = [f"Bash({command})"]
    rules = rules[:5]
    if not rules:
        return []
    from desktop_agent.permissions.rules import parse_rule

    return [PermissionUpdate(type="addRules", behavior="allow", destination="localSettings",
                             rules=[parse_rule(r) for r in rules])]
