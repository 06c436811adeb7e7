"""``AnthropicClient``: the ``ModelClient`` the query loop talks to — policy over a transport.

The transport posts the request and yields raw events: ``model.wire.MessagesAPI`` (httpx2 + SSE,
the default) or ``model.sdk_transport.SDKMessagesAPI`` (``AsyncAnthropic.messages.stream``; with
``DESKTOP_AGENT_API_TRANSPORT=sdk`` or ``transport="sdk"``). Both raise the wire exceptions, so
everything below holds for either:
- **Prompt caching**: ``cache_control: ephemeral`` on the last system block, the last tool and the
  last block of the latest message — three of the four breakpoints the API allows. The request
  dicts are copied, never mutated.
- **Retries** with exponential backoff and jitter (0.5 s · 2^n, ±25 %, capped at 32 s) for 429,
  529, 5xx, 408/409 and dropped connections, honouring ``retry-after`` / ``retry-after-ms``. Each
  wait is reported through ``on_retry``; the loop cancels it on abort, ``retry_now.set()`` ends it early.
  A stream is retried only before its first event reached the caller; after that a failure is
  ``StreamBroken`` and the loop's fallback decides (SPEC §6.5).
- **No retry** for 401/403 (bad key), 404 (unknown model), 400 (``prompt is too long`` →
  ``context_too_long``; other → ``bad_request``): a ``ModelError`` with a sentence the user can act on.
- **Stream watchdog**: no event for ``idle_timeout_s`` (default 90 s, env
  ``DESKTOP_AGENT_STREAM_IDLE_TIMEOUT_S``) aborts the stream → ``StreamBroken(kind="stream_stalled")``
  (retried when nothing had been received yet).

``from_env()`` reads ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``, sent as a bearer token),
``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_MODEL``.
"""

from __future__ import annotations

import asyncio
import os
import random
from typing import Any, AsyncIterator, Callable

from desktop_agent.model import wire
from desktop_agent.model.client import (  # noqa: F401 - DEFAULT_MODEL re-exported
    DEFAULT_MODEL, ModelError, ModelRequest, RetryCallback, StreamBroken,
)

DEFAULT_IDLE_TIMEOUT_S = 90.0
DEFAULT_MAX_RETRIES = 8
TRANSPORTS = ("wire", "sdk", "openai")
CACHE_CONTROL = {"type": "ephemeral"}
_NO_CACHE_BLOCKS = ("thinking", "redacted_thinking")


def _env_float(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name) or default)
    except ValueError:
        return default
    return value if value > 0 else default


def default_model_from_env() -> str:
    return os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL


def with_cache_control(params: dict[str, Any]) -> dict[str, Any]:
    """A copy of request params with cache breakpoints on system, tools and the latest message."""
    out = dict(params)
    system = out.get("system")
    if isinstance(system, str) and system:
        system = [{"type": "text", "text": system}]
    if isinstance(system, list) and system:
        system = [dict(b) for b in system]
        system[-1]["cache_control"] = CACHE_CONTROL
        out["system"] = system
    tools = out.get("tools")
    if tools:
        tools = list(tools)
        tools[-1] = dict(tools[-1], cache_control=CACHE_CONTROL)
        out["tools"] = tools
    messages = out.get("messages")
    if messages:
        messages = list(messages)
        last = dict(messages[-1])
        content = last.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if isinstance(content, list) and content:
            content = list(content)
            for i in range(len(content) - 1, -1, -1):
                if content[i].get("type") not in _NO_CACHE_BLOCKS:
                    content[i] = dict(content[i], cache_control=CACHE_CONTROL)
                    break
            last["content"] = content
        messages[-1] = last
        out["messages"] = messages
    return out


def _retry_after(exc: BaseException) -> float | None:
    headers = exc.headers if isinstance(exc, wire.APIStatusError) else None
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if seconds >= 0:
            return min(seconds, 600.0)
    return None


def _error_body_text(exc: wire.APIStatusError) -> tuple[str, str]:
    """(error type, message) from an API error body."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error")
        err: dict[str, Any] = inner if isinstance(inner, dict) else body
        return str(err.get("type", "")), str(err.get("message", "")) or str(exc)
    return "", str(body or exc)


def classify(exc: BaseException, model: str = "") -> ModelError:
    """Any transport exception → a ``ModelError`` with a kind and a sentence for the user."""
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, wire.APIStatusError):
        status = exc.status_code
        etype, message = _error_body_text(exc)
        if etype == "overloaded_error" or status == 529:
            return ModelError(f"The API is overloaded (529): {message}", "overloaded", status, retryable=True)
        if status == 401 or etype == "authentication_error":
            return ModelError(
                "Authentication failed (401): the API key was rejected. Check ANTHROPIC_API_KEY "
                f"(or the key in settings). Server said: {message}", "auth", status)
        if status == 403 or etype == "permission_error":
            return ModelError(f"Permission denied (403): this API key may not use this model or endpoint. "
                              f"Server said: {message}", "auth", status)
        if status == 404 or etype == "not_found_error":
            return ModelError(f"Unknown model or endpoint (404): {model or 'the model'} was not found. "
                              f"Check --model / ANTHROPIC_MODEL. Server said: {message}", "model_not_found", status)
        if status == 429 or etype == "rate_limit_error":
            return ModelError(f"Rate limited (429): {message}", "rate_limit", status, retryable=True)
        if status == 413 or "prompt is too long" in message.lower():
            return ModelError(f"The conversation is too long for the model's context window: {message}. "
                              "Compact the conversation or start a new one.", "context_too_long", status)
        if status in (408, 409):
            return ModelError(f"Request timed out or conflicted ({status}): {message}", "server", status,
                              retryable=True)
        if status >= 500 or etype == "api_error":
            return ModelError(f"The API returned a server error ({status}): {message}", "server", status,
                              retryable=True)
        if status == 400:
            return ModelError(f"The API rejected the request (400): {message}", "bad_request", status)
        return ModelError(f"The API returned {status}: {message}", "server", status, retryable=status >= 500)
    if isinstance(exc, wire.APITimeoutError):
        return ModelError("The request to the API timed out.", "connection", retryable=True)
    if isinstance(exc, wire.APIConnectionError):
        if exc.mid_stream:
            return ModelError(f"The connection to the API dropped ({exc})", "connection", retryable=True)
        return ModelError(f"Could not reach the API: {exc}", "connection", retryable=True)
    if isinstance(exc, ValueError):  # an SSE data line that is not JSON
        return ModelError(f"The API sent a malformed stream event ({type(exc).__name__}: {exc})", "malformed",
                          retryable=True)
    if isinstance(exc, OSError):
        return ModelError(f"The connection to the API dropped ({type(exc).__name__}: {exc})", "connection",
                          retryable=True)
    return ModelError(f"Unexpected error talking to the API: {type(exc).__name__}: {exc}", "connection",
                      retryable=True)


class AnthropicClient:
    """``ModelClient`` over a Messages API transport with our retries, watchdog and caching."""

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        *,
        max_retries: int | None = None,
        idle_timeout_s: float | None = None,
        base_delay_s: float = 0.5,
        max_delay_s: float = 32.0,
        request_timeout_s: float = 600.0,
        prompt_caching: bool = True,
        default_headers: dict[str, str] | None = None,
        auth_token: str | None = None,
        transport: str | None = None,
    ):
        self.transport = transport or os.environ.get("DESKTOP_AGENT_API_TRANSPORT") or "wire"
        if not api_key and not auth_token and self.transport != "openai":  # local OpenAI servers need none
            raise ModelError("No API key: set ANTHROPIC_API_KEY or add a key in settings.", "auth")
        self.api_key = api_key
        self.base_url = base_url
        if max_retries is None:
            try:
                max_retries = int(os.environ.get("CLAUDE_CODE_MAX_RETRIES") or DEFAULT_MAX_RETRIES)
            except ValueError:
                max_retries = DEFAULT_MAX_RETRIES
        self.max_retries = max(0, max_retries)
        self.idle_timeout_s = idle_timeout_s if idle_timeout_s is not None else _env_float(
            "DESKTOP_AGENT_STREAM_IDLE_TIMEOUT_S", DEFAULT_IDLE_TIMEOUT_S)
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.prompt_caching = prompt_caching and self.transport != "openai"
        if self.transport not in TRANSPORTS:
            raise ModelError(f"Unknown API transport {self.transport!r} (DESKTOP_AGENT_API_TRANSPORT): "
                             f"use one of {', '.join(TRANSPORTS)}.", "bad_request")
        api_class: Callable[..., wire.MessagesTransport]
        if self.transport == "sdk":
            from desktop_agent.model.sdk_transport import SDKMessagesAPI
            api_class = SDKMessagesAPI
        elif self.transport == "openai":
            from desktop_agent.model.openai_wire import ChatCompletionsAPI
            api_class = ChatCompletionsAPI
        else:
            api_class = wire.MessagesAPI
        self.api = api_class(api_key, base_url, timeout_s=request_timeout_s, default_headers=default_headers,
                             auth_token=auth_token)
        self.requests_sent = 0
        self.retry_now: asyncio.Event | None = None  # set during a backoff wait (see _wait_before_retry)

    @classmethod
    def from_env(cls, **kw: Any) -> AnthropicClient:
        key = kw.pop("api_key", None) or os.environ.get("ANTHROPIC_API_KEY", "")
        token = kw.pop("auth_token", None) or os.environ.get("ANTHROPIC_AUTH_TOKEN") or None
        if not key and not token:
            raise ModelError("ANTHROPIC_API_KEY is not set. Export it (or add a key in settings) and try again.",
                             "auth")
        base_url = kw.pop("base_url", None) or os.environ.get("ANTHROPIC_BASE_URL") or None
        return cls(key, base_url, auth_token=token, **kw)

    # ------------------------------------------------------------------ helpers
    def params(self, request: ModelRequest) -> dict[str, Any]:
        params = request.to_params()
        if self.prompt_caching:
            params = with_cache_control(params)
        user_id = request.metadata.get("user_id") if request.metadata else None
        if user_id:
            params["metadata"] = {"user_id": str(user_id)}
        return params

    def backoff(self, attempt: int, exc: BaseException) -> float:
        after = _retry_after(exc)
        if after is not None:
            return after
        delay = min(self.base_delay_s * (2 ** (attempt - 1)), self.max_delay_s)
        return max(0.0, delay * (1 + random.uniform(-0.25, 0.25)))

    async def _wait_before_retry(self, attempt: int, err: ModelError, cause: BaseException,
                                 on_retry: RetryCallback | None) -> None:
        delay = self.backoff(attempt, cause)
        # ``retry_now.set()`` (the window's Retry now) ends this wait early; an abort cancels it.
        self.retry_now = asyncio.Event()
        if on_retry is not None:
            on_retry(attempt, self.max_retries, delay, str(err))
        try:
            async with asyncio.timeout(delay):
                await self.retry_now.wait()
        except TimeoutError:
            pass

    # ------------------------------------------------------------------ streaming
    async def stream(self, request: ModelRequest, on_retry: RetryCallback | None = None) -> AsyncIterator[dict[str, Any]]:
        params = self.params(request)
        attempt = 0
        while True:
            yielded = False
            try:
                async for event in self._stream_once(params):
                    yielded = True
                    yield event
                return
            except (asyncio.CancelledError, GeneratorExit):
                raise
            except Exception as exc:
                err = classify(exc, request.model)
                if yielded:
                    if isinstance(err, StreamBroken):
                        raise err from exc
                    raise StreamBroken(f"The stream broke: {err}", kind=err.kind) from exc
                if not err.retryable or attempt >= self.max_retries:
                    if attempt and err.retryable:
                        err = ModelError(f"{err} (gave up after {attempt} retries)", err.kind, err.status,
                                         retryable=True)
                    raise err from exc
                attempt += 1
                await self._wait_before_retry(attempt, err, exc, on_retry)

    async def _stream_once(self, params: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        idle = self.idle_timeout_s
        self.requests_sent += 1
        events = self.api.stream(params)
        first = True
        try:
            while True:
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation (the abort).
                try:
                    async with asyncio.timeout(idle):
                        event = await events.__anext__()
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    if first:
                        raise StreamBroken(f"No response from the API for {idle:g} s (stream watchdog)",
                                           kind="stream_stalled") from None
                    raise StreamBroken(f"The stream stalled: no event for {idle:g} s (stream watchdog)",
                                       kind="stream_stalled") from None
                first = False
                yield event
        finally:
            try:
                await events.aclose()
            except Exception:
                pass

    # ------------------------------------------------------------------ non-streaming
    async def create(self, request: ModelRequest, on_retry: RetryCallback | None = None) -> dict[str, Any]:
        params = self.params(request)
        attempt = 0
        while True:
            try:
                self.requests_sent += 1
                return await self.api.create(params)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                err = classify(exc, request.model)
                if not err.retryable or attempt >= self.max_retries:
                    raise err from exc
                attempt += 1
                await self._wait_before_retry(attempt, err, exc, on_retry)

    async def aclose(self) -> None:
        await self.api.aclose()
