"""The loop's protocol order (SPEC App. C "Order on stdout"): one ``AssistantBlock`` per finished content block,
and a tool_use's call starts (``ToolCallStarted``, hooks, permission) only after the consumer of ``query()`` has
taken that block's event — on the streaming and the batch execution path alike, however slow the consumer is."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.events import AssistantBlock, AssistantMessage, ToolCallStarted, TurnFinished
from desktop_agent.engine.loop import query
from desktop_agent.engine.params import QueryParams
from desktop_agent.core.messages import user_entry
from desktop_agent.model.scripted import ScriptedModelClient, reply, text, tool_use

from tests.model.aio import aio

from .helpers import Tracker, make_tools


@pytest.mark.parametrize("streaming", [True, False])
@aio
async def test_a_call_starts_only_after_its_block_was_taken(tmp_path, streaming):
    tracker = Tracker()
    ctx = ToolUseContext(cwd=str(tmp_path), tools=make_tools(tracker))
    client = ScriptedModelClient([
        reply(text("Reading and editing."), tool_use("Read", {"file_path": "a.py"}, id="t_read"),
              tool_use("Edit", {"file_path": "a.py", "old_string": "1", "new_string": "2"}, id="t_edit")),
        reply(text("done")),
    ])
    params = QueryParams(messages=[user_entry("go")], ctx=ctx, client=client, model="m",
                         system_prompt=[{"type": "text", "text": "test"}], streaming_tool_execution=streaming)
    order: list[str] = []
    blocks: list[dict[str, Any]] = []
    async for event in query(params):
        if isinstance(event, AssistantBlock):
            [block] = event.message["content"]
            blocks.append(block)
            if block["type"] == "tool_use":
                await asyncio.sleep(0.05)  # a slow front end: nothing about this call may happen meanwhile
                assert not any(c.startswith(block["name"]) for c in tracker.calls), tracker.calls
                order.append(f"shown:{block['id']}")
        elif isinstance(event, ToolCallStarted):
            order.append(f"started:{event.tool_use_id}")
        elif isinstance(event, AssistantMessage):
            order.append("reply")
        elif isinstance(event, TurnFinished):
            assert event.reason == "completed"
    assert [b["type"] for b in blocks] == ["text", "tool_use", "tool_use", "text"]
    for tool_use_id in ("t_read", "t_edit"):
        assert order.index(f"shown:{tool_use_id}") < order.index(f"started:{tool_use_id}")
    assert tracker.calls == ["Read:a.py", "Edit:a.py"]
