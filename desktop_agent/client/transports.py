"""How a ``ProtocolSession`` reaches an engine host: one ``Transport``, three ways (DESIGN.md §1).

- ``MemoryTransport(host)``: the ``host.server.Host`` in this process, on the running loop (the window's qasync
  loop): the same typed protocol messages through a queue, never encoded;
- ``UnixTransport.connect(path)``: a connected Unix socket to the background host (``desktop-agent host``), one JSON
  line each way per message;
- ``PipeTransport.spawn(command, argv, cwd=…, env=…)``: an executor child's stdio — our CLI or Claude Code — as
  wave 2's subprocess client spoke it; when it ends, ``death()`` is the ``ExecutorDied`` naming the process and its
  exit status (with the tail of its stderr).

Each ``send(message)`` raises ``ExecutorDied`` once the other side is gone; ``receive()`` gives the next decoded
message (``host.server.Malformed`` for a line that does not decode), ``None`` when the other side ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import TYPE_CHECKING, Literal, Protocol, Sequence

from desktop_agent.client.base import ClientError, ExecutorDied
# host.connections, not host.server: the window's first paint does not import the host (sessions, engine) for these
from desktop_agent.host.connections import Malformed, decode_line, memory_pair
from desktop_agent.protocol import WireModel, stream_json

if TYPE_CHECKING:
    from desktop_agent.host.server import Host

TransportKind = Literal["memory", "unix", "pipe"]
STDERR_TAIL = 8192
LINE_LIMIT = 256 * 1024 * 1024  # one line may carry a whole file (original_file)


class Transport(Protocol):
    kind: TransportKind
    name: str  # who is on the other side, for messages ("desktop-agent", "claude", "the host")

    @property
    def pid(self) -> int | None: ...
    @property
    def alive(self) -> bool: ...

    def send(self, message: WireModel) -> None: ...
    async def receive(self) -> WireModel | Malformed | None: ...
    def death(self) -> ExecutorDied: ...
    async def close(self) -> None: ...


class MemoryTransport:
    """The host in this process: its ``serve`` runs as a task on this loop for as long as the transport is open."""

    kind: TransportKind = "memory"

    def __init__(self, host: Host, *, peer: str = "window"):
        self.host = host
        self.name = "the engine host"
        host_end, self._end = memory_pair(peer)
        self._serving = asyncio.ensure_future(host.serve(host_end))
        self._closed = False

    @property
    def pid(self) -> int | None:
        return None  # this process: no other process to name (or to kill)

    @property
    def alive(self) -> bool:
        return not self._closed and not self._serving.done()

    def send(self, message: WireModel) -> None:
        if not self.alive:
            raise self.death()
        self._end.line(message)

    async def receive(self) -> WireModel | None:
        return await self._end.receive()

    def death(self) -> ExecutorDied:
        return ExecutorDied(self.name, None, None, "")

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._end.close()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(self._serving), 5)


class UnixTransport:
    """A connection to the background host's socket."""

    kind: TransportKind = "unix"

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str):
        self.reader, self.writer, self.path = reader, writer, path
        self.name = "desktop-agent host"
        self._eof = False

    @classmethod
    async def connect(cls, path: str) -> UnixTransport:
        try:
            reader, writer = await asyncio.open_unix_connection(path, limit=LINE_LIMIT)
        except OSError as exc:
            raise ClientError(f"could not reach the host at {path}: {exc}") from exc
        return cls(reader, writer, path)

    @property
    def pid(self) -> int | None:
        return None

    @property
    def alive(self) -> bool:
        return not self._eof and not self.writer.is_closing()

    def send(self, message: WireModel) -> None:
        if not self.alive:
            raise self.death()
        try:
            self.writer.write(stream_json.encode(message).encode("utf-8"))
        except (ConnectionError, RuntimeError, OSError) as exc:
            self._eof = True
            raise self.death() from exc

    async def receive(self) -> WireModel | Malformed | None:
        while True:
            try:
                raw = await self.reader.readline()
            except (ValueError, asyncio.LimitOverrunError):
                return Malformed("", None, "a line over the limit")
            except (ConnectionError, OSError):
                raw = b""
            if not raw:
                self._eof = True
                return None
            message = decode_line(raw)
            if message is not None:
                return message

    def death(self) -> ExecutorDied:
        return ExecutorDied(self.name, None, None, "")

    async def close(self) -> None:
        self._eof = True
        with contextlib.suppress(Exception):
            self.writer.close()
            await asyncio.wait_for(self.writer.wait_closed(), 5)


class PipeTransport:
    """An executor child (our CLI or Claude Code) spoken to on its stdin and stdout."""

    kind: TransportKind = "pipe"

    def __init__(self, proc: asyncio.subprocess.Process, name: str):
        self.proc, self.name = proc, name
        self.returncode: int | None = None
        self._stderr = bytearray()
        self._stderr_task = asyncio.ensure_future(self._read_stderr())
        self._eof = False

    @classmethod
    async def spawn(cls, command: Sequence[str], argv: Sequence[str], *, cwd: str, env: dict[str, str] | None = None,
                    name: str = "desktop-agent") -> PipeTransport:
        try:
            proc = await asyncio.create_subprocess_exec(
                *command, *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, limit=LINE_LIMIT, start_new_session=True)
        except OSError as exc:
            raise ClientError(f"could not start {name}: {exc}") from exc
        return cls(proc, name)

    @property
    def pid(self) -> int | None:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return not self._eof and self.proc.returncode is None

    def stderr_text(self) -> str:
        return bytes(self._stderr).decode("utf-8", errors="replace")

    async def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        while True:
            chunk = await stream.read(4096)
            if not chunk:
                return
            self._stderr += chunk
            del self._stderr[:-STDERR_TAIL]

    def send(self, message: WireModel) -> None:
        stdin = self.proc.stdin
        if not self.alive or stdin is None or stdin.is_closing():
            raise self.death()
        try:
            stdin.write(stream_json.encode(message).encode("utf-8"))
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
            raise ExecutorDied(self.name, self.pid, self.returncode, str(exc)) from exc

    async def receive(self) -> WireModel | Malformed | None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            try:
                raw = await stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):  # a line over the limit: skipped
                continue
            if not raw:
                break
            message = decode_line(raw)
            if message is not None:
                return message
        self._eof = True
        self.returncode = await self.proc.wait()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 5)
        return None

    def death(self) -> ExecutorDied:
        return ExecutorDied(self.name, self.pid, self.returncode, self.stderr_text())

    async def close(self) -> None:
        """Close stdin and wait for the child (10 s), then terminate it, then kill it."""
        proc = self.proc
        if proc.returncode is None:
            with contextlib.suppress(Exception):
                assert proc.stdin is not None
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except asyncio.TimeoutError:
                await self.kill()
        self.returncode = proc.returncode
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 5)

    async def kill(self) -> None:
        proc = self.proc
        if proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 3)
        except asyncio.TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
