"""Composition root for the window: ``run_desktop(args)`` starts the PySide6 app.

The engine's own composition (settings → model → tools → permissions → session) lives in
``desktop_agent.agent.AgentSession.create``; the window calls it per folder. This module must not
import Qt (the layering test imports every non-UI module without PySide6), so the Qt start-up —
QApplication first, then the qasync loop, theme and window — is in ``desktop_agent.ui.main``.
``args``: ``[FOLDER] [--demo] [--resume SESSION_ID] [--theme system|light|dark]``.
"""

from __future__ import annotations


def run_desktop(args: list[str]) -> int:
    try:
        from desktop_agent.ui.main import main as ui_main
    except ImportError as exc:
        print(f"desktop-agent: the desktop window is not available: {exc}")
        return 1
    return ui_main(args)
