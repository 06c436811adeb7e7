"""Benchmark: the engine host (issue 23) — the window's in-process session over the memory transport against the
tree before it (``client.in_process``, the pass-through handle, measured in the same run from an exported copy of
the baseline commit), and the background host's Unix socket against memory.

Every mode runs in a fresh interpreter, with the same scripted model (no network: ``model.scripted``, each reply
streamed in ``--chunk``-character deltas) passed host-side, for ``--turns`` text turns after one warm-up turn:
1. ``open``: ``client.open()`` until the handle is ready (ratio to before ≤ 1.05);
2. first event: ``submit()`` → the first ``TextDelta`` (ratio to before ≤ 1.05; unix ≤ memory + 20 ms);
3. per turn: ``submit()`` → ``TurnFinished`` (ratio to before ≤ 1.05);
4. per event over the socket: (unix turn − memory turn) / events per turn (≤ 50 µs);
5. window first paint: ``python -m desktop_agent`` (offscreen, an isolated home, no folder) from the spawn to the
   first paint of its ``MainWindow`` (``DESKTOP_AGENT_EXIT_AFTER_PAINT``, which both trees have), this tree and the
   baseline's alternately, ``--paint-rounds`` each (ratio to before ≤ 1.05).

Every child runs with bytecode (a ``PYTHONPYCACHEPREFIX`` in a temp dir, both trees compiled first and one unmeasured
run of each kind): with ``PYTHONDONTWRITEBYTECODE`` each process would compile the whole package again, and a
bigger tree would be measured as slower to compile, not to run.

File checkpoints (``app.rewind``, after the baseline: a snapshot thread before each turn, the window's default) are
off in this tree's sessions unless ``--checkpoints``, so that the host's own cost is compared like for like.

    .venv/bin/python bench/bench_host.py [--turns 30] [--chunk 8] [--rounds 5] [--paint-rounds 7] [--baseline 5ea6fcb]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TEXT = ("The host speaks one protocol over every transport, and this reply is long enough to stream in many "
        "small deltas, as a model's answer does. ") * 4


def _scripted(turns: int, chunk: int):
    from desktop_agent.model.scripted import ScriptedModelClient, reply, text

    return ScriptedModelClient([reply(text(TEXT)) for _ in range(turns + 1)], chunk_size=chunk)


async def _turns(handle, turns: int) -> dict:
    from desktop_agent.core.events import TextDelta, TurnFinished

    first, per_turn, events = [], [], []
    for i in range(turns + 1):
        t0 = time.perf_counter()
        t_first = None
        n = 0
        async for event in handle.submit(f"turn {i}"):
            n += 1
            if t_first is None and isinstance(event, TextDelta):
                t_first = time.perf_counter()
            if isinstance(event, TurnFinished):
                assert event.reason == "completed", event
        t_end = time.perf_counter()
        if i:  # the first turn warms up
            first.append((t_first or t_end) - t0)
            per_turn.append(t_end - t0)
            events.append(n)
    return {"first": first, "turn": per_turn, "events": events}


async def _child(mode: str, turns: int, chunk: int, checkpoints: bool = False) -> dict:
    from desktop_agent.client import SessionOptions, make_client

    ws = tempfile.mkdtemp(prefix="bench-host-ws-")
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-bench")
    scripted = _scripted(turns, chunk)
    # the tree before had no file checkpoints (app.rewind came later, a snapshot thread before each turn): the
    # host's cost is measured like for like, without them, unless --checkpoints
    extra = {} if mode == "before" or checkpoints else {"checkpoint_default": False}
    server = None
    try:
        t0 = time.perf_counter()
        if mode == "unix":
            from desktop_agent.client.hosts import SocketClient
            from desktop_agent.host.server import Host, build_session, serve_connection

            host = Host(engine_factory=lambda folder, settings, kw: build_session(folder, settings,
                                                                                  {**kw, **extra, "client": scripted}))
            sock_dir = tempfile.mkdtemp(prefix="bench-host-", dir="/tmp")
            path = os.path.join(sock_dir, "h.sock")
            server = await asyncio.start_unix_server(lambda r, w: serve_connection(host, r, w, peer="bench"), path,
                                                     limit=256 * 1024 * 1024)
            client = SocketClient(path)
            t0 = time.perf_counter()
            handle = await client.open(ws, SessionOptions(trusted=True))
        else:  # memory (this tree) or before (the baseline's in-process client): the same call
            client = make_client("inprocess")
            handle = await client.open(ws, SessionOptions(trusted=True, engine_kwargs={**extra, "client": scripted}))
        opened = time.perf_counter() - t0
        out = await _turns(handle, turns)
        out["open"] = [opened]
        await handle.close()
        return out
    finally:
        if server is not None:
            server.close()
        shutil.rmtree(ws, ignore_errors=True)


_PYC: dict[str, str] = {}  # PYTHONPYCACHEPREFIX for the children (set in main)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(_PYC, **extra)
    return env


def _run_child(mode: str, tree: str, turns: int, chunk: int, checkpoints: bool = False) -> dict:
    env = _env(PYTHONPATH=tree)
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode, "--turns", str(turns),
                           "--chunk", str(chunk)] + (["--checkpoints"] if checkpoints else []), cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _first_paint(tree: str, home: str) -> float:
    """Seconds from spawning the window's process to the first paint of its ``MainWindow`` (as it reports it)."""
    env = _env(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
               XDG_DATA_HOME=os.path.join(home, ".local/share"), XDG_STATE_HOME=os.path.join(home, ".local/state"),
               XDG_RUNTIME_DIR=os.path.join(home, "run"), QT_QPA_PLATFORM="offscreen", PYTHONPATH=tree,
               ANTHROPIC_API_KEY="sk-bench", DESKTOP_AGENT_EXIT_AFTER_PAINT="1", DESKTOP_AGENT_T0=repr(time.time()))
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "desktop_agent"], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=120)
    for line in proc.stdout.splitlines():
        if line.startswith("first_paint_s="):
            return float(line.split("=", 1)[1])
    raise SystemExit(f"the window in {tree} did not paint (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def _export(commit: str) -> str:
    """The baseline tree, exported (no worktree: the repository's metadata is left alone)."""
    dest = tempfile.mkdtemp(prefix="bench-host-base-")
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    return dest


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--chunk", type=int, default=8)
    parser.add_argument("--baseline", default="5ea6fcb")
    parser.add_argument("--rounds", type=int, default=5)  # one open a round: 2 left the median to chance
    parser.add_argument("--paint-rounds", type=int, default=7)
    parser.add_argument("--checkpoints", action="store_true",
                        help="this tree's sessions take file checkpoints before each turn (the window's default)")
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_child(args.child, args.turns, args.chunk, args.checkpoints))))
        return
    sys.path.insert(0, ROOT)  # only here: a child imports desktop_agent from the tree it is given
    from bench._common import report, result

    base = _export(args.baseline)
    pyc = tempfile.mkdtemp(prefix="bench-host-pyc-")
    _PYC["PYTHONPYCACHEPREFIX"] = pyc
    paint: dict[str, list[float]] = {"before": [], "now": []}
    home = ""
    runs: dict[str, dict] = {m: {"first": [], "turn": [], "events": [], "open": []} for m in ("before", "memory", "unix")}
    try:
        for tree in (base, ROOT):
            subprocess.run([sys.executable, "-m", "compileall", "-q", "-j0", os.path.join(tree, "desktop_agent")],
                           env=_env(), check=True, capture_output=True)
        home = tempfile.mkdtemp(prefix="bench-host-home-")
        for mode in ("before", "memory", "unix"):  # unmeasured: the installed packages' bytecode too
            _run_child(mode, base if mode == "before" else ROOT, 2, args.chunk, args.checkpoints)
        for tree in (base, ROOT):
            _first_paint(tree, os.path.join(home, "warm"))
        for _ in range(args.rounds):  # interleaved, so a busy machine weighs on every mode alike
            for mode in ("before", "memory", "unix"):
                got = _run_child(mode, base if mode == "before" else ROOT, args.turns, args.chunk,
                                 args.checkpoints)
                for key in runs[mode]:
                    runs[mode][key] += got[key]
        for i in range(args.paint_rounds):  # alternately, each tree first every other round
            for tree in ((base, ROOT) if i % 2 else (ROOT, base)):
                which = "before" if tree == base else "now"
                paint[which].append(_first_paint(tree, os.path.join(home, which)))
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(pyc, ignore_errors=True)
        if home:
            shutil.rmtree(home, ignore_errors=True)
    before, memory, unix = runs["before"], runs["memory"], runs["unix"]
    events = statistics.median(memory["events"])
    print(f"# load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.paint_rounds} first paints each")
    print(f"# {args.turns} turns × {args.rounds} rounds, {events:.0f} events a turn (unix {statistics.median(unix['events']):.0f}, "
          f"before {statistics.median(before['events']):.0f})")
    per_event = [(u - m) / events for u, m in zip(sorted(unix["turn"]), sorted(memory["turn"]))]
    first_delta = [u - m for u, m in zip(sorted(unix["first"]), sorted(memory["first"]))]
    report([
        result("memory open vs before", memory["open"], unit="ms", scale=1000, baseline=before["open"], target=1.05,
               kind="ratio"),
        result("memory first event vs before", memory["first"], unit="ms", scale=1000, baseline=before["first"],
               target=1.05, kind="ratio"),
        result("memory per turn vs before", memory["turn"], unit="ms", scale=1000, baseline=before["turn"],
               target=1.05, kind="ratio"),
        result("unix first event − memory", first_delta, unit="ms", scale=1000, target=20.0),
        result("unix per-event overhead", per_event, unit="us", scale=1e6, target=50.0),
        result("window first paint vs before", paint["now"], unit="ms", scale=1000, baseline=paint["before"],
               target=1.05, kind="ratio"),
    ])


if __name__ == "__main__":
    main()
