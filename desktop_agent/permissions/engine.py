"""The permission decision (SPEC §4.2): rules, mode and the tool's own check → allow / deny / ask.

PLACEHOLDER from the foundation: only the tool's own check, bypass and passthrough→ask, and dontAsk.
The permissions issue replaces this with the full rule engine.
"""

from __future__ import annotations

from typing import Any

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.types import DecisionReason, PermissionDecision


def current_mode(ctx: ToolUseContext) -> str:
    pc = ctx.permission_context
    return getattr(pc, "mode", "default") if pc is not None else "bypassPermissions"


async def has_permissions_to_use_tool(tool: Any, input: Any, ctx: ToolUseContext) -> PermissionDecision:
    decision = await tool.check_permissions(input, ctx)
    if decision.behavior in ("deny", "allow"):
        return decision
    mode = current_mode(ctx)
    if decision.behavior == "ask" and decision.decision_reason and decision.decision_reason.type == "safetyCheck":
        pass
    elif mode == "bypassPermissions":
        return PermissionDecision(behavior="allow", updated_input=decision.updated_input,
                                  decision_reason=DecisionReason(type="mode", mode="bypassPermissions"))
    if decision.behavior == "passthrough":
        decision = PermissionDecision(
            behavior="ask",
            message=f"Claude requested permissions to use {tool.name}, but you haven't granted it yet.",
            updated_input=decision.updated_input,
            decision_reason=decision.decision_reason or DecisionReason(type="mode", mode=mode),  # type: ignore[arg-type]
            suggestions=decision.suggestions,
        )
    if decision.behavior == "ask" and mode == "dontAsk":
        return PermissionDecision(behavior="deny", message=decision.message,
                                  decision_reason=DecisionReason(type="mode", mode="dontAsk"))
    return decision


async def resolve_hook_decision(tool: Any, input: Any, ctx: ToolUseContext, hook_decision: str,
                                reason: str | None) -> PermissionDecision | None:
    """A PreToolUse hook said allow or ask (SPEC §4.7). PLACEHOLDER: allow → allow, ask → ask.

    The permissions issue makes deny/ask rules still apply after a hook allow.
    """
    dr = DecisionReason(type="hook", reason=reason)
    if hook_decision == "ask":
        return PermissionDecision(behavior="ask", message=reason or f"Hook requested approval for {tool.name}",
                                  decision_reason=dr)
    return PermissionDecision(behavior="allow", decision_reason=dr)
