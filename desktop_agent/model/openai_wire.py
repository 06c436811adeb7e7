"""OpenAI-compatible providers on the wire: Anthropic-shaped requests and events over chat completions.

``ChatCompletionsAPI`` is a transport for ``AnthropicClient`` (``transport="openai"``), like
``wire.MessagesAPI``: ``stream(params)`` takes the Messages API params the engine builds, posts
``{base_url}/chat/completions`` with ``stream: true``, reads the SSE ``chat.completion.chunk`` stream
and yields the **Anthropic raw events** the loop consumes unchanged (``message_start``,
``content_block_start``/``delta``/``stop``, ``message_delta``, ``message_stop``); ``create(params)``
converts a non-streaming ``chat.completion`` into a Messages API message. Retries, the watchdog and
error classification stay in ``AnthropicClient``: HTTP errors raise ``wire.APIStatusError`` with the
provider's body (OpenAI's ``{"error": {"message", "type"}}`` reads the same), transport failures
``wire.APIConnectionError``. It runs in the process — no proxy (SPEC §7.2's conversion, done here).

Mapping (SPEC §7.2; call ids are kept unchanged):
- ``system`` blocks → one ``system`` message; ``tools[].input_schema`` → ``tools[].function.parameters``.
- assistant ``text`` → ``content``; ``tool_use`` → ``tool_calls[]`` (arguments as JSON); thinking skipped.
- user ``tool_result`` → a ``role: "tool"`` message per result (its text blocks; ``is_error`` is not
  sent); images in a tool result follow as a user message, since tool messages carry text only;
  user ``image`` blocks → ``image_url`` parts with a ``data:`` URL.
- ``max_tokens`` is not sent (the provider's default applies; local servers reject values over
  their context); ``stream_options.include_usage`` asks for the usage chunk.
- Streamed tool calls are collected per ``index`` and emitted as one ``tool_use`` block when the next
  call starts or the stream ends; arguments that are not JSON become ``{"raw": <string>}``.
- ``finish_reason``: ``stop`` → ``end_turn`` (``tool_use`` when calls were made), ``tool_calls`` →
  ``tool_use``, ``length`` → ``max_tokens``, ``content_filter`` → ``refusal``. Usage:
  ``prompt_tokens`` (less ``cached_tokens``) → ``input_tokens``, ``completion_tokens`` →
  ``output_tokens``, cached → ``cache_read_input_tokens``.
- A stream that ends with neither ``finish_reason`` nor ``[DONE]`` was cut: ``APIConnectionError``.

Why not the ``openai`` package: measured on this 2-core box, ``import openai`` (3.57) takes
0.40–0.48 s and 840 modules (50 MB RSS) for what is, for us, one POST and SSE lines; this module
adds nothing to start-up beyond ``httpx2``, which the Anthropic wire client already loads.
"""

from __future__ import annotations

import json
from typing import Any, AsyncGenerator, Mapping

import httpx2

from desktop_agent import __version__
from desktop_agent.model.wire import APIConnectionError, APIStatusError, connection_error
from desktop_agent.util.input_guard import MAX_INPUT_DEPTH, clip_json_text

DEFAULT_BASE_URL = "https://api.openai.com/v1"
FINISH_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
                  "length": "max_tokens", "content_filter": "refusal"}


# --------------------------------------------------------------------------- request conversion
def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _image_part(block: dict[str, Any]) -> dict[str, Any] | None:
    source = block.get("source") or {}
    if source.get("type") == "base64":
        url = f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    elif source.get("type") == "url":
        url = str(source.get("url", ""))
    else:
        return None
    return {"type": "image_url", "image_url": {"url": url}}


def _user_messages(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in content or []:
        btype = block.get("type")
        if btype == "tool_result":
            inner = block.get("content")
            out.append({"role": "tool", "tool_call_id": block.get("tool_use_id", ""), "content": _text_of(inner)})
            images = [p for b in (inner if isinstance(inner, list) else [])
                      if isinstance(b, dict) and b.get("type") == "image" and (p := _image_part(b))]
            if images:
                parts.append({"type": "text", "text": f"Image(s) from tool result {block.get('tool_use_id', '')}:"})
                parts.extend(images)
        elif btype == "text" and block.get("text"):
            parts.append({"type": "text", "text": block["text"]})
        elif btype == "image":
            part = _image_part(block)
            if part:
                parts.append(part)
    if parts:
        if all(p["type"] == "text" for p in parts):
            out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
        else:
            out.append({"role": "user", "content": parts})
    return out


def _assistant_message(content: Any) -> dict[str, Any]:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    texts = [b.get("text", "") for b in content or [] if b.get("type") == "text" and b.get("text")]
    calls = [{"id": b.get("id", ""), "type": "function",
              "function": {"name": b.get("name", ""), "arguments": json.dumps(b.get("input") or {},
                                                                             ensure_ascii=False)}}
             for b in content or [] if b.get("type") == "tool_use"]
    msg: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) if texts else (None if calls else "")}
    if calls:
        msg["tool_calls"] = calls
    return msg


def to_chat_request(params: Mapping[str, Any]) -> dict[str, Any]:
    """Messages API params → a chat completions request body (without ``stream``)."""
    messages: list[dict[str, Any]] = []
    system = params.get("system")
    system_text = system if isinstance(system, str) else _text_of(system or [])
    if system_text:
        messages.append({"role": "system", "content": system_text})
    for m in params.get("messages") or []:
        if m.get("role") == "assistant":
            messages.append(_assistant_message(m.get("content")))
        else:
            messages.extend(_user_messages(m.get("content")))
    body: dict[str, Any] = {"model": params.get("model", ""), "messages": messages}
    tools = [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                               "parameters": t.get("input_schema") or {"type": "object"}}}
             for t in params.get("tools") or [] if t.get("name") and t.get("name") != "BatchTool"]
    if tools:
        body["tools"] = tools
    for key in ("temperature", "top_p", "stop_sequences"):
        if key in params:
            body["stop" if key == "stop_sequences" else key] = params[key]
    return body


# --------------------------------------------------------------------------- response conversion
def _usage(raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    prompt = int(raw.get("prompt_tokens") or 0)
    given = raw.get("prompt_tokens_details")
    details: dict[str, Any] = given if isinstance(given, dict) else {}
    cached = int(details.get("cached_tokens") or 0)
    return {"input_tokens": max(0, prompt - cached), "output_tokens": int(raw.get("completion_tokens") or 0),
            "cache_read_input_tokens": cached}


def _arguments(raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:  # clipped first, as the Anthropic stream's tool input is: 10,000 nested brackets must not recurse
        value = json.loads(clip_json_text(raw, MAX_INPUT_DEPTH + 1))
    except (ValueError, RecursionError):
        return {"raw": raw}
    return value if isinstance(value, dict) else {"raw": raw}


def _stop_reason(finish: str | None, made_calls: bool) -> str:
    reason = FINISH_REASONS.get(finish or "stop", "end_turn")
    return "tool_use" if made_calls and reason == "end_turn" else reason


def from_chat_completion(body: dict[str, Any]) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` → a Messages API message."""
    choice = (body.get("choices") or [{}])[0]
    msg = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    if msg.get("content"):
        content.append({"type": "text", "text": _text_of(msg["content"])})
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        content.append({"type": "tool_use", "id": call.get("id") or f"call_{len(content)}",
                        "name": fn.get("name", ""), "input": _arguments(fn.get("arguments") or "")})
    return {"id": body.get("id", "msg_openai"), "type": "message", "role": "assistant",
            "model": body.get("model", ""), "content": content,
            "stop_reason": _stop_reason(choice.get("finish_reason"), bool(msg.get("tool_calls"))),
            "stop_sequence": None, "usage": _usage(body.get("usage"))}


class ChunkConverter:
    """Feeds ``chat.completion.chunk`` dicts, returns the Anthropic raw events each one completes."""

    def __init__(self) -> None:
        self.started = False
        self.index = -1  # index of the open content block
        self.open: str | None = None  # "text" while a text block is open
        self.calls: dict[int, dict[str, Any]] = {}  # provider index → {id, name, args}
        self.call_order: list[int] = []
        self.emitted_calls = 0
        self.finish: str | None = None
        self.usage: dict[str, int] = {}
        self.done = False

    def _start(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        self.started = True
        return [{"type": "message_start", "message": {
            "id": chunk.get("id") or "msg_openai", "type": "message", "role": "assistant",
            "model": chunk.get("model", ""), "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0}}}]

    def _close_text(self) -> list[dict[str, Any]]:
        if self.open != "text":
            return []
        self.open = None
        return [{"type": "content_block_stop", "index": self.index}]

    def _flush_calls(self, keep_last: bool) -> list[dict[str, Any]]:
        """Emit collected tool calls (all but the one still streaming when ``keep_last``)."""
        out: list[dict[str, Any]] = []
        pending = self.call_order[self.emitted_calls:]
        if keep_last and pending:
            pending = pending[:-1]
        for k in pending:
            call = self.calls[k]
            self.index += 1
            out.append({"type": "content_block_start", "index": self.index, "content_block": {
                "type": "tool_use", "id": call["id"] or f"call_{k}", "name": call["name"], "input": {}}})
            out.append({"type": "content_block_delta", "index": self.index, "delta": {
                "type": "input_json_delta",
                "partial_json": json.dumps(_arguments(call["args"]), ensure_ascii=False)}})
            out.append({"type": "content_block_stop", "index": self.index})
            self.emitted_calls += 1
        return out

    def feed(self, chunk: dict[str, Any]) -> list[dict[str, Any]]:
        if isinstance(chunk.get("error"), dict):  # an in-stream error: its numeric code, else a server error
            code = str(chunk["error"].get("code", ""))
            raise APIStatusError(int(code) if code.isdigit() else 500, chunk)
        out = [] if self.started else self._start(chunk)
        if chunk.get("usage"):
            self.usage = _usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if text:
                if self.open != "text":
                    out += self._flush_calls(keep_last=False)
                    self.index += 1
                    self.open = "text"
                    out.append({"type": "content_block_start", "index": self.index,
                                "content_block": {"type": "text", "text": ""}})
                out.append({"type": "content_block_delta", "index": self.index,
                            "delta": {"type": "text_delta", "text": text}})
            for tc in delta.get("tool_calls") or []:
                k = int(tc.get("index", len(self.call_order)))
                fn = tc.get("function") or {}
                if k not in self.calls:
                    out += self._close_text()
                    self.calls[k] = {"id": tc.get("id") or "", "name": fn.get("name") or "", "args": ""}
                    self.call_order.append(k)
                    out += self._flush_calls(keep_last=True)
                call = self.calls[k]
                if tc.get("id") and not call["id"]:
                    call["id"] = tc["id"]
                if fn.get("name") and not call["name"]:
                    call["name"] = fn["name"]
                call["args"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]
        return out

    def finish_events(self) -> list[dict[str, Any]]:
        out = self._start({}) if not self.started else []
        out += self._close_text() + self._flush_calls(keep_last=False)
        stop = _stop_reason(self.finish, bool(self.call_order))
        out.append({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": dict(self.usage) or {"output_tokens": 0}})
        out.append({"type": "message_stop"})
        self.done = True
        return out


class ChatCompletionsAPI:
    """``POST {base_url}/chat/completions`` with a bearer key (optional: local servers need none)."""

    def __init__(self, api_key: str, base_url: str | None = None, *, timeout_s: float = 600.0,
                 default_headers: Mapping[str, str] | None = None, auth_token: str | None = None):
        self.url = (base_url or DEFAULT_BASE_URL).rstrip("/") + "/chat/completions"
        headers = {"content-type": "application/json", "accept": "application/json",
                   "user-agent": f"desktop-agent/{__version__}"}
        key = api_key or auth_token
        if key:
            headers["authorization"] = f"Bearer {key}"
        headers.update(default_headers or {})
        self.headers = headers
        self.http = httpx2.AsyncClient(timeout=httpx2.Timeout(timeout_s, connect=10.0))

    async def stream(self, params: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        body = dict(to_chat_request(params), stream=True, stream_options={"include_usage": True})
        data = json.dumps(body, ensure_ascii=False).encode()
        conv = ChunkConverter()
        started = False
        try:
            async with self.http.stream("POST", self.url, content=data, headers=self.headers) as response:
                started = True
                if response.status_code >= 400:
                    raise APIStatusError(response.status_code, _parse(await response.aread()), response.headers)
                lines: list[str] = []
                # The body is read to its end even after [DONE] (servers close right after it): leaving httpx2's
                # byte streams half-read leaves async generators for the garbage collector to close off-loop.
                async for line in response.aiter_lines():
                    if conv.done:
                        continue
                    if line:
                        name, _, value = line.partition(":")
                        if name == "data":
                            lines.append(value[1:] if value.startswith(" ") else value)
                        continue
                    if not lines:
                        continue
                    payload, lines = "\n".join(lines), []
                    if payload.strip() == "[DONE]":
                        for ev in conv.finish_events():
                            yield ev
                        continue
                    chunk = json.loads(payload)  # ValueError → classified as a malformed event
                    if not isinstance(chunk, dict):
                        raise ValueError(f"an SSE chunk whose data is not an object: {payload[:200]!r}")
                    for ev in conv.feed(chunk):
                        yield ev
        except httpx2.HTTPError as exc:
            raise connection_error(exc, started) from exc
        if conv.done:
            return
        if conv.finish is None:
            raise APIConnectionError("the stream ended before the provider finished the reply", mid_stream=True)
        for ev in conv.finish_events():  # finish_reason seen but no [DONE] (some servers omit it)
            yield ev

    async def create(self, params: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(to_chat_request(params), ensure_ascii=False).encode()
        try:
            response = await self.http.post(self.url, content=data, headers=self.headers)
        except httpx2.HTTPError as exc:
            raise connection_error(exc) from exc
        parsed = _parse(response.content)
        if response.status_code >= 400:
            raise APIStatusError(response.status_code, parsed, response.headers)
        if not isinstance(parsed, dict):
            raise ValueError(f"the provider's response is not a JSON object: {str(parsed)[:200]!r}")
        return from_chat_completion(parsed)

    async def aclose(self) -> None:
        await self.http.aclose()


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


MAX_MODELS = 500  # a listing longer than this is cut (OpenRouter lists ~300)


def list_models(base_url: str | None, api_key: str | None = None, *, timeout_s: float = 5.0) -> list[str]:
    """``GET {base_url}/models``: the ids of the models an OpenAI-compatible server offers (Ollama, LM Studio, vLLM,
    llama.cpp and OpenRouter all answer it), sorted, at most ``MAX_MODELS``. Blocking: call it on a worker thread.
    Raises ``APIStatusError`` / ``APIConnectionError`` like a request, and ``ValueError`` for a body that is not
    ``{"data": [{"id": …}, …]}``."""
    url = (base_url or DEFAULT_BASE_URL).rstrip("/") + "/models"
    headers = {"accept": "application/json", "user-agent": f"desktop-agent/{__version__}"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    try:
        response = httpx2.get(url, headers=headers, timeout=httpx2.Timeout(timeout_s, connect=min(timeout_s, 3.0)))
    except httpx2.HTTPError as exc:
        raise connection_error(exc) from exc
    if response.status_code >= 400:
        raise APIStatusError(response.status_code, _parse(response.content), response.headers)
    body = _parse(response.content)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise ValueError(f"{url} did not answer with a model list")
    ids = {str(m["id"]).strip() for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)}
    return sorted(i for i in ids if i and len(i) <= 200 and i.isprintable())[:MAX_MODELS]
