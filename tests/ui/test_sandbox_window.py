"""The window says so when the shell sandbox cannot start (one keyed banner; none when it runs)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

from desktop_agent.permissions import sandbox
from desktop_agent.ui.window.main_window import MainWindow
from tests.ui.flow import wait_for


def _window(qtbot, qloop, tmp_path):
    """The window once its sandbox probe (on a worker thread, started from the loop after the first paint) has
    answered."""
    win = MainWindow(client_factory=None, settings=QSettings(str(tmp_path / "w.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.show()  # the probe waits for the first paint

    async def probed():
        await wait_for(lambda: win.sandbox_task is not None and win.sandbox_task.done(), what="the sandbox probe")

    qloop.run_until_complete(probed())
    return win


def test_banner_when_the_sandbox_cannot_start(qtbot, qloop, tmp_path, monkeypatch):
    monkeypatch.setenv(sandbox.BWRAP_ENV, "/nonexistent/bwrap")
    sandbox.reset_probe()
    try:
        win = _window(qtbot, qloop, tmp_path)
        banner = win.conversation.banners.get("sandbox")
        assert banner is not None and "sandbox could not start" in banner.text_plain
        assert "ask for your approval" in banner.text_plain
    finally:
        sandbox.reset_probe()


@pytest.mark.needs_sandbox
def test_no_banner_when_the_sandbox_runs(qtbot, qloop, tmp_path):
    assert "sandbox" not in _window(qtbot, qloop, tmp_path).conversation.banners
