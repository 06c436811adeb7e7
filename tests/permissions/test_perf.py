"""A loose guard on decision time with 500 rules (the real figure comes from bench/bench_permissions.py)."""

from __future__ import annotations

import asyncio
import os
import statistics
import time

from desktop_agent.permissions.engine import has_permissions_to_use_tool
from tests.permissions.util import TOOLS, make_ctx


def test_500_rules_median_well_under_budget(tmp_path):
    from bench.bench_permissions import make_rules

    ctx = make_ctx(str(tmp_path))
    pc = ctx.permission_context
    for r in make_rules(500):
        pc._add_rule(r)
    assert len(pc.rules) == 500
    cases = [(TOOLS["Edit"], {"file_path": os.path.join(str(tmp_path), "src", "module7", "a.py")}),
             (TOOLS["Bash"], {"command": "tool6 sub6 --x && cmd7 a b --flag7 | grep y"}),
             (TOOLS["Read"], {"file_path": "/data/set3/a/b.csv"})]
    parsed = [(t, t.input_model.model_validate(i)) for t, i in cases]

    async def go():
        times = []
        for _ in range(60):
            for tool, inp in parsed:
                t0 = time.perf_counter()
                await has_permissions_to_use_tool(tool, inp, ctx)
                times.append(time.perf_counter() - t0)
        return times

    times = asyncio.run(go())
    assert statistics.median(times) < 0.002  # budget 1 ms; generous for a loaded CI machine
