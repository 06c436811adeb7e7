"""``StreamingToolExecutor``: start tools while the model is still streaming (SPEC §6.1–6.2).

The loop calls ``add_tool`` as each tool_use block completes, drains ``get_completed_results``
whenever the next stream event arrives, and awaits ``get_remaining_results`` after the stream.

Rules (§6.2):
- ``add_tool``: an unknown tool is completed at once with ``lookup_error``'s text (the one ``run_tool_use``
  gives, so a tool removed by a deny rule "exists but is not enabled" on every path); otherwise the
  input is parsed and ``is_concurrency_safe`` computed (a parse failure or exception → unsafe).
  Status goes ``queued`` → ``executing`` → ``completed`` → ``yielded``.
- ``can_execute(safe)``: nothing executing, or ``safe`` and every executing tool safe.
- ``process_queue``: starts queued tools in order; stops scanning at a queued *unsafe* tool that
  cannot start (nothing jumps ahead of it); a blocked safe tool is skipped. Runs again whenever a
  tool finishes.
- ``get_completed_results``: per tool in order, its pending progress first; completed results in
  arrival order; stops at an executing unsafe tool; nothing once discarded.
- Context modifiers are applied for unsafe tools only.
- A started tool first awaits its ``gate`` (the loop's "the front end took the AssistantBlock of this
  call"), so its hook and permission requests always follow the call's ``assistant`` line.

Abort reasons (§6.4), checked in this order: ``discard()`` → ``streaming_fallback``; a Bash error →
``sibling_error`` (through the executor's own child signal; the parent signal stays un-aborted);
the parent signal → ``user_interrupted`` (with reason ``interrupt``, only ``cancel`` tools).

The §6.3 inconsistency is fixed deliberately: a synthetic result ("was NOT written") replaces a
tool's own result only when it is true — the tool never started, was cancelled (interrupt
behaviour ``cancel``), or is read-only for that input. A mutating ``block`` tool (Edit, Write) that
was already running finishes and reports its **real** result, so the model is never told a write
did not happen when it did.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, AsyncIterator, Callable, Literal

from desktop_agent.core.context import AbortSignal, ToolUseContext
from desktop_agent.core.errors import REJECT_MESSAGE, STREAMING_FALLBACK_MESSAGE, sibling_error_message
from desktop_agent.core.events import ToolCallProgress
from desktop_agent.engine.execution import ToolUseOutcome, lookup_error, lookup_tool, run_tool_use
from desktop_agent.core.messages import tool_result_block
from desktop_agent.engine.orchestration import await_block_tool, started_event

Status = Literal["queued", "executing", "completed", "yielded"]
AbortReason = Literal["streaming_fallback", "sibling_error", "user_interrupted", "closed"]

# Only an error from one of these triggers sibling cancellation (§6.4).
SIBLING_CANCEL_TOOLS = ("Bash",)


class TrackedTool:
    __slots__ = ("id", "block", "tool", "status", "safe", "read_only", "behavior", "task", "outcome", "pending",
                 "assistant_uuid", "gate")

    def __init__(self, block: dict[str, Any], tool: Any, assistant_uuid: str | None,
                 gate: asyncio.Future[Any] | None = None):
        self.id = str(block.get("id", ""))
        self.block = block
        self.tool = tool
        self.status: Status = "queued"
        self.safe = False
        self.read_only = False
        self.behavior = "block"
        self.task: asyncio.Future[Any] | None = None
        self.outcome: ToolUseOutcome | None = None
        self.pending: list[Any] = []  # ToolCallStarted / ToolCallProgress not yet delivered
        self.assistant_uuid = assistant_uuid
        self.gate = gate  # done once a front end has been shown the block (the loop's AssistantBlock)

    def __repr__(self) -> str:
        return f"<TrackedTool {self.block.get('name')} {self.id} {self.status}>"


def _describe(block: dict[str, Any]) -> str | None:
    """``Bash(<first 40 chars of command/file_path/pattern>…)`` for the sibling-cancel text."""
    given = block.get("input")
    inp: dict[str, Any] = given if isinstance(given, dict) else {}
    for key in ("command", "file_path", "pattern"):
        value = inp.get(key)
        if isinstance(value, str) and value:
            short = value[:40] + ("…" if len(value) > 40 else "")
            return f"{block.get('name')}({short})"
    return None


class StreamingToolExecutor:
    """Runs tool calls as their blocks arrive, with the queue, start and delivery rules of §6.2."""

    def __init__(self, ctx: ToolUseContext, emit: Callable[[Any], None] | None = None):
        self.ctx = ctx
        # With ``emit``, ToolCallStarted/Progress (UI-only) go out at once, so they precede the
        # permission events of the same call; without it they wait in ``pending`` (§6.2 order).
        self.emit = emit
        self.tools: list[TrackedTool] = []
        self.discarded = False
        self.closed_message: str | None = None  # close(): queued tools get this instead of starting
        self.has_errored = False
        self.errored_desc: str | None = None
        # Sibling cancellation aborts this child only; the turn's own signal is left alone.
        self.sibling_abort: AbortSignal = ctx.abort.child()
        self._changed = asyncio.Event()

    # ------------------------------------------------------------------ adding
    def add_tool(self, block: dict[str, Any], assistant_uuid: str | None = None,
                 gate: asyncio.Future[Any] | None = None) -> TrackedTool | None:
        """Queue a completed tool_use block. After an abort (other than ``interrupt``) nothing is
        enqueued and None is returned: the loop answers that block itself. With ``gate`` the call does
        not start (no hook, no permission request, no ToolCallStarted) before the gate is done."""
        if self.ctx.abort.aborted and self.ctx.abort.reason != "interrupt":
            return None
        tracked = TrackedTool(block, lookup_tool(str(block.get("name")), self.ctx), assistant_uuid, gate)
        self.tools.append(tracked)
        if tracked.tool is None:
            self._announce(tracked, started_event(block, self.ctx))
            tracked.outcome = ToolUseOutcome(
                block=tool_result_block(tracked.id, lookup_error(str(block.get("name")), self.ctx), is_error=True),
                tool_name=str(block.get("name")), stage="lookup",
            )
            tracked.status = "completed"
            self._changed.set()
            return tracked
        try:
            parsed = tracked.tool.input_model.model_validate(block.get("input") or {})
            tracked.safe = bool(tracked.tool.is_concurrency_safe(parsed))
            tracked.read_only = bool(tracked.tool.is_read_only(parsed))
        except Exception:
            tracked.safe = tracked.read_only = False
        try:
            tracked.behavior = tracked.tool.interrupt_behavior()
        except Exception:
            tracked.behavior = "block"
        self.process_queue()
        return tracked

    # ------------------------------------------------------------------ scheduling
    def can_execute(self, safe: bool) -> bool:
        executing = [t for t in self.tools if t.status == "executing"]
        return not executing or (safe and all(t.safe for t in executing))

    def process_queue(self) -> None:
        for tracked in self.tools:
            if tracked.status != "queued":
                continue
            if self.can_execute(tracked.safe):
                self._start(tracked)
            elif not tracked.safe:
                break  # an unsafe tool waits; nothing after it may jump ahead

    def _start(self, tracked: TrackedTool) -> None:
        tracked.status = "executing"
        tracked.task = asyncio.ensure_future(self._run(tracked))

    def abort_reason(self, tracked: TrackedTool) -> AbortReason | None:
        if self.discarded:
            return "streaming_fallback"
        if self.has_errored:
            return "sibling_error"
        if self.ctx.abort.aborted:
            if self.ctx.abort.reason == "interrupt" and tracked.behavior != "cancel":
                return None  # new user input only cancels tools that may be cancelled
            return "user_interrupted"
        if self.closed_message is not None:
            return "closed"
        return None

    def _synthetic(self, tracked: TrackedTool, reason: AbortReason) -> ToolUseOutcome:
        if reason == "streaming_fallback":
            content = STREAMING_FALLBACK_MESSAGE
        elif reason == "sibling_error":
            content = sibling_error_message(self.errored_desc)
        elif reason == "closed":
            content = self.closed_message or REJECT_MESSAGE
        else:
            content = REJECT_MESSAGE
        return ToolUseOutcome(block=tool_result_block(tracked.id, content, is_error=True),
                              tool_name=str(tracked.block.get("name")), tool=tracked.tool, stage="aborted")

    def _announce(self, tracked: TrackedTool, event: Any) -> None:
        if self.emit is not None:
            self.emit(event)
        else:
            tracked.pending.append(event)
            self._changed.set()

    async def _run(self, tracked: TrackedTool) -> None:
        try:
            if tracked.gate is not None and not tracked.gate.done():
                await asyncio.shield(tracked.gate)  # the front end has not been shown the call yet
            outcome = await self._execute(tracked)
        except asyncio.CancelledError:
            tracked.outcome = tracked.outcome or self._synthetic(tracked, "user_interrupted")
            tracked.status = "completed"
            self._changed.set()
            raise
        tracked.outcome = outcome
        tracked.status = "completed"
        if not tracked.safe and outcome.context_modifier is not None:
            try:
                new_ctx = outcome.context_modifier(self.ctx)
                if isinstance(new_ctx, ToolUseContext):
                    self.ctx = new_ctx
            except Exception:
                pass
        self._changed.set()
        self.process_queue()

    async def _execute(self, tracked: TrackedTool) -> ToolUseOutcome:
        self._announce(tracked, started_event(tracked.block, self.ctx))
        reason = self.abort_reason(tracked)
        if reason is not None:  # never started: the synthetic result is the truth
            return self._synthetic(tracked, reason)

        def on_progress(tool_use_id: str, data: Any) -> None:
            self._announce(tracked, ToolCallProgress(tool_use_id=tool_use_id, data=data))

        tool_ctx = dataclasses.replace(self.ctx, abort=self.sibling_abort, on_progress=on_progress)
        task = asyncio.ensure_future(run_tool_use(tracked.block, tool_ctx))
        cancelled = False
        try:
            if tracked.behavior == "cancel":
                # For a cancel-behaviour tool every abort applies (user, interrupt, sibling error).
                abort_wait = asyncio.ensure_future(self.sibling_abort.wait())
                try:
                    done, _ = await asyncio.wait({task, abort_wait}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    abort_wait.cancel()
                if task not in done:
                    task.cancel()
                    cancelled = True
                    try:
                        await task
                    except BaseException:
                        pass
            if not cancelled:
                outcome = await await_block_tool(task, self.sibling_abort, tracked.block) \
                    if tracked.behavior != "cancel" else await task
        except asyncio.CancelledError:
            task.cancel()
            raise
        if cancelled:
            return self._synthetic(tracked, self.abort_reason(tracked) or "user_interrupted")

        if outcome.is_error and outcome.tool_name in SIBLING_CANCEL_TOOLS and not self.has_errored \
                and not self.discarded:
            # This tool keeps its own error; running and queued siblings are cancelled.
            self.has_errored = True
            self.errored_desc = _describe(tracked.block)
            self.sibling_abort.abort("sibling_error")
            return outcome
        reason = self.abort_reason(tracked)
        if reason is not None and tracked.read_only:
            # Harmless to say it did not run: nothing was changed. Mutating tools keep the truth.
            return self._synthetic(tracked, reason)
        return outcome

    # ------------------------------------------------------------------ delivery
    def get_completed_results(self) -> list[Any]:
        """Pending ToolCallStarted/Progress events and ``TrackedTool``s whose results are ready."""
        if self.discarded:
            return []
        out: list[Any] = []
        for tracked in self.tools:
            if tracked.pending:
                out.extend(tracked.pending)
                tracked.pending.clear()
            if tracked.status == "yielded":
                continue
            if tracked.status == "completed" and tracked.outcome is not None:
                tracked.status = "yielded"
                out.append(tracked)
            elif tracked.status == "executing" and not tracked.safe:
                break
        return out

    async def get_remaining_results(self) -> AsyncIterator[Any]:
        """Everything not yet delivered, waiting for unfinished tools."""
        while not self.discarded:
            self._changed.clear()
            self.process_queue()
            for item in self.get_completed_results():
                yield item
            if all(t.status == "yielded" for t in self.tools):
                return
            await self._changed.wait()

    # ------------------------------------------------------------------ control
    def discard(self) -> None:
        """Stream fallback: queued tools never start and no further results are delivered."""
        self.discarded = True
        self._changed.set()

    def close(self, message: str) -> None:
        """The turn failed (model error): running tools finish, queued ones get ``message``."""
        self.closed_message = message
        self._changed.set()

    def any_started(self) -> bool:
        return any(t.status != "queued" and t.tool is not None for t in self.tools)

    def cancel_all(self) -> None:
        """Hard stop (the query itself was cancelled): cancel every task still running."""
        for tracked in self.tools:
            if tracked.task is not None and not tracked.task.done():
                tracked.task.cancel()

    @property
    def pending_count(self) -> int:
        return sum(1 for t in self.tools if t.status != "yielded")
