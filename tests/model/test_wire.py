"""``model/wire.py``, the default transport, held to the ``anthropic`` SDK's behaviour.

Differential: the same scripted replies and faults, served by the fake server, go through the wire
client and through the SDK transport; the raw events and the classified errors must be the same.
SSE edge cases the fake server does not produce (CRLF, comments, ``ping``, multi-line ``data``,
bytes split mid-line, unknown event types, an event with no name, a body that ends without its
blank line) come from a hand-written HTTP server on a socket.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from desktop_agent.model import wire
from desktop_agent.model.anthropic_client import AnthropicClient, classify
from desktop_agent.model.client import ModelError, ModelRequest
from desktop_agent.model.sdk_transport import SDKMessagesAPI
from tests.fakes.anthropic_server import FakeAnthropic, fake_anthropic, http_error, reply, text, thinking, tool_use  # noqa: F401
from tests.model.aio import aio

PARAMS = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "messages": [{"role": "user", "content": "hi"}]}


def no_ids(obj: Any) -> Any:
    """``obj`` with message and tool_use ids blanked: the fake numbers them per reply."""
    return json.loads(re.sub(r'"(msg|toolu)_[A-Za-z0-9]+"', r'"\1_"', json.dumps(obj)))


async def events_of(api: Any, params: dict[str, Any] = PARAMS) -> tuple[list[dict[str, Any]], BaseException | None]:
    out: list[dict[str, Any]] = []
    try:
        async for event in api.stream(params):
            out.append(event)
    except Exception as exc:  # the point: compare what each transport raises
        return out, exc
    finally:
        await api.aclose()
    return out, None


async def both(base_url: str, key: str = "k") -> dict[str, tuple[list[dict[str, Any]], BaseException | None]]:
    return {
        "wire": await events_of(wire.MessagesAPI(key, base_url)),
        "sdk": await events_of(SDKMessagesAPI(key, base_url)),
    }


REPLIES = {
    "text": lambda: reply(text("Hello, world — ünïcødé and \"quotes\"\nnew line")),
    "tool_use": lambda: reply(text("Reading."), tool_use("Read", {"file_path": "/tmp/a b.py", "limit": 20}),
                              tool_use("Grep", {"pattern": "x{2,}", "-n": True})),
    "thinking": lambda: reply(thinking("Let me think about this carefully.", "sig-abc=="), text("Done.")),
    "nested_input": lambda: reply(tool_use("Edit", {"file_path": "/a", "old_string": "a\n\tb",
                                                    "new_string": "{\"k\": [1, null]}", "replace_all": False})),
}


@pytest.mark.parametrize("name", sorted(REPLIES))
@aio
async def test_same_events_as_the_sdk(name):
    with FakeAnthropic(chunk_size=5) as fake:
        fake.script([REPLIES[name](), REPLIES[name]()])
        got = await both(fake.base_url)
        fake.assert_done()
    (wire_events, wire_exc), (sdk_events, sdk_exc) = got["wire"], got["sdk"]
    assert wire_exc is None and sdk_exc is None
    assert no_ids(wire_events) == no_ids(sdk_events)
    assert wire_events[0]["type"] == "message_start" and wire_events[-1] == {"type": "message_stop"}
    assert len(wire_events) > 4


@aio
async def test_same_message_from_create_as_the_sdk():
    with FakeAnthropic() as fake:
        fake.script([REPLIES["tool_use"](), REPLIES["tool_use"]()])
        mine = await wire.MessagesAPI("k", fake.base_url).create(PARAMS)
        sdk_api = SDKMessagesAPI("k", fake.base_url)
        theirs = await sdk_api.create(PARAMS)
        await sdk_api.aclose()
        fake.assert_done()
    assert no_ids(mine) == no_ids(theirs) and [b["type"] for b in mine["content"]] == ["text", "tool_use", "tool_use"]
    assert not fake.requests[0].streaming


FAULTS = {
    "429": lambda: http_error(429, "slow down", headers={"retry-after": "7"}),
    "529": lambda: http_error(529),
    "500": lambda: http_error(500, "boom"),
    "401": lambda: http_error(401),
    "404": lambda: http_error(404, "model: claude-nope"),
    "400_too_long": lambda: http_error(400, "prompt is too long: 250000 tokens > 200000 maximum"),
    "break": lambda: reply(text("partial answer that is long enough"), break_after=4),
    "malformed": lambda: reply(text("partial"), malformed_after=3),
    "error_event": lambda: reply(text("partial"), error_event_after=3),
}


@pytest.mark.parametrize("name", sorted(FAULTS))
@aio
async def test_same_fault_same_classification(name):
    with FakeAnthropic() as fake:
        fake.script([FAULTS[name](), FAULTS[name]()])
        got = await both(fake.base_url)
    (wire_events, wire_exc), (sdk_events, sdk_exc) = got["wire"], got["sdk"]
    assert no_ids(wire_events) == no_ids(sdk_events)
    assert wire_exc is not None and sdk_exc is not None
    mine, theirs = classify(wire_exc, "claude-nope"), classify(sdk_exc, "claude-nope")
    assert (mine.kind, mine.status, mine.retryable) == (theirs.kind, theirs.status, theirs.retryable)
    if isinstance(wire_exc, wire.APIStatusError):
        assert str(mine) == str(theirs)
        assert wire_exc.body == sdk_exc.body
    if name == "429":
        client = AnthropicClient("k", "http://127.0.0.1:9")
        assert client.backoff(1, wire_exc) == client.backoff(1, sdk_exc) == 7.0


@aio
async def test_wrong_key_is_an_auth_error_on_both():
    with FakeAnthropic(api_key="sk-right") as fake:
        got = await both(fake.base_url, key="sk-wrong")
    for _, exc in got.values():
        err = classify(exc)
        assert err.kind == "auth" and not err.retryable and "ANTHROPIC_API_KEY" in str(err)


@aio
async def test_connection_refused_is_retryable_connection_error():
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    events, exc = await events_of(wire.MessagesAPI("k", f"http://127.0.0.1:{port}"))
    assert events == [] and isinstance(exc, wire.APIConnectionError) and not exc.mid_stream
    err = classify(exc)
    assert err.kind == "connection" and err.retryable and str(err).startswith("Could not reach the API")


# ---------------------------------------------------------------------------------- raw SSE server


def sse_body(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


START = {"type": "message_start", "message": {
    "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m",
    "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1,
                                                          "cache_creation_input_tokens": None}}}
BLOCK = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "", "citations": None}}
DELTA = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "héllo"}}
STOP = {"type": "content_block_stop", "index": 0}
MDELTA = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
          "usage": {"output_tokens": 2}}
MSTOP = {"type": "message_stop"}


async def serve_raw(body: bytes, pieces: int = 1, status: str = "200 OK") -> tuple[asyncio.AbstractServer, str]:
    """An HTTP/1.1 server that answers every request with ``body`` as an event stream, written in
    ``pieces`` parts (split anywhere, mid-line and mid-character included) and then closed."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(next((ln.split(b":")[1] for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length")),
                          b"0"))
        await reader.readexactly(length)
        writer.write(f"HTTP/1.1 {status}\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".encode())
        step = max(1, len(body) // pieces)
        for i in range(0, len(body), step):
            writer.write(body[i:i + step])
            await writer.drain()
            await asyncio.sleep(0.002)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


EXPECTED = [
    {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                                          "model": "m", "usage": {"input_tokens": 3, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    DELTA, STOP, {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    MSTOP,
]


@pytest.mark.parametrize("variant", ["plain", "crlf", "comments_and_ping", "multiline_data", "split_bytes",
                                     "unknown_and_unnamed_events", "no_final_blank_line"])
@aio
async def test_sse_edge_cases_parse_like_the_sdk(variant):
    body = sse_body([START, BLOCK, DELTA, STOP, MDELTA, MSTOP])
    pieces = 1
    if variant == "crlf":
        body = body.replace(b"\n", b"\r\n")
    elif variant == "comments_and_ping":
        body = (b": keep-alive comment\n\n" + sse_body([START]) + b"event: ping\ndata: {\"type\": \"ping\"}\n\n"
                + b"id: 7\nretry: 1000\n" + sse_body([BLOCK, DELTA, STOP, MDELTA, MSTOP]))
    elif variant == "multiline_data":  # one JSON value over three data lines, joined with "\n"
        d = json.dumps(DELTA).replace(", ", ",\ndata: ", 2)
        body = sse_body([START, BLOCK]) + f"event: content_block_delta\ndata: {d}\n\n".encode() + \
            sse_body([STOP, MDELTA, MSTOP])
    elif variant == "split_bytes":
        pieces = len(body) // 3  # three bytes a write: "é" is cut in two
    elif variant == "unknown_and_unnamed_events":
        body = (sse_body([START]) + b"event: future_event\ndata: {\"type\": \"future_event\"}\n\n"
                + b"data: {\"type\": \"content_block_delta\", \"index\": 0}\n\n" + sse_body([BLOCK, DELTA, STOP, MDELTA, MSTOP]))
    elif variant == "no_final_blank_line":
        body = body[:-1]
    server, url = await serve_raw(body, pieces)
    async with server:
        mine, mine_exc = await events_of(wire.MessagesAPI("k", url))
        theirs, theirs_exc = await events_of(SDKMessagesAPI("k", url))
    assert mine_exc is None and theirs_exc is None
    # An event cut off before its blank line is not dispatched (WHATWG SSE), by either.
    expected = EXPECTED[:-1] if variant == "no_final_blank_line" else EXPECTED
    assert mine == expected
    assert theirs == expected


@aio
async def test_error_status_with_a_non_json_body():
    server, url = await serve_raw(b"<html>502 Bad Gateway</html>", status="502 Bad Gateway")
    async with server:
        events, exc = await events_of(wire.MessagesAPI("k", url))
    assert events == [] and isinstance(exc, wire.APIStatusError) and exc.status_code == 502
    err = classify(exc)
    assert err.kind == "server" and err.retryable and "Bad Gateway" in str(err)


@aio
async def test_client_retries_a_502_then_streams(fake_anthropic):
    fake_anthropic.script([http_error(502, "bad gateway"), reply(text("ok"))])
    client = AnthropicClient("k", fake_anthropic.base_url, base_delay_s=0.001)
    waits: list[tuple[int, float]] = []
    events = [e async for e in client.stream(ModelRequest(model="m", messages=[{"role": "user", "content": "x"}]),
                                              on_retry=lambda a, m, d, t: waits.append((a, d)))]
    await client.aclose()
    fake_anthropic.assert_done()
    assert len(waits) == 1 and events[-1] == {"type": "message_stop"}
    assert fake_anthropic.requests[1].headers["x-api-key"] == "k"
    assert fake_anthropic.requests[1].headers["anthropic-version"] == "2023-06-01"
    assert fake_anthropic.requests[1].headers["user-agent"].startswith("desktop-agent/")


def test_importing_the_client_does_not_import_the_sdk():
    import subprocess
    import sys

    code = ("import sys; import desktop_agent.model.anthropic_client, desktop_agent.app.session; "
            "print(sorted(m for m in sys.modules if m == 'anthropic' or m.startswith('anthropic.'))[:3])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unknown_transport_is_a_clear_error():
    with pytest.raises(ModelError) as exc:
        AnthropicClient("k", transport="grpc")
    assert "Unknown API transport 'grpc'" in str(exc.value)


# ------------------------------------------------------------------------------ TLS (the context loaded beside start-up)


def _self_signed(folder: Any, name: str) -> tuple[str, str]:
    """A real certificate for 127.0.0.1 (``openssl req -x509``) and its key."""
    import subprocess

    cert, key = folder / f"{name}.pem", folder / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    return str(cert), str(key)


class _TLSServer:
    """An HTTPS server on 127.0.0.1 answering every POST with one short SSE reply."""

    def __init__(self, cert: str, key: str):
        import http.server
        import ssl
        import threading

        body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in [
            {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                  "content": [], "model": "m", "usage": {"input_tokens": 1}}},
            {"type": "message_stop"}]).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@aio
async def test_https_is_verified_against_the_ca_store_the_background_load_read(tmp_path, monkeypatch):
    """The TLS context comes from a worker thread now; it must still be httpx2's verifying default: the server's
    certificate named by ``SSL_CERT_FILE`` is trusted, and the same server is refused under another CA file."""
    cert, key = _self_signed(tmp_path, "server")
    other, _ = _self_signed(tmp_path, "other")
    server = _TLSServer(cert, key)
    try:
        monkeypatch.setenv("SSL_CERT_FILE", cert)
        events, exc = await events_of(wire.MessagesAPI("k", server.url))
        assert exc is None and [e["type"] for e in events] == ["message_start", "message_stop"]

        monkeypatch.setenv("SSL_CERT_FILE", other)  # fail closed: an unknown certificate is never accepted
        events, exc = await events_of(wire.MessagesAPI("k", server.url))
        assert events == [] and isinstance(exc, wire.APIConnectionError)
        assert "CERTIFICATE_VERIFY_FAILED" in str(exc)
    finally:
        server.close()


@aio
async def test_a_ca_file_that_cannot_be_read_still_raises_the_clients_own_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    with pytest.raises(OSError) as direct:
        wire.httpx2.AsyncClient()
    api = wire.MessagesAPI("k", "https://127.0.0.1:9")  # the load failed on its thread: nothing raised yet
    with pytest.raises(type(direct.value)):
        await api.stream(PARAMS).__anext__()
    await api.aclose()
