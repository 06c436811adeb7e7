"""Benchmark: what the protected paths (``permissions.protected.sandbox_protected``) add to one sandboxed command.

Owns nothing but this measurement. Two folders: a project (a git repository with a nested one, ``.claude`` and
``.husky``) and a home opened as the folder (``HOME`` inside it: the shell start-up files, ``~/.ssh``, our own
configuration — most of them missing, so placeholders). For each, interleaved in one process, ``bwrap … true``
with the policy's binds minus the protected ones (today's start-up before this change: the working dirs, the
TMPDIR) against the full policy, ``--runs`` times each after a warm-up; plus the time ``build_policy`` itself takes
(the walk for nested repositories is reused for 10 s, as in a session). Reports the medians and the added time per
command (target ≤ +10 ms for the whole of issue 22).

    .venv/bin/python bench/bench_protected.py [--runs 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import report  # noqa: E402
from desktop_agent.util import placeholders  # noqa: E402
from desktop_agent.permissions.context import PermissionContext  # noqa: E402
from desktop_agent.permissions.sandbox_policy import base_flags, build_policy  # noqa: E402
from desktop_agent.permissions.sandbox_settings import SandboxSettings  # noqa: E402

TARGET_MS = 10.0


def _project(root: str) -> str:
    proj = os.path.join(root, "proj")
    os.makedirs(os.path.join(proj, "vendor", "lib"))
    os.makedirs(os.path.join(proj, ".claude"))
    os.makedirs(os.path.join(proj, ".husky"))
    for i in range(200):
        d = os.path.join(proj, "src", f"pkg{i // 20}")
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, f"m{i}.py"), "w").close()
    subprocess.run(["git", "init", "-q", proj], check=True)
    subprocess.run(["git", "init", "-q", os.path.join(proj, "vendor", "lib")], check=True)
    return proj


def _run(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def measure(name: str, folder: str, runs: int) -> list[dict]:
    bwrap = shutil.which("bwrap") or "bwrap"
    pc = PermissionContext(folder)
    settings = SandboxSettings()
    policy = build_policy(pc, [folder], settings=settings)
    before = [bwrap, *base_flags(False)]
    for p in policy.writable:
        before += ["--bind", p, p]
    before += ["--", "true"]
    binds = len(policy.pinned) + len(policy.read_only)
    build, old, new = [], [], []
    for i in range(runs + 5):
        t0 = time.perf_counter()
        policy = build_policy(pc, [folder], settings=settings)
        b = time.perf_counter() - t0
        after = [bwrap, *policy.bwrap_args(), "--", "true"]
        o, n = (_run(before), _run(after)) if i % 2 else (lambda n_, o_: (o_, n_))(_run(after), _run(before))
        if i >= 5:
            build.append(b)
            old.append(o)
            new.append(n)
    ms = lambda xs: statistics.median(xs) * 1000  # noqa: E731
    added = ms(new) - ms(old) + ms(build)
    print(f"{name}: {binds} protected binds; bwrap true {ms(old):.2f} → {ms(new):.2f} ms, build_policy "
          f"{ms(build):.2f} ms, added {added:.2f} ms per command (median of {runs})")
    return [{"name": f"protected paths, added per command: {name}", "unit": "ms", "median": added,
             "min": min(new) * 1000 - ms(old), "max": max(new) * 1000 - ms(old), "target": TARGET_MS, "kind": "abs",
             "passed": added <= TARGET_MS}]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args()
    if shutil.which("bwrap") is None:
        print("bubblewrap is not installed")
        return
    root = os.path.realpath(tempfile.mkdtemp(prefix="bench-protected-"))
    items = measure("project with a nested repository", _project(root), args.runs)
    home = os.path.join(root, "home")
    os.makedirs(os.path.join(home, ".ssh"))
    open(os.path.join(home, ".bashrc"), "w").close()
    for k, v in (("HOME", home), ("XDG_CONFIG_HOME", os.path.join(home, ".config")),
                 ("CLAUDE_CONFIG_DIR", os.path.join(home, ".claude"))):
        os.environ[k] = v
    for k in ("DESKTOP_AGENT_CONFIG_DIR", "DESKTOP_AGENT_DATA_DIR", "XDG_DATA_HOME"):
        os.environ.pop(k, None)
    items += measure("home opened as the folder", home, args.runs)
    placeholders.cleanup_placeholders()
    shutil.rmtree(root, ignore_errors=True)
    report(items)


if __name__ == "__main__":
    main()
