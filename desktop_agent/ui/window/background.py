"""The window's side of the background host (Settings ▸ "Keep sessions running when the window closes").

With the setting on (and no ``--executor`` given; never for the tour) the window's sessions run in the background
host, ``desktop-agent host``, started on demand (``client.host_link``): opening a folder where the host already
runs a session attaches to it — its transcript is shown and every pending question is asked again — instead of
starting another; closing the window (or losing it: kill -9) leaves the session running, and the window says so
in a desktop notification. Everything here is awaited on the Qt loop; the socket and the host's start run on
worker threads (``client.host_link``).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from PySide6.QtCore import QCoreApplication

log = logging.getLogger(__name__)
translate = QCoreApplication.translate


def keep_sessions_running() -> bool:
    """Settings' "Keep sessions running when the window closes" (False when the settings cannot be read)."""
    try:
        from desktop_agent.config import AppSettings

        return bool(AppSettings.load().keep_sessions_running)
    except Exception:
        log.exception("could not read the keep-sessions-running setting")
        return False


def pick_running(status: dict[str, Any] | None, folder: str, resume: str | None = None) -> str | None:
    """The session of ``folder`` the host runs that the window should attach to: ``resume`` when the host runs it;
    else (no ``resume``) the one with pending questions, else a busy one, else the most recent: None when the host
    runs none there (or ``resume`` names a session it does not run)."""
    if not status:
        return None
    folder = os.path.abspath(folder)
    sessions = [s for s in status.get("sessions") or [] if os.path.abspath(str(s.get("cwd") or "")) == folder]
    if resume:
        return resume if any(s.get("session_id") == resume for s in sessions) else None
    if not sessions:
        return None
    ranked = sorted(enumerate(sessions), key=lambda pair: (int(pair[1].get("pending") or 0) > 0,
                                                           bool(pair[1].get("busy")), pair[0]))
    return str(ranked[-1][1]["session_id"])


async def running_session(folder: str, resume: str | None = None) -> str | None:
    """``pick_running`` over the running host's status (None when no host runs: nothing is started for this)."""
    from desktop_agent.client.host_link import host_status

    try:
        status = await host_status()
    except Exception:
        log.exception("could not ask the background host for its sessions")
        return None
    return pick_running(status, folder, resume)


def in_background(session: Any) -> bool:
    """``session`` runs in the background host (closing the window leaves it running)."""
    return session is not None and session.state.executor == "host"


def left_running_text(title: str) -> str:
    return translate("MainWindow", "Your session in {0} keeps running in the background host. Open the folder again "
                                   "to see it; desktop-agent host --status lists what runs.").format(title)
