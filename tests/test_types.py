"""The type checker: mypy (configured in pyproject.toml ``[tool.mypy]``) is clean over the typed packages.

``follow_imports = "silent"`` keeps the other packages' types in play while reporting errors only in the
packages named here; a package joins ``TYPED`` once it is clean (every package and top-level module outside ``ui/``
is in it now). ``ui/`` is checked in a run of its own, the window (``ui/window/``) with it: its mixins and part
objects are checked against ``ui.window.host_protocol.WindowHost``.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TYPED = ("desktop_agent/core", "desktop_agent/permissions", "desktop_agent/shell", "desktop_agent/util",
         "desktop_agent/mcp", "desktop_agent/model", "desktop_agent/protocol", "desktop_agent/engine",
         "desktop_agent/app", "desktop_agent/client", "desktop_agent/cli", "desktop_agent/tools", "desktop_agent/host",
         "desktop_agent/session", "desktop_agent/config.py", "desktop_agent/resources.py", "desktop_agent/__main__.py",
         "desktop_agent/__init__.py")


UI = "desktop_agent/ui"


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.timeout(600)  # mypy from a cold cache: 56 s on CI's machine
def test_typed_packages_are_clean():
    out = _mypy(*TYPED)
    assert out.returncode == 0, out.stdout + out.stderr
    # Every module of the named packages was checked (none excluded or skipped by the configuration).
    expected = sum(1 if pkg.endswith(".py") else sum(1 for _ in (ROOT / pkg).rglob("*.py")) for pkg in TYPED)
    checked = re.search(r"Success: no issues found in (\d+) source files", out.stdout)
    assert checked is not None, out.stdout
    assert int(checked.group(1)) == expected


@pytest.mark.timeout(600)
def test_the_ui_is_clean():
    out = _mypy(UI)
    assert out.returncode == 0, out.stdout + out.stderr
    # Every module of ui/ was checked, the window's (ui/window/) among them.
    expected = sum(1 for _ in (ROOT / UI).rglob("*.py"))
    assert any((ROOT / UI / "window").rglob("*.py"))
    checked = re.search(r"Success: no issues found in (\d+) source files", out.stdout)
    assert checked is not None, out.stdout
    assert int(checked.group(1)) == expected


def test_the_configuration_reports_errors(tmp_path):
    # The same configuration fails a wrong annotation and an unused ignore: the clean run above means something.
    bad = tmp_path / "bad_types.py"
    bad.write_text('count: int = "three"\nok: int = 3  # type: ignore[assignment]\n', "utf-8")
    out = _mypy("--config-file", str(ROOT / "pyproject.toml"), str(bad))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "bad_types.py:1: error: Incompatible types in assignment" in out.stdout
    assert "bad_types.py:2: error: Unused \"type: ignore\" comment" in out.stdout
