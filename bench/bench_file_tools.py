"""Benchmarks for the file tools (run by hand: ``.venv/bin/python bench/bench_file_tools.py``).

1. One Edit in a 100,000-line file through ``run_tool_use`` (validate + patch + atomic write with
   fsync); target under 50 ms. Also the parts: validation alone, the structured patch alone, the
   atomic write alone.
2. Ten parallel Reads of 1 MB files (through the orchestrator's ``run_tools``) against one Read;
   target ratio < 1.5x. Also ten sequential Reads, and the longest event-loop stall seen by a 1 ms
   ticker while the ten Reads run (reading happens in worker threads).

All ratios are measured in the same run. Numbers are medians.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from desktop_agent.core.context import ToolUseContext  # noqa: E402
from desktop_agent.core.execution import run_tool_use  # noqa: E402
from desktop_agent.core.orchestration import run_tools  # noqa: E402
from desktop_agent.tools import fileio  # noqa: E402
from desktop_agent.tools.edit import EditTool, take_snapshot  # noqa: E402
from desktop_agent.tools.patch import structured_patch  # noqa: E402
from desktop_agent.tools.read import ReadTool  # noqa: E402
from desktop_agent.tools.write import WriteTool  # noqa: E402


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.2f} ms"


def bench_edit(workdir: Path, rounds: int = 15) -> float:
    path = workdir / "big.py"
    path.write_text("".join(f"def function_{i}(x):  # line {i}\n    return x + {i}\n" for i in range(50_000)))
    size = path.stat().st_size
    ctx = ToolUseContext(cwd=str(workdir), tools=[ReadTool(), EditTool(), WriteTool()])

    async def main() -> list[float]:
        out = await run_tool_use({"id": "r", "name": "Read", "input": {"file_path": str(path), "offset": 1,
                                                                         "limit": 10}}, ctx)
        assert not out.is_error, out.block
        times = []
        for n in range(rounds):
            old, new = f"return x + {25_000 + n}\n", f"return x - {25_000 + n}\n"
            t0 = time.perf_counter()
            out = await run_tool_use({"id": f"e{n}", "name": "Edit", "input": {
                "file_path": str(path), "old_string": old, "new_string": new}}, ctx)
            times.append(time.perf_counter() - t0)
            assert not out.is_error, out.block
        return times

    times = asyncio.run(main())
    lines = path.read_text().count("\n")
    edit_ms = statistics.median(times)

    # the parts
    snap = take_snapshot(str(path))
    async def validations() -> list[float]:
        tool, out = EditTool(), []
        for n in range(rounds):
            inp = EditTool.input_model.model_validate(
                {"file_path": str(path), "old_string": f"return x - {25_000 + n}\n", "new_string": "zzz"})
            t0 = time.perf_counter()
            result = await tool.validate_input(inp, ctx)
            out.append(time.perf_counter() - t0)
            assert result.result, result.message
        return out

    t_val = asyncio.run(validations())
    new_text = snap.text.replace("return x + 30000\n", "return x * 30000\n", 1)
    t_patch, t_write, t_write_nosync = [], [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        structured_patch(snap.text, new_text)
        t_patch.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        fileio.write_text_atomic(str(path), snap.text, snap.encoding, snap.line_ending)
        t_write.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        fileio.write_bytes_atomic(str(path), fileio.encode_text(snap.text, "utf-8"), fsync=False)
        t_write_nosync.append(time.perf_counter() - t0)

    print(f"Edit in a {lines:,}-line file ({fileio.format_file_size(size)}), {rounds} edits through run_tool_use")
    print(f"  one Edit (validate + patch + write + fsync) median {ms(edit_ms)}   min {ms(min(times))}   "
          f"target < 50 ms  -> {edit_ms * 1000 / 50:.2f}x of budget")
    print(f"  parts: validate_input {ms(statistics.median(t_val))}   structured_patch {ms(statistics.median(t_patch))}"
          f"   atomic write+fsync {ms(statistics.median(t_write))}   (without fsync "
          f"{ms(statistics.median(t_write_nosync))})")
    return edit_ms


def bench_parallel_reads(workdir: Path, rounds: int = 7) -> float:
    os.environ["CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS"] = str(10**9)  # read the whole MB
    paths = []
    for i in range(10):
        p = workdir / f"mb{i}.txt"
        line = f"file {i} some ordinary source text, with words and numbers 0123456789 .....\n"
        p.write_text(line * (1024 * 1024 // len(line)))
        paths.append(p)

    def block(i: int, p: Path, shape: str) -> dict:
        inp = {"file_path": str(p), "limit": 10**9} if shape == "whole" else {
            "file_path": str(p), "offset": 12_000, "limit": 2000}
        return {"id": f"r{i}", "name": "Read", "input": inp, "type": "tool_use"}

    async def one(shape: str) -> float:
        ctx = ToolUseContext(cwd=str(workdir), tools=[ReadTool()])
        t0 = time.perf_counter()
        out = await run_tool_use(block(0, paths[0], shape), ctx)
        assert not out.is_error, out.block
        return time.perf_counter() - t0

    async def ten(shape: str, parallel: bool) -> tuple[float, float]:
        ctx = ToolUseContext(cwd=str(workdir), tools=[ReadTool()])
        blocks = [block(i, p, shape) for i, p in enumerate(paths)]
        stall = 0.0
        stop = False

        async def ticker() -> None:
            nonlocal stall
            last = time.perf_counter()
            while not stop:
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                stall = max(stall, now - last - 0.001)
                last = now

        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0.005)
        t0 = time.perf_counter()
        if parallel:
            results = [m async for m in run_tools(blocks, ctx)]
        else:
            results = [await run_tool_use(b, ctx) for b in blocks]
        elapsed = time.perf_counter() - t0
        stop = True
        await tick
        assert len(results) >= 10
        return elapsed, stall

    for shape, label in (("whole", "whole 1 MB file (limit only)"), ("range", "2000 lines at offset 12000")):
        singles = [asyncio.run(one(shape)) for _ in range(rounds)]
        par = [asyncio.run(ten(shape, True)) for _ in range(rounds)]
        seq = [asyncio.run(ten(shape, False)) for _ in range(rounds)]
        s = statistics.median(singles)
        p = statistics.median(x[0] for x in par)
        q = statistics.median(x[0] for x in seq)
        print(f"Read of 1 MB files, {label}:")
        print(f"  one Read {ms(s)}   ten parallel {ms(p)}  ratio {p / s:.2f}x (target < 1.5x)   "
              f"ten sequential {ms(q)}  ratio {q / s:.2f}x")
        print(f"  longest event-loop stall during the ten parallel Reads: {ms(max(x[1] for x in par))}; "
              f"during ten sequential: {ms(max(x[1] for x in seq))}")
    return p / s


def main() -> None:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.1f}")
    with tempfile.TemporaryDirectory(prefix="bench-file-tools-") as d:
        bench_edit(Path(d))
        bench_parallel_reads(Path(d))


if __name__ == "__main__":
    main()
