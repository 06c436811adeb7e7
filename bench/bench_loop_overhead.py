"""Engine overhead per model turn (target < 5 ms), measured with the scripted model.

One user message drives ``TURNS`` model turns; each reply streams a short text and one tool_use
for a no-op tool, the last reply is text only. The scripted client answers instantly, so the wall
time divided by the number of turns is what the engine itself costs per turn: request building
(normalising the whole growing history), stream accumulation, events, the tool round trip through
``run_tool_use`` (schema check, permission, mapping) and transcript entries. Measured for both
tool-execution paths; the median of ``REPEAT`` runs is printed.

    .venv/bin/python bench/bench_loop_overhead.py [turns] [repeat] [--http]

``--http`` instead runs the script through the real SDK against the local fake server, for scale.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pydantic import Field  # noqa: E402

from desktop_agent.core.context import ToolUseContext  # noqa: E402
from desktop_agent.core.events import TurnFinished  # noqa: E402
from desktop_agent.engine.loop import QueryParams, query  # noqa: E402
from desktop_agent.core.messages import user_entry  # noqa: E402
from desktop_agent.model.scripted import ScriptedModelClient, reply, text, tool_use  # noqa: E402
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.core.tool import ToolInput, ToolResult, build_tool  # noqa: E402

TARGET_MS = 5.0


class NoopInput(ToolInput):
    file_path: str = Field(description="a path")


def noop_tool():
    async def call(self, input, ctx):
        return ToolResult(data="1\tok")

    return build_tool("Read", NoopInput, call=call, is_concurrency_safe=lambda s, i: True,
                      is_read_only=lambda s, i: True, description="No-op read.",
                      permission_target=lambda s, i, c: PermissionTarget(kind="none"))


def script(turns: int) -> list:
    steps = [reply(text(f"Step {i}: reading the next file."), tool_use("Read", {"file_path": f"src/f{i}.py"}),
                   usage={"input_tokens": 1000 + i, "output_tokens": 40})
             for i in range(turns - 1)]
    steps.append(reply(text("All done.")))
    return steps


async def one_run(turns: int, streaming: bool, chunk_size: int) -> tuple[float, int]:
    client = ScriptedModelClient(script(turns), chunk_size=chunk_size)
    ctx = ToolUseContext(cwd=os.getcwd(), tools=[noop_tool()])
    entries: list[dict] = []
    params = QueryParams(messages=[user_entry("Read every file.")], ctx=ctx, client=client,
                         model="claude-sonnet-4-6", system_prompt=[{"type": "text", "text": "bench"}],
                         streaming_tool_execution=streaming, on_message=entries.append)
    n_events = 0
    t0 = time.perf_counter()
    async for ev in query(params):
        n_events += 1
        if isinstance(ev, TurnFinished):
            assert ev.reason == "completed", ev
    elapsed = time.perf_counter() - t0
    client.assert_done()
    assert len(client.requests) == turns
    return elapsed, n_events


async def http_run(turns: int) -> float:
    """For scale: the same script through the real SDK and the local fake server (HTTP + SSE)."""
    from desktop_agent.model.anthropic_client import AnthropicClient
    from tests.fakes.anthropic_server import FakeAnthropic

    with FakeAnthropic(chunk_size=8) as fake:
        fake.script(script(turns))
        client = AnthropicClient("bench-key", fake.base_url, max_retries=0)
        ctx = ToolUseContext(cwd=os.getcwd(), tools=[noop_tool()])
        params = QueryParams(messages=[user_entry("Read every file.")], ctx=ctx, client=client,
                             model="claude-sonnet-4-6", system_prompt=[{"type": "text", "text": "bench"}])
        t0 = time.perf_counter()
        async for ev in query(params):
            if isinstance(ev, TurnFinished):
                assert ev.reason == "completed", ev
        elapsed = time.perf_counter() - t0
        await client.aclose()
        fake.assert_done()
    return elapsed


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    turns = int(args[0]) if args else 50
    repeat = int(args[1]) if len(args) > 1 else 5
    if "--http" in sys.argv:
        asyncio.run(http_run(3))
        per_turn = statistics.median(asyncio.run(http_run(turns)) for _ in range(repeat)) / turns * 1000
        print(f"through the real SDK + local fake server (HTTP/SSE on 127.0.0.1): {per_turn:.2f} ms/turn "
              f"(engine + SDK + localhost HTTP; not the engine-overhead figure)")
        return
    from bench._common import report, result

    print(f"engine overhead per model turn — {turns} turns per run, median of {repeat} runs")
    worst = 0.0
    items = []
    for streaming in (True, False):
        for chunk_size in (0, 8):
            asyncio.run(one_run(5, streaming, chunk_size))  # warm-up (imports, caches)
            samples = [asyncio.run(one_run(turns, streaming, chunk_size)) for _ in range(repeat)]
            per_turn_s = [s[0] / turns for s in samples]
            per_turn = statistics.median(per_turn_s) * 1000
            worst = max(worst, per_turn)
            label = (f"streaming_tool_execution={'on ' if streaming else 'off'} "
                     f"deltas={'1/block' if not chunk_size else '8-char'}")
            print(f"  {label}: {per_turn:6.3f} ms/turn  ({samples[0][1]} events/run)")
            items.append(result(f"loop overhead per turn ({label.replace('  ', ' ')})", per_turn_s, unit="ms",
                                target=TARGET_MS, scale=1000))
    verdict = "OK" if worst < TARGET_MS else "OVER TARGET"
    print(f"worst: {worst:.3f} ms/turn (target < {TARGET_MS} ms) {verdict}")
    report(items)


if __name__ == "__main__":
    main()
