"""The engine host (``host.server.Host``) as the background host's daemon serves it (``host.daemon.HostService``).

``serve`` is ``host.server.serve_connection`` for each socket client; ``status`` lists the sessions and the pending
questions for ``desktop-agent host --status``; ``shutdown`` ends every session cleanly for ``--stop`` and SIGTERM:
a running turn is interrupted first (an unanswered call gets its synthetic result and the transcript stays valid),
then each session ends (SessionEnd hooks with reason ``other``) and its store closes. ``start`` (once the daemon
listens) turns on the host's own desktop notifications for questions nobody is attached to (``host.away``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from desktop_agent.host.server import Host, serve_connection

log = logging.getLogger(__name__)

TURN_STOP_WAIT_S = 10.0  # the longest a stop waits for an interrupted turn to end before the session is closed


def _summary(tool_input: Any, file_path: str | None) -> str:
    if isinstance(tool_input, dict):
        for key in ("command", "file_path", "notebook_path", "path", "url", "pattern"):
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                text = " ".join(value.split())
                return text if len(text) <= 80 else text[:79] + "…"
    return file_path or ""


class EngineHostService:
    """One ``Host`` for the daemon's whole life."""

    def __init__(self, host: Host | None = None):
        self.host = host or Host()
        self.away: Any = None  # host.away.AwayNotifier, when a session bus answers

    async def start(self) -> None:
        from desktop_agent.host.away import start_away_notifier

        self.away = await start_away_notifier(self.host)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, peer: str) -> None:
        await serve_connection(self.host, reader, writer, peer=peer)

    def status(self) -> dict[str, Any]:
        sessions = []
        for hosted in self.host.sessions.values():
            info = hosted.info().to_wire()
            info["title"] = hosted.title
            info["clients"] = len(hosted.clients)
            info["state"] = "running" if hosted.busy else "idle"
            sessions.append(info)
        pending = []
        for q in self.host.inbox.pending():
            pending.append({"session_id": q.session_id, "request_id": q.request_id,
                            "tool_name": q.request.tool_name, "tool_use_id": q.request.tool_use_id,
                            "summary": _summary(q.request.input, q.request.file_path), "folder": q.folder,
                            "title": q.title, "asked_at": q.asked_at, "input_sha256": q.input_sha256})
        return {"sessions": sessions, "pending": pending}

    async def shutdown(self) -> None:
        if self.host.phone is not None:
            try:
                await self.host.phone.stop()
            except Exception:
                log.exception("stopping the phone page failed")
        if self.away is not None:
            away, self.away = self.away, None
            try:
                await away.stop()
            except Exception:
                log.exception("stopping the notifications failed")
        hosted_all = list(self.host.sessions.values())
        for hosted in hosted_all:
            if hosted.busy:
                log.info("interrupting the running turn of session %s", hosted.session_id)
                hosted.interrupt()
        deadline = time.monotonic() + TURN_STOP_WAIT_S
        while any(h.busy for h in hosted_all) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for hosted in hosted_all:
            sid = hosted.session_id
            try:
                await self.host.end_session(sid, "other")
                log.info("session %s ended", sid)
            except Exception:
                log.exception("ending session %s failed", sid)
