"""The window says so when the shell sandbox cannot start (one keyed banner; none when it runs)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings

from desktop_agent.permissions import sandbox
from desktop_agent.ui.window.main_window import MainWindow


def _window(qtbot, tmp_path):
    win = MainWindow(client_factory=None, settings=QSettings(str(tmp_path / "w.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    return win


def test_banner_when_the_sandbox_cannot_start(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv(sandbox.BWRAP_ENV, "/nonexistent/bwrap")
    sandbox.reset_probe()
    try:
        win = _window(qtbot, tmp_path)
        banner = win.conversation.banners.get("sandbox")
        assert banner is not None and "sandbox could not start" in banner.text_plain
        assert "ask for your approval" in banner.text_plain
    finally:
        sandbox.reset_probe()


@pytest.mark.needs_sandbox
def test_no_banner_when_the_sandbox_runs(qtbot, tmp_path):
    assert "sandbox" not in _window(qtbot, tmp_path).conversation.banners
