"""Fault: a Bash command that prints 100 MB. The result is capped and memory stays bounded.

The calls run in a child process so its peak RSS (``VmHWM`` in /proc/self/status) measures them alone:
the high-water mark is read after a warm-up call and again after each 100 MB command. Three shapes:
many short lines, one 100 MB line without a newline, and 100 MB of random bytes (invalid UTF-8).
Prints, per shape: result characters, seconds, peak RSS growth in MB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MB = 1024 * 1024
PEAK_DELTA_LIMIT_MB = 48  # the tool keeps ~240 KB of head+tail; anything near 100 MB means it buffered all
RESULT_LIMIT_CHARS = 40_000  # Bash's max_result_size_chars (its own cap is 30,000 plus short notes)

CHILD = textwrap.dedent("""
    import asyncio, json, sys, time
    from desktop_agent.core.context import ToolUseContext
    from desktop_agent.engine.execution import run_tool_use
    from desktop_agent.permissions.context import PermissionContext
    from desktop_agent.permissions.sandbox_launch import BubblewrapSandbox
    from desktop_agent.tools.bash.tool import BashTool

    def hwm_kb():
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])

    async def main(ws, commands):
        ctx = ToolUseContext(cwd=ws, permission_context=PermissionContext(ws, mode="bypassPermissions"),
                             tools=[BashTool()], sandbox=BubblewrapSandbox())  # as app/build.py gives a session
        await run_tool_use({"id": "warm", "name": "Bash", "input": {"command": "echo warm"}}, ctx)
        out = {}
        for name, cmd in commands.items():
            before = hwm_kb()
            t0 = time.perf_counter()
            o = await run_tool_use({"id": name, "name": "Bash", "input": {"command": cmd, "timeout": 120000}}, ctx)
            secs = time.perf_counter() - t0
            content = o.block["content"]
            out[name] = {"chars": len(content) if isinstance(content, str) else -1, "secs": secs,
                         "hwm_before_kb": before, "hwm_after_kb": hwm_kb(), "is_error": o.is_error,
                         "id": o.block["tool_use_id"], "head": content[:60], "tail": content[-60:],
                         "stage": o.stage,
                         "truncated_note": isinstance(content, str) and "characters truncated]" in content}
        print(json.dumps(out))

    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
""")


@pytest.mark.needs_sandbox
def test_bash_100mb_output_capped_with_bounded_memory(tmp_path):
    n = 100 * MB
    commands = {
        "lines": f"yes 'the quick brown fox jumps over the lazy dog' | head -c {n}",
        "one_line": f"head -c {n} /dev/zero | tr '\\0' 'x'",
        "random_bytes": f"head -c {n} /dev/urandom",
    }
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), json.dumps(commands)], capture_output=True,
                          text=True, timeout=150, env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for name, r in results.items():
        delta_mb = (r["hwm_after_kb"] - r["hwm_before_kb"]) / 1024
        print(f"100 MB {name}: result {r['chars']} chars in {r['secs']:.1f} s, peak RSS +{delta_mb:.1f} MB "
              f"(baseline {r['hwm_before_kb'] / 1024:.0f} MB), error={r['is_error']}")
        assert r["id"] == name and r["stage"] == "result"
        assert 0 < r["chars"] <= RESULT_LIMIT_CHARS
        assert r["truncated_note"], "the result says how much was cut"
        assert delta_mb < PEAK_DELTA_LIMIT_MB
