"""Benchmark: start-up costs of a ``-p`` process — bashlex's parse tables cached or built, and the CLI's own imports.

Owns nothing but these measurements. Interleaved in one run, ``--runs`` fresh Python processes each:
1. *parse one command* (what every ``-p`` process that analyses a Bash command does first): ``parse_command("ls")``
   with the table cache warm (``shell.bashlex_tables``) against the same with ``DESKTOP_AGENT_BASHLEX_CACHE=0``
   (bashlex builds its LALR tables, as before the cache). Reported: the children's CPU time (user + system, from
   ``wait4``) and wall time; the ratio cached/uncached (target ≤ 0.5).
2. *import the CLI server* (``desktop_agent.cli.headless`` and the protocol models it answers with) against
   importing what any ``-p`` run needs before our code (``pydantic``, ``asyncio``): CPU over ``-c pass`` of each,
   their ratio (target ≤ 2: our own modules cost at most as much again as pydantic itself; two thirds of the
   server's import is pydantic and its schema machinery, which the engine's models need anyway).

    .venv/bin/python bench/bench_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import report, result  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARSE = "from desktop_agent.shell.parse import parse_command; assert parse_command('ls -la | wc -l').ok"
SERVER = "import desktop_agent.cli.headless, desktop_agent.protocol.control, desktop_agent.protocol.stream_json"
FLOOR = "import asyncio, pydantic, pydantic_core"


def child(code: str, env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one fresh ``python -c code``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"child failed ({proc.returncode}): {code}")
    return usage.ru_utime + usage.ru_stime, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        base = dict(os.environ, PYTHONPATH=ROOT, DESKTOP_AGENT_CACHE_DIR=os.path.join(cache, "c"))
        cached, uncached = dict(base), dict(base, DESKTOP_AGENT_BASHLEX_CACHE="0")
        child(PARSE, cached)  # fills the cache
        samples: dict[str, list[tuple[float, float]]] = {"cached": [], "uncached": [], "server": [], "floor": [],
                                                        "empty": []}
        for _ in range(args.runs):
            samples["cached"].append(child(PARSE, cached))
            samples["uncached"].append(child(PARSE, uncached))
            samples["server"].append(child(SERVER, cached))
            samples["floor"].append(child(FLOOR, cached))
            samples["empty"].append(child("pass", cached))
    cpu = {k: [c for c, _ in v] for k, v in samples.items()}
    wall = {k: [w for _, w in v] for k, v in samples.items()}
    added = [s - e for s, e in zip(cpu["server"], cpu["empty"])]
    floor = [f - e for f, e in zip(cpu["floor"], cpu["empty"])]
    print(f"parse one command, CPU: cached {statistics.median(cpu['cached']) * 1000:.1f} ms, "
          f"uncached {statistics.median(cpu['uncached']) * 1000:.1f} ms")
    print(f"parse one command, wall: cached {statistics.median(wall['cached']) * 1000:.1f} ms, "
          f"uncached {statistics.median(wall['uncached']) * 1000:.1f} ms")
    print(f"CLI server import, CPU added to an empty interpreter: {statistics.median(added) * 1000:.1f} ms "
          f"(pydantic + asyncio alone: {statistics.median(floor) * 1000:.1f} ms)")
    report([
        result("start-up: parse one command, CPU (bashlex tables cached / built)", cpu["cached"], unit="ms",
               scale=1000, kind="ratio", baseline=cpu["uncached"], target=0.5),
        result("start-up: parse one command, wall (bashlex tables cached / built)", wall["cached"], unit="ms",
               scale=1000, kind="ratio", baseline=wall["uncached"], target=0.6),
        result("start-up: CLI server import, CPU (ours + pydantic / pydantic + asyncio alone)", added, unit="ms",
               scale=1000, kind="ratio", baseline=floor, target=2.0),
    ])


if __name__ == "__main__":
    main()
