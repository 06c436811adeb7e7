"""Running a round of tool calls: ``partition_tool_calls`` and ``run_tools`` (SPEC §3.10).

Adjacent concurrency-safe calls form one batch that runs concurrently (at most
``CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY``, default 10, in flight) and yields results as they complete;
every other call is a batch of its own, run in order. Context modifiers of a concurrent batch are
applied after it in the original call order; a serial call's right after it. Every tool_use gets
exactly one result, also on abort (a call not started gets REJECT_MESSAGE; a started call with
``interrupt_behavior() == "cancel"`` is cancelled; a ``block`` call finishes and reports its real
result — the model is never told a write did not happen when it did — unless it is still running a
grace period after the Stop, when it is cancelled and the model is told it may have had effects).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator

from desktop_agent.core.context import AbortSignal, ToolUseContext
from desktop_agent.core.errors import REJECT_MESSAGE, STOPPED_AFTER_GRACE_MESSAGE
from desktop_agent.core.events import ToolCallFinished, ToolCallProgress, ToolCallStarted
from desktop_agent.engine.execution import ToolUseOutcome, lookup_tool, run_tool_use
from desktop_agent.core.messages import tool_result_block


def max_tool_concurrency() -> int:
    try:
        value = int(os.environ.get("CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY") or 10)
    except ValueError:
        value = 10
    return max(1, value)


@dataclass
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
    batches: list[Batch] = []
    for block in blocks:
        safe = is_call_concurrency_safe(block, ctx)
        if safe and batches and batches[-1].concurrent:
            batches[-1].blocks.append(block)
        else:
            batches.append(Batch(concurrent=safe, blocks=[block]))
    return batches


def rejected_outcome(block: dict[str, Any], content: str = REJECT_MESSAGE) -> ToolUseOutcome:
    return ToolUseOutcome(
        block=tool_result_block(str(block.get("id", "")), content, is_error=True),
        tool_name=str(block.get("name")), stage="aborted",
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


def abort_grace_s() -> float:
    """How long a started ``block`` tool may keep running after the user's Stop before it is cancelled."""
    try:
        return max(0.0, float(os.environ.get("DESKTOP_AGENT_ABORT_GRACE_S") or 3.0))
    except ValueError:
        return 3.0


def stopped_outcome(block: dict[str, Any], grace: float) -> ToolUseOutcome:
    """A started tool that ignored the abort past the grace period. It may have had effects, so the model is
    told exactly that (never "was NOT written")."""
    return rejected_outcome(block, STOPPED_AFTER_GRACE_MESSAGE.format(grace=grace))


async def await_block_tool(task: asyncio.Future[ToolUseOutcome], abort: AbortSignal,
                           block: dict[str, Any]) -> ToolUseOutcome:
    """Await a started ``block`` tool: it finishes and reports its real result, even after an abort — but a
    tool still running ``abort_grace_s()`` after the user's Stop is cancelled (a hung tool must not keep the
    turn alive). New user input (abort reason ``interrupt``) does not stop a ``block`` tool."""
    abort_wait = asyncio.ensure_future(abort.wait())
    waiting: set[asyncio.Future[Any]] = {task, abort_wait}
    try:
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        abort_wait.cancel()
    if task in done or abort.reason == "interrupt":
        return await task
    grace = abort_grace_s()
    try:
        return await asyncio.wait_for(asyncio.shield(task), grace)
    except asyncio.TimeoutError:
        task.cancel()
        try:
            await task
        except BaseException:
            pass
        return stopped_outcome(block, grace)


async def run_one(block: dict[str, Any], ctx: ToolUseContext) -> ToolUseOutcome:
    """One call with the abort rules: not started after an abort; cancel-able tools cancelled."""
    if ctx.abort.aborted:
        return rejected_outcome(block)
    tool = lookup_tool(str(block.get("name")), ctx)
    behavior = "block"
    if tool is not None:
        try:
            behavior = tool.interrupt_behavior()
        except Exception:
            behavior = "block"
    task = asyncio.ensure_future(run_tool_use(block, ctx))
    if behavior != "cancel":
        return await await_block_tool(task, ctx.abort, block)
    abort_wait = asyncio.ensure_future(ctx.abort.wait())
    try:
        done, _ = await asyncio.wait({task, abort_wait}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        abort_wait.cancel()
    if task in done:
        return task.result()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Exception:
        pass
    return rejected_outcome(block)


class ToolRunner:
    """Runs one round of tool_use blocks; ``events()`` yields UI events, ``outcomes`` keeps results.

    ``ctx`` is updated by context modifiers as the round goes.
    """

    def __init__(self, blocks: list[dict[str, Any]], ctx: ToolUseContext):
        self.blocks = blocks
        self.ctx = ctx
        self.outcomes: dict[str, ToolUseOutcome] = {}
        self.max_in_flight = 0  # instrumentation for tests and benchmarks

    def results_in_order_of_completion(self) -> list[dict[str, Any]]:
        return [o.block for o in self.outcomes.values()]

    async def events(self) -> AsyncIterator[Any]:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        previous_progress = self.ctx.on_progress

        def on_progress(tool_use_id: str, data: Any) -> None:
            queue.put_nowait(ToolCallProgress(tool_use_id=tool_use_id, data=data))
            if previous_progress is not None:
                previous_progress(tool_use_id, data)

        self.ctx.on_progress = on_progress
        try:
            for batch in partition_tool_calls(self.blocks, self.ctx):
                if batch.concurrent:
                    async for ev in self._run_concurrent(batch.blocks, queue):
                        yield ev
                else:
                    for block in batch.blocks:
                        yield started_event(block, self.ctx)
                        outcome = await self._guarded(block)
                        if outcome.context_modifier is not None:
                            self.ctx = _apply_modifier(self.ctx, outcome.context_modifier)
                        while not queue.empty():
                            yield queue.get_nowait()
                        yield self._finish(outcome)
        finally:
            self.ctx.on_progress = previous_progress
            # Whatever happened (including our own cancellation), every block gets one result.
            for block in self.blocks:
                if str(block.get("id", "")) not in self.outcomes:
                    self.outcomes[str(block.get("id", ""))] = rejected_outcome(block)

    async def _guarded(self, block: dict[str, Any]) -> ToolUseOutcome:
        try:
            return await run_one(block, self.ctx)
        except asyncio.CancelledError:
            self.outcomes.setdefault(str(block.get("id", "")), rejected_outcome(block))
            raise

    def _finish(self, outcome: ToolUseOutcome) -> ToolCallFinished:
        self.outcomes[outcome.block["tool_use_id"]] = outcome
        return finished_event(outcome)

    async def _run_concurrent(self, blocks: list[dict[str, Any]], queue: asyncio.Queue[Any]) -> AsyncIterator[Any]:
        sem = asyncio.Semaphore(max_tool_concurrency())
        in_flight = 0
        modifiers: dict[int, Any] = {}

        async def one(i: int, block: dict[str, Any]) -> None:
            nonlocal in_flight
            async with sem:
                in_flight += 1
                self.max_in_flight = max(self.max_in_flight, in_flight)
                queue.put_nowait(started_event(block, self.ctx))
                try:
                    outcome = await self._guarded(block)
                finally:
                    in_flight -= 1
            if outcome.context_modifier is not None:
                modifiers[i] = outcome.context_modifier
            queue.put_nowait(("done", outcome))

        tasks = [asyncio.ensure_future(one(i, b)) for i, b in enumerate(blocks)]
        remaining = len(tasks)
        try:
            while remaining:
                item = await queue.get()
                if isinstance(item, tuple) and item[0] == "done":
                    remaining -= 1
                    yield self._finish(item[1])
                else:
                    yield item
        finally:
            for t in tasks:
                if not t.done():
                    t.cancel()
        for i in sorted(modifiers):
            self.ctx = _apply_modifier(self.ctx, modifiers[i])


def _apply_modifier(ctx: ToolUseContext, modifier: Any) -> ToolUseContext:
    try:
        new_ctx = modifier(ctx)
    except Exception:
        return ctx
    return new_ctx if isinstance(new_ctx, ToolUseContext) else ctx


async def run_tools(blocks: list[dict[str, Any]], ctx: ToolUseContext) -> AsyncIterator[Any]:
    """Convenience: the events of one round. The result blocks are on the ``ToolCallFinished`` events."""
    runner = ToolRunner(blocks, ctx)
    async for ev in runner.events():
        yield ev


def elapsed_ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000
