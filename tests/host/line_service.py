"""A small ``HostService`` for the daemon's own tests (the socket, the peer check, the lock, stale sockets,
``--status``/``--stop``), independent of the engine host: sessions opened by a client live in the host, not in
the connection, so a client's death can be seen not to end them.

Each line a client sends is a JSON object: ``{"open": NAME}`` opens a session, ``{"ask": [NAME, ID]}`` adds a
pending question, ``{"answer": [NAME, ID]}`` resolves one; every line is answered ``{"ok": true, "pid": PID}``.
``shutdown()`` appends one ``ended NAME`` line per session to ``$LINE_SERVICE_RECORD`` (a file), so a test sees
that a graceful stop ended them.

Run as a script: the daemon in the foreground with this service (what ``desktop-agent host --foreground`` does
with the engine host).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any


class LineService:
    def __init__(self) -> None:
        self.sessions: dict[str, dict[str, Any]] = {}
        self.pending: dict[tuple[str, str], float] = {}

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, peer: str) -> None:
        writer.write(json.dumps({"hello": peer, "pid": os.getpid()}).encode() + b"\n")
        await writer.drain()
        while line := await reader.readline():
            msg = json.loads(line)
            if "open" in msg:
                self.sessions[msg["open"]] = {"session_id": msg["open"], "cwd": "/", "state": "idle", "peer": peer}
            elif "ask" in msg:
                self.pending[tuple(msg["ask"])] = time.time()
            elif "answer" in msg:
                self.pending.pop(tuple(msg["answer"]), None)
            writer.write(json.dumps({"ok": True, "pid": os.getpid()}).encode() + b"\n")
            await writer.drain()

    def status(self) -> dict[str, Any]:
        return {"sessions": list(self.sessions.values()),
                "pending": [{"session_id": s, "request_id": r, "tool_name": "Bash", "summary": f"question {r}",
                             "asked_at": t} for (s, r), t in self.pending.items()]}

    async def shutdown(self) -> None:
        record = os.environ.get("LINE_SERVICE_RECORD")
        await asyncio.sleep(0.05)  # an ending takes a moment; the daemon waits for it
        if record:
            with open(record, "a", encoding="utf-8") as fh:
                for name in self.sessions:
                    fh.write(f"ended {name}\n")
        self.sessions.clear()


if __name__ == "__main__":
    from desktop_agent.host.daemon import run_foreground

    sys.exit(run_foreground(LineService, log_to_stderr="--quiet" not in sys.argv))
