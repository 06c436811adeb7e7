"""The floors of DESIGN.md as import-linter contracts (``.importlinter``), run as part of the suite.

The floors contract lists wave 1's known violations as ignored imports, and an ignored import that no
longer exists is an error, so the list can only shrink; a new upward import fails here.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = pathlib.Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout
