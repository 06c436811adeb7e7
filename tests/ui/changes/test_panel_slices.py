"""``DiffPanel.render_log(slices=N)`` (a resumed session's hundreds of changes): the document is filled N parts per turn
of the loop, each step short, and ends up exactly as one ``setHtml`` of everything makes it — the same HTML, the
same text, the same pixels; a render meanwhile stops what is left of it."""

from __future__ import annotations

import time

from desktop_agent.ui.changes.panel import DiffPanel
from desktop_agent.util.diff import structured_patch


def _panel(qtbot, tmp_path, n: int) -> DiffPanel:
    target = tmp_path / "a.py"
    target.write_text("x\n")
    panel = DiffPanel()
    panel.cwd = str(tmp_path)
    qtbot.addWidget(panel)
    panel.resize(460, 2400)
    panel.show()
    for i in range(n):
        old, new = f"value = {i}\n", f"value = {i + 1}\n"
        panel.log.on_tool_finished(f"t{i}", "Edit", False, {"filePath": str(target), "structuredPatch":
                                                             structured_patch(old, new)}, 1 + i // 3)
        panel.log.changes[-1].collapsed = i < n - 8  # as after a resume: the newest open
        panel.log.changes[-1].created = 1_800_000_000.0 + i  # a turn's heading shows its minute: the same in both
    return panel


def test_a_sliced_render_makes_the_same_document_as_one_set_html(qtbot, tmp_path):
    whole = _panel(qtbot, tmp_path, 90)
    whole.render_log()
    sliced = _panel(qtbot, tmp_path, 90)
    t0 = time.perf_counter()
    sliced.render_log(slices=10)
    first = time.perf_counter() - t0
    assert sliced.view.toPlainText() != whole.view.toPlainText()  # only the first slice so far
    qtbot.waitUntil(lambda: sliced.view.toPlainText() == whole.view.toPlainText(), timeout=5000)
    assert sliced.view.toHtml() == whole.view.toHtml()
    assert sliced.grab().toImage() == whole.grab().toImage()
    assert first < 0.5


def test_a_render_meanwhile_replaces_the_rest_of_a_sliced_one(qtbot, tmp_path):
    panel = _panel(qtbot, tmp_path, 60)
    panel.render_log(slices=10)
    panel.log.changes[:] = panel.log.changes[-3:]
    panel.render_log()
    expected = panel.view.toHtml()
    qtbot.wait(200)  # the first render's pending slices ran (and did nothing)
    assert panel.view.toHtml() == expected and panel.view.toPlainText().count("a.py") == 3
