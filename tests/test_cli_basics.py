"""The command exists and answers --version, as an installed entry point and as ``python -m``."""

import subprocess
import sys

from desktop_agent import __version__


def test_version_via_module():
    out = subprocess.run([sys.executable, "-m", "desktop_agent", "--version"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0
    assert out.stdout.strip() == f"{__version__} (Desktop Agent)"
