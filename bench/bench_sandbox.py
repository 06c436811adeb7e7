"""Benchmark: a shell command inside the Bash tool's bubblewrap sandbox against the same command plain.

Owns nothing but this measurement. For ``true`` and for ``rg`` over a 200-file tree it runs, interleaved
in the same process, (a) ``bash -c CMD`` directly and (b) the argv and environment
``desktop_agent.permissions.sandbox_launch.plan_launch`` builds for the Bash tool (policy building included: a Read
deny rule, an Edit deny rule and a git repository to protect), 50 times each after a warm-up, and
reports the medians and the overhead per call (target ≤ 15 ms).

    .venv/bin/python bench/bench_sandbox.py [--runs 50]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import report, result  # noqa: E402
from desktop_agent.core.context import ToolUseContext  # noqa: E402
from desktop_agent.permissions.context import PermissionContext  # noqa: E402
from desktop_agent.permissions import sandbox  # noqa: E402
from desktop_agent.permissions import sandbox_launch  # noqa: E402
from desktop_agent.tools.bash.process import shell_path  # noqa: E402
from desktop_agent.tools.ripgrep import rg_path  # noqa: E402

TARGET_MS = 15.0


def make_tree(root: str, n: int = 200) -> None:
    for i in range(n):
        d = os.path.join(root, "src", f"pkg{i // 20}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"mod{i}.py"), "w") as fh:
            fh.write("".join(f"def handler_{i}_{j}(request):\n    return alpha + {j}\n" for j in range(40)))
    with open(os.path.join(root, ".env"), "w") as fh:
        fh.write("TOKEN=x\n")
    subprocess.run(["git", "init", "-q", root], check=True)


def time_once(argv: list[str], env: dict[str, str], cwd: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    status = sandbox.sandbox_status(None)
    if status.state != "active":
        print(f"sandbox not active: {status.message}")
        report([{"name": "sandbox overhead (not active)", "unit": "ms", "median": float("nan"), "min": float("nan"),
                 "max": float("nan"), "target": TARGET_MS, "kind": "abs", "passed": False}])
        return
    root = tempfile.mkdtemp(prefix="bench-sandbox-")
    make_tree(root)
    pc = PermissionContext(root, mode="bypassPermissions")
    pc.add_rules(["Read(./.env)"], "deny")
    pc.add_rules(["Edit(./src/pkg0/**)"], "deny")
    ctx = ToolUseContext(cwd=root, permission_context=pc)
    env = dict(os.environ)
    items = []
    for name, command in (("true", "true"), ("rg over 200 files", f"{shlex.quote(rg_path())} -n alpha src")):
        argv = [shell_path(), "-c", command]
        plain, boxed = [], []

        def sandboxed() -> float:
            t0 = time.perf_counter()
            plan = sandbox_launch.plan_launch(argv, root, env, ctx, command=command)
            assert plan.sandboxed
            subprocess.run(plan.argv, cwd=root, env=plan.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
            return time.perf_counter() - t0

        for _ in range(3):  # warm-up
            time_once(argv, env, root)
            sandboxed()
        for _ in range(args.runs):
            plain.append(time_once(argv, env, root))
            boxed.append(sandboxed())
        overhead = statistics.median(boxed) - statistics.median(plain)
        print(f"{name}: plain {statistics.median(plain) * 1000:.2f} ms, sandboxed {statistics.median(boxed) * 1000:.2f}"
              f" ms, overhead {overhead * 1000:.2f} ms per call (median of {args.runs})")
        item = result(f"sandbox overhead per call: {name}", [b - p for b, p in zip(sorted(boxed), sorted(plain))],
                      unit="ms", target=TARGET_MS, scale=1000)
        item["median"] = overhead * 1000
        item["passed"] = item["median"] <= TARGET_MS
        items.append(item)
    shutil.rmtree(root, ignore_errors=True)
    report(items)


if __name__ == "__main__":
    main()
