"""engine/sink.py: a call's events leave through its slot, its ToolCallStarted first (by construction)."""

from __future__ import annotations

from typing import Any

from desktop_agent.core.events import PermissionResolved, ToolCallProgress, ToolCallStarted
from desktop_agent.core.permission import PermissionReply
from desktop_agent.engine.sink import EventSink


def resolved(tool_use_id: str) -> PermissionResolved:
    return PermissionResolved(request_id=f"req_{tool_use_id}", tool_use_id=tool_use_id,
                              reply=PermissionReply(behavior="allow"))


def started(tool_use_id: str) -> ToolCallStarted:
    return ToolCallStarted(tool_use_id=tool_use_id, name="Read", input={}, summary="")


def test_a_slot_is_born_by_sending_its_started_event_and_passes_the_rest_on_in_order():
    out: list[Any] = []
    sink = EventSink(out.append)
    a = sink.open(started("A"))
    b = sink.open(started("B"))
    a.progress("A", {"step": 1})
    b.emit(resolved("B"))
    a.emit(resolved("A"))
    assert [(type(e).__name__, e.tool_use_id) for e in out] == [
        ("ToolCallStarted", "A"), ("ToolCallStarted", "B"), ("ToolCallProgress", "A"),
        ("PermissionResolved", "B"), ("PermissionResolved", "A")]
    assert a.pending == [] and b.pending == []


def test_without_put_each_slot_keeps_its_events_until_taken():
    changes: list[int] = []
    sink = EventSink(changed=lambda: changes.append(1))
    slot = sink.open(started("A"))
    slot.progress("A", {"step": 1})
    kept = slot.take()
    assert [type(e) for e in kept] == [ToolCallStarted, ToolCallProgress] and slot.take() == []
    assert len(changes) == 2
