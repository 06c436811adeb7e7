"""Fault: the user's Stop at random points of a multi-tool round, 200 runs.

Each run is one query through the real loop (scripted model, slow chunks so the abort can land while
streaming), half with the streaming executor and half with ``ToolRunner``. The reply proposes a random
mix of real Read / Grep / Edit / Bash calls and fake slow tools (``cancel`` and ``block`` behaviour);
the abort fires at a random moment between 0 and 120 ms.

Per run: exactly one ``TurnFinished``; every tool_use has exactly one tool_result and the transcript
normalises to a valid API sequence; the edited file holds its old or its new content, never anything
else; no task is left running. After all runs no child process is left. Prints the terminal reasons,
how many calls ran for real vs. were answered synthetically, and the run time.
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import time

from pydantic import Field

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import REJECT_MESSAGE
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.model.scripted import ScriptedModelClient, reply, text, tool_use
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.core.tool import ToolInput, ToolResult, build_tool
from desktop_agent.tools.registry import all_builtin_tools

from .util import QueryRun, api_pairing_problems

RUNS = 200
OLD = "alpha = 1\nbeta = 2\n"
NEW = "alpha = 100\nbeta = 2\n"


class SleepInput(ToolInput):
    seconds: float = Field(0.01, description="how long")


async def _sleep_call(self, input, ctx):
    await asyncio.sleep(input.seconds)
    return ToolResult(data=f"slept {input.seconds}")


SLOW_CANCEL = build_tool("SlowCancel", SleepInput, call=_sleep_call, description="slow; cancelled on interrupt",
                         interrupt_behavior=lambda self: "cancel", is_concurrency_safe=lambda self, i: True,
                         is_read_only=lambda self, i: True)
SLOW_BLOCK = build_tool("SlowBlock", SleepInput, call=_sleep_call, description="slow; finishes on interrupt")


def _children() -> list[int]:
    me = os.getpid()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            out.append(int(name))
    return out


def _calls(rng: random.Random, ws: str, path: str) -> list[dict]:
    pool = [
        lambda: ("Read", {"file_path": path}),
        lambda: ("Grep", {"pattern": "alpha", "path": ws}),
        lambda: ("Bash", {"command": f"sleep 0.0{rng.randint(1, 5)}; echo done"}),
        lambda: ("SlowCancel", {"seconds": rng.uniform(0.0, 0.06)}),
        lambda: ("SlowBlock", {"seconds": rng.uniform(0.0, 0.04)}),
    ]
    chosen = [rng.choice(pool)() for _ in range(rng.randint(1, 4))]
    chosen.insert(rng.randint(0, len(chosen)), ("Edit", {"file_path": path, "old_string": "alpha = 1\n",
                                                         "new_string": "alpha = 100\n"}))
    return [tool_use(name, inp, id=f"toolu_{i}") for i, (name, inp) in enumerate(chosen)]


async def _one_run(i: int, root: str, stats: collections.Counter) -> None:
    rng = random.Random(1000 + i)
    ws = os.path.join(root, f"r{i}")
    os.makedirs(ws)
    path = os.path.join(ws, "config.py")
    with open(path, "w") as fh:
        fh.write(OLD)
    tools = [t for t in all_builtin_tools() if t.name in ("Read", "Edit", "Grep", "Bash")] + [SLOW_CANCEL,
                                                                                             SLOW_BLOCK]
    ctx = ToolUseContext(cwd=ws, permission_context=PermissionContext(ws, mode="bypassPermissions"), tools=tools)
    pre = await run_tool_use({"type": "tool_use", "id": "pre", "name": "Read", "input": {"file_path": path}}, ctx)
    assert not pre.is_error
    calls = _calls(rng, ws, path)
    client = ScriptedModelClient([reply(text("Working on it."), *calls, delay=rng.choice([0.0, 0.002, 0.005])),
                                  reply(text("Done."))], chunk_size=rng.choice([0, 8]))
    streaming = i % 2 == 0
    run = QueryRun(client, ctx, prompt=f"run {i}", streaming_tool_execution=streaming)
    abort_at = rng.uniform(0.0, 0.12)

    async def stop():
        await asyncio.sleep(abort_at)
        ctx.abort.abort("user_interrupted")

    stopper = asyncio.ensure_future(stop())
    finished = await asyncio.wait_for(run.go(), 20)
    stopper.cancel()
    await asyncio.sleep(0)

    problems = api_pairing_problems(run.entries)
    assert not problems, (i, problems)
    use_ids = [b["id"] for e in run.entries if e.get("type") == "assistant"
               for b in e["message"]["content"] if b.get("type") == "tool_use"]
    result_ids = [b["tool_use_id"] for e in run.entries if e.get("type") == "user"
                  and isinstance(e["message"]["content"], list)
                  for b in e["message"]["content"] if b.get("type") == "tool_result"]
    assert sorted(use_ids) == sorted(result_ids), (i, use_ids, result_ids)
    assert len(result_ids) == len(set(result_ids)), (i, "duplicate results")
    with open(path) as fh:
        content = fh.read()
    assert content in (OLD, NEW), (i, content)
    # The result the model got for the Edit agrees with the disk.
    edit_id = next(c["id"] for c in calls if c["name"] == "Edit")
    for e in run.entries:
        if e.get("type") == "user" and isinstance(e["message"]["content"], list):
            for b in e["message"]["content"]:
                if b.get("type") == "tool_result" and b["tool_use_id"] == edit_id:
                    if "updated successfully" in str(b["content"]):
                        assert content == NEW, (i, "Edit reported success but the file is old")
                    elif b["content"] == REJECT_MESSAGE:
                        assert content == OLD, (i, "Edit reported 'NOT written' but the file changed")
    leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
    assert not leftover, (i, leftover)
    stats[f"reason={finished.reason}"] += 1
    stats["tool_uses"] += len(use_ids)
    stats["synthetic"] += sum(1 for e in run.entries if e.get("type") == "user"
                              and isinstance(e["message"]["content"], list)
                              for b in e["message"]["content"] if b.get("type") == "tool_result"
                              and (b["content"] == REJECT_MESSAGE or b["content"] == "Interrupted by user"))
    stats["file_new" if content == NEW else "file_old"] += 1


def test_random_interrupts_200_runs_every_tool_use_answered_once(tmp_path):
    stats: collections.Counter = collections.Counter()
    before = set(_children())  # an earlier test's in this worker process (not this test's to judge)
    t0 = time.perf_counter()

    async def main():
        for i in range(RUNS):
            await _one_run(i, str(tmp_path), stats)

    asyncio.run(main())
    elapsed = time.perf_counter() - t0
    deadline = time.time() + 3
    while set(_children()) - before and time.time() < deadline:
        time.sleep(0.05)
    kids = sorted(set(_children()) - before)
    print(f"{RUNS} interrupted rounds in {elapsed:.1f} s: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.items()))
          + f"; child processes left: {len(kids)}")
    assert sum(v for k, v in stats.items() if k.startswith("reason=")) == RUNS
    assert stats["tool_uses"] > RUNS
    assert not kids
    # The random stops landed on both sides: some rounds were cut, some finished.
    assert stats["synthetic"] > 0
