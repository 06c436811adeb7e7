"""The one tool scheduler (SPEC §3.10, §6.1–6.4): which call starts when, which result is delivered when.

The loop ``add_tool``s each tool_use as its block completes while the model streams (``mode="streaming"``); batch
execution (``mode="batch"``, ``streaming_tool_execution`` off, ``ToolRunner``/``run_tools``) is every block of
the reply added at once. One set of rules for both:

- ``add_tool``: an unknown tool is completed at once with ``lookup_error``'s text (the text ``run_tool_use`` gives,
  so a tool removed by a deny rule "exists but is not enabled" on every path); otherwise its input is parsed and
  ``is_concurrency_safe`` computed (a parse failure or an exception → unsafe). Status goes ``queued`` →
  ``executing`` → ``completed`` → ``yielded``.
- ``can_execute(safe)``: nothing executing, or ``safe``, every executing call safe and fewer than
  ``CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY`` (default 10) in flight. So adjacent concurrency-safe calls run
  together and a write runs alone, in call order (``partition_tool_calls`` names the groups that result).
- ``process_queue``: starts queued calls in order; stops at a queued *unsafe* call that cannot start (nothing
  jumps ahead of it); a blocked safe call is skipped. Runs again whenever a call finishes.
- Delivery (``get_completed_results``): per call in order, its kept events first; completed results in
  arrival order; stops at an executing unsafe call; nothing once discarded.
- Context modifiers: applied in one place, in call order (a finished call's modifier waits for the calls
  before it): an unsafe call's right after it, a safe call's only in batch mode (SPEC §3.10 — the streaming
  executor applies modifiers of unsafe calls only [CC]).
- A started call first awaits its ``gate`` (the loop's "the front end took the AssistantBlock of this call"),
  so its hook and permission requests always follow the call's ``assistant`` line; it then gets its slot of
  the round's ``EventSink`` (started first) and runs with a context whose ``emit``/``on_progress`` go there.

Abort reasons (§6.4), in this order: ``discard()`` → ``streaming_fallback``; a Bash error → ``sibling_error``
(through the scheduler's own child signal; the turn's signal stays un-aborted); the turn's signal →
``user_interrupted`` (with reason ``interrupt``, only ``cancel`` tools); ``close()`` → its message. After an
abort (other than ``interrupt``) a streaming ``add_tool`` enqueues nothing (the loop answers that block); in batch
mode the call is enqueued and answered with REJECT_MESSAGE without starting.

A synthetic result ("was NOT written") replaces a call's own result only when it is true — the call never
started, was cancelled (interrupt behaviour ``cancel``), or is read-only for that input. A mutating ``block``
tool (Edit, Write) that was already running finishes and reports its **real** result, unless it is still
running ``DESKTOP_AGENT_ABORT_GRACE_S`` (default 3) after the Stop: then it is cancelled and the model is told
it may have had effects.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from typing import Any, AsyncIterator, Literal

from desktop_agent.core.abort import cancel_and_wait, until_aborted
from desktop_agent.core.context import AbortSignal, ToolUseContext
from desktop_agent.core.errors import (
    REJECT_MESSAGE, STOPPED_AFTER_GRACE_MESSAGE, STREAMING_FALLBACK_MESSAGE, sibling_error_message,
)
from desktop_agent.core.events import ToolCallFinished, ToolCallStarted
from desktop_agent.core.messages import tool_result_block
from desktop_agent.engine.defer import CURRENT_ROUND, NOT_DEFERRABLE, RoundSize
from desktop_agent.engine.execution import ToolUseOutcome, lookup_error, lookup_tool, run_tool_use
from desktop_agent.engine.sink import CallSlot, EventSink

Status = Literal["queued", "executing", "completed", "yielded"]
AbortReason = Literal["streaming_fallback", "sibling_error", "user_interrupted", "closed"]
Mode = Literal["streaming", "batch"]
InterruptBehavior = Literal["cancel", "block"]

# Only an error from one of these triggers sibling cancellation (§6.4).
SIBLING_CANCEL_TOOLS = ("Bash",)


def max_tool_concurrency() -> int:
    try:
        value = int(os.environ.get("CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY") or 10)
    except ValueError:
        value = 10
    return max(1, value)


def abort_grace_s() -> float:
    """How long a started ``block`` tool may keep running after the user's Stop before it is cancelled."""
    try:
        return max(0.0, float(os.environ.get("DESKTOP_AGENT_ABORT_GRACE_S") or 3.0))
    except ValueError:
        return 3.0


# ------------------------------------------------------------------------------------------ the pieces
@dataclasses.dataclass
class Batch:
    concurrent: bool
    blocks: list[dict[str, Any]]


def is_call_concurrency_safe(block: dict[str, Any], ctx: ToolUseContext) -> bool:
    """Unknown tool, unparseable input or a throwing ``is_concurrency_safe`` → unsafe."""
    try:
        tool = lookup_tool(str(block.get("name")), ctx)
        if tool is None:
            return False
        parsed = tool.input_model.model_validate(block.get("input") or {})
        return bool(tool.is_concurrency_safe(parsed))
    except Exception:
        return False


def partition_tool_calls(blocks: list[dict[str, Any]], ctx: ToolUseContext) -> list[Batch]:
    """The groups the scheduler's rules make of one reply's calls: adjacent safe calls together, others alone."""
    batches: list[Batch] = []
    for block in blocks:
        safe = is_call_concurrency_safe(block, ctx)
        if safe and batches and batches[-1].concurrent:
            batches[-1].blocks.append(block)
        else:
            batches.append(Batch(concurrent=safe, blocks=[block]))
    return batches


def rejected_outcome(block: dict[str, Any], content: str = REJECT_MESSAGE, tool: Any = None) -> ToolUseOutcome:
    return ToolUseOutcome(
        block=tool_result_block(str(block.get("id", "")), content, is_error=True),
        tool_name=str(block.get("name")), tool=tool, stage="aborted",
    )


def finished_event(outcome: ToolUseOutcome) -> ToolCallFinished:
    data = outcome.data if isinstance(outcome.data, dict) else None
    return ToolCallFinished(
        tool_use_id=outcome.block["tool_use_id"], name=outcome.tool_name, content=outcome.block.get("content"),
        is_error=outcome.is_error, data=data, duration_ms=outcome.duration_ms,
        denied=outcome.stage == "permission",
    )


def started_event(block: dict[str, Any], ctx: ToolUseContext) -> ToolCallStarted:
    tool = lookup_tool(str(block.get("name")), ctx)
    given = block.get("input")
    inp: dict[str, Any] = given if isinstance(given, dict) else {}
    summary = ""
    if tool is not None:
        try:
            summary = tool.summary(inp)
        except Exception:
            summary = ""
    return ToolCallStarted(tool_use_id=str(block.get("id", "")), name=str(block.get("name")), input=inp,
                           summary=summary)


async def await_block_tool(task: asyncio.Future[ToolUseOutcome], abort: AbortSignal,
                           block: dict[str, Any]) -> ToolUseOutcome:
    """Await a started ``block`` tool: it finishes and reports its real result, even after an abort — but a
    tool still running ``abort_grace_s()`` after the user's Stop is cancelled (a hung tool must not keep the
    turn alive). New user input (abort reason ``interrupt``) does not stop a ``block`` tool."""
    if await until_aborted(task, abort) or abort.reason == "interrupt":
        return await task
    grace = abort_grace_s()
    try:
        return await asyncio.wait_for(asyncio.shield(task), grace)
    except asyncio.TimeoutError:
        await cancel_and_wait(task)
        return rejected_outcome(block, STOPPED_AFTER_GRACE_MESSAGE.format(grace=grace))


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


class TrackedTool:
    """One call in the scheduler."""

    __slots__ = ("id", "block", "tool", "status", "safe", "read_only", "behavior", "task", "outcome", "slot",
                 "assistant_uuid", "gate", "modifier_applied")

    def __init__(self, block: dict[str, Any], tool: Any, assistant_uuid: str | None,
                 gate: asyncio.Future[Any] | None = None):
        self.id = str(block.get("id", ""))
        self.block = block
        self.tool = tool
        self.status: Status = "queued"
        self.safe = False
        self.read_only = False
        self.behavior: InterruptBehavior = "block"
        self.task: asyncio.Future[Any] | None = None
        self.outcome: ToolUseOutcome | None = None
        self.slot: CallSlot | None = None  # the call's events, from its ToolCallStarted on
        self.assistant_uuid = assistant_uuid
        self.gate = gate  # done once a front end has been shown the block (the loop's AssistantBlock)
        self.modifier_applied = False

    def __repr__(self) -> str:
        return f"<TrackedTool {self.block.get('name')} {self.id} {self.status}>"


# ------------------------------------------------------------------------------------------ the scheduler
class Scheduler:
    """Runs one round's tool calls as their blocks are added, with the start and delivery rules above."""

    def __init__(self, ctx: ToolUseContext, sink: EventSink | None = None, mode: Mode = "streaming"):
        self.ctx = ctx
        self.mode: Mode = mode
        self._changed = asyncio.Event()
        self.sink = sink if sink is not None else EventSink(changed=self._changed.set)
        self.tools: list[TrackedTool] = []
        self.discarded = False
        self.closed_message: str | None = None  # close(): queued calls get this instead of starting
        self.has_errored = False
        self.errored_desc: str | None = None
        # Sibling cancellation aborts this child only; the turn's own signal is left alone.
        self.sibling_abort: AbortSignal = ctx.abort.child()
        self.max_in_flight = 0  # instrumentation for tests and benchmarks
        self._limit = max_tool_concurrency()
        self._modifiers_done = 0  # calls before this index have had their modifier applied (or had none)
        # How many tool_use blocks the reply has (the loop sets it when the reply ends): a PreToolUse ``defer``
        # applies only to a reply's one call (``engine.defer``).
        self.round_size = RoundSize()

    # ------------------------------------------------------------------ adding
    def add_tool(self, block: dict[str, Any], assistant_uuid: str | None = None,
            gate: asyncio.Future[Any] | None = None) -> TrackedTool | None:
        """Queue a completed tool_use block. In streaming mode, after an abort (other than ``interrupt``)
        nothing is enqueued and None is returned: the loop answers that block itself. With ``gate`` the call
        does not start (no hook, no permission request, no ToolCallStarted) before the gate is done."""
        if self.mode == "streaming" and self.ctx.abort.aborted and self.ctx.abort.reason != "interrupt":
            return None
        tracked = TrackedTool(block, lookup_tool(str(block.get("name")), self.ctx), assistant_uuid, gate)
        self.tools.append(tracked)
        if tracked.tool is None:
            tracked.slot = self.sink.open(started_event(block, self.ctx))
            tracked.outcome = ToolUseOutcome(
                block=tool_result_block(tracked.id, lookup_error(str(block.get("name")), self.ctx), is_error=True),
                tool_name=str(block.get("name")), stage="lookup",
            )
            tracked.status = "completed"
            self._after_completion()
            return tracked
        try:
            parsed = tracked.tool.input_model.model_validate(block.get("input") or {})
            tracked.safe = bool(tracked.tool.is_concurrency_safe(parsed))
            tracked.read_only = bool(tracked.tool.is_read_only(parsed))
        except Exception:
            tracked.safe = tracked.read_only = False
        try:
            tracked.behavior = "cancel" if tracked.tool.interrupt_behavior() == "cancel" else "block"
        except Exception:
            tracked.behavior = "block"
        self.process_queue()
        return tracked


    # ------------------------------------------------------------------ scheduling
    def can_execute(self, safe: bool) -> bool:
        executing = [t for t in self.tools if t.status == "executing"]
        if not executing:
            return True
        return safe and len(executing) < self._limit and all(t.safe for t in executing)

    def process_queue(self) -> None:
        for tracked in self.tools:
            if tracked.status != "queued":
                continue
            if self.can_execute(tracked.safe):
                self._start(tracked)
            elif not tracked.safe:
                break  # an unsafe call waits; nothing after it may jump ahead

    def _start(self, tracked: TrackedTool) -> None:
        tracked.status = "executing"
        self.max_in_flight = max(self.max_in_flight, sum(1 for t in self.tools if t.status == "executing"))
        tracked.task = asyncio.ensure_future(self._run(tracked))

    def abort_reason(self, tracked: TrackedTool) -> AbortReason | None:
        if self.discarded:
            return "streaming_fallback"
        if self.has_errored:
            return "sibling_error"
        if self.ctx.abort.aborted:
            if self.ctx.abort.reason == "interrupt" and tracked.behavior != "cancel":
                return None  # new user input only cancels calls that may be cancelled
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
        return rejected_outcome(tracked.block, content, tracked.tool)

    async def _run(self, tracked: TrackedTool) -> None:
        CURRENT_ROUND.set(self.round_size)  # this task's context (and its children's) only
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
        self._after_completion()
        self.process_queue()

    def _after_completion(self) -> None:
        self.apply_context_modifiers()
        self._changed.set()

    def apply_context_modifiers(self) -> None:
        """The one place context modifiers are applied: in call order, each once its call and every call
        before it have finished; a safe call's only in batch mode."""
        while self._modifiers_done < len(self.tools):
            tracked = self.tools[self._modifiers_done]
            if tracked.status not in ("completed", "yielded") or tracked.outcome is None:
                return
            self._modifiers_done += 1
            modifier = tracked.outcome.context_modifier
            if modifier is None or tracked.modifier_applied or (tracked.safe and self.mode != "batch"):
                continue
            tracked.modifier_applied = True
            try:
                new_ctx = modifier(self.ctx)
            except Exception:
                continue
            if isinstance(new_ctx, ToolUseContext):
                self.ctx = new_ctx

    async def _execute(self, tracked: TrackedTool) -> ToolUseOutcome:
        slot = tracked.slot = self.sink.open(started_event(tracked.block, self.ctx))
        reason = self.abort_reason(tracked)
        if reason is not None:  # never started: the synthetic result is the truth
            return self._synthetic(tracked, reason)
        tool_ctx = dataclasses.replace(self.ctx, abort=self.sibling_abort, on_progress=slot.progress, emit=slot.emit)
        task: asyncio.Future[ToolUseOutcome] = asyncio.ensure_future(run_tool_use(tracked.block, tool_ctx))
        if tracked.behavior == "cancel":
            # For a cancel-behaviour tool every abort applies (user, interrupt, sibling error).
            if not await until_aborted(task, self.sibling_abort):
                await cancel_and_wait(task)
                return self._synthetic(tracked, self.abort_reason(tracked) or "user_interrupted")
            outcome = task.result()
        else:
            outcome = await await_block_tool(task, self.sibling_abort, tracked.block)

        if outcome.is_error and outcome.tool_name in SIBLING_CANCEL_TOOLS and not self.has_errored \
                and not self.discarded:
            # This call keeps its own error; running and queued siblings are cancelled.
            self.has_errored = True
            self.errored_desc = _describe(tracked.block)
            self.sibling_abort.abort("sibling_error")
            return outcome
        reason = self.abort_reason(tracked)
        if reason is not None and tracked.read_only:
            # Harmless to say it did not run: nothing was changed. Mutating calls keep the truth.
            return self._synthetic(tracked, reason)
        return outcome

    # ------------------------------------------------------------------ delivery
    def get_completed_results(self) -> list[Any]:
        """Kept ToolCallStarted/Progress/permission events and ``TrackedTool``s whose results are ready."""
        if self.discarded:
            return []
        out: list[Any] = []
        for tracked in self.tools:
            if tracked.slot is not None and tracked.slot.pending:
                out.extend(tracked.slot.take())
            if tracked.status == "yielded":
                continue
            if tracked.status == "completed" and tracked.outcome is not None:
                tracked.status = "yielded"
                out.append(tracked)
            elif tracked.status == "executing" and not tracked.safe:
                break
        return out

    async def get_remaining_results(self) -> AsyncIterator[Any]:
        """Everything not yet delivered, waiting for unfinished calls."""
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
        """Stream fallback: queued calls never start and no further results are delivered."""
        self.discarded = True
        self.round_size.set(NOT_DEFERRABLE)
        self._changed.set()

    def close(self, message: str) -> None:
        """The turn failed (model error): running calls finish, queued ones get ``message``."""
        self.closed_message = message
        self.round_size.set(NOT_DEFERRABLE)
        self._changed.set()

    def any_started(self) -> bool:
        return any(t.status != "queued" and t.tool is not None for t in self.tools)

    def cancel_all(self) -> None:
        """Hard stop (the query itself was cancelled): cancel every task still running."""
        for tracked in self.tools:
            if tracked.task is not None and not tracked.task.done():
                tracked.task.cancel()


# ------------------------------------------------------------------------------------------ batch façade
class ToolRunner:
    """One round run as a batch: every block added at once to a ``Scheduler``. ``events()`` yields the UI
    events (ToolCallStarted/Progress, permission events, ToolCallFinished); ``outcomes`` keeps the results in
    delivery order and ``ctx`` follows the context modifiers."""

    def __init__(self, blocks: list[dict[str, Any]], ctx: ToolUseContext):
        self.blocks = blocks
        self.ctx = ctx
        self.outcomes: dict[str, ToolUseOutcome] = {}
        self.max_in_flight = 0

    def results_in_order_of_completion(self) -> list[dict[str, Any]]:
        return [o.block for o in self.outcomes.values()]

    async def events(self) -> AsyncIterator[Any]:
        scheduler = Scheduler(self.ctx, mode="batch")
        scheduler.round_size.set(len(self.blocks))
        try:
            for block in self.blocks:
                scheduler.add_tool(block)
            async for item in scheduler.get_remaining_results():
                if isinstance(item, TrackedTool):
                    assert item.outcome is not None
                    self.outcomes[item.id] = item.outcome
                    yield finished_event(item.outcome)
                else:
                    yield item
        finally:
            scheduler.cancel_all()
            self.ctx = scheduler.ctx
            self.max_in_flight = scheduler.max_in_flight
            for block in self.blocks:  # whatever happened (our own cancellation too): one result per block
                self.outcomes.setdefault(str(block.get("id", "")), rejected_outcome(block))


async def run_tools(blocks: list[dict[str, Any]], ctx: ToolUseContext) -> AsyncIterator[Any]:
    """The events of one round run as a batch. The result blocks are on the ``ToolCallFinished`` events."""
    async for event in ToolRunner(blocks, ctx).events():
        yield event
