"""Benchmark: the changes panel opening a 20,000-line change in full ("show all", issue 13).

A 20,000-line Write lands in the panel folded; then it is opened on the change page (the virtualised
``HunkDiffView``, filled in ``ReviewedDiffView.SLICE_LINES`` slices) and scrolled to its last line. Measured
with a 1 ms Qt ticker: the largest gap on the Qt thread from the click until every line is in and the
last one painted (target ≤ 50 ms), and click → first hunk visible. Baseline in the same run: the whole
change put in at once (``CHUNK_LINES`` raised), alternating runs so load hits both alike. The old
panel (inline HTML) stopped at 1,000 lines, so it is no baseline for "everything".

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/bench_changes_panel.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from bench._common import report, result  # noqa: E402


def run_once(app, tag: str, n_lines: int = 20_000) -> tuple[float, float]:
    from PySide6.QtCore import QTimer, QUrl

    from desktop_agent.util.diff import structured_patch
    from desktop_agent.ui.changes.panel import DiffPanel

    content = "".join(f"def handler_{tag}_{i}(event):\n    return dispatch(event, {i})\n" for i in range(n_lines // 2))
    panel = DiffPanel()
    panel.cwd = "/w"
    panel.resize(700, 800)
    panel.show()
    change = panel.on_tool_finished(f"toolu_{tag}", "Write", False, {
        "type": "create", "filePath": f"/w/{tag}.py", "content": content, "originalFile": None,
        "structuredPatch": structured_patch("", content)}, turn=1)
    for _ in range(20):
        app.processEvents()
    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    ticker = QTimer()
    ticker.setInterval(1)
    ticker.timeout.connect(tick)
    ticker.start()
    t_end = time.perf_counter() + 0.02
    while time.perf_counter() < t_end:
        app.processEvents()
    gaps.clear()
    last[0] = t0 = time.perf_counter()
    panel._on_anchor(QUrl(f"show:{change.id}"))
    view = panel.detail.view
    first = time.perf_counter() - t0
    while not view.is_loaded():
        app.processEvents()
    bar = view.verticalScrollBar()
    bar.setValue(bar.maximum())
    t_end = time.perf_counter() + 0.1
    while time.perf_counter() < t_end:
        app.processEvents()
    ticker.stop()
    gaps.append(time.perf_counter() - last[0])
    assert view.document().blockCount() == n_lines + 1
    assert f"return dispatch(event, {n_lines // 2 - 1})" in view.document().lastBlock().text()
    panel.close()
    panel.deleteLater()
    app.processEvents()
    return max(gaps), first


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ns = ap.parse_args()
    from PySide6.QtWidgets import QApplication

    from desktop_agent.ui.changes import render as diff_render  # the dialog's HunkDiffView (was ui/diff_render)
    from desktop_agent.ui.changes.detail import ReviewedDiffView

    app = QApplication.instance() or QApplication([])
    run_once(app, "warm", 2_000)  # the lexer and fonts, once
    shipped, at_once = [], []
    chunk = diff_render.CHUNK_LINES
    for i in range(ns.runs):
        shipped.append(run_once(app, f"s{i}"))
        diff_render.CHUNK_LINES = diff_render.FIRST_CHUNK = ReviewedDiffView.SLICE_LINES = 10**9
        try:
            at_once.append(run_once(app, f"b{i}"))
        finally:
            diff_render.CHUNK_LINES, diff_render.FIRST_CHUNK, ReviewedDiffView.SLICE_LINES = chunk, 400, 1000
    print(f"changes panel, 20,000-line change opened in full, {ns.runs} runs: largest stall "
          f"{[round(x[0] * 1000) for x in shipped]} ms, first hunk {[round(x[1] * 1000) for x in shipped]} ms; "
          f"all at once: largest stall {[round(x[0] * 1000) for x in at_once]} ms")
    report([
        result("ui panel show all (20,000 lines): largest Qt-thread stall", [x[0] for x in shipped], unit="ms",
               scale=1000, target=50),
        result("ui panel show all: largest stall vs all at once", [x[0] for x in shipped], unit="ms", scale=1000,
               baseline=[x[0] for x in at_once], target=1.0, kind="ratio"),
        result("ui panel show all: click → first hunk", [x[1] for x in shipped], unit="ms", scale=1000, target=50),
    ])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
