"""Benchmark: a session in an executor process (our CLI as a child, ``client.subprocess``) against the engine in
the host process (``client.in_process``), both through ``SessionHandle`` against the fake Anthropic API.

Per mode, in a fresh host interpreter each (so their memory does not mix), three sessions in a row, each with
20 text turns:
1. first event latency: ``submit()`` → the first ``TextDelta`` (median of the 20 turns of the 2nd and 3rd
   sessions; the 1st warms up the fake server and imports) — target: process ≤ in-process + 80 ms;
2. per-turn overhead: ``submit()`` → ``TurnFinished``, median — reported as process − in-process;
3. peak RSS of host + executor (VmHWM of each, the executor read just before it is closed) — target: process
   ≤ in-process + 60 MB per session;
4. growth: the host's RSS after each session closed, 1st → 3rd (target ≤ 10 MB in both modes), and
   how long ``open()`` took.

    .venv/bin/python bench/bench_executor.py [--turns 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench._common import report, result  # noqa: E402

FIRST_EVENT_BUDGET_MS = 80.0
RSS_BUDGET_MB = 60.0
GROWTH_BUDGET_MB = 10.0


def _status_kb(pid: int | str, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


async def _one_mode(kind: str, turns: int, sessions: int) -> dict:
    from desktop_agent.client import SessionOptions, make_client
    from desktop_agent.core.events import TextDelta, TurnFinished
    from tests.faults.cli_harness import SoakFake

    ws = tempfile.mkdtemp(prefix="bench-exec-ws-")
    out: dict = {"kind": kind, "first_ms": [], "turn_ms": [], "open_ms": [], "cold_first_ms": [], "rss_after_mb": [],
                 "executor_hwm_mb": []}
    with SoakFake(ws) as fake:
        os.environ["ANTHROPIC_BASE_URL"] = fake.base_url
        client = make_client(kind)  # type: ignore[arg-type]
        for s in range(sessions):
            t0 = time.perf_counter()
            handle = await client.open(ws, SessionOptions(permission_mode="default"))
            out["open_ms"].append((time.perf_counter() - t0) * 1000)
            for i in range(turns):
                t0 = time.perf_counter()
                first = None
                async for event in handle.submit(f"hello {s}.{i}"):
                    if first is None and isinstance(event, TextDelta):
                        first = time.perf_counter() - t0
                    if isinstance(event, TurnFinished):
                        assert event.reason == "completed", event
                total = time.perf_counter() - t0
                if i == 0:
                    out["cold_first_ms"].append((first or total) * 1000)
                if s > 0:
                    out["first_ms"].append((first or total) * 1000)
                    out["turn_ms"].append(total * 1000)
            pid = getattr(handle, "pid", None)
            if pid:
                out["executor_hwm_mb"].append(_status_kb(pid, "VmHWM") / 1024)
            await handle.close()
            import gc

            gc.collect()
            out["rss_after_mb"].append(_status_kb("self", "VmRSS") / 1024)
    out["host_hwm_mb"] = _status_kb("self", "VmHWM") / 1024
    return out


def _child(kind: str, turns: int, sessions: int) -> None:
    data = asyncio.run(_one_mode(kind, turns, sessions))
    print("MODE_JSON " + json.dumps(data))


def _run_mode(kind: str, turns: int, sessions: int, env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", kind, "--turns", str(turns), "--sessions",
                           str(sessions)], env=env, capture_output=True, text=True, timeout=900)
    for line in proc.stdout.splitlines():
        if line.startswith("MODE_JSON "):
            return json.loads(line[len("MODE_JSON "):])
    raise SystemExit(f"{kind} run failed (rc {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        _child(args.child, args.turns, args.sessions)
        return
    home = tempfile.mkdtemp(prefix="bench-exec-home-")
    env = dict(os.environ, HOME=home, CLAUDE_CONFIG_DIR=os.path.join(home, ".claude"),
               XDG_DATA_HOME=os.path.join(home, ".data"), XDG_CONFIG_HOME=os.path.join(home, ".config"),
               XDG_STATE_HOME=os.path.join(home, ".state"), ANTHROPIC_API_KEY="sk-bench",
               PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring", PYTHONPATH=ROOT)
    env.pop("ANTHROPIC_MODEL", None)
    inproc = _run_mode("inprocess", args.turns, args.sessions, env)
    proc = _run_mode("process", args.turns, args.sessions, env)
    med = statistics.median
    for d in (inproc, proc):
        print(f"{d['kind']:>9}: open {', '.join(f'{x:.0f}' for x in d['open_ms'])} ms; first event of a session's "
              f"first turn {', '.join(f'{x:.0f}' for x in d['cold_first_ms'])} ms; later turns: first event median "
              f"{med(d['first_ms']):.1f} ms; turn median {med(d['turn_ms']):.1f} ms; "
              f"host peak {d['host_hwm_mb']:.0f} MB;"
              f" executor peaks {', '.join(f'{x:.0f}' for x in d['executor_hwm_mb']) or '-'} MB; host RSS after each "
              f"session {', '.join(f'{x:.0f}' for x in d['rss_after_mb'])} MB")
    first_delta = [x - med(inproc["first_ms"]) for x in proc["first_ms"]]
    turn_delta = [x - med(inproc["turn_ms"]) for x in proc["turn_ms"]]
    peak_in = inproc["host_hwm_mb"]
    peak_proc = proc["host_hwm_mb"] + max(proc["executor_hwm_mb"] or [0])
    items = [
        result("executor: first event, process − in-process", first_delta, unit="ms", target=FIRST_EVENT_BUDGET_MS),
        result("executor: per-turn overhead, process − in-process", turn_delta, unit="ms",
               target=FIRST_EVENT_BUDGET_MS),
        result("executor: peak RSS host+executor − in-process host", [peak_proc - peak_in], unit="MB",
               target=RSS_BUDGET_MB),
        result("executor: host RSS growth over 3 sessions (process)",
               [proc["rss_after_mb"][-1] - proc["rss_after_mb"][0]], unit="MB", target=GROWTH_BUDGET_MB),
        result("executor: host RSS growth over 3 sessions (in-process)",
               [inproc["rss_after_mb"][-1] - inproc["rss_after_mb"][0]], unit="MB", target=GROWTH_BUDGET_MB),
        result("executor: executor peak RSS growth, 1st → 3rd session",
               [proc["executor_hwm_mb"][-1] - proc["executor_hwm_mb"][0]], unit="MB", target=GROWTH_BUDGET_MB),
    ]
    report(items)


if __name__ == "__main__":
    main()
