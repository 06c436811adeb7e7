"""Helpers the tool tests share: the file tools, a Read through ``run_tool_use``, a loop ticker,
and a ``/proc`` check for a live process."""

from __future__ import annotations

import asyncio
from typing import Any

from desktop_agent.engine.execution import run_tool_use
from desktop_agent.tools.edit import EditTool
from desktop_agent.tools.read.tool import ReadTool
from desktop_agent.tools.write import WriteTool
from tests.engine.helpers import tool_use

WRAP = "<tool_use_error>{}</tool_use_error>"


def tools() -> list[Any]:
    return [ReadTool(), EditTool(), WriteTool()]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def read(ctx: Any, path: Any, **kw: Any) -> Any:
    out = run(run_tool_use(tool_use("Read", {"file_path": str(path), **kw}, "toolu_read_1"), ctx))
    assert not out.is_error, out.block
    return out


class Ticker:
    """Counts 1 ms sleeps while the body runs: proof the loop stayed free.

        async with Ticker() as ticker:
            out = await run_tool_use(...)
        assert ticker.ticks >= 3
    """

    def __init__(self) -> None:
        self.ticks = 0
        self._stop = False
        self._task: asyncio.Future[None] | None = None

    async def _run(self) -> None:
        while not self._stop:
            self.ticks += 1
            await asyncio.sleep(0.001)

    async def __aenter__(self) -> Ticker:
        self._task = asyncio.ensure_future(self._run())
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._stop = True
        assert self._task is not None
        await self._task


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"
