"""``EventSink``: one per round of tool calls, the ordered way a call's events leave the engine.

A call gets its ``CallSlot`` from ``EventSink.open``, which sends the call's ``ToolCallStarted`` first; the call
runs with a context whose ``emit`` (the permission gateway's asked/answered events) and ``on_progress`` go to
that slot. So a call's started → asked → answered → progress events leave in that order *by construction*: no
event of a call can exist before its slot, and the slot is born by sending the started event. (The call's
``ToolCallFinished`` follows when the loop delivers its result, after the call has ended.)

With ``put`` the events go straight on (the loop's one event queue, in the order they happen); without it
(the scheduler on its own, in tests and benchmarks) each slot keeps them until ``take``.
"""

from __future__ import annotations

from typing import Any, Callable

from desktop_agent.core.events import ToolCallProgress, ToolCallStarted


class CallSlot:
    """The ordered events of one tool call."""

    __slots__ = ("tool_use_id", "_sink", "pending")

    def __init__(self, sink: EventSink, started: ToolCallStarted):
        self.tool_use_id = started.tool_use_id
        self._sink = sink
        self.pending: list[Any] = []
        self.emit(started)

    def emit(self, event: Any) -> None:
        """An event of this call (``ctx.emit`` of the call's context)."""
        put = self._sink.put
        if put is not None:
            put(event)
        else:
            self.pending.append(event)
            self._sink.changed()

    def progress(self, tool_use_id: str, data: Any) -> None:
        """``ctx.on_progress`` of the call's context: UI-only progress, never sent to the model."""
        self.emit(ToolCallProgress(tool_use_id=tool_use_id, data=data))

    def take(self) -> list[Any]:
        """The events kept so far (only without ``put``), oldest first."""
        out, self.pending = self.pending, []
        return out


class EventSink:
    """The round's tool events: one ``CallSlot`` per started call."""

    def __init__(self, put: Callable[[Any], None] | None = None, changed: Callable[[], None] | None = None):
        self.put = put
        self._changed = changed

    def open(self, started: ToolCallStarted) -> CallSlot:
        """The slot of a call that starts now; its first event is ``started``."""
        return CallSlot(self, started)

    def changed(self) -> None:
        if self._changed is not None:
            self._changed()
