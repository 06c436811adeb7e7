"""The Bash tool's permission decision: the command against the rules, then the sandbox gate (§4.8, App. B §B.2).

``bash_decision`` is what ``permissions.decide`` asks for a target of kind ``bash``: ``check_bash_permission``, the
test-only skip-analysis switch (``sandbox.skip_analysis_requested``) and ``sandbox.gate_decision``
(``dangerouslyDisableSandbox`` always asks; a sandbox that cannot start makes every command not proven read-only ask).

``check_bash_permission``: deny rules (on every form ``shell.analysis.analyze`` finds: wrappers and ``VAR=``
prefixes stripped, what scripts and wrappers run, the whole line) → ask rules → an opaque command (an interpreter's
inline code, a script from a file or a pipe, a name built at run time...) where a deny rule could match → the path
constraints (``bash_paths``) → every part read-only or matched by an allow rule → allow; otherwise passthrough with
``This command requires approval`` (or the multi-part text) and narrow suggestions.

The opacity rule: what opaque code runs cannot be checked, so it stands (asked as a safety check no allow rule and
no mode skips, with the reference's text ``This command requires approval``; denied in bypassPermissions and
dontAsk) against ``Bash(...)`` deny rules — and ask rules (asked) — always, and against ``Read``/``Edit``/``Write``
deny rules unless the sandbox holds them below the analysis (``sandbox_holds_path_denies``): the command runs in
bubblewrap (active, on the context, not escaped with ``dangerouslyDisableSandbox`` nor an excluded command) and
every such rule is one the sandbox enforces whatever the code does: a ``Read`` deny of an anchored literal path
(``./secret.txt``, ``~/.ssh/**``, ``/abs/dir/**``) is masked (``/dev/null`` or an empty tmpfs over it; renaming
its parent moves the mount along), an ``Edit``/``Write`` deny only outside every writable place (working dirs,
``sandbox.filesystem.allowWrite``, the private TMPDIR), where all is read-only. Inside a writable directory an
Edit-denied file is merely bound read-only, and renaming its parent escapes that (``mv src s; mkdir src; echo x >
src/f``: checked with bubblewrap 0.8); globs and unanchored names (``Read(**/*.pem)``, ``Read(.env)``) are masked
only where a walk found them. Those keep opaque code asking.
"""

from __future__ import annotations

import os
import re
from typing import Any

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import DecisionReason, PermissionDecision, PermissionTarget, PermissionUpdate
from desktop_agent.permissions import sandbox
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.bash_paths import (REQUIRES_APPROVAL, findings_decision, path_candidates,
                                                  path_findings, unverifiable_decision, unverifiable_sentence)
from desktop_agent.permissions.paths import in_working_dirs, is_inside, matching_path_rule, write_suggestions
from desktop_agent.permissions.rules import CombinedBashMatcher, CompiledRule, bash_pattern_matches, parse_rule
from desktop_agent.permissions.sandbox_launch import BubblewrapSandbox, command_rules_held, is_excluded_command
from desktop_agent.permissions.sandbox_policy import private_tmpdir
from desktop_agent.permissions.sandbox_settings import load_sandbox_settings
from desktop_agent.shell.analysis import analyze
from desktop_agent.shell.parse import SimpleCommand, fallback_parts
from desktop_agent.shell.readonly import is_read_only_command, parts_for_approval, simple_command_read_only
from desktop_agent.shell.vocabulary import DEV_FILES, FIND_UNSAFE
from desktop_agent.shell.words import safe_assignment, strip_for_deny


def _is_read_only(command: str) -> bool:
    try:
        return bool(is_read_only_command(command))
    except Exception:
        return False


def bash_decision(target: PermissionTarget, input: dict[str, Any], ctx: ToolUseContext) -> PermissionDecision:
    """The decision for one Bash call (``input`` is the call's input as the model sent it, unset fields left out)."""
    decision = check_bash_permission(input, ctx)
    skip = sandbox.skip_analysis_requested()
    if skip:  # test-only: the sandbox alone holds the line
        decision = sandbox.without_analysis(decision)
    pc = ctx.permission_context if isinstance(ctx.permission_context, PermissionContext) else None
    return sandbox.gate_decision(decision, read_only=not skip and _is_read_only(target.command or ""),
                                 disable_sandbox=target.disable_sandbox, pc=pc, has_sandbox=ctx.sandbox is not None)


# Commands whose "allow for session" suggestion is the exact command, never a prefix.
NO_PREFIX_SUGGESTION = frozenset({
    "sh", "bash", "zsh", "fish", "dash", "ksh", "python", "python3", "node", "ruby", "perl", "php", "eval", "exec",
    "sudo", "su", "doas", "env", "xargs", "ssh", "watch", "setsid", "nohup", "source", ".", "rm", "curl", "wget",
})


ACCEPT_EDITS_COMMANDS = frozenset({"mkdir", "touch", "mv", "cp"})
# the analysis' reasons for a script file (`sh f`, `bash f`, `source f`, `. f`): see _decide step 2b
_SCRIPT_FILE = re.compile(r"^`[^`]+` runs (the script file |the commands of a file)")


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


def _match_rules(rules: Any, forms: list[str]) -> Any | None:
    """The first rule matching any form; ``rules`` is a list or a ``CombinedBashMatcher``."""
    if isinstance(rules, CombinedBashMatcher):
        return rules.first_match(forms)
    for r in rules:
        for f in forms:
            if bash_pattern_matches(r.content, f):
                return r
    return None


def _bash_rules(pc: PermissionContext, behavior: str) -> Any:
    rules = pc.content_rules(behavior, "Bash")
    if not rules:
        return []
    return pc.cached(("bashmatch", behavior), lambda: CombinedBashMatcher(rules))


def _always_prompts(argv: list[str]) -> bool:
    """``watch``, ``setsid``, ``find -exec/-delete``...: no allow rule approves these (App. B §B.2)."""
    head = argv[0]
    if head in ("watch", "setsid"):
        return True
    return head == "find" and any(a in FIND_UNSAFE for a in argv[1:])


def suggest_rule(cmd: SimpleCommand) -> str:
    argv, raw, _ = cmd.stripped(any_env=False)
    text = " ".join([*[a for a in cmd.assignments if not safe_assignment(a)], *raw]).strip() or cmd.text
    if len(argv) >= 2 and argv[0] not in NO_PREFIX_SUGGESTION and all(safe_assignment(a) for a in cmd.assignments) \
            and re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", argv[1]) and not any(cmd.dynamic[:2]):
        return f"Bash({raw[0]} {raw[1]}:*)"
    return "Bash(" + text.replace("*", "\\*") + ")"  # exact: a literal * must not become a wildcard


def check_bash_permission(input: dict[str, Any], ctx: ToolUseContext) -> PermissionDecision:
    command = str(input.get("command", "")).strip()
    pc = ctx.permission_context
    if not isinstance(pc, PermissionContext):
        if is_read_only_command(command):
            return PermissionDecision(behavior="allow", updated_input=input)
        return PermissionDecision(behavior="passthrough", message=REQUIRES_APPROVAL, updated_input=input)
    try:
        decision = _decide(command, input, ctx, pc)
    except RecursionError:
        decision = unverifiable_decision(command, unverifiable_sentence(
            f"{REQUIRES_APPROVAL}: the command is nested too deeply to analyse"), pc.mode)
    decision.updated_input = input
    return decision


_PATTERN_CHARS = re.compile(r"[*?\[\\]")  # a segment with one of these is a pattern (sandbox_policy walks it)


def _path_deny_rules(pc: PermissionContext) -> list[CompiledRule]:
    """The Read/Edit/Write deny rules with a path (what the sandbox masks or binds read-only)."""
    def build() -> list[CompiledRule]:
        out: list[CompiledRule] = []
        for name in ("Read", "Edit", "Write"):
            out += [r for r in pc.content_rules("deny", name) if r not in out]
        return out

    rules: list[CompiledRule] = pc.cached(("path-deny-rules",), build)
    return rules


def _held(rule: CompiledRule, pc: PermissionContext, writable: list[str]) -> bool:
    """The sandbox enforces this deny rule whatever a command does: an anchored literal path (or ``dir/**``,
    ``dir/*``) other than ``/``; for an Edit/Write deny, one outside every ``writable`` place (module docstring)."""
    try:
        pp = rule.path_pattern(pc.original_cwd, pc.home)
    except Exception:
        return False
    segs = [s for s in (pp.glob or "").split("/") if s]
    if segs and segs[-1] in ("**", "*"):
        segs = segs[:-1]
    if not pp.anchored or any(_PATTERN_CHARS.search(s) or s == ".." for s in segs):
        return False
    path = os.path.realpath(os.path.join(pp.root, *segs))
    if path == "/":
        return False  # the sandbox never masks the root
    if rule.tool_name == "Read":
        return True
    return not any(is_inside(path, w) or is_inside(w, path) for w in writable)


def sandbox_holds_path_denies(command: str, input: dict[str, Any], ctx: ToolUseContext,
                              pc: PermissionContext) -> bool:
    """This command runs in the bubblewrap sandbox and every Read/Edit/Write deny rule is one it enforces."""
    rules = _path_deny_rules(pc)
    if not rules:
        return True
    if not isinstance(ctx.sandbox, BubblewrapSandbox) or sandbox.sandbox_status(pc).state != "active":
        return False
    settings = load_sandbox_settings(pc)
    if (input.get("dangerouslyDisableSandbox") and settings.allow_unsandboxed_commands) \
            or is_excluded_command(command, settings):
        return False
    writable = [os.path.realpath(d) for d in [*ctx.working_dirs, *settings.allow_write, private_tmpdir()]]
    return all(_held(r, pc, writable) for r in rules)


def _opaque_decision(command: str, why: str, mode: str) -> PermissionDecision:
    """Opaque code where a deny rule could match: denied in bypassPermissions/dontAsk; asked otherwise with the
    reference's text, as a safety check (no allow rule or mode skips it), the reason saying what is opaque."""
    sentence = unverifiable_sentence(f"{REQUIRES_APPROVAL}: {why}")
    if mode in ("bypassPermissions", "dontAsk"):
        return unverifiable_decision(command, sentence, mode)
    return PermissionDecision(behavior="ask", message=REQUIRES_APPROVAL,
                              decision_reason=DecisionReason(type="safetyCheck", reason=sentence), suggestions=[])


def _has_path_deny(pc: PermissionContext) -> bool:
    return bool(pc.content_rules("deny", "Read")) or bool(pc.content_rules("deny", "Edit"))


def _decide(command: str, input: dict[str, Any], ctx: ToolUseContext, pc: PermissionContext) -> PermissionDecision:
    an = analyze(command)
    parsed = an.parsed
    parts = parsed.commands if parsed.ok else fallback_parts(command)
    whole = SimpleCommand([command], [command], [], [], [False], command)
    deny_rules = _bash_rules(pc, "deny")
    ask_rules = _bash_rules(pc, "ask")
    allow_rules = _bash_rules(pc, "allow")
    mode = pc.mode

    nested = [*an.extra_parts, *an.nested]
    # 1. deny rules: any part (VAR= prefixes and wrappers stripped), what wrappers and scripts run, the whole line
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
    # 2b. what runs cannot be known (a name built at run time, a script from a file or a pipe, an interpreter's
    # inline code, a wrapper of a shell...): against a command deny rule, or a path deny rule the sandbox does not
    # hold, denied in bypass/dontAsk and asked otherwise; against an ask rule, asked — as a safety check that
    # neither an allow rule nor the mode can skip (the opacity rule, module docstring).
    # Script files are judged one way: when the sandbox holds every deny rule (each a whole program replaced by a
    # stub, ``sandbox_launch.command_rules_held``), `sh plant.sh` / `source f` are judged like `python3 plant.py`,
    # `awk -f`, `make -f`: as the command they are — the stub stops the denied program whatever runs it.
    # Inline code and names built at run time stay unverifiable (the analysis keeps what it can see hidden).
    opaque = an.opaque  # (the analysis is cached: never mutated here)
    if opaque and deny_rules and not ask_rules and not _has_path_deny(pc) \
            and all(_SCRIPT_FILE.match(why) for why in opaque) and command_rules_held(pc, input, ctx):
        opaque = []
    if opaque:
        if deny_rules or not sandbox_holds_path_denies(command, input, ctx, pc):
            return _opaque_decision(command, opaque[0], mode)
        if ask_rules:
            return PermissionDecision(behavior="ask", message=REQUIRES_APPROVAL,
                                      decision_reason=DecisionReason(type="safetyCheck", reason=opaque[0]),
                                      suggestions=[])
    if not parsed.ok:
        exact = _match_rules([r for r in pc.content_rules("allow", "Bash") if "*" not in (r.content or "")],
                             [command])
        if exact is not None:
            return PermissionDecision(behavior="allow", decision_reason=DecisionReason(type="rule", rule=exact.rule))
        return PermissionDecision(behavior="passthrough", message=REQUIRES_APPROVAL,
                                  decision_reason=DecisionReason(type="other",
                                                                 reason="the command could not be parsed"),
                                  suggestions=_suggest([], command))
    if not parsed.commands:
        return PermissionDecision(behavior="passthrough", message=REQUIRES_APPROVAL)

    # 3. path constraints
    findings = path_findings(command, parsed, ctx, an)
    path_decision = findings_decision(command, findings, mode)
    if path_decision is not None and (path_decision.behavior == "deny" or (
            path_decision.decision_reason is not None and path_decision.decision_reason.type == "safetyCheck"
            and any(f.kind == "unverifiable" for f in findings))):
        return path_decision

    # 4. every part read-only, allowed by a rule, or (acceptEdits) a file command inside the working dirs
    whole_not_ro = bool(an.not_ro or an.opaque)
    unapproved: list[SimpleCommand] = []
    redirect_suggestions: list[PermissionUpdate] = []
    matched_rule = None
    for part in parts_for_approval(an):
        if not part.argv and not part.redirects:
            continue
        bare = SimpleCommand(part.argv, part.raw, part.assignments, [r for r in part.redirects if not r.is_output],
                             part.dynamic, part.text, part.stdin_script, part.stdin_kind, part.pipe_from)
        ro = not whole_not_ro and id(part) not in an.part_not_ro and simple_command_read_only(bare)
        ok = (ro and bool(part.argv)) or (not part.argv and not part.assignments)
        argv, _raw, _ = part.stripped(any_env=False)
        if not ok and argv and not _always_prompts(argv):
            rule = _match_rules(allow_rules, _forms(part, for_deny=False))
            if rule is not None:
                ok, matched_rule = True, matched_rule or rule
            elif mode == "acceptEdits" and argv[0] in ACCEPT_EDITS_COMMANDS \
                    and all(safe_assignment(a) for a in part.assignments):
                ok = True  # its paths were checked above (inside the working dirs)
        # output redirections are writes: acceptEdits inside the working dirs, or an Edit allow rule
        for r in part.redirects:
            if not r.is_output or r.target in DEV_FILES:
                continue
            cands = None if r.dynamic else path_candidates(r.target, r.raw or r.target,  # type: ignore[arg-type]
                                                       [ctx.cwd], an.glob_options, pc)
            if not cands:
                ok = False
                continue
            if all((mode == "acceptEdits" and in_working_dirs(p, ctx)) or
                   matching_path_rule(pc, p, "edit", "allow") is not None for p in cands):
                continue
            ok = False
            redirect_suggestions.extend(write_suggestions(cands[0], ctx))
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
    real_parts = [p for p in parts_for_approval(an) if p.argv or p.redirects]
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
    return [PermissionUpdate(type="addRules", behavior="allow", destination="localSettings",
                             rules=[parse_rule(r) for r in rules])]
