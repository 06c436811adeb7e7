"""The scheduler, batch (every block at once): partition_tool_calls and run_tools (SPEC §3.10; §9 items 49–55)."""

from __future__ import annotations

import asyncio

import pytest

from desktop_agent.core.events import ToolCallFinished
from desktop_agent.engine.scheduler import ToolRunner, partition_tool_calls
from desktop_agent.core.tool import ToolResult, build_tool

from .helpers import PathInput, Tracker, ctx_with, make_tools, tool_use


def ids(batches):
    return [[b["id"] for b in batch.blocks] for batch in batches]


def test_read_grep_edit_read_partitions_into_three_batches(tmp_path):
    ctx = ctx_with(make_tools(Tracker()), tmp_path)
    blocks = [
        tool_use("Read", {"file_path": "A"}, "A"),
        tool_use("Grep", {"pattern": "B"}, "B"),
        tool_use("Edit", {"file_path": "C", "old_string": "x", "new_string": "y"}, "C"),
        tool_use("Read", {"file_path": "D"}, "D"),
    ]
    batches = partition_tool_calls(blocks, ctx)
    assert ids(batches) == [["A", "B"], ["C"], ["D"]]
    assert [b.concurrent for b in batches] == [True, False, True]


def test_unknown_and_invalid_calls_are_alone(tmp_path):
    ctx = ctx_with(make_tools(Tracker()), tmp_path)
    blocks = [
        tool_use("Read", {"file_path": "A"}, "A"),
        tool_use("Nope", {}, "X"),
        tool_use("Read", {"file_path": "B"}, "B"),
        tool_use("Read", {"file_path": 3}, "Y"),
        tool_use("Read", {"file_path": "C"}, "C"),
    ]
    assert ids(partition_tool_calls(blocks, ctx)) == [["A"], ["X"], ["B"], ["Y"], ["C"]]


def test_throwing_is_concurrency_safe_is_unsafe(tmp_path):
    def boom(self, i):
        raise ValueError("no")

    t = build_tool("Weird", PathInput, description="w", is_concurrency_safe=boom, call=lambda s, i, c: ToolResult(""))
    ctx = ctx_with([t, *make_tools(Tracker())], tmp_path)
    blocks = [tool_use("Read", {"file_path": "A"}, "A"), tool_use("Weird", {"file_path": "W"}, "W"),
              tool_use("Read", {"file_path": "B"}, "B")]
    assert [b.concurrent for b in partition_tool_calls(blocks, ctx)] == [True, False, True]


async def _run(blocks, ctx):
    runner = ToolRunner(blocks, ctx)
    events = [ev async for ev in runner.events()]
    return runner, events


@pytest.mark.parametrize("env,cap", [(None, 10), ("2", 2)])
def test_concurrency_cap(tmp_path, monkeypatch, env, cap):
    if env:
        monkeypatch.setenv("CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY", env)
    else:
        monkeypatch.delenv("CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY", raising=False)
    tr = Tracker()
    ctx = ctx_with(make_tools(tr, delay=0.05), tmp_path)
    blocks = [tool_use("Read", {"file_path": f"f{i}"}, f"r{i}") for i in range(12)]
    runner, events = asyncio.run(_run(blocks, ctx))
    assert tr.max_in_flight == cap == runner.max_in_flight
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert sorted(e.tool_use_id for e in finished) == sorted(f"r{i}" for i in range(12))


def test_serial_batches_keep_order_and_writes_split_reads(tmp_path):
    tr = Tracker()
    ctx = ctx_with(make_tools(tr, delay=0.01), tmp_path)
    blocks = [tool_use("Read", {"file_path": "A"}, "1"),
              tool_use("Edit", {"file_path": "A", "old_string": "x", "new_string": "y"}, "2"),
              tool_use("Read", {"file_path": "A"}, "3")]
    asyncio.run(_run(blocks, ctx))
    assert tr.calls == ["Read:A", "Edit:A", "Read:A"]


def test_concurrent_results_in_completion_order(tmp_path):
    async def call(self, i, c):
        await asyncio.sleep(float(i.file_path))
        return ToolResult(i.file_path)

    t = build_tool("Sleep", PathInput, description="s", call=call, is_concurrency_safe=lambda s, i: True)
    ctx = ctx_with([t], tmp_path)
    blocks = [tool_use("Sleep", {"file_path": "0.15"}, "slow"), tool_use("Sleep", {"file_path": "0.01"}, "fast")]
    _, events = asyncio.run(_run(blocks, ctx))
    assert [e.tool_use_id for e in events if isinstance(e, ToolCallFinished)] == ["fast", "slow"]


def test_context_modifiers_applied_in_call_order_after_batch(tmp_path):
    order = []

    def make_call(delay):
        async def call(self, i, c):
            await asyncio.sleep(delay)

            def modifier(ctx):
                order.append(i.file_path)
                ctx.extras.setdefault("seen", []).append(i.file_path)
                return ctx

            return ToolResult(i.file_path, context_modifier=modifier)

        return call

    t1 = build_tool("One", PathInput, description="1", call=make_call(0.08), is_concurrency_safe=lambda s, i: True)
    t2 = build_tool("Two", PathInput, description="2", call=make_call(0.0), is_concurrency_safe=lambda s, i: True)
    ctx = ctx_with([t1, t2], tmp_path)
    blocks = [tool_use("One", {"file_path": "call1"}, "a"), tool_use("Two", {"file_path": "call2"}, "b")]
    runner, events = asyncio.run(_run(blocks, ctx))
    finished = [e.tool_use_id for e in events if isinstance(e, ToolCallFinished)]
    assert finished == ["b", "a"]  # call 2 finished first
    assert order == ["call1", "call2"]  # ...but modifiers run in call order


def test_abort_before_start_gives_reject_to_every_call(tmp_path):
    tr = Tracker()
    ctx = ctx_with(make_tools(tr), tmp_path)
    ctx.abort.abort()
    blocks = [tool_use("Read", {"file_path": "A"}, "A"),
              tool_use("Edit", {"file_path": "C", "old_string": "x", "new_string": "y"}, "C")]
    runner, events = asyncio.run(_run(blocks, ctx))
    assert tr.calls == []
    assert set(runner.outcomes) == {"A", "C"}
    assert all(o.block["is_error"] and "The user doesn't want to proceed" in o.block["content"]
               for o in runner.outcomes.values())


def test_cancel_behavior_tool_is_cancelled_block_tool_finishes(tmp_path):
    finished_block = []

    async def slow_block(self, i, c):
        await asyncio.sleep(0.2)
        finished_block.append(True)
        return ToolResult("written")

    async def slow_cancel(self, i, c):
        await asyncio.sleep(5)
        return ToolResult("never")

    tb = build_tool("Writer", PathInput, description="w", call=slow_block)
    tc = build_tool("Sleeper", PathInput, description="s", call=slow_cancel,
                    interrupt_behavior=lambda self: "cancel")
    ctx = ctx_with([tb, tc], tmp_path)

    async def scenario():
        blocks = [tool_use("Writer", {"file_path": "w"}, "w"), tool_use("Sleeper", {"file_path": "s"}, "s")]
        runner = ToolRunner(blocks, ctx)
        asyncio.get_running_loop().call_later(0.05, ctx.abort.abort)
        events = [ev async for ev in runner.events()]
        return runner, events

    runner, _ = asyncio.run(asyncio.wait_for(scenario(), 3))
    assert finished_block == [True]
    assert runner.outcomes["w"].block["content"] == "written"  # the real result of a write that happened
    assert "doesn't want to proceed" in runner.outcomes["s"].block["content"]
