"""This tree against an older commit of itself, in the same run: did a refactor cost speed or memory?

Issue 15's bar: the CLI's wall time and peak memory within 5 % of before, the window's first paint within 10 %.
Measured here, alternating the two trees run by run so a busy box slows both alike:
1. the CLI session of ``bench_cli_vs_reference.py`` (10 model turns, 30 tool calls against the fake Anthropic
   server, files checked after each run): wall time, CPU time and peak RSS of the process tree;
2. ``--version`` cold start (interpreter + import of the entry point);
3. the window's cold start to the first painted frame (empty window, offscreen; ``DESKTOP_AGENT_EXIT_AFTER_PAINT``).

Both trees run with this checkout's ``.venv`` (same interpreter, same packages); the baseline tree is a
``git worktree`` of ``--baseline-ref`` (default: ``$BENCH_BASELINE_REF``, else ``HEAD~1``) made in a temp dir and
removed afterwards, or an existing checkout given with ``--baseline-tree PATH``.

    .venv/bin/python bench/bench_before_after.py [--runs 5] [--baseline-ref REF | --baseline-tree PATH]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench import bench_cli_vs_reference as cli_bench  # noqa: E402
from bench._common import report, result  # noqa: E402

WALL_TARGET = 1.05
MEM_TARGET = 1.05
PAINT_TARGET = 1.10


class OursAt(cli_bench.Ours):
    """Our CLI imported from ``tree`` (PYTHONPATH first, so it wins over the editable install)."""

    def __init__(self, tree: Path, label: str):
        self.tree = tree
        self.name = label

    def env(self, home: Path, fake: cli_bench.FakeServer) -> dict[str, str]:
        env = super().env(home, fake)
        env["PYTHONPATH"] = str(self.tree)
        return env


def first_paint(tree: Path, home: Path) -> float:
    """Wall seconds from spawn to the window's first paint, read from the app's own ``first_paint_s`` line."""
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local/share"), XDG_STATE_HOME=str(home / ".local/state"),
               QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(tree), ANTHROPIC_API_KEY="bench-dummy-key",
               DESKTOP_AGENT_EXIT_AFTER_PAINT="1", DESKTOP_AGENT_T0=repr(time.time()))
    proc = subprocess.run([cli_bench.PY, "-m", "desktop_agent"], cwd=str(tree), env=env, capture_output=True,
                          text=True, timeout=120)
    for line in proc.stdout.splitlines():
        if line.startswith("first_paint_s="):
            return float(line.split("=", 1)[1])
    raise RuntimeError(f"no first paint from {tree} (exit {proc.returncode}): {proc.stdout[-300:]} "
                       f"{proc.stderr[-500:]}")


def make_baseline(args: list[str]) -> tuple[Path, str, bool]:
    if "--baseline-tree" in args:
        tree = Path(args[args.index("--baseline-tree") + 1]).resolve()
        return tree, str(tree), False
    ref = args[args.index("--baseline-ref") + 1] if "--baseline-ref" in args else \
        os.environ.get("BENCH_BASELINE_REF", "HEAD~1")
    tree = Path(tempfile.mkdtemp(prefix="bench-baseline-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref], check=True,
                   capture_output=True)
    sha = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         check=True).stdout.strip()
    return tree, f"{ref} ({sha})", True


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> int:
    args = sys.argv[1:]
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    base_tree, base_label, made = make_baseline(args)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    print(f"this tree: {ROOT} ({head}); baseline: {base_label}")
    work = Path(tempfile.mkdtemp(prefix="bench-before-after-"))
    fake = cli_bench.FakeServer()
    agents = [OursAt(ROOT, "this tree"), OursAt(base_tree, "baseline")]
    homes = {a.name: work / f"home-{i}" for i, a in enumerate(agents)}
    for h in homes.values():
        h.mkdir()
    samples: dict[str, dict[str, list[float]]] = {a.name: {"wall": [], "cpu": [], "rss": [], "version": [], "paint": []}
                                                  for a in agents}
    try:
        for a in agents:  # warm-up: page cache, bytecode, first-run files
            w = cli_bench.session_run(a, fake, homes[a.name], work, False)
            if w["problems"]:
                print(f"warm-up {a.name}: PROBLEMS {w['problems']}")
            first_paint(a.tree, homes[a.name])
        for i in range(runs):
            for a in (agents if i % 2 == 0 else agents[::-1]):
                s = samples[a.name]
                r = cli_bench.session_run(a, fake, homes[a.name], work, False)
                if r["problems"]:
                    print(f"run {i + 1} {a.name}: PROBLEMS {r['problems']}")
                else:
                    s["wall"].append(r["wall"])
                    s["cpu"].append(r["cpu"])
                    s["rss"].append(r["peak_tree"] / 2**20)
                s["version"].append(cli_bench.version_run(a, fake, homes[a.name], work))
                s["paint"].append(first_paint(a.tree, homes[a.name]))
                print(f"run {i + 1} {a.name:10s} session {r['wall']:.3f}s {r['peak_tree'] / 2**20:.1f} MB  "
                      f"--version {s['version'][-1] * 1000:.0f} ms  first paint {s['paint'][-1] * 1000:.0f} ms",
                      flush=True)
    finally:
        fake.close()
        shutil.rmtree(work, ignore_errors=True)
        if made:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_tree)],
                           capture_output=True)
    ours, base = samples["this tree"], samples["baseline"]
    items: list[dict[str, Any]] = []
    if ours["wall"] and base["wall"]:
        items.append(result("CLI session wall, 10 turns / 30 tools (this tree vs baseline)", ours["wall"],
                            baseline=base["wall"], target=WALL_TARGET, kind="ratio"))
        items.append(result("CLI session CPU time user+sys (this tree vs baseline; less load-sensitive than wall)",
                            ours["cpu"], baseline=base["cpu"], target=WALL_TARGET, kind="ratio"))
        items.append(result("CLI session peak RSS, process tree (this tree vs baseline)", ours["rss"],
                            baseline=base["rss"], unit="MB", target=MEM_TARGET, kind="ratio"))
    items.append(result("CLI --version cold start (this tree vs baseline)", ours["version"],
                        baseline=base["version"], target=WALL_TARGET, kind="ratio"))
    items.append(result("window cold start to first paint (this tree vs baseline)", ours["paint"],
                        baseline=base["paint"], target=PAINT_TARGET, kind="ratio"))
    report(items)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
