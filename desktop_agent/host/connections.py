"""The host's side of one client connection (``host.server``): ``Connection`` (send one typed message, receive the next
decoded one), ``decode_line`` (``Malformed`` for a line that does not decode), ``StreamConnection`` (a socket: one JSON
line per message), ``memory_pair`` (in process: typed messages through queues, never encoded), and ``ControlChannel``
— the host's own requests that one client must answer (``hook_callback``: ``register_sdk_hooks`` turns
``initialize``'s hook callbacks into callback hooks of the session's ``HookRunner``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from desktop_agent.protocol import ProtocolError, WireModel, stream_json
from desktop_agent.protocol.control import (
    CanUseToolRequest, ConfirmPairingRequest, ControlCancelRequest, ControlRequest, ControlResponse, ErrorBody,
    HookCallbackRequest, PhoneDevicesRequest, ReviewRequest,
)

if TYPE_CHECKING:
    from desktop_agent.permissions.hooks import HookRunner

log = logging.getLogger(__name__)


class Connection(Protocol):
    """The host's end of one client: ``line`` sends one message (dropped once closed, never raises),
    ``receive`` gives the next decoded message (``Malformed`` for a line that does not decode), ``None`` at EOF."""

    peer: str
    in_process: bool

    def line(self, message: WireModel) -> None: ...
    async def receive(self) -> WireModel | Malformed | None: ...
    def close(self) -> None: ...


@dataclass
class Malformed:
    """A line that did not decode: its text, its JSON object when it had one, and why; ``fatal`` when the stream
    can no longer be read line by line (a line over the limit: the connection is closed after the error)."""

    text: str
    obj: dict[str, Any] | None
    error: str
    fatal: bool = False


def _json(text: str) -> tuple[Any, str | None]:
    """``(object, None)``, or ``(None, why)`` for a line that is not JSON or is nested too deep to decode."""
    try:
        return json.loads(text), None
    except RecursionError:
        return None, "nested too deep"
    except ValueError:
        return None, "not JSON"


def decode_line(text: str | bytes) -> WireModel | Malformed | None:
    """One client line → its typed message; ``None`` for a blank line. Bytes must be UTF-8: a line that is not is
    refused whole (its JSON object, read with replacement characters, only names the request to refuse)."""
    if isinstance(text, bytes):
        raw = text
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            shown = raw.decode("utf-8", errors="replace").strip()
            obj, _why = _json(shown)
            return Malformed(shown, obj if isinstance(obj, dict) else None, "not UTF-8")
    text = text.strip()
    if not text:
        return None
    quick = stream_json.decode_agent_event(text)  # the lines of a streamed turn, most of them
    if quick is not None:
        return quick
    obj, why = _json(text)
    if why is not None:
        return Malformed(text, None, why)
    if not isinstance(obj, dict):
        return Malformed(text, None, "not a JSON object")
    try:
        message: WireModel = stream_json.decode(obj)
    except ProtocolError as exc:
        return Malformed(text, obj, str(exc))
    except RecursionError:
        return Malformed(text, obj, "nested too deep")
    return message


_last_encoded: tuple[WireModel, bytes] | None = None


def encoded(message: WireModel) -> bytes:
    """``message``'s JSON line, encoded once however many socket clients it goes to (a session hands the same
    line object to each of its clients in turn)."""
    global _last_encoded
    last = _last_encoded
    if last is not None and last[0] is message:
        return last[1]
    data = stream_json.encode(message).encode("utf-8")
    _last_encoded = (message, data)
    return data


class StreamConnection:
    """A client on a stream (the Unix socket): one JSON line each way per message. The lines written in one turn
    of the loop go out in one write (a streamed reply's events come many a turn: one system call, not one each).
    Every line that does not decode is answered with an error ``control_response`` (``reports_malformed``); a line
    over the reader's limit also ends the connection (``Malformed.fatal``). ``shared``: the process serves other
    clients too (``update_environment_variables`` is refused)."""

    in_process = False
    reports_malformed = True
    shared = True

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str):
        self.reader, self.writer, self.peer = reader, writer, peer
        self.closed = False
        self._pending: list[bytes] = []

    def line(self, message: WireModel) -> None:
        if self.closed or self.writer.is_closing():
            return
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(encoded(message))

    def _flush(self) -> None:
        if not self._pending:
            return
        data = b"".join(self._pending)
        self._pending.clear()
        if self.closed or self.writer.is_closing():
            return
        try:
            self.writer.write(data)
        except (ConnectionError, RuntimeError, OSError):
            self.closed = True

    async def receive(self) -> WireModel | Malformed | None:
        while not self.closed:
            try:
                raw = await self.reader.readline()
            except (ValueError, asyncio.LimitOverrunError):
                # fatal: the host closes the connection, so the rest of that line is never read as a line of its own
                return Malformed("", None, "line too long: the connection is closed", fatal=True)
            except (ConnectionError, OSError):
                return None
            if not raw:
                return None
            message = decode_line(raw)
            if message is not None:
                return message
        return None

    def close(self) -> None:
        if not self.closed:
            self._flush()
            self.closed = True
            with contextlib.suppress(Exception):
                self.writer.close()


class MemoryEnd:
    """One end of an in-process connection: typed messages through a queue, never encoded."""

    def __init__(self, peer: str, inbound: asyncio.Queue[WireModel | None], outbound: asyncio.Queue[WireModel | None]):
        self.peer = peer
        self.in_process = True
        self._in, self._out = inbound, outbound
        self.closed = False
        self._ended = False  # this end told the other it is done (the ``None`` sent)

    def line(self, message: WireModel) -> None:
        if not self.closed:
            self._out.put_nowait(message)

    async def receive(self) -> WireModel | None:
        if self.closed and self._in.empty():
            return None
        message = await self._in.get()
        if message is None:
            self.closed = True
        return message

    def close(self) -> None:
        """Done on this side: the other end's ``receive`` returns None — also when the other end closed first (its
        ``None`` arrived here), so that neither side waits for an end that never comes."""
        self.closed = True
        if not self._ended:
            self._ended = True
            self._out.put_nowait(None)


def memory_pair(peer: str = "window") -> tuple[MemoryEnd, MemoryEnd]:
    """``(host_end, client_end)`` of an in-process connection."""
    to_host: asyncio.Queue[WireModel | None] = asyncio.Queue()
    to_client: asyncio.Queue[WireModel | None] = asyncio.Queue()
    return MemoryEnd(peer, to_host, to_client), MemoryEnd("host", to_client, to_host)


# --------------------------------------------------------------------------------- our control requests


class ControlChannel:
    """The host's own control requests to one client that must be answered by that client (``hook_callback``,
    ``desktop_agent_review``, the phone page's pairing confirmation and devices),
    and their responses (``control_cancel_request`` when the wait is aborted; a duplicate or unknown response is
    ignored)."""

    def __init__(self, out: Any, verbose: bool = False, warn: Callable[[str], None] | None = None):
        self.out = out  # anything with ``line(message)``
        self.verbose = verbose
        self.warn = warn or log.info
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.closed = False

    async def request(self, request: CanUseToolRequest | HookCallbackRequest | ReviewRequest | ConfirmPairingRequest
                      | PhoneDevicesRequest,
                      request_id: str | None = None) -> dict[str, Any]:
        """Send a control_request and await its response body; cancelled → ``control_cancel_request``."""
        if self.closed:
            raise ConnectionError("stdin is closed: no one can answer")
        request_id = request_id or str(uuid.uuid4())
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = fut
        self.out.line(ControlRequest(request_id=request_id, request=request))
        try:
            return await fut
        except asyncio.CancelledError:
            if request_id in self.pending:
                self.out.line(ControlCancelRequest(request_id=request_id))
            raise
        finally:
            self.pending.pop(request_id, None)

    def on_response(self, message: ControlResponse) -> None:
        body = message.response
        fut = self.pending.pop(body.request_id, None)
        if fut is None or fut.done():
            if self.verbose:
                self.warn(f"ignoring a control_response for unknown or answered request {body.request_id}")
            return
        if isinstance(body, ErrorBody):
            fut.set_exception(RuntimeError(body.error or "control request failed"))
        else:
            fut.set_result(body.response or {})

    def close(self) -> None:
        self.closed = True
        for fut in list(self.pending.values()):
            if not fut.done():
                fut.set_exception(ConnectionError("stdin closed before the answer arrived"))
        self.pending.clear()


def register_sdk_hooks(runner: HookRunner, channel: ControlChannel, hooks: dict[str, Any] | None) -> int:
    """``initialize``'s ``hooks`` → callback hooks of the session's ``HookRunner``: each sends a ``hook_callback``
    request to the client that registered it and returns its reply (hook output JSON, App. B §B.5)."""
    count = 0
    for event, matchers in (hooks or {}).items():
        for m in matchers or []:
            if not isinstance(m, dict):
                continue
            timeout = m.get("timeout")
            for callback_id in m.get("hookCallbackIds") or []:
                runner.register_callback(str(event), m.get("matcher"), _hook_callback(channel, str(callback_id)),
                                         timeout=float(timeout) if timeout else None, name=f"sdk:{callback_id}")
                count += 1
    return count


def _hook_callback(channel: ControlChannel, callback_id: str) -> Callable[..., Any]:
    async def call(payload: dict[str, Any], tool_use_id: str | None) -> dict[str, Any] | None:
        request = HookCallbackRequest(callback_id=callback_id, input=payload, tool_use_id=tool_use_id or None)
        result = await channel.request(request)
        return result if isinstance(result, dict) else None

    call.__name__ = f"sdk_hook_{callback_id}"
    return call
