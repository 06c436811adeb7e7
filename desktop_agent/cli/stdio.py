"""The stdio side of the CLI server: stdout lines, the stdin reader, and the control channel on top of them.

``Output`` writes one JSON line (or the text reply) per call, flushed. ``StdinReader`` reads stdin lines without
blocking the loop. ``ControlChannel`` sends our control requests (``can_use_tool``, ``hook_callback``) and routes
the host's ``control_response`` lines back to them (``control_cancel_request`` when the wait is aborted; a
duplicate or unknown response is ignored). ``StdioPrompter`` asks permissions over it
(``--permission-prompt-tool stdio``), ``DenyingPrompter`` is ``-p``'s prompter around it, and
``register_sdk_hooks`` turns ``initialize``'s hook callbacks into callback hooks of the session's ``HookRunner``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import uuid
from typing import TYPE_CHECKING, Any, Callable

from desktop_agent.cli.argv import eprint
from desktop_agent.protocol import WireModel, encode
from desktop_agent.protocol.control import (
    CanUseToolRequest, ControlCancelRequest, ControlRequest, ControlResponse, ErrorBody, HookCallbackRequest,
)

if TYPE_CHECKING:
    from desktop_agent.core.permission import PermissionReply, PermissionRequest
    from desktop_agent.permissions.hooks import HookRunner

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
            if sys.stdin.isatty():  # never leave a shared terminal in non-blocking mode
                raise ValueError("tty")
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


# ----------------------------------------------------------------------------- the control protocol


class ControlChannel:
    """Our control requests to the SDK and their responses (``can_use_tool``, ``hook_callback``)."""

    def __init__(self, out: Output, verbose: bool = False):
        self.out = out
        self.verbose = verbose
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.closed = False

    async def request(self, request: CanUseToolRequest | HookCallbackRequest,
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
                eprint(f"ignoring a control_response for unknown or answered request {body.request_id}")
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


class StdioPrompter:
    """``PermissionPrompter`` over the control protocol (``--permission-prompt-tool stdio``)."""

    waits = True  # the host answers

    def __init__(self, channel: ControlChannel, on_interrupt: Callable[[], None] | None = None):
        self.channel = channel
        self.on_interrupt = on_interrupt

    async def ask(self, request: PermissionRequest) -> PermissionReply:
        from desktop_agent.core.errors import USER_DENIED_MESSAGE
        from desktop_agent.core.permission import PermissionReply, PermissionUpdate

        payload = CanUseToolRequest(
            tool_name=request.tool_name, display_name=request.tool_name, input=request.input,
            permission_suggestions=[s.to_wire() for s in request.suggestions], tool_use_id=request.tool_use_id,
            description=request.description or _describe(request) or None, blocked_path=request.blocked_path or None,
            decision_reason=request.reason_text if request.decision_reason is not None else None,
            # Extension fields (issue 15/16): the patch the engine built, so a host's dialog shows exactly it.
            file_path=request.file_path, structured_patch=request.structured_patch,
            original_file=request.original_file, subcommands=request.subcommands,
        )
        try:
            response = await self.channel.request(payload, request_id=request.request_id)
        except (ConnectionError, RuntimeError) as exc:
            return PermissionReply(behavior="deny", message=f"Permission request failed: {exc}")
        if response.get("behavior") == "allow":
            updates = []
            for raw in response.get("updatedPermissions") or []:
                try:
                    updates.append(PermissionUpdate.model_validate(raw))
                except Exception:
                    pass
            updated = response.get("updatedInput")
            return PermissionReply(behavior="allow", updated_input=updated if isinstance(updated, dict) and updated
                                   else None, updated_permissions=updates, **_rejected_hunks(response))
        if response.get("interrupt") and self.on_interrupt is not None:
            asyncio.get_running_loop().call_soon(self.on_interrupt)
        return PermissionReply(behavior="deny", message=str(response.get("message") or USER_DENIED_MESSAGE),
                               interrupt=bool(response.get("interrupt")))


def _rejected_hunks(response: dict[str, Any]) -> dict[str, Any]:
    """``rejectedHunks`` ([[start, end], …], original lines, 1-based inclusive) and ``totalHunks`` of an
    allow reply that took only some hunks, for the tool_result's sentence; malformed values are ignored."""
    raw = response.get("rejectedHunks")
    if not isinstance(raw, list) or not raw:
        return {}
    ranges = []
    for item in raw:
        if not (isinstance(item, (list, tuple)) and len(item) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in item) and 1 <= item[0] <= item[1]):
            return {}
        ranges.append((item[0], item[1]))
    total = response.get("totalHunks")
    ok = isinstance(total, int) and not isinstance(total, bool) and total >= len(ranges)
    return {"rejected_hunks": ranges, "total_hunks": total if ok else len(ranges)}


def _describe(request: PermissionRequest) -> str:
    path = request.file_path or (request.input or {}).get("file_path") or (request.input or {}).get("path")
    if isinstance(path, str) and path:
        return os.path.basename(path)
    command = (request.input or {}).get("command")
    return str(command) if isinstance(command, str) else ""


class DenyingPrompter:
    """The prompter of ``-p``: the stdio control channel's when there is one (``inner``), else every ask
    is denied with the ask's own message (the App. A texts)."""

    def __init__(self, inner: StdioPrompter | None = None):
        self.inner = inner

    @property
    def waits(self) -> bool:
        """Only a host's prompter waits for an answer (and so raises a ``permission_prompt`` Notification)."""
        return self.inner is not None

    async def ask(self, request: PermissionRequest) -> PermissionReply:
        from desktop_agent.core.permission import PermissionReply

        if self.inner is None:
            return PermissionReply(behavior="deny", message=request.message or "Permission required")
        return await self.inner.ask(request)


def register_sdk_hooks(runner: HookRunner, channel: ControlChannel, hooks: dict[str, Any] | None) -> int:
    """``initialize``'s ``hooks`` → callback hooks of the session's ``HookRunner``.

    Each callback sends a ``hook_callback`` control request and returns the SDK's reply, which is hook
    output JSON (App. B §B.5) that the runner interprets like a command hook's stdout.
    Returns how many callbacks were registered.
    """
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
