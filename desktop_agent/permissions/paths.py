"""Path permission checks for Read and Edit/Write (SPEC §4.4, §4.5) and the path facts they rest on.

- ``matching_path_rule``: ``path_rules.matching_rule`` for the session's permission state (the rule lookup and
  ``paths_to_check``, the path as given and resolved, live there, below ``context``, which answers with them).
  Deny rules fire on either form, allow rules and "inside the working directory" need both.
- ``protected_reason`` (from ``permissions.protected``, the one list): shell start-up files, ``.git``, ``.claude``
  (except ``.claude/worktrees``), ``.vscode``, ``.ssh``, ``~/.config/git``, ``.mcp.json``, our state...
- ``check_write_permission_for_tool``: deny → internal paths → session grants under ``.claude/`` → safety
  check (ask, ``safetyCheck``, immune to bypass) → ask rules → acceptEdits inside the working dirs →
  allow rules → ask (``workingDir`` when outside), with a narrow "allow for session" suggestion.
- ``check_read_permission_for_tool``: deny → ask rules → inside the working dirs → allow rules → ask.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any, TypedDict

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import wrap_error
from desktop_agent.core.seams import PermissionState
from desktop_agent.util.paths import is_inside
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.identity import multi_link
from desktop_agent.permissions.path_rules import matching_rule, paths_to_check
from desktop_agent.permissions.protected import PROTECTED_DIRS, protected_reason
from desktop_agent.permissions.rules import CompiledRule, fold
from desktop_agent.core.permission import (
    DecisionReason, PermissionDecision, PermissionMode, PermissionUpdate, RuleValue,
)

DENIED_PATH_MESSAGE = "File is in a directory that is denied by your permission settings."


# --------------------------------------------------------------------------- path facts
def working_dirs(ctx: ToolUseContext) -> list[str]:
    """The working dirs as they are now: the permission state's (``ToolUseContext.working_dirs`` reads them)."""
    return ctx.working_dirs


def _wd_forms(dirs: list[str]) -> list[str]:
    return _wd_forms_cached(tuple(dirs))


@lru_cache(maxsize=64)
def _wd_forms_cached(dirs: tuple[str, ...]) -> list[str]:
    """The working dirs as given and resolved (cached: working dirs are not expected to be re-linked)."""
    out: list[str] = []
    for d in dirs:
        for f in paths_to_check(d):
            if f not in out:
                out.append(f)
    return out


def in_working_dirs(path: str, ctx: ToolUseContext, checked: list[str] | None = None) -> bool:
    """Inside a working dir, for the path as given *and* its symlink-resolved target.
    ``checked``: ``paths_to_check(path)`` when the caller already has it."""
    forms = _wd_forms(working_dirs(ctx))
    return all(any(is_inside(p, d) for d in forms) for p in (checked or paths_to_check(path)))


def _under_claude_dir(abs_path: str) -> bool:
    comps = [fold(c) for c in os.path.normpath(abs_path).split(os.sep) if c]
    return ".claude" in comps and not any(c in PROTECTED_DIRS - {".claude"} for c in comps)


# --------------------------------------------------------------------------- rule lookup
def matching_path_rule(pc: PermissionState | None, abs_path: str, op: str, behavior: str,
                       sources: tuple[str, ...] | None = None, checked: list[str] | None = None,
                       is_dir: bool | None = None, identity: bool = True) -> CompiledRule | None:
    """``path_rules.matching_rule`` for a permission state: None for no state, or a bare one without rules
    (decide.py)."""
    if not isinstance(pc, PermissionContext):
        return None
    return matching_rule(pc, abs_path, op, behavior, sources, checked, is_dir, identity)


def _rule_reason(rule: CompiledRule) -> DecisionReason:
    return DecisionReason(type="rule", rule=rule.rule)


def _mode(ctx: ToolUseContext) -> PermissionMode:
    pc = ctx.permission_context
    return pc.mode if pc is not None else "default"


# --------------------------------------------------------------------------- suggestions
def _original_cwd(ctx: ToolUseContext) -> str:
    pc = ctx.permission_context
    return (pc.original_cwd if pc is not None else None) or ctx.cwd


def _rel_rule_dir(abs_path: str, ctx: ToolUseContext) -> str:
    """A narrow path pattern for a grant: the file's directory (``/src/**``), a root file, or ``//abs/dir/**``."""
    cwd = _original_cwd(ctx)
    directory = os.path.dirname(os.path.normpath(abs_path))
    if is_inside(abs_path, cwd):
        if os.path.normpath(directory) == os.path.normpath(cwd):
            return "/" + os.path.basename(abs_path)
        return "/" + os.path.relpath(directory, cwd).replace(os.sep, "/") + "/**"
    return "/" + directory.rstrip("/") + "/**"


def write_suggestions(abs_path: str, ctx: ToolUseContext) -> list[PermissionUpdate]:
    return [PermissionUpdate(type="addRules", behavior="allow", destination="session",
                             rules=[RuleValue(tool_name="Edit", rule_content=_rel_rule_dir(abs_path, ctx))])]


def read_suggestions(abs_path: str, ctx: ToolUseContext) -> list[PermissionUpdate]:
    target = abs_path if os.path.isdir(abs_path) else os.path.dirname(abs_path)
    content = "/" + os.path.normpath(target).rstrip("/") + "/**"
    if is_inside(target, _original_cwd(ctx)):
        content = _rel_rule_dir(os.path.join(target, "x"), ctx)
    return [PermissionUpdate(type="addRules", behavior="allow", destination="session",
                             rules=[RuleValue(tool_name="Read", rule_content=content)])]


# --------------------------------------------------------------------------- the checks
class _PathFacts(TypedDict):
    """What one decision resolves once and passes to every ``matching_path_rule`` call."""

    checked: list[str]
    is_dir: bool


def check_write_permission_for_tool(tool_name: str, abs_path: str, input: dict[str, Any],
                                    ctx: ToolUseContext) -> PermissionDecision:
    """Edit/Write path check (§4.4). Returns allow / deny / ask."""
    pc = ctx.permission_context
    if pc is None:  # the engine always supplies a state; a direct caller without one fails closed
        return PermissionDecision(
            behavior="ask", updated_input=input,
            message=f"Claude requested permissions to write to {abs_path}, but you haven't granted it yet.")
    shown = str(input.get("file_path") or abs_path) if isinstance(input, dict) else abs_path
    checked = paths_to_check(abs_path)  # the path and its target, resolved once for this decision
    facts: _PathFacts = {"checked": checked, "is_dir": os.path.isdir(abs_path)}
    # 1. deny rules (Edit deny, and Read deny which also blocks writes) on the path or its target
    rule = matching_path_rule(pc, abs_path, "edit", "deny", **facts)
    if rule is not None:
        return PermissionDecision(behavior="deny", message=wrap_error(DENIED_PATH_MESSAGE), updated_input=input,
                                  decision_reason=_rule_reason(rule), blocked_path=abs_path)
    # 2. internal editable paths: none in this product.
    # 3. session grants for paths under .claude/
    if _under_claude_dir(abs_path):
        rule = matching_path_rule(pc, abs_path, "edit", "allow", sources=("session",), **facts)
        if rule is not None:
            return PermissionDecision(behavior="allow", updated_input=input, decision_reason=_rule_reason(rule))
    # 4. safety check: protected paths always ask, even in bypass mode
    why = protected_reason(abs_path, checked)
    if why is not None:
        return PermissionDecision(
            behavior="ask", message=f"Claude requested permissions to edit {shown} which is a sensitive file.",
            updated_input=input, decision_reason=DecisionReason(type="safetyCheck", reason=why),
            blocked_path=abs_path, suggestions=write_suggestions(abs_path, ctx))
    ask_message = f"Claude requested permissions to write to {abs_path}, but you haven't granted it yet."
    # 5. ask rules
    rule = matching_path_rule(pc, abs_path, "edit", "ask", **facts)
    if rule is not None:
        return PermissionDecision(behavior="ask", message=ask_message, updated_input=input,
                                  decision_reason=_rule_reason(rule), blocked_path=abs_path,
                                  suggestions=write_suggestions(abs_path, ctx))
    # a file with other names (hard links) is not "inside": its other names may be anywhere
    inside = in_working_dirs(abs_path, ctx, checked) and not multi_link(abs_path)
    # 6. acceptEdits inside the working dirs
    if inside and _mode(ctx) == "acceptEdits":
        return PermissionDecision(behavior="allow", updated_input=input,
                                  decision_reason=DecisionReason(type="mode", mode="acceptEdits"))
    # 7. allow rules (link and target)
    rule = matching_path_rule(pc, abs_path, "edit", "allow", **facts)
    if rule is not None:
        return PermissionDecision(behavior="allow", updated_input=input, decision_reason=_rule_reason(rule))
    # 8. ask
    reason = DecisionReason(type="workingDir", reason=f"{abs_path} is outside the working directories") \
        if not inside else DecisionReason(type="mode", mode=_mode(ctx))
    return PermissionDecision(behavior="ask", message=ask_message, updated_input=input, decision_reason=reason,
                              blocked_path=abs_path, suggestions=write_suggestions(abs_path, ctx))


def check_read_permission_for_tool(tool_name: str, abs_path: str, input: dict[str, Any],
                                   ctx: ToolUseContext) -> PermissionDecision:
    """Read path check (§4.5): deny → ask rules → inside the working dirs → allow rules → ask."""
    pc = ctx.permission_context
    if pc is None:  # the engine always supplies a state; a direct caller without one fails closed
        return PermissionDecision(
            behavior="ask", updated_input=input,
            message=f"Claude requested permissions to read from {abs_path}, but you haven't granted it yet.")
    checked = paths_to_check(abs_path)
    facts: _PathFacts = {"checked": checked, "is_dir": os.path.isdir(abs_path)}
    rule = matching_path_rule(pc, abs_path, "read", "deny", **facts)
    if rule is not None:
        return PermissionDecision(behavior="deny", message=wrap_error(DENIED_PATH_MESSAGE), updated_input=input,
                                  decision_reason=_rule_reason(rule), blocked_path=abs_path)
    message = f"Claude requested permissions to read from {abs_path}, but you haven't granted it yet."
    rule = matching_path_rule(pc, abs_path, "read", "ask", **facts)
    if rule is not None:
        return PermissionDecision(behavior="ask", message=message, updated_input=input,
                                  decision_reason=_rule_reason(rule), blocked_path=abs_path,
                                  suggestions=read_suggestions(abs_path, ctx))
    if in_working_dirs(abs_path, ctx, checked) and not multi_link(abs_path):  # other names may be anywhere
        return PermissionDecision(behavior="allow", updated_input=input,
                                  decision_reason=DecisionReason(type="workingDir",
                                                                 reason="inside the working directory"))
    rule = matching_path_rule(pc, abs_path, "read", "allow", **facts)
    if rule is not None:
        return PermissionDecision(behavior="allow", updated_input=input, decision_reason=_rule_reason(rule))
    return PermissionDecision(behavior="ask", message=message, updated_input=input,
                              decision_reason=DecisionReason(type="workingDir",
                                                             reason=f"{abs_path} is outside the working directories"),
                              blocked_path=abs_path, suggestions=read_suggestions(abs_path, ctx))
