"""The window's decisions without Qt (``ui.window.presenters``): sessions rows, the set-up error, failed MCP
servers, the find bar's stepping, the usage figure and the status dot. (An error event's banner actions are the
conversation presenter's: tests/ui/conversation/test_presenter.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

import pytest

from desktop_agent.ui.window import presenters as p


def test_home_abbreviates_only_paths_under_home(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert p.home(str(tmp_path / "proj")) == "~" + os.sep + "proj"
    assert p.home(str(tmp_path)) == "~"
    assert p.home(str(tmp_path) + "x/y") == str(tmp_path) + "x/y"
    assert p.home("/elsewhere") == "/elsewhere"


@dataclass
class Info:
    session_id: str
    first_prompt: str
    message_count: int
    mtime: float


def test_session_rows_newest_first_without_empty_launches():
    infos = [Info("old", "first prompt\nsecond line", 4, 100.0), Info("empty", "", 0, 300.0),
             Info("new", "latest", 2, 200.0), Info("current", "", 0, 50.0)]
    rows = p.session_rows(infos, current="current")
    assert [r.session_id for r in rows] == ["new", "old", "current"]
    assert rows[1].title == "first prompt"  # the first line only
    assert rows[2].title is None and rows[2].current and not rows[0].current  # "(new session)"
    assert rows[0].message_count == 2 and rows[0].when


def test_setup_error():
    assert p.is_setup_error("ConfigError", "whatever")
    assert p.is_setup_error("RuntimeError", "no API key found")
    assert not p.is_setup_error("SessionError", "working directory does not exist")


def test_failed_servers_leave_out_restarting_ones():
    servers = [{"name": "a", "status": "failed"}, {"name": "b", "status": "connected"},
               {"name": "c", "status": "failed"}]
    assert list(p.failed_servers(servers, {"c"})) == ["a"]


@pytest.mark.parametrize("index, count, delta, out", [
    (-1, 0, 1, -1), (-1, 3, 1, 0), (-1, 3, -1, 2), (0, 3, 1, 1), (2, 3, 1, 0), (0, 3, -1, 2),
])
def test_find_index_wraps(index, count, delta, out):
    assert p.find_index(index, count, delta) == out


def test_token_text_and_status_dot():
    assert (p.token_text(999), p.token_text(1000), p.token_text(12345)) == ("999", "1.0k", "12.3k")
    assert [p.status_dot(s) for s in (p.IDLE, p.ERROR, p.WAITING, p.TOOL)] == ["muted", "error", "accent", "added_fg"]


def test_presenters_import_no_qt():
    code = ("import sys; import desktop_agent.ui.window.presenters, desktop_agent.ui.modes; "
            "print('PySide6' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
