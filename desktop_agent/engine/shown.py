"""The protocol order (SPEC App. C): a front end is shown a tool_use before anything happens about it.

Each finished content block goes out as one ``AssistantBlock``; for a tool_use, ``show`` returns a *gate* that
is done once the consumer of ``query()`` has taken that event (it asked for the next one, ``taken``). The
scheduler starts a call only after its gate, on the streaming and the batch path alike (``shown`` waits for
a whole reply's), so a call's hooks and permission requests always follow the call's ``assistant`` line.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from desktop_agent.core.events import AgentEvent, AssistantBlock
from desktop_agent.core.messages import new_uuid


class ShownBlocks:
    """The blocks of one query shown so far and the gates of their tool calls."""

    def __init__(self, put: Callable[[AgentEvent], None], model: str):
        self._put = put
        self._model = model
        self._reply: list[dict[str, Any]] = []  # blocks shown for the current reply
        self._tool_gates: dict[str, asyncio.Future[None]] = {}  # by tool_use id
        self._event_gates: dict[int, asyncio.Future[None]] = {}  # by id() of the AssistantBlock event

    def new_reply(self) -> None:
        self._reply = []

    def show(self, block: dict[str, Any], message: dict[str, Any]) -> asyncio.Future[None] | None:
        """Emit one finished content block (``AssistantBlock``) once; for a tool_use, return its gate."""
        if any(b is block for b in self._reply):
            return self._tool_gates.get(str(block.get("id"))) if block.get("type") == "tool_use" else None
        self._reply.append(block)
        msg: dict[str, Any] = {"id": message.get("id") or f"msg_{new_uuid()}", "type": "message",
                               "role": "assistant", "model": message.get("model") or self._model,
                               "content": [block], "stop_reason": None, "stop_sequence": None,
                               "usage": dict(message.get("usage") or {})}
        event = AssistantBlock(message=msg)
        gate: asyncio.Future[None] | None = None
        if block.get("type") == "tool_use":
            gate = asyncio.get_running_loop().create_future()
            self._tool_gates[str(block.get("id"))] = gate
            self._event_gates[id(event)] = gate
        self._put(event)
        return gate

    def gate(self, tool_use_id: str) -> asyncio.Future[None] | None:
        return self._tool_gates.get(tool_use_id)

    def taken(self, event: object) -> None:
        """The consumer has handled ``event`` (it asked for the next one): open the gate of its call."""
        gate = self._event_gates.pop(id(event), None)
        if gate is not None and not gate.done():
            gate.set_result(None)

    def release(self) -> None:
        """The query ends: no call waits for a consumer that is gone."""
        for gate in [*self._event_gates.values(), *self._tool_gates.values()]:
            if not gate.done():
                gate.set_result(None)
        self._event_gates.clear()

    async def shown(self, blocks: list[dict[str, Any]]) -> None:
        """Wait until the consumer has taken the AssistantBlock of every tool_use in ``blocks``."""
        gates = [self._tool_gates[str(b.get("id"))] for b in blocks if str(b.get("id")) in self._tool_gates]
        pending = [g for g in gates if not g.done()]
        if pending:
            await asyncio.wait([asyncio.shield(g) for g in pending])
