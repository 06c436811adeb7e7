"""A PreToolUse hook's ``defer`` (SPEC D.6): the call is left pending and saved, the turn ends ``tool_deferred``.

Only a non-interactive session (``-p``, an SDK host: ``ctx.extras[DEFER_ALLOWED]``, set by the session) defers,
and only a call that is the one tool_use of its reply; otherwise ``run_tool_use`` treats the hook's ``defer`` as
``ask``. How many tool_use blocks the reply has is known only once it is complete (with streaming execution a call
starts while the model still writes): the round's scheduler publishes it in ``RoundSize`` (the loop resolves it when
the reply's entry is written, or with ``NOT_DEFERRABLE`` when the reply is dropped), and ``may_defer`` waits for it.

What is saved: the assistant entry with the tool_use (already on disk) and, instead of a tool_result, one
``attachment`` entry ``{"type": "hook_deferred_tool", "toolUseID", "toolName", "toolInput", "hookName",
"hookEvent": "PreToolUse", "permissionMode"}`` (the reference's record; ``session.resume.deferred_record``). A resume
(``session.resume``) keeps that one unanswered tool_use, and the session runs the call again through the whole
pipeline (PreToolUse hooks, the permission check, a person if asked) before anything else of the next turn
(``engine.loop.settle_pending``). Nothing expires: the record is the pending state.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Any

from desktop_agent.core.abort import until_aborted
from desktop_agent.core.context import ToolUseContext
from desktop_agent.session.resume import DEFERRED_TOOL, deferred_record, is_deferred_record

DEFER_ALLOWED = "defer_allowed"  # ctx.extras key: a PreToolUse "defer" may end the run (non-interactive only)
NOT_DEFERRABLE = -1  # RoundSize value when the reply was dropped (stream fallback, model error)
# What the UI is told about the call (a ToolCallFinished); the model never sees it.
DEFERRED_NOTICE = "PreToolUse hook deferred {tool}. Resume with -p --resume to continue."


class RoundSize:
    """The number of tool_use blocks of the round's reply, once known."""

    def __init__(self, known: int | None = None):
        self._future: asyncio.Future[int] | None = None
        self._known = known

    def set(self, count: int) -> None:
        if self._known is None:
            self._known = count
        if self._future is not None and not self._future.done():
            self._future.set_result(self._known)

    async def wait(self) -> int:
        if self._known is not None:
            return self._known
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        return await asyncio.shield(self._future)


CURRENT_ROUND: ContextVar[RoundSize | None] = ContextVar("desktop_agent_round_size", default=None)


async def may_defer(ctx: ToolUseContext) -> bool:
    """Whether a ``defer`` may end the run here: a non-interactive session, a reply with exactly this one call,
    and no abort while waiting for the reply to end."""
    if not ctx.extras.get(DEFER_ALLOWED):
        return False
    size = CURRENT_ROUND.get()
    if size is None:
        return False
    task = asyncio.ensure_future(size.wait())
    if not await until_aborted(task, ctx.abort):
        task.cancel()
        return False
    return task.result() == 1


__all__ = ["DEFER_ALLOWED", "DEFERRED_TOOL", "DEFERRED_NOTICE", "NOT_DEFERRABLE", "RoundSize", "CURRENT_ROUND",
           "may_defer", "deferred_record", "is_deferred_record"]
