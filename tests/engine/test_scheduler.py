"""Scheduler: queue, start and delivery rules, aborts, sibling cancellation, discard
(SPEC §6.2–6.4; §9 items 92–97 and 100)."""

from __future__ import annotations

import asyncio
from typing import Any

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import REJECT_MESSAGE, STREAMING_FALLBACK_MESSAGE
from desktop_agent.engine.scheduler import Scheduler, TrackedTool
from desktop_agent.core.tool import ToolInput, ToolResult, build_tool
from tests.model.aio import aio

from .helpers import EditLikeInput, PathInput, tool_use, touches_nothing


class CmdInput(ToolInput):
    command: str


class Gate:
    """Tools that run until the test opens their gate; records starts and finishes."""

    def __init__(self) -> None:
        self.gates: dict[str, asyncio.Event] = {}
        self.started: list[str] = []
        self.finished: list[str] = []

    def gate(self, key: str) -> asyncio.Event:
        return self.gates.setdefault(key, asyncio.Event())

    def tools(self) -> list[Any]:
        async def call(tool, input, ctx):
            key = getattr(input, "file_path", None) or getattr(input, "command", "")
            self.started.append(key)
            await self.gate(key).wait()
            self.finished.append(key)
            if key.startswith("fail"):
                raise RuntimeError(f"{key} failed")
            return ToolResult(data=f"{tool.name} {key} done")

        read = build_tool("Read", PathInput, permission_target=touches_nothing, call=call, is_concurrency_safe=lambda s, i: True,
                          is_read_only=lambda s, i: True, description="r")
        edit = build_tool("Edit", EditLikeInput, permission_target=touches_nothing, call=call, description="e")
        return [read, edit]


def read(path: str, id: str) -> dict[str, Any]:
    return tool_use("Read", {"file_path": path}, id)


def edit(path: str, id: str) -> dict[str, Any]:
    return tool_use("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, id)


async def tick(n: int = 3) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def results(items: list[Any]) -> list[str]:
    return [i.id for i in items if isinstance(i, TrackedTool)]


async def drain_all(ex: Scheduler) -> list[TrackedTool]:
    return [i async for i in ex.get_remaining_results() if isinstance(i, TrackedTool)]


@aio
async def test_item92_unsafe_waits_for_running_safe_tool(tmp_path):
    g = Gate()
    ex = Scheduler(ToolUseContext(cwd=str(tmp_path), tools=g.tools()))
    r = ex.add_tool(read("r", "R"))
    await tick()
    e = ex.add_tool(edit("e", "E"))
    await tick()
    assert r.status == "executing" and e.status == "queued" and g.started == ["r"]
    g.gate("r").set()
    g.gate("e").set()
    done = await drain_all(ex)
    assert [t.id for t in done] == ["R", "E"] and g.started == ["r", "e"]


@aio
async def test_item93_scan_stops_at_blocked_unsafe_tool(tmp_path):
    g = Gate()
    ex = Scheduler(ToolUseContext(cwd=str(tmp_path), tools=g.tools()))
    ex.add_tool(edit("e1", "E1"))  # unsafe, executing
    e2 = ex.add_tool(edit("e2", "E2"))  # unsafe, waiting
    r = ex.add_tool(read("r", "R"))  # safe — must not jump ahead of E2
    await tick()
    assert g.started == ["e1"] and e2.status == "queued" and r.status == "queued"
    g.gate("e1").set()
    await tick(5)
    assert g.started == ["e1", "e2"] and r.status == "queued"
    g.gate("e2").set()
    g.gate("r").set()
    await drain_all(ex)
    assert g.started == ["e1", "e2", "r"]


@aio
async def test_safe_tools_run_together_and_deliver_in_completion_order(tmp_path):
    g = Gate()
    ex = Scheduler(ToolUseContext(cwd=str(tmp_path), tools=g.tools()))
    ex.add_tool(read("a", "A"))
    ex.add_tool(read("b", "B"))
    await tick()
    assert g.started == ["a", "b"]
    g.gate("b").set()
    await tick(5)
    assert results(ex.get_completed_results()) == ["B"]  # A still running, but it is safe
    g.gate("a").set()
    assert [t.id for t in await drain_all(ex)] == ["A"]


@aio
async def test_item94_results_held_behind_executing_unsafe_tool(tmp_path):
    g = Gate()
    ex = Scheduler(ToolUseContext(cwd=str(tmp_path), tools=g.tools()))
    ex.add_tool(edit("e", "E"))
    unknown = ex.add_tool(tool_use("Nope", {}, "X"))  # completed at once: No such tool
    await tick()
    assert unknown.status == "completed"
    assert results(ex.get_completed_results()) == []
    g.gate("e").set()
    done = await drain_all(ex)
    assert [t.id for t in done] == ["E", "X"]
    assert done[1].outcome.block["content"] == "<tool_use_error>Error: No such tool available: Nope</tool_use_error>"


@aio
async def test_item95_abort_then_add_is_not_enqueued_and_queued_tool_gets_reject(tmp_path):
    g = Gate()
    ctx = ToolUseContext(cwd=str(tmp_path), tools=g.tools())
    ex = Scheduler(ctx)
    running = ex.add_tool(edit("e1", "E1"))
    queued = ex.add_tool(edit("e2", "E2"))
    await tick()
    ctx.abort.abort()
    assert ex.add_tool(edit("e3", "E3")) is None and len(ex.tools) == 2
    g.gate("e1").set()
    done = {t.id: t for t in await drain_all(ex)}
    # The running Edit (interrupt behaviour "block", mutating) reports what really happened.
    assert done["E1"].outcome.block == {"type": "tool_result", "tool_use_id": "E1", "content": "Edit e1 done"}
    assert done["E2"].outcome.block == {"type": "tool_result", "tool_use_id": "E2", "content": REJECT_MESSAGE,
                                        "is_error": True}
    assert g.started == ["e1"] and running.status == queued.status == "yielded"


@aio
async def test_cancel_behaviour_tool_is_cancelled_on_abort(tmp_path):
    cancelled = []

    async def forever(tool, input, ctx):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return ToolResult(data="never")

    sleeper = build_tool("Sleeper", PathInput, permission_target=touches_nothing, call=forever, interrupt_behavior=lambda s: "cancel", description="s")
    ctx = ToolUseContext(cwd=str(tmp_path), tools=[sleeper])
    ex = Scheduler(ctx)
    ex.add_tool(tool_use("Sleeper", {"file_path": "x"}, "S"))
    await tick()
    ctx.abort.abort()
    (done,) = await drain_all(ex)
    assert cancelled == [True]
    assert done.outcome.block["content"] == REJECT_MESSAGE and done.outcome.block["is_error"]


@aio
async def test_interrupt_reason_only_cancels_cancel_tools(tmp_path):
    g = Gate()
    ctx = ToolUseContext(cwd=str(tmp_path), tools=g.tools())
    ex = Scheduler(ctx)
    ex.add_tool(edit("e1", "E1"))
    ex.add_tool(edit("e2", "E2"))
    await tick()
    ctx.abort.abort("interrupt")  # new user input: block tools carry on, queued ones still start
    g.gate("e1").set()
    g.gate("e2").set()
    done = await drain_all(ex)
    assert [t.outcome.block["content"] for t in done] == ["Edit e1 done", "Edit e2 done"]


def bash_tools(log: list[str]) -> list[Any]:
    async def call(tool, input, ctx):
        log.append(f"start {input.command}")
        if input.command.startswith("false"):
            await asyncio.sleep(0.01)
            raise RuntimeError("Exit code 1")
        if input.command.startswith("sleep"):
            await ctx.abort.wait()  # a real Bash kills its process when its signal fires
            log.append("sleep killed")
            return ToolResult(data="killed")
        return ToolResult(data=f"ran {input.command}")

    bash = build_tool("Bash", CmdInput, permission_target=touches_nothing, call=call, is_concurrency_safe=lambda s, i: True,
                      is_read_only=lambda s, i: True, description="b")
    return [bash]


@aio
async def test_item96_bash_error_cancels_running_sibling_not_parent(tmp_path):
    log: list[str] = []
    g = Gate()
    ctx = ToolUseContext(cwd=str(tmp_path), tools=bash_tools(log) + g.tools()[1:])
    ex = Scheduler(ctx)
    long_cmd = "sleep 100 && echo this is a long command that goes past forty characters"
    ex.add_tool(tool_use("Bash", {"command": "false --the-failing-one"}, "B1"))
    ex.add_tool(tool_use("Bash", {"command": long_cmd}, "B2"))
    ex.add_tool(edit("later", "E"))  # queued behind: never runs
    done = {t.id: t.outcome.block for t in await drain_all(ex)}
    assert done["B1"]["is_error"] and "Exit code 1" in done["B1"]["content"]  # its own error, no duplicate
    expected = ("<tool_use_error>Cancelled: parallel tool call Bash(false --the-failing-one) errored"
                "</tool_use_error>")
    assert done["B2"] == {"type": "tool_result", "tool_use_id": "B2", "content": expected, "is_error": True}
    assert done["E"]["content"] == expected and g.started == []
    assert "sleep killed" in log
    assert not ctx.abort.aborted  # the turn goes on


@aio
async def test_sibling_description_is_cut_at_40_chars(tmp_path):
    log: list[str] = []
    ctx = ToolUseContext(cwd=str(tmp_path), tools=bash_tools(log))
    ex = Scheduler(ctx)
    ex.add_tool(tool_use("Bash", {"command": "false " + "x" * 60}, "B1"))
    ex.add_tool(tool_use("Bash", {"command": "sleep 1"}, "B2"))
    done = {t.id: t.outcome.block for t in await drain_all(ex)}
    assert done["B2"]["content"] == (
        f"<tool_use_error>Cancelled: parallel tool call Bash({('false ' + 'x' * 60)[:40]}…) errored</tool_use_error>")


@aio
async def test_item97_read_error_leaves_siblings_alone(tmp_path):
    g = Gate()
    ctx = ToolUseContext(cwd=str(tmp_path), tools=g.tools())
    ex = Scheduler(ctx)
    ex.add_tool(read("fail-r", "R1"))
    ex.add_tool(read("ok-r", "R2"))
    ex.add_tool(edit("e", "E"))
    g.gate("fail-r").set()
    await tick(5)
    g.gate("ok-r").set()
    g.gate("e").set()
    done = {t.id: t.outcome.block for t in await drain_all(ex)}
    assert done["R1"]["is_error"] and done["R2"]["content"] == "Read ok-r done"
    assert done["E"]["content"] == "Edit e done" and not ex.has_errored


@aio
async def test_item100_discard_stops_queue_and_delivery(tmp_path):
    g = Gate()
    ex = Scheduler(ToolUseContext(cwd=str(tmp_path), tools=g.tools()))
    ex.add_tool(edit("e1", "E1"))
    queued = ex.add_tool(edit("e2", "E2"))
    await tick()
    ex.discard()
    g.gate("e1").set()
    g.gate("e2").set()
    assert [i async for i in ex.get_remaining_results()] == []
    assert ex.get_completed_results() == []
    await tick(5)
    assert g.started == ["e1"]  # the queued Edit never started
    assert queued.outcome is not None and queued.outcome.block["content"] == STREAMING_FALLBACK_MESSAGE


@aio
async def test_close_lets_running_finish_and_answers_queued_with_message(tmp_path):
    g = Gate()
    ex = Scheduler(ToolUseContext(cwd=str(tmp_path), tools=g.tools()))
    ex.add_tool(edit("e1", "E1"))
    ex.add_tool(edit("e2", "E2"))
    await tick()
    ex.close("API error: overloaded")
    g.gate("e1").set()
    done = {t.id: t.outcome.block for t in await drain_all(ex)}
    assert done["E1"]["content"] == "Edit e1 done"
    assert done["E2"] == {"type": "tool_result", "tool_use_id": "E2", "content": "API error: overloaded",
                          "is_error": True}


@aio
async def test_context_modifier_applied_only_for_unsafe_tools(tmp_path):
    def modifier(ctx):
        ctx.extras["touched"] = ctx.extras.get("touched", 0) + 1
        return ctx

    async def call(tool, input, ctx):
        return ToolResult(data="ok", context_modifier=modifier)

    safe = build_tool("Read", PathInput, permission_target=touches_nothing, call=call, is_concurrency_safe=lambda s, i: True, description="r")
    unsafe = build_tool("Edit", EditLikeInput, permission_target=touches_nothing, call=call, description="e")
    ctx = ToolUseContext(cwd=str(tmp_path), tools=[safe, unsafe])
    ex = Scheduler(ctx)
    ex.add_tool(read("a", "A"))
    ex.add_tool(edit("b", "B"))
    await drain_all(ex)
    assert ex.ctx.extras["touched"] == 1


@aio
async def test_progress_and_started_events_delivered_before_result(tmp_path):
    async def call(tool, input, ctx):
        ctx.on_progress("P", {"step": 1})
        await asyncio.sleep(0)
        return ToolResult(data="ok")

    t = build_tool("Read", PathInput, permission_target=touches_nothing, call=call, is_concurrency_safe=lambda s, i: True, description="r")
    ex = Scheduler(ToolUseContext(cwd=str(tmp_path), tools=[t]))
    ex.add_tool(read("a", "P"))
    items = [i async for i in ex.get_remaining_results()]
    assert [type(i).__name__ for i in items] == ["ToolCallStarted", "ToolCallProgress", "TrackedTool"]


@aio(timeout=30)
async def test_item96_with_the_real_bash_tool(tmp_path):
    from desktop_agent.permissions.context import PermissionContext
    from desktop_agent.tools.bash.tool import BashTool

    # bypass, said explicitly: no permission state is default mode, where these reads outside the cwd ask
    ctx = ToolUseContext(cwd=str(tmp_path), tools=[BashTool()],
                         permission_context=PermissionContext(str(tmp_path), mode="bypassPermissions"))
    ex = Scheduler(ctx)
    ex.add_tool(tool_use("Bash", {"command": "find / -name zz_never_there_zz"}, "LONG"))
    ex.add_tool(tool_use("Bash", {"command": "ls /nonexistent_dir_zz"}, "FAIL"))
    done = {t.id: t.outcome.block for t in await drain_all(ex)}
    assert done["FAIL"]["is_error"] and "Exit code" in str(done["FAIL"]["content"])
    assert done["LONG"] == {"type": "tool_result", "tool_use_id": "LONG", "is_error": True, "content":
                            "<tool_use_error>Cancelled: parallel tool call Bash(ls /nonexistent_dir_zz) errored"
                            "</tool_use_error>"}
    assert not ctx.abort.aborted


@aio
async def test_the_concurrency_cap_holds_when_blocks_stream_in_too(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY", "2")
    g = Gate()
    ex = Scheduler(ToolUseContext(cwd=str(tmp_path), tools=g.tools()))
    for i in range(4):
        ex.add_tool(read(f"r{i}", f"R{i}"))
    await tick()
    assert g.started == ["r0", "r1"]
    g.gate("r0").set()
    await tick(5)
    assert g.started == ["r0", "r1", "r2"]
    for i in range(1, 4):
        g.gate(f"r{i}").set()
    assert sorted(t.id for t in await drain_all(ex)) == ["R0", "R1", "R2", "R3"]
    assert ex.max_in_flight == 2


@aio
async def test_batch_mode_answers_blocks_added_after_an_abort_with_reject(tmp_path):
    g = Gate()
    ctx = ToolUseContext(cwd=str(tmp_path), tools=g.tools())
    ctx.abort.abort()
    ex = Scheduler(ctx, mode="batch")
    tracked = ex.add_tool(edit("e", "E"))
    items = [i async for i in ex.get_remaining_results()]
    assert tracked is not None and g.started == []
    assert [type(i).__name__ for i in items] == ["ToolCallStarted", "TrackedTool"]
    assert tracked.outcome.block["content"] == REJECT_MESSAGE
