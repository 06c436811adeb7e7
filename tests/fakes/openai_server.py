"""A local fake of an OpenAI-compatible chat completions server: real HTTP, real SSE ``chat.completion.chunk``.

The twin of ``anthropic_server.FakeAnthropic`` for the OpenAI-compatible provider (``--provider openai``,
``OPENAI_BASE_URL``): it plays the same ``Reply`` steps (``reply``/``text``/``tool_use``/``http_error``),
converted to what Ollama, vLLM or OpenRouter send — a first chunk with ``role``, ``content`` pieces,
``tool_calls`` pieces (``index``, the ``id`` and ``name`` in the first piece, ``arguments`` split
anywhere), a chunk with ``finish_reason``, a usage chunk (when ``stream_options.include_usage``), then
``data: [DONE]``. Non-streaming requests get a ``chat.completion``. ``GET /v1/models`` lists ``models`` (``model_listings``
records those requests). HTTP errors use OpenAI's body shape
``{"error": {"message", "type", "code"}}``; ``break_after=N`` cuts the connection after N chunks.

``base_url`` includes ``/v1`` as OpenAI's own clients expect (``OPENAI_BASE_URL=http://…/v1``). Requests
are recorded (``requests[n].body``) and checked as a real server would (``chat_problems``: every assistant
``tool_calls`` id answered by a following ``tool`` message, no ``tool`` message without its call).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, RecordedRequest, _Handler
from desktop_agent.model.scripted import Reply

_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "refusal": "content_filter"}


def chat_problems(body: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["messages must be a non-empty list"]
    open_calls: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            problems.append(f"messages[{i}]: unknown role {role!r}")
        if role == "tool":
            if m.get("tool_call_id") not in open_calls:
                problems.append(f"messages[{i}]: tool message for unknown call {m.get('tool_call_id')!r}")
            else:
                open_calls.remove(m["tool_call_id"])
            continue
        if open_calls:
            problems.append(f"messages[{i}]: tool calls without results: {', '.join(open_calls)}")
            open_calls = []
        if role == "assistant":
            open_calls = [c.get("id") for c in m.get("tool_calls") or []]
    if open_calls:
        problems.append(f"tool calls without results at the end: {', '.join(open_calls)}")
    return problems


def _pieces(s: str, size: int) -> list[str]:
    return [s[i:i + size] for i in range(0, len(s), size)] or [""]


def reply_chunks(message: dict[str, Any], size: int) -> list[dict[str, Any]]:
    """An Anthropic-shaped message as the chunks of a chat completions stream (without usage)."""
    base = {"id": "chatcmpl-" + str(message.get("id", "x")), "object": "chat.completion.chunk",
            "created": int(time.time()), "model": message.get("model", "")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])

    out = [chunk({"role": "assistant", "content": ""})]
    n_call = 0
    for block in message.get("content", []):
        if block.get("type") == "text":
            out += [chunk({"content": p}) for p in _pieces(block["text"], size)]
        elif block.get("type") == "tool_use":
            raw = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
            parts = _pieces(raw, size)
            out.append(chunk({"tool_calls": [{"index": n_call, "id": block["id"], "type": "function",
                                              "function": {"name": block["name"], "arguments": parts[0]}}]}))
            out += [chunk({"tool_calls": [{"index": n_call, "function": {"arguments": p}}]}) for p in parts[1:]]
            n_call += 1
    out.append(chunk({}, _FINISH.get(message.get("stop_reason") or "end_turn", "stop")))
    return out


def _usage(message: dict[str, Any]) -> dict[str, int]:
    u = message.get("usage") or {}
    prompt, completion = int(u.get("input_tokens", 0)), int(u.get("output_tokens", 0))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion_body(message: dict[str, Any]) -> dict[str, Any]:
    texts = [b["text"] for b in message.get("content", []) if b.get("type") == "text"]
    calls = [{"id": b["id"], "type": "function", "function": {
        "name": b["name"], "arguments": b["input"] if isinstance(b["input"], str) else json.dumps(b["input"])}}
        for b in message.get("content", []) if b.get("type") == "tool_use"]
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        msg["tool_calls"] = calls
    return {"id": "chatcmpl-" + str(message.get("id", "x")), "object": "chat.completion",
            "created": int(time.time()), "model": message.get("model", ""),
            "choices": [{"index": 0, "message": msg,
                         "finish_reason": _FINISH.get(message.get("stop_reason") or "end_turn", "stop")}],
            "usage": _usage(message)}


class _OpenAIHandler(_Handler):
    def _sse_data(self, payload: str) -> None:
        self._chunk(f"data: {payload}\n\n".encode())

    def do_GET(self) -> None:  # noqa: N802 - http.server API: GET /v1/models, as Ollama, vLLM and OpenRouter answer it
        path = self.path.split("?", 1)[0]
        owner = self.owner
        headers = {k.lower(): v for k, v in self.headers.items()}
        if path != "/v1/models":
            self._send_json(404, {"error": {"message": f"unknown path {path}", "type": "invalid_request_error",
                                            "code": "not_found"}})
            return
        with owner._lock:
            owner.model_listings.append(RecordedRequest(path=path, headers=headers, body={}))
        key = headers.get("authorization", "").removeprefix("Bearer ").strip()
        if owner.api_key is not None and key != owner.api_key:
            self._send_json(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                            "code": "invalid_api_key"}})
            return
        if owner.models_delay:
            time.sleep(owner.models_delay)
        self._send_json(200, {"object": "list", "data": [
            {"id": m, "object": "model", "created": 1700000000, "owned_by": "local"} for m in owner.models]})

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if len(raw) < length:
            self.close_connection = True
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = self.path.split("?", 1)[0]
        owner = self.owner
        if path != "/v1/chat/completions":
            self._send_json(404, {"error": {"message": f"unknown path {path}", "type": "invalid_request_error",
                                            "code": "not_found"}})
            return
        record = RecordedRequest(path=path, headers=headers, body=body)
        key = headers.get("authorization", "").removeprefix("Bearer ").strip()
        if owner.api_key is not None and key != owner.api_key:
            with owner._lock:
                owner.requests.append(record)
            self._send_json(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                            "code": "invalid_api_key"}})
            return
        if owner.validate:
            problems = chat_problems(body)
            if problems:
                with owner._lock:
                    owner.requests.append(record)
                    owner.errors.append(f"request #{len(owner.requests)} invalid: {'; '.join(problems)}")
                self._send_json(400, {"error": {"message": "; ".join(problems), "type": "invalid_request_error"}})
                return
        step = owner.next_step(record)
        if step is None:
            self._send_json(400, {"error": {"message": f"fake server: no scripted reply for request "
                                                       f"#{len(owner.requests)}", "type": "invalid_request_error"}})
            return
        if step.check is not None:
            try:
                step.check(body)  # type: ignore[arg-type]
            except AssertionError as exc:
                with owner._lock:
                    owner.errors.append(f"check failed on request #{len(owner.requests)}: {exc}")
        if step.status is not None:
            err = (step.body or {}).get("error") or {}
            self._send_json(step.status, {"error": {"message": err.get("message", "error"),
                                                    "type": err.get("type", "api_error"), "code": step.status}},
                            step.headers)
            return
        message = step.message(body.get("model") or owner.model)
        if not body.get("stream"):
            self._send_json(200, completion_body(message), step.headers)
            return
        self._stream_chat(step, message, bool((body.get("stream_options") or {}).get("include_usage")))

    def _stream_chat(self, step: Reply, message: dict[str, Any], include_usage: bool) -> None:
        chunks = reply_chunks(message, self.owner.chunk_size)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        try:
            for n, c in enumerate(chunks):
                if step.break_after is not None and n >= step.break_after:
                    self._cut()
                    return
                if step.delay:
                    time.sleep(step.delay)
                self._sse_data(json.dumps(c))
            if include_usage:
                self._sse_data(json.dumps({"id": chunks[0]["id"], "object": "chat.completion.chunk",
                                           "model": chunks[0]["model"], "choices": [], "usage": _usage(message)}))
            self._sse_data("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


class FakeOpenAI(FakeAnthropic):
    """The fake chat completions server (same script API as ``FakeAnthropic``)."""

    handler_class = _OpenAIHandler

    def __init__(self, chunk_size: int = 7, api_key: str | None = None, model: str = "local-model",
                 validate: bool = True, models: list[str] | None = None):
        super().__init__(chunk_size=chunk_size, api_key=api_key, model=model, validate=validate)
        self.models = list(models) if models is not None else [model]  # what GET /v1/models lists
        self.models_delay = 0.0  # seconds before answering GET /v1/models (a slow server)
        self.model_listings: list[RecordedRequest] = []  # the GET /v1/models requests

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@pytest.fixture
def fake_openai():
    with FakeOpenAI() as fake:
        yield fake
