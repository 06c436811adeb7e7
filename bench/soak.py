"""Soak: a scripted 500-turn session through the headless CLI against the fake server, then resumed.

``python bench/soak.py [--turns 500] [--resume-turns 50]``

The CLI runs as a real child process (``python -m desktop_agent --input-format stream-json
--output-format stream-json --permission-mode bypassPermissions``) with ``ANTHROPIC_BASE_URL`` pointing at
the in-process fake server (``tests/fakes/anthropic_server.py``). The fake model answers from each
request: a prompt ``READ``/``GREP``/``EDIT a b``/``BASH``/``SLOW`` gets the matching tool call(s), tool
results get a short text, anything else (the compaction request) a summary. The mix over the session:
Read, Grep, Edit (a counter file), Bash, a ``/compact`` at the middle, and an interrupt (a
``control_request`` ``interrupt`` while a slow Bash runs) every 50 turns.

Checked and reported (BENCH_JSON, see ``bench/_common.py``):
- RSS of the CLI process after turn 500 vs. after turn 50 (target ≤ 1.2×);
- open file descriptors after turn 500 vs. after turn 50 (no growth), child processes after each turn (0);
- the transcript JSONL parses and loads into a valid API sequence at every 50-turn checkpoint, and the
  fake server (which validates each request as the real API does) rejected nothing;
- the session resumes (``--resume``) and continues for ``--resume-turns`` more turns;
- the counter file equals the value of the last successful Edit (no lost or repeated edit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _common import report  # noqa: E402

from desktop_agent.core.messages import normalize_for_api  # noqa: E402
from desktop_agent.session.resume import load_conversation_for_resume  # noqa: E402
from desktop_agent.session.store import read_transcript  # noqa: E402
from tests.faults.cli_harness import Cli, SoakFake  # noqa: E402


def proc_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def children(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(name))
    return out


def api_problems(messages: list[dict[str, Any]]) -> list[str]:
    problems = []
    for i, m in enumerate(messages):
        if i and m["role"] == messages[i - 1]["role"]:
            problems.append(f"roles do not alternate at {i}")
        if m["role"] == "assistant":
            uses = sorted(b["id"] for b in m["content"] if b.get("type") == "tool_use")
            if uses:
                nxt = messages[i + 1] if i + 1 < len(messages) else {"content": []}
                got = sorted(b["tool_use_id"] for b in nxt["content"] if b.get("type") == "tool_result")
                if got != uses:
                    problems.append(f"tool_use {uses} answered by {got}")
    return problems


def check_transcript(path: Path) -> tuple[int, list[str]]:
    raw = path.read_text(encoding="utf-8").splitlines()
    for line in raw:
        json.loads(line)  # every line parses
    loaded = load_conversation_for_resume(read_transcript(path, full=True))
    messages = normalize_for_api(loaded.messages)
    return len(raw), api_problems(messages)


def prompt_for(turn: int, counter: int) -> tuple[str, bool]:
    kind = turn % 5
    if turn % 50 == 25:
        return "SLOW", True
    if kind == 0:
        return "READ the notes", False
    if kind == 1:
        return "GREP for the needle", False
    if kind == 2:
        return f"EDIT {counter} {counter + 1}", False
    if kind == 3:
        return "BASH list the files", False
    return "Say something short.", False


def run(turns: int, resume_turns: int) -> int:
    tmp = tempfile.mkdtemp(prefix="soak-")
    ws = os.path.join(tmp, "ws")
    home = os.path.join(tmp, "home")
    os.makedirs(ws)
    os.makedirs(home)
    Path(ws, "notes.txt").write_text("".join(f"note {i}: needle {i}\n" for i in range(40)))
    Path(ws, "counter.txt").write_text("count = 0\n")
    for i in range(20):
        Path(ws, f"file{i}.py").write_text(f"x = {i}  # needle\n")
    session_id = str(uuid.uuid4())
    failures: list[str] = []
    samples: dict[str, Any] = {}
    latencies: list[float] = []
    startups: list[float] = []
    interrupts: list[float] = []
    counter = 0
    with SoakFake(ws) as fake:
        env = dict(os.environ, ANTHROPIC_API_KEY="sk-soak", ANTHROPIC_BASE_URL=fake.base_url, HOME=home,
                   CLAUDE_CONFIG_DIR=os.path.join(home, ".claude"), XDG_DATA_HOME=os.path.join(home, ".data"),
                   XDG_CONFIG_HOME=os.path.join(home, ".config"), XDG_STATE_HOME=os.path.join(home, ".state"),
                   PYTHONPATH=str(ROOT))
        env.pop("ANTHROPIC_MODEL", None)

        def find_transcript() -> Path:
            found = list(Path(home).rglob(f"{session_id}.jsonl"))
            if not found:
                raise RuntimeError("transcript file not found")
            return found[0]

        def one_phase(cli: Cli, first: int, count: int, label: str) -> None:
            nonlocal counter
            for t in range(first, first + count):
                if t == first + count // 2 and label == "main":
                    t0 = time.perf_counter()
                    res = cli.turn("/compact")
                    samples["compact_s"] = time.perf_counter() - t0
                    if res.get("is_error"):
                        failures.append(f"compaction failed: {res}")
                prompt, interrupt = prompt_for(t, counter)
                t0 = time.perf_counter()
                res = cli.turn(prompt, interrupt=interrupt)
                if t == first:  # includes the CLI's start-up
                    startups.append(time.perf_counter() - t0)
                else:
                    latencies.append(time.perf_counter() - t0)
                if prompt.startswith("EDIT") and not res.get("is_error"):
                    if Path(ws, "counter.txt").read_text() == f"count = {counter + 1}\n":
                        counter += 1
                if interrupt and not res.get("is_error"):
                    failures.append(f"turn {t}: the interrupted turn reported success")
                time.sleep(0.0)
                kids = children(cli.proc.pid)
                if kids:
                    time.sleep(0.5)
                    kids = children(cli.proc.pid)
                    if kids:
                        failures.append(f"turn {t}: child processes left: {kids}")
                done = t - first + 1
                if label == "main" and done in (50, count):
                    samples[f"rss_kb_{done}"] = proc_kb(cli.proc.pid, "VmRSS")
                    samples[f"fds_{done}"] = fd_count(cli.proc.pid)
                if done % 50 == 0 or done == count:
                    lines, problems = check_transcript(find_transcript())
                    if problems:
                        failures.append(f"{label} turn {t}: transcript problems {problems[:3]}")
                    samples[f"{label}_transcript_lines"] = lines
                    print(f"[{label}] turn {done}/{count}: RSS {proc_kb(cli.proc.pid, 'VmRSS') / 1024:.1f} MB, "
                          f"fds {fd_count(cli.proc.pid)}, transcript {lines} lines, "
                          f"median turn {statistics.median(latencies) * 1000:.0f} ms", flush=True)

        t_all = time.perf_counter()
        cli = Cli(ws, env, ["--session-id", session_id])
        one_phase(cli, 0, turns, "main")
        interrupts.extend(cli.interrupt_latencies)
        rc = cli.close()
        print(f"main CLI exited with {rc}")
        cli = Cli(ws, env, ["--resume", session_id])
        one_phase(cli, turns, resume_turns, "resumed")
        interrupts.extend(cli.interrupt_latencies)
        rc2 = cli.close()
        print(f"resumed CLI exited with {rc2}")
        total_s = time.perf_counter() - t_all
        if fake.errors:
            failures.append(f"requests the API would reject: {fake.errors[:3]}")
        requests = fake.n
    if Path(ws, "counter.txt").read_text() != f"count = {counter}\n":
        failures.append(f"counter file {Path(ws, 'counter.txt').read_text()!r} != count = {counter}")
    rss_ratio = samples[f"rss_kb_{turns}"] / samples["rss_kb_50"]
    fd_growth = samples[f"fds_{turns}"] - samples["fds_50"]
    print(f"soak: {turns} + {resume_turns} turns, {requests} model requests in {total_s:.0f} s; RSS turn 50 "
          f"{samples['rss_kb_50'] / 1024:.1f} MB → turn {turns} {samples[f'rss_kb_{turns}'] / 1024:.1f} MB "
          f"(×{rss_ratio:.3f}); fds {samples['fds_50']} → {samples[f'fds_{turns}']}; edits {counter}; "
          f"compaction {samples.get('compact_s', float('nan')):.2f} s; {len(interrupts)} interrupts, "
          f"interrupt → result median {statistics.median(interrupts) * 1000:.0f} ms (max "
          f"{max(interrupts) * 1000:.0f} ms); first turn incl. start-up {max(startups):.1f} s; "
          f"failures {len(failures)}")
    for f in failures:
        print("FAILURE:", f)
    items = [
        {"name": "soak_rss_ratio_turn500_vs_50", "unit": "x", "median": rss_ratio, "min": rss_ratio,
         "max": rss_ratio, "target": 1.2, "kind": "abs", "passed": rss_ratio <= 1.2},
        {"name": "soak_fd_growth", "unit": "fds", "median": fd_growth, "min": fd_growth, "max": fd_growth,
         "target": 0, "kind": "abs", "passed": fd_growth <= 0},
        {"name": "soak_failures", "unit": "count", "median": len(failures), "min": len(failures),
         "max": len(failures), "target": 0, "kind": "abs", "passed": not failures},
        {"name": "soak_turn_latency", "unit": "s", "median": statistics.median(latencies), "min": min(latencies),
         "max": max(latencies), "target": 1.0, "kind": "abs",
         "passed": statistics.median(latencies) <= 1.0},
        {"name": "soak_interrupt_to_result", "unit": "s", "median": statistics.median(interrupts),
         "min": min(interrupts), "max": max(interrupts), "target": 1.0, "kind": "abs",
         "passed": max(interrupts) <= 1.0},
    ]
    report(items)
    return 0 if all(i["passed"] for i in items) else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=500)
    ap.add_argument("--resume-turns", type=int, default=50)
    args = ap.parse_args()
    if args.turns < 50:
        ap.error("--turns must be at least 50 (memory is compared with turn 50)")
    return run(args.turns, args.resume_turns)


if __name__ == "__main__":
    sys.exit(main())
