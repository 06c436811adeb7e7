"""The ``ModelClient`` protocol the query loop talks to.

A client streams **raw Messages API events** as plain dicts (``message_start``,
``content_block_start``/``delta``/``stop``, ``message_delta``, ``message_stop``) — exactly what the
SSE stream carries — so the Anthropic client, the offline tour's scripted model and test fakes are
interchangeable. ``create`` is the non-streaming request used for the fallback of SPEC §6.5.
Retries happen inside the client; it reports waits through ``on_retry``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Protocol

# The model used when neither the settings, ANTHROPIC_MODEL nor --model names one.
DEFAULT_MODEL = "claude-sonnet-4-6"
# Offered by the window's model boxes (both editable: any model name the endpoint knows works).
SUGGESTED_MODELS = [DEFAULT_MODEL, "claude-opus-4-1", "claude-haiku-4-5", "claude-sonnet-4-5"]


@dataclass
class ModelRequest:
    model: str
    messages: list[dict[str, Any]]
    system: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_tokens: int = 32_000
    thinking: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "messages": self.messages, "max_tokens": self.max_tokens}
        if self.system:
            params["system"] = self.system
        if self.tools:
            params["tools"] = self.tools
        if self.thinking:
            params["thinking"] = self.thinking
        return params


RetryCallback = Callable[[int, int, float, str], None]  # attempt, max_attempts, delay_s, error text


class ModelError(Exception):
    """A model request failed for good. ``kind``: auth, rate_limit, overloaded, server, connection,
    context_too_long, model_not_found, bad_request, stream_stalled, internal."""

    def __init__(self, message: str, kind: str = "internal", status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retryable = retryable


class StreamBroken(ModelError):
    """The stream ended early (dropped connection, malformed event, watchdog). Eligible for fallback."""

    def __init__(self, message: str, kind: str = "connection"):
        super().__init__(message, kind=kind, retryable=True)


class ModelClient(Protocol):
    def stream(self, request: ModelRequest, on_retry: RetryCallback | None = None) -> AsyncIterator[dict[str, Any]]:
        """Raw stream events as dicts. Raises ModelError / StreamBroken."""
        ...

    async def create(self, request: ModelRequest, on_retry: RetryCallback | None = None) -> dict[str, Any]:
        """A whole message (the Messages API response body) without streaming."""
        ...

    @property
    def retry_now(self) -> asyncio.Event | None:
        """Set during a backoff wait between retries: ``set()`` ends the wait early (the retry card's Retry now);
        None when no wait is under way (or the client never retries)."""
        ...
