"""The path constraints of a Bash command (§4.8): paths resolved as the shell would (brace and glob expansion
against the file system, ``..`` after symlinked parents, ``cd`` earlier in the command) and checked against the
Read/Edit deny rules (an unquoted glob in any word too: its expansion lists names, ``echo secrets/*``); a path that cannot be resolved, or a recursive read over a denied path, is denied in
bypassPermissions/dontAsk and asked otherwise; outside the working dirs → ask; ``cd`` then a write → ask; critical
``rm`` and protected files → ask with ``safetyCheck``. Owns ``check_path_constraints`` and ``path_findings``.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from typing import Any

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import DecisionReason, PermissionDecision, PermissionUpdate, RuleValue
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.paths import (in_working_dirs, is_inside, matching_path_rule, protected_reason,
                                             working_dirs)
from desktop_agent.shell.analysis import Analysis, analyze
from desktop_agent.shell.parse import ParsedCommand, parse_command
from desktop_agent.shell.path_args import (extract_paths, git_paths, git_root, glob_expand, recursive_targets,
                                           resolve_word)
from desktop_agent.shell.vocabulary import DEV_FILES, GLOB_CHARS
from desktop_agent.shell.words import brace_expand, command_name_base, has_brace, has_glob, strip_wrappers


REQUIRES_APPROVAL = "This command requires approval"


_CRITICAL_TOP = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc",
                           "/root", "/sbin", "/srv", "/sys", "/usr", "/var", "/System", "/Users", "/Library",
                           "/Applications", "/private", "/tmp"})


def _is_critical(path: str, ctx: ToolUseContext) -> bool:
    p = os.path.normpath(path)
    if p in _CRITICAL_TOP or p.count("/") <= 1:
        return True
    home = os.path.normpath(os.path.expanduser("~"))
    if p == home or is_inside(home, p):
        return True
    for wd in working_dirs(ctx):
        if is_inside(wd, p):  # the working dir itself or one of its ancestors
            return True
    return False


def _is_critical_word(word: str, path: str, ctx: ToolUseContext) -> bool:
    """``rm`` of a critical directory, or of everything in one (``rm -rf *``, ``rm -rf ~/*``)."""
    if re.search(r"[*?\[]", word):
        last = word.rstrip("/").rsplit("/", 1)[-1]
        return last in ("*", ".*", "**", "*.*", ".[!.]*") and _is_critical(path, ctx)
    return _is_critical(path, ctx)


def _deny_literals(pc: PermissionContext) -> list[tuple[str, bool]]:
    """(literal path or bare name, anchored) of Read/Edit deny rules without wildcards (cached per rule set)."""
    def build() -> list[tuple[str, bool]]:
        out: list[tuple[str, bool]] = []
        for name in ("Read", "Edit"):
            for r in pc.content_rules("deny", name):
                try:
                    pp = r.path_pattern(pc.original_cwd, pc.home)
                except Exception:
                    continue
                g = (pp.glob or "").rstrip("/")
                for tail in ("/**", "/*"):
                    if g.endswith(tail):
                        g = g[:-len(tail)]
                if not g or GLOB_CHARS.search(g):
                    continue
                out.append((os.path.normpath(os.path.join(pp.root, g)), True) if pp.anchored else (g, False))
        return out

    literals: list[tuple[str, bool]] = pc.cached(("bash-deny-literals",), build)
    return literals


def path_candidates(word: str, rawword: str, bases: list[str], conservative: bool,
                    pc: PermissionContext | None) -> list[str] | None:
    """Every absolute path ``word`` may name, as the shell would expand it from any of ``bases``."""
    if word.startswith("~"):
        if word == "~" or word.startswith("~/"):
            word = os.path.expanduser("~") + word[1:]
        else:
            return None
    words = brace_expand(word) if has_brace(rawword) else [word]
    globbing = has_glob(rawword)
    out: list[str] = []
    for w in words:
        if not w:
            continue
        for base in bases:
            if not base and not os.path.isabs(w):
                return None
            p = os.path.join(base, w)
            if globbing and GLOB_CHARS.search(w):
                out.extend(glob_expand(p, conservative))
                fixed = resolve_word(w, base)
                if fixed:
                    out.append(fixed)
                out.append(os.path.normpath(p))
                low = os.path.normpath(p).casefold()
                for lit, anchored in (_deny_literals(pc) if pc is not None else []):
                    cand = lit if anchored else os.path.join(os.path.dirname(os.path.normpath(p)), lit)
                    if fnmatch.fnmatchcase(cand.casefold(), low):
                        out.append(cand)
            else:
                out.append(os.path.normpath(p))
                if ".." in w.split("/"):
                    try:
                        out.append(os.path.realpath(p))  # `..` after a symlinked parent, as the kernel resolves it
                    except (OSError, ValueError):
                        pass
    seen: list[str] = []
    for p in out:
        if p not in seen:
            seen.append(p)
    return seen[:600]


def _dir_has_denied(directory: str, pc: PermissionContext, limit: int = 4000) -> bool:
    """A bounded walk: does ``directory`` hold a path a Read deny rule covers? (True when too big to tell.)"""
    if not os.path.isdir(directory):
        return False
    if matching_path_rule(pc, directory, "read", "deny", is_dir=True) is not None:
        return True
    seen = 0
    skip_git = not any(".git" in (r.content or "") for r in pc.content_rules("deny", "Read"))
    for root, dirs, files in os.walk(directory):
        if skip_git and ".git" in dirs:
            dirs.remove(".git")
        for name in dirs:
            if matching_path_rule(pc, os.path.join(root, name), "read", "deny", is_dir=True) is not None:
                return True
        for name in files:
            if matching_path_rule(pc, os.path.join(root, name), "read", "deny", is_dir=False) is not None:
                return True
        seen += len(dirs) + len(files)
        if seen > limit:
            return True
    return False


@dataclass
class _PathFinding:
    kind: str  # deny, unverifiable, safety, ask
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
    findings = path_findings(command, parsed, ctx)
    pc = ctx.permission_context
    mode = pc.mode if isinstance(pc, PermissionContext) else "default"
    return findings_decision(command, findings, mode) or PermissionDecision(behavior="passthrough")


def unverifiable_sentence(what: str) -> str:
    return f"{what}, so the command could not be checked against the deny rules."


def path_findings(command: str, parsed: ParsedCommand, ctx: ToolUseContext,
                   an: Analysis | None = None) -> list[_PathFinding]:
    pc = ctx.permission_context if isinstance(ctx.permission_context, PermissionContext) else None
    an = an if an is not None else analyze(command)
    has_rules = pc is not None
    read_deny = pc is not None and bool(pc.content_rules("deny", "Read"))
    edit_deny = read_deny or (pc is not None and bool(pc.content_rules("deny", "Edit")))
    findings: list[_PathFinding] = []
    curs: list[str] = [ctx.cwd] if ctx.cwd else [""]
    cd_seen = False
    for cmd in [*parsed.commands, *an.extra_parts, *an.nested]:
        argv, raw = strip_wrappers(cmd.argv, cmd.raw)
        dyn = cmd.dynamic[len(cmd.argv) - len(argv):] if len(cmd.dynamic) >= len(argv) else [False] * len(argv)
        info: dict[str, tuple[str, bool]] = {}
        for w, r, d in zip(argv, raw, dyn):
            info.setdefault(w, (r, d))
        items: list[tuple[str, str, str, bool]] = []
        for w, op in extract_paths(argv):
            r, d = info.get(w, (w, "$" in w or "`" in w))
            items.append((w, op, r, d))
        bases = curs
        if argv and command_name_base(argv[0]) == "git":
            cdir, gitems = git_paths(argv)
            if cdir is not None:
                r, d = info.get(cdir, (cdir, "$" in cdir))
                items.append((cdir, "read", r, d))
                cdir_cands = None if d else path_candidates(cdir, r, curs, an.glob_options, pc)
                bases = cdir_cands if cdir_cands else [""]
            for w, op in gitems:
                r, d = info.get(w, (w, "$" in w or "`" in w))
                if op == "gitroot":
                    items.append((os.path.join(git_root(bases[0] or ctx.cwd or "/"), w), "read", w, d))
                else:
                    items.append((w, op, r, d))
        items += [(r.target, "write" if r.is_output else "read", r.raw or r.target, r.dynamic)
                  for r in cmd.redirects if r.target is not None]
        head = command_name_base(argv[0]) if argv else ""
        for word, op, rawword, dynamic in items:
            if word in DEV_FILES:
                continue
            relevant = read_deny if op in ("read", "cd") else edit_deny
            cands = None if dynamic else path_candidates(word, rawword, bases, an.glob_options, pc)
            if cands is None or not cands:
                if relevant:
                    findings.append(_PathFinding("unverifiable", unverifiable_sentence(
                        f"{REQUIRES_APPROVAL}: the path {word} is only known when the command runs")))
                elif bases == [""] and not dynamic:
                    findings.append(_PathFinding("ask", f"{REQUIRES_APPROVAL}: {word} is relative to an unknown "
                                                 "directory."))
                else:
                    findings.append(_PathFinding("ask", f"{REQUIRES_APPROVAL}: the path {word} cannot be confirmed "
                                                 "safe before the command runs."))
                if op == "cd":
                    curs = [*curs, ""] if "" not in curs else curs
                continue
            rule_op = "edit" if op == "write" else "read"
            deny_hit = None
            if has_rules:
                for path in cands:
                    rule = matching_path_rule(pc, path, rule_op, "deny")
                    if rule is not None:
                        deny_hit = (path, rule)
                        break
            if deny_hit is not None:
                findings.append(_PathFinding("deny", f"Permission to use Bash with command {command} has been "
                                             "denied.", deny_hit[0], deny_hit[1]))
                continue
            if op == "write" and cd_seen:
                findings.append(_PathFinding("ask", "Compound commands that change directory and then write to a "
                                             "file require approval, because the target cannot be resolved "
                                             "reliably."))
                continue
            safety = None
            for path in cands if op == "write" else []:
                if head in ("rm", "rmdir") and word not in [r.target for r in cmd.redirects] \
                        and _is_critical_word(word, path, ctx):
                    safety = _PathFinding("safety", f"Dangerous {head} operation on {path} requires explicit "
                                          "approval.", path)
                    break
                if protected_reason(path):
                    safety = _PathFinding("safety", f"Claude requested permissions to edit {path} which is a "
                                          "sensitive file.", path)
                    break
            if safety is not None:
                findings.append(safety)
                continue
            for path in cands:
                if not in_working_dirs(path, ctx):
                    allowed = has_rules and matching_path_rule(pc, path, rule_op, "allow") is not None
                    if not allowed:
                        # narrow: an existing file's directory, else the path itself (a dir, or nothing yet)
                        target = os.path.dirname(path) if os.path.isfile(path) or op == "write" else path
                        tool = "Edit" if op == "write" else "Read"
                        sugg = PermissionUpdate(type="addRules", behavior="allow", destination="session",
                                                rules=[RuleValue(tool_name=tool,
                                                                 rule_content="/" + target.rstrip("/") + "/**")])
                        verb = "write to" if op == "write" else "read from"
                        findings.append(_PathFinding("ask", f"{REQUIRES_APPROVAL}: it would {verb} {path}, which "
                                                     "is outside the allowed working directories.", path,
                                                     suggestion=sugg))
                        break
            if op == "cd":
                cd_seen = True
                curs = [*curs, *[c for c in cands if c not in curs]]
        if read_deny and pc is not None:
            # any unquoted glob the shell expands lists a directory, whatever the command does with the names
            # (``echo secrets/*``): a name a Read deny rule covers must not come back
            path_words = {w for w, _, _, _ in items}
            for w, r, d in zip(argv, raw, dyn):
                if d or w in path_words or not has_glob(r):
                    continue
                for c in path_candidates(w, r, bases, an.glob_options, pc) or []:
                    rule = matching_path_rule(pc, c, "read", "deny")
                    if rule is not None:
                        findings.append(_PathFinding("deny", f"Permission to use Bash with command {command} has "
                                                     "been denied.", c, rule))
                        break
            for word in recursive_targets(argv):
                r, d = info.get(word, (word, "$" in word))
                if word == ":gitroot":
                    root = git_root(bases[0] or ctx.cwd or "/")
                    cands = [root] if os.path.isdir(os.path.join(root, ".git")) else []
                else:
                    cands = None if d else path_candidates(word, r, bases, an.glob_options, pc)
                for c in cands or []:
                    if _dir_has_denied(c, pc):
                        findings.append(_PathFinding("unverifiable", unverifiable_sentence(
                            f"{REQUIRES_APPROVAL}: `{head}` would read every file under {c}, which holds a path "
                            "a Read deny rule covers"), c))
                        break
    return findings


def unverifiable_decision(command: str, message: str, mode: str, path: str | None = None) -> PermissionDecision:
    """Not provable where a deny rule could match: denied in bypassPermissions/dontAsk, asked otherwise (as a
    safety check, so that neither an allow rule nor a mode can skip the question)."""
    if mode in ("bypassPermissions", "dontAsk"):
        why = message.split(": ", 1)[1] if message.startswith(REQUIRES_APPROVAL + ": ") else message
        return PermissionDecision(
            behavior="deny", message=f"Permission to use Bash with command {command} has been denied. "
                                     f"{why[:1].upper()}{why[1:]}",
            blocked_path=path, decision_reason=DecisionReason(type="safetyCheck", reason=why))
    return PermissionDecision(behavior="ask", message=message, blocked_path=path,
                              decision_reason=DecisionReason(type="safetyCheck", reason=message), suggestions=[])


def findings_decision(command: str, findings: list[_PathFinding], mode: str = "default") -> PermissionDecision | None:
    for kind in ("deny", "unverifiable", "safety", "ask"):
        hits = [f for f in findings if f.kind == kind]
        if not hits:
            continue
        first = hits[0]
        if kind == "deny":
            return PermissionDecision(behavior="deny", message=first.message, blocked_path=first.path,
                                      decision_reason=DecisionReason(type="rule", rule=first.rule.rule))
        if kind == "unverifiable":
            return unverifiable_decision(command, first.message, mode, first.path)
        suggestions = [f.suggestion for f in findings if f.suggestion is not None]
        reason = DecisionReason(type="safetyCheck", reason=first.message) if kind == "safety" else \
            DecisionReason(type="workingDir" if first.path else "other", reason=first.message)
        return PermissionDecision(behavior="ask", message=first.message, blocked_path=first.path,
                                  decision_reason=reason, suggestions=suggestions)
    return None
