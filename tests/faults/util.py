"""Shared helpers of the fault suite: run one query and check the transcript it produced.

``run_query`` drives ``desktop_agent.engine.loop.query`` to its ``TurnFinished`` and keeps every event and
transcript entry. ``api_pairing_problems`` checks what the API would check (after ``normalize_for_api``):
roles alternate, the first message is the user's, every tool_use is answered exactly once in the next
user message, no stray or duplicate tool_result. ``process_alive`` / ``proc_status_kb`` read /proc.
"""

from __future__ import annotations

import os
from typing import Any

from desktop_agent.engine.params import QueryParams
from desktop_agent.core.messages import normalize_for_api, user_entry
from tests.engine.helpers import TurnRun

SYSTEM = [{"type": "text", "text": "You are a test agent."}]


class QueryRun(TurnRun):
    def __init__(self, client: Any, ctx: Any, prompt: str = "go", history: list[dict[str, Any]] | None = None,
                 **kw: Any):
        self.entries: list[dict[str, Any]] = list(history or [])
        self.user = user_entry(prompt)
        self.entries.append(self.user)
        self.events: list[Any] = []
        self.params = QueryParams(messages=list(self.entries), ctx=ctx, client=client, model="claude-fake-1",
                                  system_prompt=SYSTEM, on_message=self.entries.append, **kw)



def api_pairing_problems(entries: list[dict[str, Any]]) -> list[str]:
    """Problems the Messages API would reject (empty list when the sequence is valid)."""
    messages = normalize_for_api(entries)
    problems: list[str] = []
    if not messages or messages[0]["role"] != "user":
        problems.append("first message is not the user's")
    for i, m in enumerate(messages):
        if i and m["role"] == messages[i - 1]["role"]:
            problems.append(f"roles do not alternate at {i}")
        if m["role"] == "assistant":
            uses = [b["id"] for b in m["content"] if b.get("type") == "tool_use"]
            if len(uses) != len(set(uses)):
                problems.append(f"duplicate tool_use ids at {i}")
            if uses:
                nxt = messages[i + 1] if i + 1 < len(messages) else None
                if nxt is None or nxt["role"] != "user":
                    problems.append(f"tool_use at {i} has no following user message")
                    continue
                results = [b["tool_use_id"] for b in nxt["content"] if b.get("type") == "tool_result"]
                if sorted(results) != sorted(uses):
                    problems.append(f"tool_use ids {uses} answered by {results} at {i + 1}")
        else:
            results = [b["tool_use_id"] for b in m["content"] if b.get("type") == "tool_result"]
            prev = messages[i - 1] if i else None
            prev_uses = [b["id"] for b in prev["content"] if b.get("type") == "tool_use"] if prev else []
            if results and sorted(results) != sorted(prev_uses):
                problems.append(f"stray/duplicate tool_result at {i}: {results} vs {prev_uses}")
    return problems


def process_alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def proc_status_kb(field: str, pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def fd_count(pid: int | str = "self") -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))
