"""The stdio side of the CLI server: stdout lines and the stdin reader.

``Output`` writes one JSON line (or the text reply) per call, flushed. ``StdinReader`` reads stdin lines without
blocking the loop. The control channel, the prompter and SDK hook callbacks are the host's (``host.connections``:
``ControlChannel`` is re-exported here for its tests).
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from typing import Any, Callable

from desktop_agent.host.connections import ControlChannel
from desktop_agent.protocol import WireModel, encode

__all__ = ["ControlChannel", "Output", "StdinReader"]

# ------------------------------------------------------------------------------------------- output


class Output:
    """Line-delimited JSON (one ``desktop_agent.protocol`` model a line) or text on stdout, flushed per line."""

    def __init__(self, stream: Any = None):
        self.stream = stream or sys.stdout

    def line(self, message: WireModel) -> None:
        self.stream.write(encode(message))
        self.stream.flush()

    def text(self, text: str) -> None:
        self.stream.write(text if text.endswith("\n") else text + "\n")
        self.stream.flush()


# ------------------------------------------------------------------------------ stdin reading (async)


class StdinReader:
    """Reads stdin lines without blocking the loop: a pipe reader, or a thread for other stdins."""

    def __init__(self, on_line: Callable[[str], None], on_eof: Callable[[], None]):
        self.on_line = on_line
        self.on_eof = on_eof
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        try:
            # a pipe or a socket only: never leave a shared terminal in non-blocking mode, and a character device
            # such as /dev/null passes asyncio's own check but cannot be polled (epoll: EPERM, raised in a callback
            # where it is lost: the session would wait for ever); a regular file is read by the thread too
            mode = os.fstat(sys.stdin.fileno()).st_mode
            if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                raise ValueError("not a pipe")
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        except (ValueError, OSError, NotImplementedError):
            await self._run_thread(loop)
            return
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                self.on_line(line.decode("utf-8", errors="replace"))
        finally:
            self.on_eof()

    async def _run_thread(self, loop: asyncio.AbstractEventLoop) -> None:
        done: asyncio.Future[None] = loop.create_future()

        def finish() -> None:
            if not done.done():
                done.set_result(None)

        def work() -> None:
            try:
                for line in sys.stdin:
                    loop.call_soon_threadsafe(self.on_line, line)
            finally:
                loop.call_soon_threadsafe(finish)

        threading.Thread(target=work, name="stdin-reader", daemon=True).start()
        try:
            await done
        finally:
            self.on_eof()
