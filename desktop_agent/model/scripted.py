"""``ScriptedModelClient``: a model that plays a list of scripted replies as raw stream events.

Used by the offline tour, unit tests and the loop benchmark; the fake HTTP server in
``tests/fakes`` plays the same ``Reply`` objects over real SSE. A script is strict: a request
beyond the script fails loudly (``ScriptError``), and ``assert_done()`` fails on unused steps or on
a step whose ``check`` rejected the request it got.

Build replies with the helpers::

    script = [
        reply(tool_use("Read", {"file_path": "app.ts"}, id="toolu_read_1")),
        reply(tool_use("Edit", {...}, id="toolu_edit_2")),
        reply(text("Done.")),
    ]
    client = ScriptedModelClient(script)
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

from desktop_agent.model.client import ModelError, ModelRequest, RetryCallback, StreamBroken
from desktop_agent.model.stream import message_to_events

_ids = itertools.count(1)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, input: dict[str, Any] | str, id: str | None = None) -> dict[str, Any]:
    """A tool_use block; ``input`` may be a raw JSON string (to script malformed input)."""
    return {"type": "tool_use", "id": id or f"toolu_{next(_ids):02d}", "name": name, "input": input}


def thinking(value: str, signature: str = "sig-scripted") -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": signature}


@dataclass
class Reply:
    """One scripted model reply, with optional faults.

    - ``stop_reason``: default ``tool_use`` when a tool_use block is present, else ``end_turn``
      (set it explicitly to script a lying stop_reason).
    - ``error``: raise this (a ModelError) instead of answering.
    - ``break_after``: raise ``StreamBroken`` after this many events (a dropped stream); with
      ``error`` set, raise that error at this point instead (a non-recoverable mid-stream error).
    - ``stall_after``: stop sending after this many events and hang (the watchdog's case).
    - ``delay``: seconds between events (slow chunks; lets a test abort mid-stream).
    - ``check``: called with the ``ModelRequest``; an AssertionError in it is recorded and re-raised
      by ``assert_done()``.
    - ``non_streaming_only``: the step must be consumed by ``create`` (the fallback request).
    - ``malformed_after`` (fake HTTP server only): send a broken SSE event after this many events.
    - ``error_event_after`` (fake HTTP server only): send an SSE ``error`` event (overloaded) then.
    - ``status`` / ``headers`` / ``body`` (fake HTTP server only): answer with this HTTP error instead.
    """

    content: list[dict[str, Any]]
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 10, "output_tokens": 5})
    id: str | None = None
    model: str | None = None
    error: ModelError | None = None
    break_after: int | None = None
    stall_after: int | None = None
    delay: float = 0.0
    check: Callable[[ModelRequest], None] | None = None
    non_streaming_only: bool = False
    malformed_after: int | None = None
    error_event_after: int | None = None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | None = None

    def message(self, model: str = "claude-scripted") -> dict[str, Any]:
        stop = self.stop_reason
        if stop is None:
            stop = "tool_use" if any(b.get("type") == "tool_use" for b in self.content) else "end_turn"
        return {
            "id": self.id or f"msg_{next(_ids):04d}", "type": "message", "role": "assistant",
            "model": self.model or model, "content": [dict(b) for b in self.content],
            "stop_reason": stop, "stop_sequence": None, "usage": dict(self.usage),
        }


def reply(*blocks: dict[str, Any], **kw: Any) -> Reply:
    return Reply(content=list(blocks), **kw)


def fail(error: ModelError, **kw: Any) -> Reply:
    """A step that raises ``error`` instead of answering."""
    return Reply(content=[], error=error, **kw)


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
                529: "overloaded_error"}


_KINDS = {400: "bad_request", 401: "auth", 403: "auth", 404: "model_not_found", 413: "context_too_long",
          429: "rate_limit", 529: "overloaded"}


def http_error(status: int, message: str = "", headers: dict[str, str] | None = None) -> Reply:
    """A fake-server step answering with an HTTP error (e.g. 429 with ``{"retry-after": "0"}``)."""
    etype = _ERROR_TYPES.get(status, "api_error")
    body = {"type": "error", "error": {"type": etype, "message": message or etype}}
    return Reply(content=[], status=status, headers=dict(headers or {}), body=body,
                 error=ModelError(message or etype, kind=_KINDS.get(status, "server"), status=status,
                                  retryable=status in (408, 409, 429) or status >= 500))


class ScriptError(AssertionError):
    """The code under test did something the script did not expect."""


class ScriptedModelClient:
    """A ``ModelClient`` that answers from a script. ``requests`` records every request in order."""

    retry_now: asyncio.Event | None = None  # it never retries, so never waits

    def __init__(self, steps: list[Reply], chunk_size: int = 0, model: str = "claude-scripted"):
        self.steps = list(steps)
        self.position = 0
        self.chunk_size = chunk_size
        self.model = model
        self.requests: list[ModelRequest] = []
        self.kinds: list[str] = []  # "stream" or "create", per request
        self.errors: list[BaseException] = []

    def add(self, *steps: Reply) -> None:
        self.steps.extend(steps)

    def _next(self, request: ModelRequest, kind: str) -> Reply:
        self.requests.append(request)
        self.kinds.append(kind)
        if self.position >= len(self.steps):
            err = ScriptError(f"scripted model: unexpected request #{len(self.requests)} ({kind}); "
                              f"the script has {len(self.steps)} step(s)")
            self.errors.append(err)
            raise err
        step = self.steps[self.position]
        self.position += 1
        if step.non_streaming_only and kind != "create":
            err = ScriptError(f"scripted model: step {self.position} expects a non-streaming request, got {kind}")
            self.errors.append(err)
            raise err
        if step.check is not None:
            try:
                step.check(request)
            except AssertionError as exc:
                self.errors.append(exc)
                raise
        if step.error is not None and (kind == "create" or step.break_after is None):
            raise step.error
        return step

    async def stream(self, request: ModelRequest, on_retry: RetryCallback | None = None) -> AsyncIterator[dict[str, Any]]:
        step = self._next(request, "stream")
        events = message_to_events(step.message(request.model or self.model), self.chunk_size)
        for n, event in enumerate(events):
            if step.break_after is not None and n >= step.break_after:
                if step.error is not None:
                    raise step.error
                raise StreamBroken("scripted: connection dropped mid-stream")
            if step.stall_after is not None and n >= step.stall_after:
                await asyncio.Event().wait()  # hangs until cancelled
            if step.delay:
                await asyncio.sleep(step.delay)
            yield event

    async def create(self, request: ModelRequest, on_retry: RetryCallback | None = None) -> dict[str, Any]:
        step = self._next(request, "create")
        if step.delay:
            await asyncio.sleep(step.delay)
        return step.message(request.model or self.model)

    @property
    def unused(self) -> int:
        return len(self.steps) - self.position

    def assert_done(self) -> None:
        if self.errors:
            raise self.errors[0]
        if self.position < len(self.steps):
            raise ScriptError(f"scripted model: {len(self.steps) - self.position} step(s) never requested "
                              f"(played {self.position} of {len(self.steps)})")
