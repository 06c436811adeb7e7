"""The Messages API on the wire: one HTTP request over ``httpx2``, its SSE stream as raw event dicts.

``MessagesAPI`` is the transport under ``AnthropicClient``: ``stream(params)`` posts
``/v1/messages`` with ``stream: true`` and yields each SSE event's JSON ``data`` (``message_start``,
``content_block_*``, ``message_delta``, ``message_stop``; ``ping`` and event types added later are
skipped, an ``error`` event raises); ``create(params)`` is the non-streaming request. No retries, no
watchdog, no caching — ``AnthropicClient`` owns that policy, whatever the transport.

Why not the ``anthropic`` SDK here: ``import anthropic`` executes ~3,200 modules (2 s of CPU and
~45 MB on a 2-core box) for a client that, for us, only posts JSON and splits SSE lines; the
headless CLI paid that on every start. The SDK is still available as a transport
(``DESKTOP_AGENT_API_TRANSPORT=sdk``, ``model/sdk_transport.py``) and the tests run both against the
fake server, so the two are held to the same events and the same errors.

Shapes follow the SDK's (what ``AnthropicClient`` was written against): ``None`` values are dropped
from the top level of a message, a content block, a delta and a usage object (``model_dump(
exclude_none=True)``); events without an SSE ``event:`` name are ignored; HTTP errors and in-stream
``error`` events raise ``APIStatusError`` with the status, headers and parsed body; a transport
failure raises ``APIConnectionError`` (``APITimeoutError`` for a timeout) with the cause chained.

The HTTP client is made on first use; its TLS context (httpx2's verifying default) is loaded on a thread from the
moment the transport is made (``_TLSContext``), beside the rest of start-up.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, AsyncGenerator, Mapping, Protocol

import httpx2

from desktop_agent import __version__


def _import_httpcore_without_trio() -> None:
    """Import ``httpcore2`` (httpx2's transport, otherwise imported when the first client is made) so that it
    does not import ``trio``: it does so whenever trio is installed, to pick its lock type under a trio
    loop, and that costs ~100 ms and ~12 MB in every process. We run under asyncio only, so ``import
    trio`` is made to fail for that one import (a ``None`` in ``sys.modules``), then allowed again; a
    process that already imported trio, or httpcore2, is left as it is."""
    if "httpcore2" in sys.modules or "trio" in sys.modules:
        return
    sys.modules["trio"] = None  # type: ignore[assignment]
    try:
        import httpcore2  # noqa: F401
    finally:
        if "trio" in sys.modules and sys.modules["trio"] is None:
            del sys.modules["trio"]


_import_httpcore_without_trio()

API_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"
_NESTED = ("message", "content_block", "delta", "usage")
# The events a reply is made of; others (``ping``, types added later) are skipped, as the API asks.
RAW_EVENT_TYPES = frozenset({
    "message_start", "message_delta", "message_stop", "content_block_start", "content_block_delta",
    "content_block_stop",
})


class APIStatusError(Exception):
    """The API answered with an error: an HTTP status ≥ 400, or an ``error`` event inside a stream."""

    def __init__(self, status_code: int, body: Any, headers: Mapping[str, str] | None = None):
        self.status_code = status_code
        self.body = body
        self.headers = dict(headers or {})
        super().__init__(f"Error code: {status_code} - {body}")


class APIConnectionError(Exception):
    """The request did not get a whole answer: refused, dropped mid-stream, or a protocol error.
    ``mid_stream``: the answer had begun (status and headers received) when it broke."""

    def __init__(self, message: str, mid_stream: bool = False):
        super().__init__(message)
        self.mid_stream = mid_stream


class APITimeoutError(APIConnectionError):
    """The HTTP client's own timeout fired (connect, read or write)."""


def connection_error(exc: httpx2.HTTPError, mid_stream: bool = False) -> APIConnectionError:
    """An httpx2 failure as the wire exception of its kind (a timeout, or any other transport error)."""
    cls = APITimeoutError if isinstance(exc, httpx2.TimeoutException) else APIConnectionError
    return cls(f"{type(exc).__name__}: {exc}", mid_stream)


def _drop_none(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not None}


def tidy(obj: dict[str, Any]) -> dict[str, Any]:
    """An event or message with ``None`` dropped from it and from its message/block/delta/usage."""
    out = _drop_none(obj)
    for key in _NESTED:
        value = out.get(key)
        if isinstance(value, dict):
            out[key] = tidy(value) if key == "message" else _drop_none(value)
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = [_drop_none(b) if isinstance(b, dict) else b for b in content]
    return out


def _parse_body(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


class MessagesTransport(Protocol):
    """What ``AnthropicClient`` needs of a transport: ``MessagesAPI``, ``SDKMessagesAPI``, ``ChatCompletionsAPI``."""

    def stream(self, params: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]: ...

    async def create(self, params: dict[str, Any]) -> dict[str, Any]: ...

    async def aclose(self) -> None: ...


class MessagesAPI:
    """``POST {base_url}/v1/messages`` with an API key (``x-api-key``) or a bearer token."""

    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        *,
        timeout_s: float = 600.0,
        default_headers: Mapping[str, str] | None = None,
        auth_token: str | None = None,
    ):
        self.url = (base_url or DEFAULT_BASE_URL).rstrip("/") + "/v1/messages"
        headers = {
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
            "accept": "application/json",
            "user-agent": f"desktop-agent/{__version__}",
        }
        if api_key:
            headers["x-api-key"] = api_key
        if auth_token:
            headers["authorization"] = f"Bearer {auth_token}"
        headers.update(default_headers or {})
        self.headers = headers
        self._timeout = httpx2.Timeout(timeout_s, connect=10.0)
        self._http: httpx2.AsyncClient | None = None
        self._tls = _TLSContext()

    @property
    def http(self) -> httpx2.AsyncClient:
        """The HTTP client, made on first use with the TLS context ``_TLSContext`` loaded beside start-up."""
        if self._http is None:
            self._http = httpx2.AsyncClient(timeout=self._timeout, verify=self._tls.get())
        return self._http

    async def stream(self, params: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """The raw events of one streaming request, as they arrive."""
        body = json.dumps(dict(params, stream=True), ensure_ascii=False).encode()
        started = False
        try:
            async with self.http.stream("POST", self.url, content=body, headers=self.headers) as response:
                started = True
                if response.status_code >= 400:
                    raise APIStatusError(response.status_code, _parse_body(await response.aread()),
                                         response.headers)
                event: str | None = None
                data: list[str] = []
                async for line in response.aiter_lines():
                    if line:
                        name, _, value = line.partition(":")
                        value = value[1:] if value.startswith(" ") else value
                        if name == "event":
                            event = value
                        elif name == "data":
                            data.append(value)
                        continue  # comments (":…"), id and retry fields carry nothing for us
                    if event in RAW_EVENT_TYPES or event == "error":
                        yield self._event(event, "\n".join(data), response)
                    event, data = None, []
                # An event the body ends in before its blank line is not dispatched (WHATWG SSE).
        except httpx2.HTTPError as exc:
            raise connection_error(exc, started) from exc

    @staticmethod
    def _event(event: str, data: str, response: httpx2.Response) -> dict[str, Any]:
        if event == "error":
            raise APIStatusError(response.status_code, _parse_body(data.encode()), response.headers)
        parsed = json.loads(data)  # ValueError on a malformed event: AnthropicClient classifies it
        if not isinstance(parsed, dict):
            raise ValueError(f"an SSE event whose data is not an object: {data[:200]!r}")
        return tidy(parsed)

    async def create(self, params: dict[str, Any]) -> dict[str, Any]:
        """One non-streaming request: the whole message."""
        body = json.dumps(params, ensure_ascii=False).encode()
        try:
            response = await self.http.post(self.url, content=body, headers=self.headers)
        except httpx2.HTTPError as exc:
            raise connection_error(exc) from exc
        parsed = _parse_body(response.content)
        if response.status_code >= 400:
            raise APIStatusError(response.status_code, parsed, response.headers)
        if not isinstance(parsed, dict):
            raise ValueError(f"the API's response is not a JSON object: {str(parsed)[:200]!r}")
        return tidy(parsed)

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()


class _TLSContext:
    """httpx2's default TLS context (``httpx2.create_ssl_context()``: the system CA store, or ``SSL_CERT_FILE`` /
    ``SSL_CERT_DIR``, exactly what ``AsyncClient()`` would load itself), loaded on a thread from the moment
    the transport is made. Loading the CA store is ~20 ms of OpenSSL work that releases the GIL, so it runs while
    the session is still being built instead of before it; ``get()`` waits for it (at once when it is done). If
    loading failed on the thread, ``get()`` gives ``True``: the client then loads it itself and raises the same
    error (a bad ``SSL_CERT_FILE``), at the first request rather than when the transport is made. The same context also serves the proxy transports (``HTTPS_PROXY``…), as ``verify=True`` would
    have built one equal to it for each."""

    def __init__(self) -> None:
        self._ctx: Any = None
        # not a daemon: a process that ends at once (``-p`` with stdin at its end) waits the few ms for it, where a
        # daemon thread still inside OpenSSL while the interpreter finalizes crashed it (SIGSEGV)
        self._thread = threading.Thread(target=self._load, name="desktop-agent-tls", daemon=False)
        self._thread.start()

    def _load(self) -> None:
        try:
            self._ctx = httpx2.create_ssl_context()
        except Exception:  # get() falls back to the client's own load, which raises the same error where it did
            self._ctx = None

    def get(self) -> Any:
        self._thread.join()
        return self._ctx if self._ctx is not None else True
