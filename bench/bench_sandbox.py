"""Benchmark: a shell command inside the Bash tool's bubblewrap sandbox against the same command plain.

Owns nothing but this measurement. For ``true`` and for ``rg`` over a 200-file tree it runs, interleaved
in the same process, (a) ``bash -c CMD`` directly and (b) the argv and environment
``desktop_agent.permissions.sandbox_launch.plan_launch`` builds for the Bash tool (policy building included: a Read
deny rule, an Edit deny rule and a git repository to protect), 50 times each after a warm-up, and
reports the medians and the overhead per call (target ≤ 15 ms). Then (issue 22) the start-up the socket policy
and the command stubs add over the sandbox without them, both measured interleaved (target ≤ +10 ms).

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
from desktop_agent.permissions import sandbox_launch, sandbox_policy, sandbox_settings  # noqa: E402
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
            plan.release()  # as the Bash tool does when the shell exits: the placeholders go
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
    items.append(hardening_overhead(root, args.runs))
    items.append(placeholder_lifetime(args.runs))
    shutil.rmtree(root, ignore_errors=True)
    report(items)


HARDENING_TARGET_MS = 10.0
PLACEHOLDER_TARGET_MS = 5.0


def placeholder_lifetime(runs: int) -> dict:
    """What it costs to make the placeholders for the missing protected names (``.claude``, ``.mcp.json``,
    ``.vscode``, ``.idea``, ``.envrc``, ``.git/commondir``) for each command and remove them when it ends, over
    keeping them for the whole process (the build before): a sandboxed ``true`` in two like folders, one whose
    plans are never released (the placeholders stay, made once), one released after each run; interleaved."""
    kept_root, fresh_root = tempfile.mkdtemp(prefix="bench-ph-kept-"), tempfile.mkdtemp(prefix="bench-ph-fresh-")
    for r in (kept_root, fresh_root):
        make_tree(r, 20)
    before = sorted(os.listdir(fresh_root))
    argv = [shell_path(), "-c", "true"]
    env = dict(os.environ)
    held: list = []

    def once(root: str, release: bool) -> float:
        ctx = ToolUseContext(cwd=root, permission_context=PermissionContext(root, mode="bypassPermissions"))
        t0 = time.perf_counter()
        plan = sandbox_launch.plan_launch(argv, root, env, ctx, command="true")
        subprocess.run(plan.argv, cwd=root, env=plan.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        if release:
            plan.release()
        else:
            held.append(plan)
        return time.perf_counter() - t0

    for _ in range(3):
        once(kept_root, False)
        once(fresh_root, True)
    kept, fresh = [], []
    for _ in range(runs):
        kept.append(once(kept_root, False))
        fresh.append(once(fresh_root, True))
    left = sorted(os.listdir(fresh_root))
    for plan in held:
        plan.release()
    added = (statistics.median(fresh) - statistics.median(kept)) * 1000
    print(f"placeholders per command: kept for the process {statistics.median(kept) * 1000:.2f} ms, made and "
          f"removed per command {statistics.median(fresh) * 1000:.2f} ms, added {added:.2f} ms (median of {runs}; "
          f"folder after: {left})")
    item = result("placeholders made and removed per command (vs kept for the process)",
                  [f - k for f, k in zip(sorted(fresh), sorted(kept))], unit="ms", target=PLACEHOLDER_TARGET_MS,
                  scale=1000, baseline=kept)
    item["median"] = added
    item["passed"] = added <= PLACEHOLDER_TARGET_MS and left == before
    for r in (kept_root, fresh_root):
        shutil.rmtree(r, ignore_errors=True)
    return item


def hardening_overhead(root: str, runs: int) -> dict:
    """Issue 22: what the socket policy (private /tmp, /run..., host sockets masked) and the command stubs
    (``Bash(rm:*)``, ``Bash(curl *)``, ``Bash(perl)`` denied) add per command, policy building included, over
    the sandbox as it was before them (``build_policy`` alone) — both measured interleaved in this run."""
    pc = PermissionContext(root, mode="bypassPermissions")
    pc.add_rules(["Read(./.env)", "Bash(rm:*)", "Bash(curl *)", "Bash(perl)"], "deny")
    pc.add_rules(["Edit(./src/pkg0/**)"], "deny")
    ctx = ToolUseContext(cwd=root, permission_context=pc)
    env = dict(os.environ)
    argv = [shell_path(), "-c", "true"]
    bwrap = sandbox.probe().bwrap or "bwrap"

    def before() -> float:  # the sandbox of the previous build: build_policy's flags only
        t0 = time.perf_counter()
        tmp = sandbox_policy.private_tmpdir()
        policy = sandbox_policy.build_policy(pc, [root], tmpdir=tmp, settings=sandbox_settings.load_sandbox_settings(pc))
        subprocess.run([bwrap, *policy.bwrap_args(), "--chdir", root, "--", *argv], cwd=root, env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        policy.release()
        return time.perf_counter() - t0

    def after() -> float:  # plan_launch: the same plus the socket policy and the stubs
        t0 = time.perf_counter()
        plan = sandbox_launch.plan_launch(argv, root, env, ctx, command="true")
        assert plan.sandboxed and plan.policy is not None and plan.policy.stubs and plan.policy.sockets
        subprocess.run(plan.argv, cwd=root, env=plan.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        plan.release()
        return time.perf_counter() - t0

    for _ in range(3):
        before()
        after()
    old, new = [], []
    for _ in range(runs):
        old.append(before())
        new.append(after())
    plan = sandbox_launch.plan_launch(argv, root, env, ctx, command="true")
    assert plan.policy is not None and plan.policy.sockets is not None
    t0 = time.perf_counter()
    for _ in range(runs):
        p = sandbox_policy.build_policy(pc, [root], settings=sandbox_settings.load_sandbox_settings(pc))
        sandbox_policy.add_socket_policy(p, env, cwd=root, shell=argv[0])
        sandbox_policy.add_command_stubs(p, pc, env, argv[0])
    build_ms = (time.perf_counter() - t0) / runs * 1000
    added = (statistics.median(new) - statistics.median(old)) * 1000
    print(f"socket policy + command stubs: before {statistics.median(old) * 1000:.2f} ms, after "
          f"{statistics.median(new) * 1000:.2f} ms, added {added:.2f} ms per command (median of {runs}; "
          f"{len(plan.policy.stubs)} stubs, {len(plan.policy.sockets.private_dirs)} private dirs, "
          f"{len(plan.policy.sockets.masked)} sockets masked; policy building with both {build_ms:.2f} ms)")
    item = result("sandbox start-up added by the socket policy and the command stubs",
                  [b - a for b, a in zip(sorted(new), sorted(old))], unit="ms", target=HARDENING_TARGET_MS,
                  scale=1000, baseline=old)
    item["median"] = added
    item["passed"] = added <= HARDENING_TARGET_MS
    return item


if __name__ == "__main__":
    main()
