"""Fault: tools that hang, and the turn's abort (the user's Stop).

A round of tool calls through the real query loop (scripted model), with the streaming executor and with
``ToolRunner``: a ``cancel`` tool that awaits forever, a real Bash ``sleep`` (its process group must die),
a Bash whose shell and child ignore SIGTERM (SIGKILL after the grace), and a queued Read behind them.
After the abort: the turn ends within a bound, exactly one tool_result per tool_use, the transcript
normalises to a valid API sequence, no subprocess is left alive and no task is left running.
Each test prints the time from abort to ``TurnFinished``.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from pydantic import Field

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.events import ToolCallStarted
from desktop_agent.model.scripted import ScriptedModelClient, reply, tool_use
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.core.tool import ToolInput, ToolResult, build_tool
from desktop_agent.tools.registry import all_builtin_tools

from .util import QueryRun, api_pairing_problems, process_alive

ABORT_BOUND_S = 4.0  # Bash's SIGTERM→SIGKILL grace is 1 s


class HangInput(ToolInput):
    label: str = Field("", description="label")


async def _hang(self, input, ctx):
    await asyncio.Event().wait()  # never set
    return ToolResult(data="unreachable")


HANG_CANCEL = build_tool("HangCancel", HangInput, call=_hang, description="hangs; cancel on interrupt",
                         interrupt_behavior=lambda self: "cancel")
HANG_BLOCK = build_tool("HangBlock", HangInput, call=_hang, description="hangs; ignores the abort")


def _ctx(ws: str, extra: list) -> ToolUseContext:
    tools = [t for t in all_builtin_tools() if t.name in ("Read", "Bash")] + extra
    return ToolUseContext(cwd=ws, permission_context=PermissionContext(ws, mode="bypassPermissions"), tools=tools)


def _pids(path: str) -> list[int]:
    try:
        with open(path) as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        return []


async def _abort_when_started(run: QueryRun, ctx: ToolUseContext, n_started: int, settle: float) -> float:
    """Abort once ``n_started`` calls started (plus ``settle`` s); returns the abort time."""
    while len(run.of(ToolCallStarted)) < n_started:
        await asyncio.sleep(0.01)
    await asyncio.sleep(settle)
    t = time.perf_counter()
    ctx.abort.abort("user_interrupted")
    return t


CASES = {
    "hang_cancel_tool": lambda pidfile: {"name": "HangCancel", "input": {"label": "forever"}},
    "bash_sleep": lambda pidfile: {"name": "Bash", "input": {"command": f"sleep 300 & echo $$ $! > {pidfile}; wait"}},
    "bash_ignores_sigterm": lambda pidfile: {"name": "Bash", "input": {
        "command": f"trap '' TERM; sleep 300 & echo $$ $! > {pidfile}; wait"}},
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("streaming", [True, False], ids=["streaming_executor", "tool_runner"])
def test_hanging_tool_abort_ends_turn_one_result_each(tmp_path, streaming, case, monkeypatch):
    # `$$`/`$!` must be host PIDs: unsandboxed (the sandbox's PID namespace renumbers them; its own kill
    # tests are in tests/tools/test_bash_sandbox.py).
    monkeypatch.setenv("DESKTOP_AGENT_SANDBOX", "off")
    ws = str(tmp_path)
    with open(os.path.join(ws, "a.txt"), "w") as fh:
        fh.write("x\n")
    pidfile = os.path.join(ws, "pids")
    first = CASES[case](pidfile)
    calls = [
        tool_use(first["name"], first["input"], id="t_hang"),
        tool_use("Bash", {"command": "echo never"}, id="t_queued_bash"),
        tool_use("Read", {"file_path": os.path.join(ws, "a.txt")}, id="t_read"),
    ]
    client = ScriptedModelClient([reply(*calls)])
    ctx = _ctx(ws, [HANG_CANCEL])
    run = QueryRun(client, ctx, streaming_tool_execution=streaming)

    async def main():
        go = asyncio.ensure_future(run.go())
        t_abort = await asyncio.wait_for(_abort_when_started(run, ctx, 1, 0.3), 10)
        finished = await asyncio.wait_for(go, 30)
        elapsed = time.perf_counter() - t_abort
        await asyncio.sleep(0)
        leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
        return finished, elapsed, leftover

    finished, elapsed, leftover = asyncio.run(main())
    results = {b["tool_use_id"]: b for e in run.entries if e.get("type") == "user"
               and isinstance(e["message"]["content"], list)
               for b in e["message"]["content"] if b.get("type") == "tool_result"}
    print(f"[{case}, {'streaming' if streaming else 'runner'}] abort → TurnFinished in {elapsed * 1000:.0f} ms, "
          f"reason {finished.reason}; hang result {str(results.get('t_hang', {}).get('content'))[:80]!r}")
    assert finished.reason in ("aborted_tools", "aborted_streaming")
    assert elapsed < ABORT_BOUND_S
    assert not leftover, leftover
    assert api_pairing_problems(run.entries) == []
    assert sorted(results) == sorted(c["id"] for c in calls)
    assert all(r.get("is_error") for r in results.values()), results
    # No process survives: the shells and their sleeps were killed with their groups.
    pids = _pids(pidfile)
    deadline = time.time() + 3
    while time.time() < deadline and any(process_alive(p) for p in pids):
        time.sleep(0.05)
    alive = [p for p in pids if process_alive(p)]
    print(f"  processes started {len(pids)}, alive after abort {len(alive)}")
    if case.startswith("bash"):
        assert len(pids) == 2
    assert not alive


def test_stubborn_bash_timeout_kills_group(tmp_path, monkeypatch):
    """A command that ignores SIGTERM and outlives its timeout: killed (SIGKILL after the grace), one result."""
    monkeypatch.setenv("DESKTOP_AGENT_SANDBOX", "off")  # host PIDs in the pidfile (see above)
    ws = str(tmp_path)
    pidfile = os.path.join(ws, "pids")
    ctx = _ctx(ws, [])
    from desktop_agent.engine.execution import run_tool_use

    cmd = f"trap '' TERM; sleep 300 & echo $$ $! > {pidfile}; wait"
    t0 = time.perf_counter()
    out = asyncio.run(asyncio.wait_for(run_tool_use(
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": cmd, "timeout": 500}}, ctx), 20))
    elapsed = time.perf_counter() - t0
    time.sleep(0.2)
    alive = [p for p in _pids(pidfile) if process_alive(p)]
    print(f"timeout 500 ms + stubborn shell: result after {elapsed * 1000:.0f} ms, alive {alive}, "
          f"content {str(out.block['content'])[:120]!r}")
    assert out.block["tool_use_id"] == "t1" and out.is_error
    assert elapsed < 0.5 + 1.0 + 2.0
    assert not alive


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming_executor", "tool_runner"])
def test_hanging_block_tool_abort_ends_turn(tmp_path, streaming, monkeypatch):
    """Regression: a 'block' tool that never returns used to keep the turn alive after the user's Stop. Now it
    is cancelled after the grace period and told it may have had effects (never "was NOT written")."""
    monkeypatch.setenv("DESKTOP_AGENT_ABORT_GRACE_S", "0.3")
    ctx = _ctx(str(tmp_path), [HANG_BLOCK])
    run = QueryRun(ScriptedModelClient([reply(tool_use("HangBlock", {}, id="t_block"))]), ctx,
                   streaming_tool_execution=streaming)

    async def main():
        go = asyncio.ensure_future(run.go())
        t_abort = await _abort_when_started(run, ctx, 1, 0.05)
        try:
            finished = await asyncio.wait_for(go, 2)
        except asyncio.TimeoutError:
            print(f"abort → no TurnFinished after {time.perf_counter() - t_abort:.1f} s")
            raise
        return finished

    finished = asyncio.run(main())
    assert finished.reason in ("aborted_tools", "aborted_streaming")
    assert api_pairing_problems(run.entries) == []
    results = [b for e in run.entries if e.get("type") == "user" for b in (e["message"].get("content") or [])
               if isinstance(b, dict) and b.get("tool_use_id") == "t_block"]
    assert len(results) == 1 and "may have made partial changes" in results[0]["content"]
