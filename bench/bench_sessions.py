"""Ten sessions at once in one window (issue 24): ``.venv/bin/python bench/bench_sessions.py [--sessions 10]
[--executor inprocess|process|both]``.

A real window (offscreen) on the fake Anthropic server, one folder per session, each session with its own script:
one streamed answer, then a Write that asks (default mode). Measured, per executor (in the window's process, or our
CLI as an executor child):

- **first event**: prompt sent → the session's first streamed text, median over the sessions (each sent as it opens,
  beside the others running), against
  the same for one session alone in the same run (the ratio is what running ten costs each);
- **CPU per session**: this process's CPU time (plus the children's for executors) from the first of the ten
  opening to the last turn's end, divided by ten (opening a session — its engine, settings, hooks — and one turn of
  two model requests, a Write and its question);
- **RSS**: this process's resident memory (plus the executor children's), total with all sessions open, and per
  session beyond the first;
- **dialog latency with 10 questions waiting**: an inbox row clicked → that question's dialog visible, median over
  answering them in random order.

Results go to ``bench/run``'s table (``BENCH_JSON``). Worktree creation on a 20,000-file repository is
``bench_worktrees.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import report, result  # noqa: E402


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _live_children_cpu(pids: list[int]) -> float:
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return total


async def run(executor: str, n: int, tmp: Path) -> list[dict]:
    import tests.fakes.anthropic_server as fa
    from desktop_agent.core import events as ev
    from desktop_agent.model.anthropic_client import AnthropicClient
    from desktop_agent.ui.screenshots_kit import until
    from desktop_agent.ui.window.main_window import MainWindow

    items: list[dict] = []
    with fa.FakeAnthropic(chunk_size=40, validate=False) as fake:
        os.environ.update(ANTHROPIC_API_KEY="bench-key", ANTHROPIC_BASE_URL=fake.base_url)
        folders = []
        for i in range(n + 1):
            folder = tmp / executor / f"s{i:02d}"
            folder.mkdir(parents=True)
            folders.append(folder)
            fake.script_for(f"s{i:02d}:", [
                fa.reply(fa.text(f"Session {i} answers with a paragraph of text. " * 8),
                         fa.tool_use("Write", {"file_path": str(folder / "out.txt"), "content": f"s{i}\n"},
                                     id=f"toolu_w{i}")),
                fa.reply(fa.text("written"))])
        factory = (lambda: AnthropicClient("bench-key", fake.base_url, max_retries=0)) \
            if executor == "inprocess" else None
        win = MainWindow(client_factory=factory, executor=executor, session_kwargs={"trusted": True})
        win.resize(1280, 800)
        win.show()
        first_text: dict[int, float] = {}
        sent: dict[int, float] = {}

        def watch(index: int, controller) -> None:
            def seen(event) -> None:
                if isinstance(event, ev.TextDelta) and index not in first_text:
                    first_text[index] = time.perf_counter()
            controller.agent_event.connect(seen)

        async def open_one(i: int) -> None:
            assert await win.folders.open_folder(str(folders[i]))
            watch(i, win.controller)

        # one session alone: the baseline of the first-event latency
        await open_one(n)
        sent[n] = time.perf_counter()
        win.send(f"s{n:02d}: go")
        await until(lambda: n in first_text, 60)
        alone = first_text[n] - sent[n]
        rss_one = _rss_kb(os.getpid()) + sum(_rss_kb(p) for p in _pids(win))
        await until(lambda: win.sessions_pane.inbox.count() == 1, 60)
        row = win.sessions_pane.inbox_rows[0]
        win.answer_from_inbox(row.key, row.ref)
        await until(lambda: win.controller.current_dialog is not None and win.controller.current_dialog.isVisible())
        win.controller.current_dialog.allow_button.click()
        await until(lambda: not win.lives[0].controller.busy, 60)

        cpu0, child0 = time.process_time(), _children_cpu() + _live_children_cpu(_pids(win))
        for i in range(n):  # ten sessions, each sent as it opens (a new one opens beside those running)
            await open_one(i)
            sent[i] = time.perf_counter()
            win.send(f"s{i:02d}: go")
        await until(lambda: all(i in first_text for i in range(n)), 120)
        await until(lambda: win.sessions_pane.inbox.count() == n, 120)
        rss_all = _rss_kb(os.getpid()) + sum(_rss_kb(p) for p in _pids(win))
        latencies = []
        rng = random.Random(10)
        while win.sessions_pane.inbox.count():
            rows = win.sessions_pane.inbox_rows
            row = rows[rng.randrange(len(rows))]
            t0 = time.perf_counter()
            win.answer_from_inbox(row.key, row.ref)
            await until(lambda: win.controller.current_dialog is not None and win.controller.current_dialog.isVisible()
                        and win.controller.current_dialog.request.request_id == row.key[1], 30)
            latencies.append(time.perf_counter() - t0)
            win.controller.current_dialog.allow_button.click()
            await until(lambda: row.key not in [r.key for r in win.sessions_pane.inbox_rows], 30)
        await until(lambda: not any(live.controller.busy for live in win.lives), 120)
        cpu = (time.process_time() - cpu0) + (_children_cpu() + _live_children_cpu(_pids(win)) - child0)
        firsts = [first_text[i] - sent[i] for i in range(n)]
        for live in list(win.lives):
            await live.controller.end_session("prompt_input_exit", timeout=15)
        win.close()
    tag = f"{n} sessions, {executor}"
    items.append(result(f"{tag}: first event (vs one session alone)", firsts, target=3.0, kind="ratio",
                        baseline=[alone], unit="ms", scale=1000))
    items.append(result(f"{tag}: CPU per session (opening it + one turn of 2 requests)", [cpu / n],
                        target=0.5 if executor == "inprocess" else 2.0))
    items.append(result(f"{tag}: RSS total", [rss_all / 1024], unit=" MB", target=600 if executor == "inprocess"
                        else 2000))
    items.append(result(f"{tag}: RSS per extra session", [(rss_all - rss_one) / 1024 / n], unit=" MB",
                        target=40 if executor == "inprocess" else 150))
    items.append(result(f"{tag}: dialog with {n} questions waiting", latencies, unit="ms", scale=1000, target=100))
    return items


def _pids(win) -> list[int]:
    out = []
    for live in win.lives:
        session = live.controller.session
        pid = getattr(getattr(session, "state", None), "pid", None) if session is not None else None
        if pid and pid != os.getpid():
            out.append(int(pid))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--executor", choices=["inprocess", "process", "both"], default="both")
    args = parser.parse_args(argv)
    from desktop_agent.ui.screenshots_kit import isolate_home

    isolate_home()
    os.environ["QT_QPA_PLATFORM"] = os.environ.get("QT_QPA_PLATFORM", "offscreen")
    from desktop_agent.ui.dialogs.permission import PermissionDialog
    from desktop_agent.ui.main import make_app, make_loop

    PermissionDialog.safety_delay_ms = 0  # the 0.7 s guard against stray keys is not what is measured
    app = make_app()
    loop = make_loop(app)
    asyncio.set_event_loop(loop)
    kinds = ["inprocess", "process"] if args.executor == "both" else [args.executor]
    items: list[dict] = []
    with loop, tempfile.TemporaryDirectory(prefix="bench-sessions-") as tmp:
        for kind in kinds:
            items += loop.run_until_complete(run(kind, args.sessions, Path(tmp)))
    report(items)
    return 0 if all(i["passed"] for i in items) else 1


if __name__ == "__main__":
    raise SystemExit(main())
