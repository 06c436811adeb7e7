"""The permission decision (SPEC §4.2, §4.3): rules, mode and what the call touches → allow / deny / ask.

``decide(ctx, facts, target, input)`` is synchronous and pure: it never calls the tool back (the tool declared
its ``PermissionTarget`` and the engine filled its ``ToolFacts``), it awaits nothing, and it reads the
filesystem only to resolve symlinks and globs. It follows the order of ``hasPermissionsToUseToolInner``; the
first step that decides returns:

1a whole-tool deny rule → deny · 1b whole-tool ask rule → ask · 1c the target's own check (``write`` → a deny
for our own configuration and trust store in every mode (``protected.own_store_reason``), else
``paths.check_write_permission_for_tool``, ``read`` → ``check_read_permission_for_tool``, ``bash`` →
``bash.bash_decision``, ``generic`` → passthrough, ``none`` → allow) · 1d its deny · plan mode: anything not
read-only is denied · 1e an ask of a tool that needs user interaction · 1f an ask from a content-level ask
rule · 1g a ``safetyCheck`` ask (immune to bypass) · 2a bypassPermissions → allow · 2b whole-tool allow rule →
allow · 3 passthrough → ask. The outer step turns a final ask into deny in ``dontAsk`` mode.
``decide_after_hook`` is the same decision after a PreToolUse hook said allow or ask.

Fail closed: no permission context means ``default`` mode with no rules (never bypass), and an exception
while deciding (a path check, a rule matcher) is a deny: ``Permission check failed: <error>. The tool was
not run.``

Tools without a matcher of their own (e.g. ``WebFetch(domain:x)``) get generic content rules here (on the
target's summary), and ``Tool(param:value)`` parameter rules (deny/ask) apply to every tool. The decision
carries its reason and the matched rule with its source file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any, cast

from pydantic import BaseModel

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import wrap_error
from desktop_agent.core.permission import (DecisionReason, PermissionDecision, PermissionMode, PermissionTarget,
                                           PermissionUpdate, RuleValue, ToolFacts)
from desktop_agent.core.tool import Tool
from desktop_agent.permissions import paths
from desktop_agent.permissions.bash import bash_decision
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.path_rules import paths_to_check
from desktop_agent.permissions.protected import OWN_STORE_MESSAGE, own_store_reason
from desktop_agent.permissions.rules import generic_content_matches, param_rule_matches

# Tools whose own check consults content rules itself (paths, Bash commands).
OWN_RULE_MATCHERS = frozenset({"Bash", "Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Grep", "Glob", "LS",
                               "NotebookRead", "BashOutput", "KillShell"})


def _state(ctx: ToolUseContext) -> PermissionContext | None:
    pc = ctx.permission_context
    return pc if isinstance(pc, PermissionContext) else None


def current_mode(ctx: ToolUseContext) -> str:
    """The session's mode; no permission state at all is ``default`` (fail closed, never bypass)."""
    pc = ctx.permission_context
    return "default" if pc is None else str(pc.mode)


def _with_permission_state(ctx: ToolUseContext) -> ToolUseContext:
    """``ctx`` itself, or a copy with a ``PermissionContext`` without rules: in ``default`` mode when it carries
    no permission state (the checks then decide as in default mode with no rules, never "allow all"), in its
    mode when it carries a bare state object that has only a ``mode`` (a front end's, a test's)."""
    if _state(ctx) is not None:
        return ctx
    state = PermissionContext(ctx.original_cwd, mode=current_mode(ctx))
    return dataclasses.replace(ctx, permission_context=state)


def check_failed(exc: BaseException) -> PermissionDecision:
    """An exception while deciding is a deny that says so (never an allow, never an ask that bypass would grant)."""
    text = str(exc) or type(exc).__name__
    return PermissionDecision(behavior="deny", message=f"Permission check failed: {text}. The tool was not run.",
                              decision_reason=DecisionReason(type="other", reason=f"check failed: {text}"))


def _dump(input: Any) -> dict[str, Any]:
    if isinstance(input, BaseModel):
        return input.model_dump(exclude_unset=True)
    return dict(input) if isinstance(input, dict) else {}


def target_decision(target: PermissionTarget, name: str, input_dict: dict[str, Any],
                    ctx: ToolUseContext) -> PermissionDecision:
    """Step 1c: what the target itself calls for, before the mode and the whole-tool rules."""
    if target.kind == "read":
        return paths.check_read_permission_for_tool(name, _target_path(target), input_dict, ctx)
    if target.kind == "write":
        return _own_store_denied(_target_path(target), input_dict) or \
            paths.check_write_permission_for_tool(name, _target_path(target), input_dict, ctx)
    if target.kind == "bash":
        return bash_decision(target, input_dict, ctx)
    if target.kind == "generic":
        return PermissionDecision(behavior="passthrough", updated_input=input_dict)
    return PermissionDecision(behavior="allow", updated_input=input_dict)


def _own_store_denied(path: str, input_dict: dict[str, Any]) -> PermissionDecision | None:
    """A write to our own configuration or trust store (``protected.own_store_reason``): denied in every mode."""
    why = own_store_reason(path, paths_to_check(path))
    if why is None:
        return None
    shown = str(input_dict.get("file_path") or input_dict.get("notebook_path") or path)
    return PermissionDecision(behavior="deny", message=wrap_error(OWN_STORE_MESSAGE.format(path=shown)),
                              updated_input=input_dict, blocked_path=path,
                              decision_reason=DecisionReason(type="safetyCheck", reason=why))


def _target_path(target: PermissionTarget) -> str:
    if not target.path:
        raise ValueError(f"a {target.kind} target without a path")
    return target.path


def _rule_reason(rule: Any) -> DecisionReason:
    return DecisionReason(type="rule", rule=rule.rule)


def _generic_rule(pc: PermissionContext, behavior: str, tool: ToolFacts, target: PermissionTarget,
                  input_dict: dict[str, Any]) -> Any | None:
    """Parameter rules (deny/ask, every tool) and content rules of tools without their own matcher."""
    rules = pc.content_rules(behavior, tool.name)
    if tool.name in OWN_RULE_MATCHERS:  # only parameter rules can apply here
        rules = pc.cached(("param", behavior, tool.name), lambda: [r for r in rules if r.param_rule() is not None])
    for r in rules:
        param = r.param_rule()
        if param is not None and param[0] in input_dict:
            if param_rule_matches(param[0], param[1], input_dict):
                return r
            continue
        if tool.name in OWN_RULE_MATCHERS:
            continue
        summary = target.summary
        if summary and r.content is not None and generic_content_matches(r.content, summary):
            return r
    return None


def _rule_objection(pc: PermissionContext, tool: ToolFacts, target: PermissionTarget,
                    input_dict: dict[str, Any]) -> PermissionDecision | None:
    """A deny rule (whole tool, parameter or generic content), else an ask rule, that applies to this call."""
    rule = pc.whole_tool_rule("deny", tool.name) or _generic_rule(pc, "deny", tool, target, input_dict)
    if rule is not None:
        return PermissionDecision(behavior="deny", message=f"Permission to use {tool.name} has been denied.",
                                  decision_reason=_rule_reason(rule))
    rule = pc.whole_tool_rule("ask", tool.name) or _generic_rule(pc, "ask", tool, target, input_dict)
    if rule is not None:
        return PermissionDecision(
            behavior="ask", message=f"Claude requested permissions to use {tool.name}, but you haven't granted it yet.",
            decision_reason=_rule_reason(rule), updated_input=input_dict)
    return None


def _ask_stands(decision: PermissionDecision) -> bool:
    """An ask no mode or allow rule may turn into an allow: a safety check, or a content-level ask rule."""
    dr = decision.decision_reason
    return dr is not None and (dr.type == "safetyCheck"
                               or (dr.type == "rule" and dr.rule is not None and dr.rule.behavior == "ask"))


def _plan_mode_message(tool: ToolFacts, input_dict: dict[str, Any]) -> str:
    path = input_dict.get("file_path") or input_dict.get("notebook_path")
    if path:
        return f"Cannot write to {path} while in plan mode."
    if "command" in input_dict:
        return f"Cannot run {input_dict['command']} while in plan mode."
    return f"Cannot use {tool.name} while in plan mode."


def rule_based_permissions(ctx: ToolUseContext, tool: ToolFacts, target: PermissionTarget,
                           input_dict: dict[str, Any]) -> PermissionDecision | None:
    """``checkRuleBasedPermissions``: only deny/ask rules and safety checks (used after a hook's allow).

    Returns a deny or ask decision, or None when nothing objects."""
    pc = _state(ctx)
    if pc is None:
        return None
    objection = _rule_objection(pc, tool, target, input_dict)
    if objection is not None:
        return objection
    try:
        decision = target_decision(target, tool.name, input_dict, ctx)
    except Exception as exc:  # a broken check objects
        return check_failed(exc)
    if decision.behavior == "deny":
        return decision
    if decision.behavior == "ask" and _ask_stands(decision):
        return decision
    return None


def _inner(ctx: ToolUseContext, tool: ToolFacts, target: PermissionTarget,
           input_dict: dict[str, Any]) -> PermissionDecision:
    pc = _state(ctx)
    mode = current_mode(ctx)
    if pc is not None:
        # 1a. whole-tool deny (and parameter / generic content deny rules); 1b. the same for ask rules
        objection = _rule_objection(pc, tool, target, input_dict)
        if objection is not None:
            return objection
    # 1c. the target's own check
    try:
        decision = target_decision(target, tool.name, input_dict, ctx)
    except Exception as exc:  # a broken check must not allow, in any mode
        return check_failed(exc)
    if decision.updated_input is None:
        decision.updated_input = input_dict
    # 1d. the tool's deny
    if decision.behavior == "deny":
        return decision
    # plan mode: read-only tools only
    if mode == "plan" and not tool.is_read_only:
        return PermissionDecision(behavior="deny", message=_plan_mode_message(tool, input_dict),
                                  decision_reason=DecisionReason(type="mode", mode="plan"))
    # 1e. tools requiring user interaction; 1f. content-level ask rule; 1g. safety check
    if decision.behavior == "ask" and (tool.requires_user_interaction or _ask_stands(decision)):
        return decision
    # 2a. bypass
    if mode == "bypassPermissions":
        return PermissionDecision(behavior="allow", updated_input=decision.updated_input,
                                  decision_reason=DecisionReason(type="mode", mode="bypassPermissions"))
    if pc is not None:
        # 2b. whole-tool allow (and generic content allow for tools without their own matcher)
        rule = pc.whole_tool_rule("allow", tool.name)
        if rule is None and tool.name not in OWN_RULE_MATCHERS:
            rule = _generic_rule(pc, "allow", tool, target, input_dict)
        if rule is not None and decision.behavior in ("ask", "passthrough"):
            return PermissionDecision(behavior="allow", updated_input=decision.updated_input,
                                      decision_reason=_rule_reason(rule))
    # 3. passthrough → ask
    if decision.behavior == "passthrough":
        suggestions = decision.suggestions or [
            PermissionUpdate(type="addRules", behavior="allow", destination="session",
                             rules=[RuleValue(tool_name=tool.name)])]
        fallback = f"Claude requested permissions to use {tool.name}, but you haven't granted it yet."
        return PermissionDecision(
            behavior="ask", message=decision.message or fallback, updated_input=decision.updated_input,
            decision_reason=decision.decision_reason or DecisionReason(type="mode", mode=cast(PermissionMode, mode)),
            suggestions=suggestions, blocked_path=decision.blocked_path)
    return decision


def dont_ask_message(tool_name: str) -> str:
    """The deny text of ``dontAsk`` mode for an action that would ask (App. A)."""
    return (f"Permission to use {tool_name} has been denied because Desktop Agent is running in don't ask mode. "
            "IMPORTANT: You *may* attempt to accomplish this action using other tools that might naturally be used "
            "to accomplish this goal, e.g. using head instead of cat. But you *should not* attempt to work around "
            "this denial in malicious ways, e.g. do not use your ability to run tests to execute non-test actions. "
            "You should only try to work around this restriction in reasonable ways that do not attempt to bypass "
            "the intent behind this denial. If you believe this capability is essential to complete the user's "
            "request, STOP and explain to the user what you were trying to do and why you need this permission. "
            "Let the user decide how to proceed.")


def _dont_ask(decision: PermissionDecision, ctx: ToolUseContext, tool_name: str) -> PermissionDecision:
    if decision.behavior == "ask" and current_mode(ctx) == "dontAsk":
        return PermissionDecision(behavior="deny", message=dont_ask_message(tool_name),
                                  updated_input=decision.updated_input,
                                  decision_reason=DecisionReason(type="mode", mode="dontAsk"),
                                  blocked_path=decision.blocked_path)
    return decision


def decide(ctx: ToolUseContext, tool: ToolFacts, target: PermissionTarget, input: Any) -> PermissionDecision:
    """The full decision (§4.2) plus the outer ``dontAsk`` rewrite. An exception is a deny (``check_failed``).

    ``input`` is the call's input (a model or its dict, unset fields left out)."""
    try:
        ctx = _with_permission_state(ctx)
        return _dont_ask(_inner(ctx, tool, target, _dump(input)), ctx, tool.name)
    except Exception as exc:
        return check_failed(exc)


def decide_after_hook(ctx: ToolUseContext, tool: ToolFacts, target: PermissionTarget, input: Any,
                      hook_decision: str, reason: str | None) -> PermissionDecision | None:
    """A PreToolUse hook said allow or ask (SPEC §4.7); an exception while deciding is a deny (``check_failed``)."""
    try:
        return _decide_after_hook(_with_permission_state(ctx), tool, target, _dump(input), hook_decision, reason)
    except Exception as exc:
        return check_failed(exc)


def _decide_after_hook(ctx: ToolUseContext, tool: ToolFacts, target: PermissionTarget, input_dict: dict[str, Any],
                       hook_decision: str, reason: str | None) -> PermissionDecision | None:
    """A PreToolUse hook said allow or ask (SPEC §4.7).

    allow: no dialog, but deny/ask rules and safety checks still apply (``rule_based_permissions``); a tool
    that requires user interaction goes through the regular flow (None). ask: the user is asked (with the
    regular suggestions), unless a deny rule or a deny of the tool's own check applies; dontAsk turns it
    into a deny.
    """
    dr = DecisionReason(type="hook", reason=reason, hook_name="PreToolUse")
    if hook_decision == "allow":
        if tool.requires_user_interaction:
            return None
        objection = rule_based_permissions(ctx, tool, target, input_dict)
        if objection is not None:
            return _dont_ask(objection, ctx, tool.name)
        if current_mode(ctx) == "plan" and not tool.is_read_only:  # a hook cannot leave plan mode
            return PermissionDecision(behavior="deny", message=_plan_mode_message(tool, input_dict),
                                      decision_reason=DecisionReason(type="mode", mode="plan"))
        return PermissionDecision(behavior="allow", updated_input=input_dict, decision_reason=dr)
    regular = _inner(ctx, tool, target, input_dict)
    if regular.behavior == "deny":
        return regular
    return _dont_ask(PermissionDecision(
        behavior="ask", message=reason or f"Hook PreToolUse requires confirmation for this {tool.name} call.",
        updated_input=input_dict, decision_reason=dr,
        suggestions=regular.suggestions if regular.behavior == "ask" else [],
        blocked_path=regular.blocked_path), ctx, tool.name)


# --------------------------------------------------------------------------- tool availability
def filter_denied_tools(tools: list[Tool], ctx: ToolUseContext) -> list[Tool]:
    """Drop tools a whole-tool deny rule removes from the model's context (App. B §B.2); remember them so a
    call to one gets the "exists but is not enabled" text."""
    pc = _state(ctx)
    if pc is None:
        return list(tools)
    kept = []
    for t in tools:
        if pc.whole_tool_rule("deny", t.name) is not None:
            pc.disabled_tools.add(t.name)
        else:
            kept.append(t)
    return kept


def unavailable_tool_message(name: str, ctx: ToolUseContext, builtin_names: Collection[str]) -> str | None:
    """The lookup error for a tool that exists but was removed (deny rule or ``--tools``), else None.
    ``builtin_names``: the names (and aliases) of the built-in tools, which the engine knows."""
    pc = _state(ctx)
    if pc is None:
        return None
    disabled = name in pc.disabled_tools
    if not disabled and pc.whole_tool_rule("deny", name) is not None:
        disabled = name in builtin_names
    if not disabled:
        return None
    return wrap_error(f"Error: No such tool available: {name}. {name} exists but is not enabled in this context. "
                      f"Use one of the available tools instead.")
