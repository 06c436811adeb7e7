"""Dispatch overhead of ``run_tool_use`` for a trivial tool (issue 2 target: < 0.2 ms per call, median of 10,000).

Baseline in the same run: awaiting the trivial tool's ``call`` directly (what the six steps add on top).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import report, result  # noqa: E402
from desktop_agent.core.context import ToolUseContext  # noqa: E402
from desktop_agent.engine.execution import run_tool_use  # noqa: E402
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.core.tool import ToolInput, ToolResult, build_tool  # noqa: E402


class EchoInput(ToolInput):
    text: str


def main() -> None:
    tool = build_tool("Echo", EchoInput, description="echo", call=lambda self, i, c: ToolResult(i.text),
                      permission_target=lambda self, i, c: PermissionTarget(kind="none"))  # measured: dispatch only
    ctx = ToolUseContext(cwd=tempfile.gettempdir(), tools=[tool])
    block = {"type": "tool_use", "id": "toolu_1", "name": "Echo", "input": {"text": "hi"}}
    n = 10_000

    async def timed_dispatch() -> list[float]:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            await run_tool_use(block, ctx)
            out.append(time.perf_counter() - t0)
        return out

    async def timed_direct() -> list[float]:
        out = []
        parsed = EchoInput(text="hi")
        for _ in range(n):
            t0 = time.perf_counter()
            await tool.call(parsed, ctx)
            out.append(time.perf_counter() - t0)
        return out

    loop = asyncio.new_event_loop()
    loop.run_until_complete(timed_dispatch())  # warm-up
    dispatch = loop.run_until_complete(timed_dispatch())
    direct = loop.run_until_complete(timed_direct())
    report([result("run_tool_use dispatch, trivial tool (median of 10,000)", dispatch, unit="ms", scale=1000,
                   target=0.2, kind="abs", baseline=direct)])


if __name__ == "__main__":
    main()
