"""The ask round trip: the engine's decision, then (for ``ask``) the prompter, raced with the abort.

``can_use_tool`` is step 4 of ``run_tool_use``. It returns a final ``allow`` or ``deny``:
- ``allow``/``deny`` from the rule engine are returned directly;
- ``ask`` builds a ``PermissionRequest`` (with the tool's structured patch or sub-commands), emits
  ``PermissionRequested``, awaits ``ctx.prompter.ask`` raced against the turn's abort signal, applies
  the reply's permission updates, emits ``PermissionResolved``;
- with no prompter an ``ask`` is a deny carrying the ask's own message (headless ``-p``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import USER_DENIED_MESSAGE
from desktop_agent.permissions import engine
from desktop_agent.permissions.types import PermissionDecision, PermissionReply, PermissionRequest


def _emit(ctx: ToolUseContext, event: Any) -> None:
    if ctx.emit is not None:
        ctx.emit(event)


def apply_updates(ctx: ToolUseContext, updates: list[Any]) -> None:
    """Apply permission updates (rules, mode, dirs) to the session's permission context."""
    pc = ctx.permission_context
    if pc is None or not updates:
        return
    apply = getattr(pc, "apply_updates", None)
    if apply is not None:
        apply(updates, ctx)


async def can_use_tool(
    tool: Any,
    input: Any,
    ctx: ToolUseContext,
    tool_use_id: str,
    force_decision: PermissionDecision | None = None,
) -> PermissionDecision:
    from desktop_agent.core.events import PermissionRequested, PermissionResolved

    decision = force_decision or await engine.has_permissions_to_use_tool(tool, input, ctx)
    if decision.behavior != "ask":
        return decision

    input_dict = input.model_dump(exclude_unset=True) if hasattr(input, "model_dump") else dict(input)
    if ctx.prompter is None:
        return PermissionDecision(behavior="deny", message=decision.message or "Permission required",
                                  decision_reason=decision.decision_reason)

    extras: dict[str, Any] = {}
    try:
        extras = tool.permission_extras(input, ctx) or {}
    except Exception:  # the dialog still shows the full input
        extras = {}
    request = PermissionRequest(
        tool_name=tool.name,
        tool_use_id=tool_use_id,
        input=input_dict,
        cwd=ctx.cwd,
        message=decision.message or "",
        decision_reason=decision.decision_reason,
        suggestions=decision.suggestions,
        blocked_path=decision.blocked_path,
        **extras,
    )
    _emit(ctx, PermissionRequested(request=request))

    ask_task = asyncio.ensure_future(ctx.prompter.ask(request))
    abort_task = asyncio.ensure_future(ctx.abort.wait())
    try:
        done, _ = await asyncio.wait({ask_task, abort_task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        abort_task.cancel()
    if ask_task in done and not ask_task.cancelled() and ask_task.exception() is None:
        reply: PermissionReply = ask_task.result()
        decided_by = "user"
    else:
        ask_task.cancel()
        reply = PermissionReply(behavior="deny", message=USER_DENIED_MESSAGE)
        decided_by = "cancel"

    if tool_use_id in ctx.answered_tool_use_ids:
        # A second answer for a call already answered: ignore, keep the first outcome (deny-safe).
        return PermissionDecision(behavior="deny", message=USER_DENIED_MESSAGE)
    ctx.answered_tool_use_ids.add(tool_use_id)
    _emit(ctx, PermissionResolved(request_id=request.request_id, tool_use_id=tool_use_id, reply=reply,
                                  decided_by=decided_by))  # type: ignore[arg-type]

    if reply.behavior == "allow":
        apply_updates(ctx, reply.updated_permissions)
        updated = reply.updated_input or None  # {} means "keep the original input"
        user_modified = bool(updated) and updated != input_dict
        return PermissionDecision(behavior="allow", updated_input=updated or input_dict,
                                  decision_reason=decision.decision_reason, user_modified=user_modified)
    message = reply.message or USER_DENIED_MESSAGE
    if reply.feedback:
        message = f"{message}. The user said: {reply.feedback}" if message == USER_DENIED_MESSAGE else message
    return PermissionDecision(behavior="deny", message=message, decision_reason=decision.decision_reason,
                              feedback=reply.feedback)
