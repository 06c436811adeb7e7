"""The permission gateway: the tool's declaration to ``decide``, then (for ``ask``) the round trip to a person.

``can_use_tool`` is step 4 of ``run_tool_use``. It asks the tool what the call touches (``permission_target``,
``core.tool.tool_facts``; a declaration that raises is a deny, ``decide.check_failed``), asks the pure
``decide`` (``decide_for``; ``decide_after_hook_for`` after a PreToolUse hook's allow/ask), and returns a final
``allow`` or ``deny``:
- ``allow``/``deny`` from the decision are returned directly;
- ``ask`` builds a ``PermissionRequest`` (with the tool's structured patch or sub-commands), emits
  ``PermissionRequested``, awaits ``ctx.prompter.ask`` raced against the turn's abort signal, applies
  the reply's permission updates, emits ``PermissionResolved``;
- matching ``PermissionRequest`` hooks start at the same time as the prompter; each answers through
  ``pending`` (``PendingRequests``: request_id → Future, the first answer wins, a later one is ignored) and the
  loser is cancelled (a cancelled prompter sends its ``control_cancel_request``); a hook with no opinion
  leaves the prompter to answer; an interrupt (abort) while waiting is a deny; ``Notification`` hooks
  (``permission_prompt``) start in the background when a waiting prompter is asked;
- with no prompter an ``ask`` is a deny carrying the ask's own message (headless ``-p``).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from pydantic import BaseModel

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import USER_DENIED_MESSAGE
from desktop_agent.core.events import AgentEvent, PermissionRequested, PermissionResolved
from desktop_agent.core.permission import (PermissionDecision, PermissionReply, PermissionRequest, PermissionTarget,
                                           PermissionUpdate, ToolFacts)
from desktop_agent.core.tool import Tool, tool_facts
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.decide import check_failed, decide, decide_after_hook
from desktop_agent.permissions.hooks import PERMISSION_PROMPT_TITLE, permission_prompt_message


def _declared(tool: Tool, input: Any, ctx: ToolUseContext) -> tuple[ToolFacts, PermissionTarget]:
    return tool_facts(tool, input), tool.permission_target(input, ctx)


def decide_for(tool: Tool, input: Any, ctx: ToolUseContext) -> PermissionDecision:
    """``decide`` on what the tool declares for this call (a declaration that raises is a deny)."""
    try:
        facts, target = _declared(tool, input, ctx)
    except Exception as exc:  # a broken declaration must not allow, in any mode
        return check_failed(exc)
    return decide(ctx, facts, target, input)


def decide_after_hook_for(tool: Tool, input: Any, ctx: ToolUseContext, hook_decision: str,
                          reason: str | None) -> PermissionDecision | None:
    """``decide_after_hook`` on what the tool declares (a PreToolUse hook said allow or ask)."""
    try:
        facts, target = _declared(tool, input, ctx)
    except Exception as exc:
        return check_failed(exc)
    return decide_after_hook(ctx, facts, target, input, hook_decision, reason)


def _emit(ctx: ToolUseContext, event: AgentEvent) -> None:
    if ctx.emit is not None:
        ctx.emit(event)


def session_scoped(suggestions: list[PermissionUpdate]) -> list[PermissionUpdate]:
    """Allow for session (``rule: 'always'`` in §1.5): the recorded suggestions rewritten to destination
    ``session`` (``normalizeSessionPermissionUpdates``). A front end offering "always" keeps the suggestions'
    own destinations instead (``localSettings`` for Bash, so the grant is written to settings.local.json)."""
    return [u.model_copy(update={"destination": "session"}) for u in suggestions]


def apply_updates(ctx: ToolUseContext, updates: list[PermissionUpdate]) -> None:
    """Apply permission updates (rules, mode, dirs) to the session's permission context."""
    pc = ctx.permission_context
    if isinstance(pc, PermissionContext) and updates:
        pc.apply_updates(updates)


async def can_use_tool(
    tool: Tool,
    input: Any,
    ctx: ToolUseContext,
    tool_use_id: str,
    force_decision: PermissionDecision | None = None,
) -> PermissionDecision:
    decision = force_decision or decide_for(tool, input, ctx)
    if decision.behavior != "ask":
        return decision

    input_dict = input.model_dump(exclude_unset=True) if isinstance(input, BaseModel) else dict(input)
    if tool_use_id and tool_use_id in ctx.answered_tool_use_ids:
        # This call was already answered (a duplicate delivery): never prompt or decide twice.
        return PermissionDecision(behavior="deny", message=USER_DENIED_MESSAGE)
    if ctx.prompter is None:
        hooks = ctx.hooks
        if hooks is not None and hooks.has_hooks("PermissionRequest", tool.name):
            hook_reply = await hooks.permission_request(tool.name, input_dict, decision.suggestions, ctx, tool_use_id)
            if hook_reply is not None:
                if hook_reply.behavior == "allow":
                    apply_updates(ctx, hook_reply.updated_permissions)
                    return PermissionDecision(behavior="allow", updated_input=hook_reply.updated_input or input_dict,
                                              decision_reason=decision.decision_reason)
                return PermissionDecision(behavior="deny", message=hook_reply.message or USER_DENIED_MESSAGE,
                                          decision_reason=decision.decision_reason)
        return PermissionDecision(behavior="deny", message=decision.message or "Permission required",
                                  decision_reason=decision.decision_reason)

    # On a worker thread: an Edit's patch against a 50,000-line file takes ~0.2 s of CPU, and in the
    # window this coroutine runs on the Qt thread.
    extras: dict[str, Any] = {}
    try:
        extras = await asyncio.to_thread(tool.permission_extras, input, ctx) or {}
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
    _notify_waiting(ctx, tool.name)

    reply, decided_by = await _race(ctx, request, tool.name, input_dict, decision)
    if reply.interrupt and reply.behavior == "deny":
        ctx.abort.abort("interrupt")

    if tool_use_id in ctx.answered_tool_use_ids:
        # A second answer for a call already answered: ignore, keep the first outcome (deny-safe).
        return PermissionDecision(behavior="deny", message=USER_DENIED_MESSAGE)
    ctx.answered_tool_use_ids.add(tool_use_id)
    _emit(ctx, PermissionResolved(request_id=request.request_id, tool_use_id=tool_use_id, reply=reply,
                                  decided_by=decided_by))

    if reply.behavior == "allow":
        apply_updates(ctx, reply.updated_permissions)
        updated = reply.updated_input or None  # {} means "keep the original input"
        user_modified = bool(updated) and updated != input_dict
        return PermissionDecision(behavior="allow", updated_input=updated or input_dict,
                                  decision_reason=decision.decision_reason, user_modified=user_modified,
                                  rejected_hunks=reply.rejected_hunks if updated else None,
                                  total_hunks=reply.total_hunks if updated else None)
    message = reply.message or USER_DENIED_MESSAGE
    if reply.feedback:
        message = f"{message}. The user said: {reply.feedback}" if message == USER_DENIED_MESSAGE else message
    return PermissionDecision(behavior="deny", message=message, decision_reason=decision.decision_reason,
                              feedback=reply.feedback)


def _notify_waiting(ctx: ToolUseContext, tool_name: str) -> None:
    """Notification hooks (``permission_prompt``, App. B §B.5) when the prompter will wait for an answer; they run
    in the background. A prompter that answers at once (``waits`` false: ``-p`` without a host) notifies nobody."""
    if ctx.hooks is not None and ctx.prompter is not None and ctx.prompter.waits:
        ctx.hooks.notify_soon(permission_prompt_message(tool_name), ctx, "permission_prompt", PERMISSION_PROMPT_TITLE)


DecidedBy = Literal["user", "hook", "cancel"]
Answer = tuple[PermissionReply, DecidedBy]  # the reply and who gave it


class PendingRequests:
    """The asks waiting for an answer: request_id → the Future its first answer resolves.

    Every source that may answer (the prompter, a PermissionRequest hook, the abort signal, a front end calling
    ``answer``) goes through ``answer``; the first one wins, a later one for the same request is ignored (as a
    duplicate reply for a tool_use already answered is, ``ToolUseContext.answered_tool_use_ids``)."""

    def __init__(self) -> None:
        self._futures: dict[str, asyncio.Future[Answer]] = {}

    def open(self, request_id: str) -> asyncio.Future[Answer]:
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._futures[request_id] = future
        return future

    def answer(self, request_id: str, reply: PermissionReply, decided_by: DecidedBy = "user") -> bool:
        """Resolve a waiting request; False when it is unknown or already answered (the answer is ignored)."""
        future = self._futures.get(request_id)
        if future is None or future.done():
            return False
        future.set_result((reply, decided_by))
        return True

    def close(self, request_id: str) -> None:
        future = self._futures.pop(request_id, None)
        if future is not None and not future.done():
            future.cancel()

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._futures

    def __len__(self) -> int:
        return len(self._futures)


# The asks of this process (request ids are unique: a uuid4 per wait).
pending = PendingRequests()


async def _race(ctx: ToolUseContext, request: PermissionRequest, tool_name: str, input_dict: dict[str, Any],
                decision: PermissionDecision) -> Answer:
    """The prompter, PermissionRequest hooks and the abort signal answer through ``pending``; the first wins.

    A prompter that fails or is cancelled, and an abort, answer deny (``cancel``); a hook with no opinion does
    not answer and leaves the others to."""
    rid = request.request_id
    answered = pending.open(rid)
    denied = PermissionReply(behavior="deny", message=USER_DENIED_MESSAGE)

    def from_prompter(task: asyncio.Future[Any]) -> None:
        if not task.cancelled() and task.exception() is None:
            pending.answer(rid, task.result(), "user")
        else:  # the prompter failed or was cancelled: deny
            pending.answer(rid, denied, "cancel")

    def from_hook(task: asyncio.Future[Any]) -> None:
        result = None if task.cancelled() or task.exception() is not None else task.result()
        if result is not None:
            pending.answer(rid, result, "hook")

    def from_abort(task: asyncio.Future[Any]) -> None:
        if not task.cancelled():
            task.exception()  # an abort signal that cannot be waited on still ends the wait (deny), quietly
        pending.answer(rid, denied, "cancel")

    ask_task = asyncio.ensure_future(ctx.prompter.ask(request))  # type: ignore[union-attr]
    abort_task = asyncio.ensure_future(ctx.abort.wait())
    hook_task: asyncio.Future[Any] | None = None
    hooks = ctx.hooks
    if hooks is not None and hooks.has_hooks("PermissionRequest", tool_name):
        hook_task = asyncio.ensure_future(hooks.permission_request(
            tool_name, input_dict, decision.suggestions, ctx, request.tool_use_id))
    ask_task.add_done_callback(from_prompter)
    if hook_task is not None:
        hook_task.add_done_callback(from_hook)
    abort_task.add_done_callback(from_abort)
    try:
        return await answered
    finally:
        for t in (ask_task, abort_task, hook_task):
            if t is not None and not t.done():
                t.cancel()
        pending.close(rid)
