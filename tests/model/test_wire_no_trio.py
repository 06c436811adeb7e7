"""Importing the wire transport does not import trio (~100 ms, ~12 MB per process), and trio stays importable."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest


@pytest.mark.skipif(importlib.util.find_spec("trio") is None, reason="trio is not installed here")
def test_wire_import_leaves_trio_out_but_importable() -> None:
    code = (
        "import sys\n"
        "import desktop_agent.model.wire\n"
        "assert 'httpcore2' in sys.modules\n"
        "assert 'trio' not in sys.modules, 'trio imported'\n"
        "import httpcore2._synchronization as s\n"
        "assert s.trio is None and s.anyio is not None\n"
        "import trio\n"
        "print(trio.__name__)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "trio"


def test_wire_import_after_trio_keeps_it() -> None:
    code = (
        "import sys, types\n"
        "sys.modules['trio'] = types.ModuleType('trio')  # a process that has trio already\n"
        "import desktop_agent.model.wire\n"
        "assert isinstance(sys.modules['trio'], types.ModuleType)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
