"""A local fake of the Anthropic Messages API: real HTTP on 127.0.0.1, real SSE, scripted replies.

The real ``anthropic`` SDK (and ``AnthropicClient``) talks to it through ``base_url``; so can a
child process through ``ANTHROPIC_BASE_URL``. It plays the same ``Reply`` steps as
``desktop_agent.model.scripted`` (build them with ``reply``/``text``/``tool_use``/``thinking``/
``http_error``), one per request, streaming or not, and records every request body and headers.

Faults, per step:
- ``http_error(429, headers={"retry-after": "0"})``, ``http_error(529)``, ``http_error(500)``,
  ``http_error(401)``, ``http_error(404)``, ``http_error(400, "prompt is too long: ...")``;
- ``reply(..., break_after=N)``: N events, then the connection is cut (chunked body left unfinished);
- ``reply(..., malformed_after=N)``: N events, then an event whose data is not JSON;
- ``reply(..., error_event_after=N)``: N events, then an SSE ``error`` event (overloaded_error);
- ``reply(..., delay=0.05)``: slow chunks; ``reply(..., stall_after=N)``: N events, then silence;
- ``reply(..., check=fn)``: ``fn(body)`` is called with the request's JSON body (assert in it).
A request beyond the script gets a 400 ``invalid_request_error`` and is recorded as an error; so
does a request the real API would reject (``api_problems``: roles alternate, every tool_use answered
in the next message, no stray tool_result, no empty text, thinking signed; ``validate=False`` to
turn off). ``assert_done()`` raises on these, on a failed ``check`` and on unused steps.
``POST /v1/messages/count_tokens`` answers a rough estimate.

Usage::

    with FakeAnthropic() as fake:
        fake.script([reply(text("hi"))])
        client = AnthropicClient("test-key", fake.base_url)
        ...
        fake.assert_done()

or the ``fake_anthropic`` pytest fixture (import it into a test module or conftest).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from desktop_agent.model.scripted import (  # noqa: F401 - re-exported for tests
    Reply, http_error, reply, text, thinking, tool_use,
)
from desktop_agent.model.stream import message_to_events


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    time: float = field(default_factory=time.monotonic)

    @property
    def streaming(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])


def api_problems(body: dict[str, Any]) -> list[str]:
    """The request checks the real API makes that a transcript bug would trip (400 invalid_request_error)."""
    problems: list[str] = []
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["messages: at least one message is required"]
    if messages[0].get("role") != "user":
        problems.append("messages: first message must use the \"user\" role")
    for i, m in enumerate(messages):
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        if i and m.get("role") == messages[i - 1].get("role"):
            problems.append(f"messages: roles must alternate between \"user\" and \"assistant\" (index {i})")
        for b in blocks:
            if b.get("type") == "text" and not b.get("text"):
                problems.append(f"messages.{i}: text content blocks must be non-empty")
            if b.get("type") == "thinking" and not b.get("signature"):
                problems.append(f"messages.{i}: thinking block without signature")
        if m.get("role") == "assistant":
            uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            nxt_blocks = (nxt or {}).get("content") if nxt else []
            results = [b.get("tool_use_id") for b in (nxt_blocks if isinstance(nxt_blocks, list) else [])
                       if b.get("type") == "tool_result"]
            missing = [u for u in uses if u not in results]
            if missing:
                problems.append(f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                                f"immediately after: {', '.join(missing)}")
        if m.get("role") == "user":
            prev = messages[i - 1] if i else {}
            prev_blocks = prev.get("content") if isinstance(prev.get("content"), list) else []
            prev_uses = {b.get("id") for b in prev_blocks if b.get("type") == "tool_use"}
            for b in blocks:
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in prev_uses:
                    problems.append(f"messages.{i}: unexpected `tool_use_id` found in `tool_result` blocks: "
                                    f"{b.get('tool_use_id')}")
    return problems


class FakeAnthropic:
    """The fake server. Thread-safe: the HTTP handlers run on their own threads."""

    def __init__(self, chunk_size: int = 7, api_key: str | None = None, model: str = "claude-fake-1",
                 validate: bool = True):
        self.chunk_size = chunk_size
        self.validate = validate  # reject (400) requests the real API would reject, see api_problems()
        self.api_key = api_key  # when set, a request with another key gets 401
        self.model = model
        self.steps: list[Reply] = []
        self.position = 0
        self.routes: dict[str, list[Reply]] = {}  # ``script_for``: a marker in the first user message → its steps
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    handler_class: type[BaseHTTPRequestHandler] | None = None  # a subclass of _Handler (the OpenAI twin)

    def start(self) -> FakeAnthropic:
        fake = self

        class Handler(self.handler_class or _Handler):  # type: ignore[misc,valid-type]
            owner = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="fake-anthropic", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeAnthropic not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------ script
    def script(self, steps: list[Reply]) -> None:
        with self._lock:
            self.steps.extend(steps)

    def script_for(self, marker: str, steps: list[Reply]) -> None:
        """A script of its own for the conversation whose first user message contains ``marker`` (sessions that
        run at once: each takes its replies in its own order)."""
        with self._lock:
            self.routes.setdefault(marker, []).extend(steps)

    def _route(self, record: RecordedRequest) -> list[Reply] | None:
        if not self.routes:
            return None
        try:
            first = json.dumps(record.messages[0].get("content"))
        except Exception:
            return None
        return next((steps for marker, steps in self.routes.items() if marker in first), None)

    def next_step(self, record: RecordedRequest) -> Reply | None:
        with self._lock:
            self.requests.append(record)
            routed = self._route(record)
            if routed is not None:
                if not routed:
                    self.errors.append(f"unexpected request #{len(self.requests)}: its route's script is used up")
                    return None
                return routed.pop(0)
            if self.position >= len(self.steps):
                self.errors.append(f"unexpected request #{len(self.requests)}: no scripted reply left")
                return None
            step = self.steps[self.position]
            self.position += 1
            return step

    @property
    def unused(self) -> int:
        return len(self.steps) - self.position + sum(len(steps) for steps in self.routes.values())

    def assert_done(self) -> None:
        if self.errors:
            raise AssertionError("fake server: " + "; ".join(self.errors))
        if self.unused:
            raise AssertionError(f"fake server: {len(self.steps) - self.position} scripted step(s) never requested")

    def request_messages(self, n: int) -> list[dict[str, Any]]:
        """The ``messages`` of the n-th Messages request (0-based)."""
        return self.requests[n].messages


class _Handler(BaseHTTPRequestHandler):
    owner: FakeAnthropic
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    # ------------------------------------------------------------------ plumbing
    def _send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("connection", "close")
        self.send_header("request-id", f"req_fake_{len(self.owner.requests)}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _sse(self, event: dict[str, Any]) -> None:
        self._chunk(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())

    def _cut(self) -> None:
        """Drop the connection without finishing the chunked body."""
        import socket

        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True

    # ------------------------------------------------------------------ the endpoint
    def do_POST(self) -> None:  # noqa: N802 - http.server API
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if len(raw) < length:
            # The client went away mid-request (a SIGKILLed CLI): the API never sees such a request,
            # so it is neither served nor counted as one the API would reject.
            self.close_connection = True
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = self.path.split("?", 1)[0]
        if path == "/v1/messages/count_tokens":  # a rough estimate, enough for compaction tests
            self._send_json(200, {"input_tokens": max(1, len(raw) // 4)})
            return
        if path != "/v1/messages":
            self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
            return
        owner = self.owner
        record = RecordedRequest(path=path, headers=headers, body=body)
        key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ").strip()
        if owner.api_key is not None and key != owner.api_key:
            with owner._lock:
                owner.requests.append(record)
            self._send_json(401, {"type": "error", "error": {"type": "authentication_error",
                                                              "message": "invalid x-api-key"}})
            return
        if owner.validate:
            problems = api_problems(body)
            if problems:
                with owner._lock:
                    owner.requests.append(record)
                    owner.errors.append(f"request #{len(owner.requests)} invalid: {'; '.join(problems)}")
                self._send_json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                  "message": "; ".join(problems)}})
                return
        step = owner.next_step(record)
        if step is None:
            self._send_json(400, {"type": "error", "error": {
                "type": "invalid_request_error",
                "message": f"fake server: no scripted reply for request #{len(owner.requests)}"}})
            return
        if step.check is not None:
            try:
                step.check(body)  # type: ignore[arg-type]
            except AssertionError as exc:
                with owner._lock:
                    owner.errors.append(f"check failed on request #{len(owner.requests)}: {exc}")
        if step.status is not None:
            self._send_json(step.status, step.body or {"type": "error", "error": {"type": "api_error",
                                                                                   "message": "error"}},
                            step.headers)
            return
        message = step.message(body.get("model") or owner.model)
        if not body.get("stream"):
            if step.delay:
                time.sleep(step.delay)
            self._send_json(200, message, step.headers)
            return
        self._stream(step, message)

    def _stream(self, step: Reply, message: dict[str, Any]) -> None:
        events = message_to_events(message, self.owner.chunk_size)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.send_header("request-id", f"req_fake_{len(self.owner.requests)}")
        for name, value in step.headers.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            for n, event in enumerate(events):
                if step.break_after is not None and n >= step.break_after:
                    self._cut()
                    return
                if step.error_event_after is not None and n >= step.error_event_after:
                    self._sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                if step.malformed_after is not None and n >= step.malformed_after:
                    self._chunk(b"event: content_block_delta\ndata: {this is not json\n\n")
                    self._cut()
                    return
                if step.stall_after is not None and n >= step.stall_after:
                    self.owner._stop.wait(60)  # silence until the client gives up or the fake stops
                    self._cut()
                    return
                if step.delay:
                    time.sleep(step.delay)
                self._sse(event)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (abort, watchdog)
        self.close_connection = True


@pytest.fixture
def fake_anthropic():
    """A started ``FakeAnthropic``; stopped after the test."""
    with FakeAnthropic() as fake:
        yield fake
