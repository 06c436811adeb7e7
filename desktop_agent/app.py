"""Composition root: settings → model → tools → permissions → session, for the window and the CLI.

FOUNDATION: launching the desktop window is added by the desktop issue.
"""

from __future__ import annotations


def run_desktop(args: list[str]) -> int:
    try:
        from desktop_agent.ui.main import main as ui_main
    except ImportError as exc:
        print(f"desktop-agent: the desktop window is not available: {exc}")
        return 1
    return ui_main(args)
