"""The ``desktop-agent`` command: the desktop window, or with ``-p`` the same engine headless.

FOUNDATION: ``--version`` and the window launch. The loop issue adds ``-p`` (App. C).
"""

from __future__ import annotations

import sys

from desktop_agent import __version__


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--version" in args or "-v" in args:
        print(f"{__version__} (Desktop Agent)")
        return 0
    from desktop_agent.app import run_desktop

    return run_desktop(args)
