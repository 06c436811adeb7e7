"""Conversation messages as transcript entries, and their normalisation for the Messages API.

An entry is ``{"type": "user"|"assistant"|"system", "uuid", "parentUuid", "timestamp",
"message": {"role", "content"}, ...}`` (the JSONL line shape of SPEC §5.1). ``normalize_for_api``
turns a list of entries into the ``messages`` of a request: system entries (compact boundaries)
dropped, adjacent user messages merged, tool_results first in a user message.
"""

from __future__ import annotations

import time
import uuid as _uuid
from typing import Any


def new_uuid() -> str:
    return str(_uuid.uuid4())


def _now_iso() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def user_entry(content: str | list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": new_uuid(),
        "timestamp": _now_iso(),
        "message": {"role": "user", "content": content},
        **extra,
    }


def assistant_entry(content: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    for key in ("id", "model", "stop_reason", "usage"):
        if key in extra:
            msg[key] = extra.pop(key)
    return {"type": "assistant", "uuid": new_uuid(), "timestamp": _now_iso(), "message": msg, **extra}


def system_entry(subtype: str, content: str = "", **extra: Any) -> dict[str, Any]:
    return {"type": "system", "subtype": subtype, "uuid": new_uuid(), "timestamp": _now_iso(), "content": content, **extra}


# A change the person undid or re-applied in the changes panel (our own line type: the reference's loader reads only
# user/assistant/attachment/system entries, so it skips it; ``session.changes`` reads it back). A user entry that
# told the model about such records names their ``recordId``s under ``CHANGE_RECORDS_TOLD``.
CHANGE_RECORD = "change-revert"
CHANGE_RECORDS_TOLD = "changeRecords"


def change_record_entry(action: str, **fields: Any) -> dict[str, Any]:
    """A ``change-revert`` line: ``action`` ``revert`` or ``redo``, plus the change's fields (``session.changes``)."""
    return {"type": CHANGE_RECORD, "recordId": new_uuid(), "action": action, "timestamp": _now_iso(), **fields}


def tool_result_block(tool_use_id: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def tool_use_blocks(entry: dict[str, Any]) -> list[dict[str, Any]]:
    content = entry.get("message", {}).get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]


def tool_result_ids(entry: dict[str, Any]) -> list[str]:
    content = entry.get("message", {}).get("content")
    if not isinstance(content, list):
        return []
    return [b["tool_use_id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def text_of(entry: dict[str, Any]) -> str:
    content = entry.get("message", {}).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _as_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


_API_BLOCK_KEYS = {
    "text": ("type", "text", "cache_control", "citations"),
    "tool_use": ("type", "id", "name", "input", "cache_control"),
    "tool_result": ("type", "tool_use_id", "content", "is_error", "cache_control"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
    "image": ("type", "source", "cache_control"),
    "document": ("type", "source", "cache_control", "title"),
}


def _clean_block(block: dict[str, Any]) -> dict[str, Any]:
    keys = _API_BLOCK_KEYS.get(block.get("type", ""))
    if keys is None:
        return dict(block)
    return {k: block[k] for k in keys if k in block}


def normalize_for_api(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries → API ``messages``. Drops system entries; merges consecutive same-role messages
    (tool_results first in a user message, as the API requires)."""
    out: list[dict[str, Any]] = []
    for entry in entries:
        kind = entry.get("type")
        if kind not in ("user", "assistant"):
            continue
        msg = entry.get("message") or {}
        role = msg.get("role", kind)
        blocks = [_clean_block(b) for b in _as_blocks(msg.get("content"))]
        if role == "assistant":
            # Empty text blocks are rejected by the API.
            blocks = [b for b in blocks if not (b.get("type") == "text" and not b.get("text"))]
            if not blocks:
                continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for m in out:
        if m["role"] == "user":
            results = [b for b in m["content"] if b.get("type") == "tool_result"]
            if results:
                m["content"] = results + [b for b in m["content"] if b.get("type") != "tool_result"]
    return out
