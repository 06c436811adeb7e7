"""The offline tour through the real engine, and launching the app as a process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from desktop_agent.ui.window.demo import DEMO_FILES, TOUR_PROMPTS, prepare_demo_project

ROOT = Path(__file__).resolve().parents[2]


def test_prepare_demo_project_copies_the_sample(tmp_path):
    folder = prepare_demo_project(str(tmp_path))
    assert sorted(os.listdir(folder)) == sorted(DEMO_FILES)
    assert "export const value = 1;" in Path(folder, "app.ts").read_text()


def test_tour_plays_both_steps(qtbot, qloop):
    from desktop_agent.ui.window.main_window import start_tour_window

    win = start_tour_window()
    qtbot.addWidget(win)
    dialogs = []

    async def scenario():
        deadline = time.monotonic() + 15
        while not (win.controller.session is not None and win.prompt.toPlainText()):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        assert win.toolbar.tour_label.isVisibleTo(win) and "Tour" in win.windowTitle()
        for expected in TOUR_PROMPTS:
            assert win.prompt.toPlainText() == expected
            win.send(win.prompt.toPlainText())
            task = win.controller._task
            while not task.done():
                dlg = win.controller.current_dialog
                if dlg is not None and dlg.isVisible() and dlg not in dialogs:
                    dialogs.append(dlg)
                    dlg.allow_button.click()
                await asyncio.sleep(0.02)
            await task
            await asyncio.sleep(0.05)

    qloop.run_until_complete(scenario())
    folder = Path(win.folder)
    assert "export const value = 2;" in (folder / "app.ts").read_text()
    assert "double(value)" in (folder / "app.ts").read_text()
    assert "export function double" in (folder / "util.ts").read_text()
    assert (folder / "app.test.ts").exists()
    assert len(dialogs) == 5
    assert [c.status for c in win.diff_panel.changes] == ["applied"] * 5
    assert "end of the scripted tour" in win.conversation.text_content()


def _run_app(args, env_extra, timeout=60):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT), **env_extra)
    return subprocess.run([sys.executable, "-m", "desktop_agent", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_app_starts_and_paints():
    out = _run_app([], {"DESKTOP_AGENT_EXIT_AFTER_PAINT": "1"})
    assert out.returncode == 0, out.stderr
    assert "first_paint_s=" in out.stdout


def test_demo_starts_and_paints():
    out = _run_app(["--demo"], {"DESKTOP_AGENT_EXIT_AFTER_PAINT": "1"})
    assert out.returncode == 0, out.stderr
    assert "first_paint_s=" in out.stdout


def test_missing_folder_is_an_error(tmp_path):
    out = _run_app([str(tmp_path / "nope")], {"DESKTOP_AGENT_EXIT_AFTER_PAINT": "1"})
    assert out.returncode == 2 and "not a folder" in out.stderr
