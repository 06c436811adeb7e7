"""Raw Messages API stream events → content blocks and a whole message (``MessageAccumulator``).

The query loop feeds every raw event (a dict, exactly as the SSE ``data:`` carries it) to one
accumulator per model reply. ``feed`` returns the finished block on each ``content_block_stop`` so
the loop can queue a tool_use before the reply ends (SPEC §6.1). Tool input arrives as
``input_json_delta`` chunks split anywhere; it is parsed once, at the block's stop. Thinking
blocks keep their ``signature`` (the API rejects a thinking block sent back without it).

An event that does not fit the protocol (unknown index, a delta for the wrong block type) raises
``StreamBroken(kind="malformed")`` — the loop's fallback path then decides what to do with the
partial reply. A tool_use whose input is not complete JSON is dropped (``truncated``): legitimate
when the reply hit ``max_tokens`` (the loop asks the model to continue), a ``StreamBroken`` at
``message_stop`` otherwise.
"""

from __future__ import annotations

import json
from typing import Any

from desktop_agent.util.input_guard import MAX_INPUT_DEPTH, clip_json_text, fix_surrogates, has_surrogate_escape
from desktop_agent.model.client import StreamBroken

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _usage(raw: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    if isinstance(raw, dict):
        for key in USAGE_KEYS:
            value = raw.get(key)
            if isinstance(value, int):
                out[key] = value
    return out


class MessageAccumulator:
    """Builds one assistant message from its raw stream events."""

    __slots__ = ("message", "blocks", "_json", "completed", "started", "stopped", "truncated")

    def __init__(self) -> None:
        self.message: dict[str, Any] = {"role": "assistant", "content": [], "usage": {}}
        self.blocks: dict[int, dict[str, Any]] = {}  # index → block being built
        self._json: dict[int, list[str]] = {}
        self.completed: list[tuple[int, dict[str, Any]]] = []  # (index, block) in stop order
        self.truncated: list[tuple[int, dict[str, Any], str]] = []  # tool_use blocks whose JSON was cut
        self.started = False
        self.stopped = False

    # ------------------------------------------------------------------ feeding
    def feed(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Apply one raw event. Returns the finished block on ``content_block_stop``, else None."""
        kind = event.get("type")
        if kind == "content_block_delta":
            self._delta(event)
            return None
        if kind == "content_block_start":
            index = event.get("index")
            block = event.get("content_block")
            if not isinstance(index, int) or not isinstance(block, dict) or index in self.blocks:
                raise StreamBroken(f"malformed content_block_start: {event!r}"[:300], kind="malformed")
            block = dict(block)
            if block.get("type") == "tool_use":
                self._json[index] = []
                block["input"] = block.get("input") or {}
            elif block.get("type") == "text":
                block.setdefault("text", "")
            elif block.get("type") == "thinking":
                block.setdefault("thinking", "")
                block.setdefault("signature", "")
            self.blocks[index] = block
            return None
        if kind == "content_block_stop":
            return self._stop(event)
        if kind == "message_start":
            msg = event.get("message")
            if not isinstance(msg, dict):
                raise StreamBroken("malformed message_start", kind="malformed")
            self.started = True
            for key in ("id", "model", "role", "stop_reason", "stop_sequence"):
                if msg.get(key) is not None:
                    self.message[key] = msg[key]
            self.message["usage"] = _usage(msg.get("usage"))
            return None
        if kind == "message_delta":
            delta = event.get("delta") or {}
            if delta.get("stop_reason") is not None:
                self.message["stop_reason"] = delta["stop_reason"]
            if "stop_sequence" in delta:
                self.message["stop_sequence"] = delta["stop_sequence"]
            self.message["usage"].update(_usage(event.get("usage")))
            return None
        if kind == "message_stop":
            if self.truncated and self.message.get("stop_reason") != "max_tokens":
                raise StreamBroken(self.truncated[0][2], kind="malformed")
            self.stopped = True
            return None
        if kind in ("ping", None):
            return None
        if kind == "error":
            err = event.get("error") or {}
            raise StreamBroken(f"stream error event: {err.get('type', '')}: {err.get('message', '')}", kind="server")
        return None  # unknown event types are ignored, as the API asks clients to do

    def _open_block(self, event: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        """The index and block being built that ``event`` names, or None when it names none."""
        index = event.get("index")
        block = self.blocks.get(index) if isinstance(index, int) else None
        return (index, block) if isinstance(index, int) and block is not None else None

    def _delta(self, event: dict[str, Any]) -> None:
        found = self._open_block(event)
        delta = event.get("delta")
        if found is None or not isinstance(delta, dict):
            raise StreamBroken(f"malformed content_block_delta: {event!r}"[:300], kind="malformed")
        index, block = found
        dtype = delta.get("type")
        btype = block.get("type")
        if dtype == "text_delta" and btype == "text":
            block["text"] += delta.get("text", "")
        elif dtype == "input_json_delta" and btype == "tool_use":
            self._json[index].append(delta.get("partial_json", ""))
        elif dtype == "thinking_delta" and btype == "thinking":
            block["thinking"] += delta.get("thinking", "")
        elif dtype == "signature_delta" and btype == "thinking":
            block["signature"] = block.get("signature", "") + delta.get("signature", "")
        elif dtype == "citations_delta" and btype == "text":
            block.setdefault("citations", []).append(delta.get("citation"))
        else:
            raise StreamBroken(f"malformed delta {dtype!r} for a {btype!r} block", kind="malformed")

    def _stop(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The finished block, or None when a tool_use's input was cut off (it never becomes a call)."""
        found = self._open_block(event)
        if found is None:
            raise StreamBroken(f"malformed content_block_stop: {event!r}"[:300], kind="malformed")
        index, block = found
        if block.get("type") == "tool_use":
            text = "".join(self._json.pop(index, []))
            if text.strip():
                try:  # input nested deeper than a tool accepts is cut, so json never recurses past it
                    parsed = json.loads(clip_json_text(text, MAX_INPUT_DEPTH + 1))
                except (ValueError, RecursionError) as exc:
                    # Cut off by max_tokens (known only at message_delta) or a broken stream: the
                    # call never became a call; it is not returned, so nothing runs it.
                    del self.blocks[index]
                    self.truncated.append((index, block, f"tool_use input is not valid JSON: {exc}"))
                    return None
                block["input"] = fix_surrogates(parsed) if has_surrogate_escape(text) else parsed
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            block["text"] = fix_surrogates(block["text"])  # a lone "\ud800" would break every UTF-8 writer
        self.completed.append((index, block))
        del self.blocks[index]
        return block

    # ------------------------------------------------------------------ results
    @property
    def usage(self) -> dict[str, int]:
        return self.message["usage"]

    def completed_content(self) -> list[dict[str, Any]]:
        """The finished blocks in index order."""
        return [b for _, b in sorted(self.completed, key=lambda ib: ib[0])]

    def partial_content(self) -> list[dict[str, Any]]:
        """What survives of a reply cut short: finished blocks, plus unfinished *text* (what the user saw).

        An unfinished tool_use never became a call and needs no result (SPEC §6.3); an unfinished
        thinking block has no signature and would be rejected by the API — both are dropped.
        """
        blocks = list(self.completed)
        for index, block in self.blocks.items():
            if block.get("type") == "text" and block.get("text"):
                blocks.append((index, dict(block)))
        return [b for _, b in sorted(blocks, key=lambda ib: ib[0])]

    def final_message(self) -> dict[str, Any]:
        msg = dict(self.message)
        msg["content"] = self.completed_content()
        return msg


def message_to_events(message: dict[str, Any], chunk_size: int = 0) -> list[dict[str, Any]]:
    """A whole message (non-streaming response body) → the raw events a stream would have carried.

    Used by the scripted client and the fake server; ``chunk_size`` > 0 splits text, thinking and
    tool input into deltas of that many characters (tool input is split mid-string on purpose).
    """
    usage = dict(message.get("usage") or {})
    start_usage = {k: usage.get(k, 0) for k in USAGE_KEYS if k != "output_tokens"}
    start_usage["output_tokens"] = 1
    events: list[dict[str, Any]] = [{
        "type": "message_start",
        "message": {
            "id": message.get("id", "msg_1"), "type": "message", "role": "assistant", "content": [],
            "model": message.get("model", "claude-scripted"), "stop_reason": None, "stop_sequence": None,
            "usage": start_usage,
        },
    }]

    def chunks(text: str) -> list[str]:
        if not chunk_size or len(text) <= chunk_size:
            return [text]
        return [text[i:i + chunk_size] for i in range(0, len(text), chunk_size)]

    for index, block in enumerate(message.get("content") or []):
        btype = block.get("type")
        if btype == "text":
            events.append({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            for part in chunks(block.get("text", "")):
                events.append({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": part}})
        elif btype == "tool_use":
            events.append({"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
            raw = block.get("input")
            text = raw if isinstance(raw, str) else json.dumps(raw if raw is not None else {})
            for part in chunks(text):
                events.append({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": part}})
        elif btype == "thinking":
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            for part in chunks(block.get("thinking", "")):
                events.append({"type": "content_block_delta", "index": index,
                               "delta": {"type": "thinking_delta", "thinking": part}})
            events.append({"type": "content_block_delta", "index": index,
                           "delta": {"type": "signature_delta", "signature": block.get("signature", "")}})
        else:  # redacted_thinking and anything else arrive whole
            events.append({"type": "content_block_start", "index": index, "content_block": dict(block)})
        events.append({"type": "content_block_stop", "index": index})
    events.append({
        "type": "message_delta",
        "delta": {"stop_reason": message.get("stop_reason", "end_turn"), "stop_sequence": None},
        "usage": {"output_tokens": usage.get("output_tokens", 1)},
    })
    events.append({"type": "message_stop"})
    return events
