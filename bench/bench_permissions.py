"""Benchmark: one permission decision against a rule set of 500 rules must take under 1 ms.

Run: ``.venv/bin/python bench/bench_permissions.py [--rules 500] [--n 2000]``. It builds 500 rules (allow,
deny and ask; Bash prefixes, Read/Edit path globs, tool names, MCP tools) spread over three sources, then
times ``decide`` (through ``gateway.decide_for``) for a mix of requests (Edit inside/outside the project, Read, a Bash
compound command, a denied command) and prints mean / p50 / p99 per decision. Exit status 1 when the mean
is over 1 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from desktop_agent.core.context import ToolUseContext  # noqa: E402
from desktop_agent.shell.readonly import is_read_only_command  # noqa: E402
from desktop_agent.permissions.context import PermissionContext  # noqa: E402
from desktop_agent.permissions.gateway import decide_for  # noqa: E402
from desktop_agent.permissions.rules import parse_rule  # noqa: E402
from desktop_agent.core.permission import PermissionRule, PermissionTarget  # noqa: E402
from desktop_agent.core.tool import ToolInput, build_tool  # noqa: E402


class FileIn(ToolInput):
    file_path: str


class CmdIn(ToolInput):
    command: str


def make_rules(n: int) -> list[PermissionRule]:
    rules: list[PermissionRule] = []
    sources = ["userSettings", "projectSettings", "localSettings"]
    for i in range(n):
        kind = i % 6
        behavior = "deny" if i % 10 == 0 else "ask" if i % 10 == 1 else "allow"
        if kind == 0:
            text = f"Bash(tool{i} sub{i}:*)"
        elif kind == 1:
            text = f"Bash(cmd{i} * --flag{i})"
        elif kind == 2:
            text = f"Edit(src/module{i}/**)"
        elif kind == 3:
            text = f"Read(//data/set{i}/**/*.csv)"
        elif kind == 4:
            text = f"mcp__server{i}__tool"
        else:
            text = f"Edit(**/*.gen{i}.ts)"
        rules.append(PermissionRule(value=parse_rule(text), behavior=behavior,  # type: ignore[arg-type]
                                    source=sources[i % 3]))  # type: ignore[arg-type]
    rules.append(PermissionRule(value=parse_rule("Bash(rm -rf *)"), behavior="deny", source="userSettings"))
    return rules[: n]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rules", type=int, default=500)
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()

    ws = tempfile.mkdtemp(prefix="bench-perm-")
    os.makedirs(os.path.join(ws, "src"), exist_ok=True)
    rules = make_rules(args.rules)
    pc = PermissionContext(ws, rules=rules)
    ctx = ToolUseContext(cwd=ws, permission_context=pc)

    edit = build_tool("Edit", FileIn, description="e", call=lambda s, i, c: None,
                      permission_target=lambda s, i, c: PermissionTarget(kind="write", path=c.expand(i.file_path)))
    read = build_tool("Read", FileIn, description="r", call=lambda s, i, c: None,
                      is_read_only=lambda s, i: True,
                      permission_target=lambda s, i, c: PermissionTarget(kind="read", path=c.expand(i.file_path)))
    bash = build_tool("Bash", CmdIn, description="b", call=lambda s, i, c: None,
                      is_read_only=lambda s, i: is_read_only_command(i.command),
                      permission_target=lambda s, i, c: PermissionTarget(kind="bash", command=i.command))
    cases = [
        ("Edit inside", edit, FileIn(file_path=os.path.join(ws, "src", "module7", "a.py"))),
        ("Edit outside", edit, FileIn(file_path="/opt/other/x.txt")),
        ("Read outside", read, FileIn(file_path="/data/set3/a/b.csv")),
        ("Bash compound", bash, CmdIn(command="tool6 sub6 --x && cmd7 a b --flag7 | grep y")),
        ("Bash denied", bash, CmdIn(command="rm -rf build")),
        ("Bash read-only", bash, CmdIn(command="git status && ls -la src")),
    ]

    async def bench() -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for name, tool, inp in cases:
            decide_for(tool, inp, ctx)  # warm the caches
            times = []
            for _ in range(args.n // len(cases)):
                t0 = time.perf_counter()
                decide_for(tool, inp, ctx)
                times.append((time.perf_counter() - t0) * 1000)
            out[name] = times
        return out

    results = asyncio.run(bench())
    # the same requests against no rules at all: what the 500 rules cost on top
    pc_empty = PermissionContext(ws)
    ctx_empty = ToolUseContext(cwd=ws, permission_context=pc_empty)
    saved = ctx.permission_context
    ctx.permission_context = pc_empty
    baseline = asyncio.run(bench())
    ctx.permission_context = saved
    del ctx_empty
    all_times = [t for ts in results.values() for t in ts]
    print(f"rules: {len(pc.rules)}  decisions: {len(all_times)}")
    for name, ts in results.items():
        ts.sort()
        print(f"  {name:16s} mean {statistics.mean(ts):.3f} ms  p50 {ts[len(ts) // 2]:.3f} ms  "
              f"p99 {ts[int(len(ts) * 0.99)]:.3f} ms   (no rules: p50 {sorted(baseline[name])[len(ts) // 2]:.3f} ms)")
    mean = statistics.mean(all_times)
    print(f"overall mean {mean:.3f} ms per decision (budget 1 ms)")
    from bench._common import report, result

    items = [result(f"permission decision, {len(pc.rules)} rules: {name}", ts, unit="ms", target=1.0,
                    baseline=baseline[name]) for name, ts in results.items()]
    items.append(result(f"permission decision, {len(pc.rules)} rules: all", all_times, unit="ms", target=1.0,
                        baseline=[t for ts in baseline.values() for t in ts]))
    report(items)
    return 0 if mean < 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
