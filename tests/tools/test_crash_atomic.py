"""Crash safety of Edit's writes: a child doing 200 Edits is SIGKILLed at random moments.

After every kill each file must be exactly one of its versions (never truncated, never mixed):
the content of version k is a pure function of k, and the header names k.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = 4
EDITS = 200
BODY_LINES = 3000

CHILD = textwrap.dedent(f"""
    import asyncio, sys
    from desktop_agent.core.context import ToolUseContext
    from desktop_agent.engine.execution import run_tool_use
    from desktop_agent.tools.edit import EditTool
    from desktop_agent.tools.read.tool import ReadTool
    from desktop_agent.permissions.context import PermissionContext

    async def main(workdir):
        ctx = ToolUseContext(cwd=workdir, tools=[ReadTool(), EditTool()],
                             permission_context=PermissionContext(workdir, mode="bypassPermissions"))
        versions = [0] * {FILES}
        for i in range({FILES}):
            out = await run_tool_use({{"id": f"r{{i}}", "name": "Read", "input": {{"file_path": f"f{{i}}.txt", "offset": 1, "limit": 1}}}}, ctx)
            assert not out.is_error, out.block
        print("ready", flush=True)
        for n in range({EDITS}):
            i = n % {FILES}
            k = versions[i]
            out = await run_tool_use({{"id": f"e{{n}}", "name": "Edit", "input": {{
                "file_path": f"f{{i}}.txt", "old_string": f"VERSION {{k}}\\n", "new_string": f"VERSION {{k + 1}}\\n"}}}}, ctx)
            assert not out.is_error, out.block
            versions[i] = k + 1
            print(f"done {{i}} {{k + 1}}", flush=True)
        print("finished", flush=True)

    asyncio.run(main(sys.argv[1]))
""")


def content(k: int) -> str:
    body = "".join(f"payload line {j:05d} of a file that must never be torn\n" for j in range(BODY_LINES))
    return f"VERSION {k}\n{body}"


def check_files(workdir: Path, reported: dict[int, int]) -> list[int]:
    versions = []
    for i in range(FILES):
        text = (workdir / f"f{i}.txt").read_text()
        first = text.split("\n", 1)[0]
        assert first.startswith("VERSION "), first[:50]
        k = int(first.split()[1])
        assert text == content(k), f"f{i}.txt is torn or mixed (header says version {k})"
        # Never older than the last edit the child reported as done (old or new content only).
        assert reported.get(i, 0) <= k <= reported.get(i, 0) + 1
        versions.append(k)
    leftovers = [p.name for p in workdir.iterdir() if not p.name.startswith("f") or not p.name.endswith(".txt")]
    assert all(name.startswith(".f") and name.endswith(".tmp") for name in leftovers), leftovers
    return versions


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_during_edits_never_leaves_a_torn_file(tmp_path):
    rng = random.Random(1234)
    total_versions = 0
    for round_no in range(6):
        workdir = tmp_path / f"round{round_no}"
        workdir.mkdir()
        for i in range(FILES):
            (workdir / f"f{i}.txt").write_text(content(0))
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(workdir)], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
            # Kill somewhere inside the run of edits (first round early, later ones at random points).
            time.sleep(rng.uniform(0.005, 0.6))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reported: dict[int, int] = {}
        for line in proc.stdout.read().splitlines():
            if line.startswith("done "):
                _, i, k = line.split()
                reported[int(i)] = int(k)
        versions = check_files(workdir, reported)
        total_versions += sum(versions)
    assert total_versions > 0  # some edits did happen before the kills


def test_child_completes_all_edits_when_not_killed(tmp_path):
    for i in range(FILES):
        (tmp_path / f"f{i}.txt").write_text(content(0))
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=110)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("finished")
    assert check_files(tmp_path, {i: EDITS // FILES for i in range(FILES)}) == [EDITS // FILES] * FILES
