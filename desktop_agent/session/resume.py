"""Loading a transcript back into a conversation (SPEC §5.3, ``loadConversationForResume``).

1. Only ``user``/``assistant``/``attachment``/``system`` entries enter the message table.
2. Order comes from the chain: from the latest message walk ``parentUuid`` back to the root,
   stopping at (and keeping) a compact boundary.
3. Interruption clean-up: ``tool_use`` blocks without a result are removed (an assistant message left
   empty goes too); assistant messages holding only thinking or whitespace are removed; an
   interrupted turn gets the ``isMeta`` user message ``Continue from where you left off.``; a
   trailing user message gets a synthetic assistant message so the sequence stays valid for the API.

   Except a call a PreToolUse hook deferred (SPEC D.6): when the chain ends with an assistant entry whose only
   tool_use is unanswered and named by a later ``hook_deferred_tool`` attachment (``deferred_record``), that
   tool_use is kept and returned as ``deferred`` (no continuation message, no synthetic reply): the session runs
   the call before the next prompt.

4. The change records no user entry has told the model about yet (``session.changes``) come back as
   ``pending_changes``: the next turn tells them.

``history_for_display`` is the desktop's view: file order, no cut at boundaries, synthetic and meta
entries hidden; the change records are kept (the changes panel marks reverted changes from them).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from desktop_agent.core.messages import (
    CHANGE_RECORD, _now_iso, assistant_entry, new_uuid, tool_result_ids, tool_use_blocks, user_entry,
)
from desktop_agent.session.changes import pending_change_records
from desktop_agent.session.store import MESSAGE_TYPES, is_compact_boundary, latest_permission_state

CONTINUE_MESSAGE = "Continue from where you left off."
NO_RESPONSE_REQUESTED = "No response requested."
SYNTHETIC_MODEL = "<synthetic>"
DEFERRED_TOOL = "hook_deferred_tool"  # the attachment type that saves a deferred call


def deferred_record(tool_use_id: str, tool_name: str, tool_input: dict[str, Any], mode: str) -> dict[str, Any]:
    """The transcript entry that saves a call a PreToolUse hook deferred (the reference's attachment)."""
    return {"type": "attachment", "uuid": new_uuid(), "timestamp": _now_iso(),
            "attachment": {"type": DEFERRED_TOOL, "toolUseID": tool_use_id, "toolName": tool_name,
                           "toolInput": tool_input, "hookName": f"PreToolUse:{tool_name}", "hookEvent": "PreToolUse",
                           "permissionMode": mode}}


def is_deferred_record(entry: dict[str, Any]) -> bool:
    att = entry.get("attachment") if entry.get("type") == "attachment" else None
    return isinstance(att, dict) and att.get("type") == DEFERRED_TOOL and isinstance(att.get("toolUseID"), str)


@dataclass
class DeferredCall:
    """The pending call of a run that ended ``tool_deferred``: its tool_use block and the reply's entry uuid."""

    block: dict[str, Any]
    assistant_uuid: str
    record: dict[str, Any]

    def wire(self) -> dict[str, Any]:
        """``deferred_tool_use`` of the result line: ``{id, name, input}``."""
        return {"id": self.block.get("id"), "name": self.block.get("name"), "input": self.block.get("input") or {}}


@dataclass
class ResumedConversation:
    messages: list[dict[str, Any]]
    # Entries this load added (continuation / synthetic messages): not yet in the file.
    added: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    removed_tool_use_ids: list[str] = field(default_factory=list)
    permission_state: dict[str, Any] | None = None
    # The uuid of the last chain message already in the file (the next record's parent).
    chain_tip: str | None = None
    # Reverts and redos of the changes panel the model was not told about yet (``session.changes``).
    pending_changes: list[dict[str, Any]] = field(default_factory=list)
    # A call a PreToolUse hook deferred, still waiting to be run (SPEC D.6).
    deferred: DeferredCall | None = None


def find_deferred(messages: list[dict[str, Any]]) -> DeferredCall | None:
    """The deferred call of a chain, if it ends with one: the last user/assistant entry is an assistant entry with
    exactly one tool_use, unanswered, that a later ``hook_deferred_tool`` record names."""
    answered: set[str] = set()
    for m in messages:
        answered.update(tool_result_ids(m))
    convo = [i for i, m in enumerate(messages) if m.get("type") in ("user", "assistant")]
    if not convo:
        return None
    last = messages[convo[-1]]
    if last.get("type") != "assistant":
        return None
    uses = tool_use_blocks(last)
    if len(uses) != 1 or uses[0].get("id") in answered:
        return None
    for m in messages[convo[-1] + 1:]:
        if is_deferred_record(m) and m["attachment"]["toolUseID"] == uses[0].get("id"):
            return DeferredCall(block=uses[0], assistant_uuid=str(last.get("uuid") or ""), record=m)
    return None


def build_chain(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation chain ending at the latest message, from the last compact boundary on."""
    table: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for e in entries:
        if e.get("type") in MESSAGE_TYPES and e.get("uuid") and not e.get("isSidechain"):
            if e["uuid"] not in table:
                order.append(e["uuid"])
            table[e["uuid"]] = e
    if not order:
        return []
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    current: dict[str, Any] | None = table[order[-1]]
    while current is not None and current["uuid"] not in seen:
        seen.add(current["uuid"])
        chain.append(current)
        if is_compact_boundary(current):
            break
        parent = current.get("parentUuid")
        current = table.get(parent) if parent else None
    chain.reverse()
    return chain


def _only_thinking_or_blank(entry: dict[str, Any]) -> bool:
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return not content.strip()
    if not isinstance(content, list) or not content:
        return True
    for b in content:
        if not isinstance(b, dict):
            return False
        kind = b.get("type")
        if kind in ("thinking", "redacted_thinking"):
            continue
        if kind == "text" and not str(b.get("text", "")).strip():
            continue
        return False
    return True


def _is_tool_result_message(entry: dict[str, Any]) -> bool:
    return entry.get("type") == "user" and bool(tool_result_ids(entry))


def clean_interrupted(messages: list[dict[str, Any]]) -> ResumedConversation:
    """Step 3 of §5.3 on a copy of ``messages`` (a deferred call is kept: ``find_deferred``)."""
    messages = [copy.deepcopy(m) for m in messages]
    deferred = find_deferred(messages)
    answered: set[str] = set()
    for m in messages:
        answered.update(tool_result_ids(m))
    if deferred is not None:
        answered.add(str(deferred.block.get("id")))
    removed: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.get("type") == "assistant":
            uses = tool_use_blocks(m)
            missing = [b for b in uses if b.get("id") not in answered]
            if missing:
                removed.extend(str(b.get("id")) for b in missing)
                ids = {id(b) for b in missing}
                m["message"]["content"] = [b for b in m["message"]["content"] if id(b) not in ids]
            if _only_thinking_or_blank(m):
                continue
        out.append(m)

    if deferred is not None:  # the chain ends with the pending call: the session runs it before the next prompt
        return ResumedConversation(messages=out, removed_tool_use_ids=removed, deferred=deferred)
    relevant = [m for m in out if m.get("type") in ("user", "assistant")]
    last = relevant[-1] if relevant else None
    interrupted = False
    added: list[dict[str, Any]] = []
    if last is not None and (_is_tool_result_message(last) or (removed and last.get("type") == "assistant")):
        interrupted = True
        cont = user_entry(CONTINUE_MESSAGE, isMeta=True)
        out.append(cont)
        added.append(cont)
        last = cont
    if last is not None and last.get("type") == "user":
        synthetic = assistant_entry([{"type": "text", "text": NO_RESPONSE_REQUESTED}], model=SYNTHETIC_MODEL,
                                    isSynthetic=True)
        out.append(synthetic)
        added.append(synthetic)
    return ResumedConversation(messages=out, added=added, interrupted=interrupted, removed_tool_use_ids=removed)


def load_conversation_for_resume(entries: list[dict[str, Any]]) -> ResumedConversation:
    chain = build_chain(entries)
    result = clean_interrupted(chain)
    result.permission_state = latest_permission_state(entries)
    result.chain_tip = chain[-1]["uuid"] if chain else None
    result.pending_changes = pending_change_records(entries)
    return result


def is_hidden_in_history(entry: dict[str, Any]) -> bool:
    if entry.get("type") == CHANGE_RECORD:
        return False
    if entry.get("type") not in ("user", "assistant", "system"):
        return True
    if entry.get("isMeta") or entry.get("isSynthetic") or entry.get("isEphemeral"):
        return True
    if entry.get("type") == "assistant" and (entry.get("message") or {}).get("model") == SYNTHETIC_MODEL:
        return True
    return False


def history_for_display(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the desktop shows for a past session: file order, pre-compaction messages kept."""
    seen: set[str] = set()
    out = []
    for e in entries:
        if is_hidden_in_history(e):
            continue
        uid = e.get("uuid")
        if uid in seen:
            continue
        if uid:
            seen.add(uid)
        out.append(e)
    return out
