"""The query loop against the scripted model (SPEC §2, §6.3–6.5; §9 items 1–10, 98–99 and the loop side of 95).

Each test names the behaviour it pins; the scripted client fails on unexpected or unused requests.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import INTERRUPTED_MESSAGE, REJECT_MESSAGE
from desktop_agent.core.events import (
    AssistantMessage, ErrorEvent, PermissionRequested, PermissionResolved, RequestStarted, StreamEvent,
    StreamFallback, TextDelta, ThinkingDelta, ToolCallFinished, ToolCallStarted, TurnStarted, Usage,
)
from desktop_agent.engine.ledger import INTERRUPT_MESSAGE, INTERRUPT_MESSAGE_FOR_TOOL_USE
from desktop_agent.engine.loop import query
from desktop_agent.engine.params import QueryParams
from desktop_agent.core.messages import user_entry
from desktop_agent.model.client import ModelError
from desktop_agent.model.pricing import CostTracker
from desktop_agent.model.scripted import ScriptedModelClient, fail, reply, text, thinking, tool_use
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.core.tool import ToolResult, build_tool

from tests.model.aio import aio

from .helpers import EditLikeInput, FakePrompter, PathInput, Tracker, TurnRun, make_tools, touches_nothing

SYSTEM = [{"type": "text", "text": "You are a test agent."}]


class Run(TurnRun):
    """Runs one query and keeps what came out."""

    def __init__(self, client: ScriptedModelClient, ctx: ToolUseContext, **kw: Any):
        self.client = client
        self.ctx = ctx
        self.entries: list[dict[str, Any]] = []
        self.events: list[Any] = []
        self.params = QueryParams(messages=[user_entry("Change `value` to 2")], ctx=ctx, client=client,
                                  model="claude-sonnet-4-6", system_prompt=SYSTEM, on_message=self.entries.append,
                                  **kw)


    def results(self) -> list[dict[str, Any]]:
        out = []
        for e in self.entries:
            content = e.get("message", {}).get("content")
            if e["type"] == "user" and isinstance(content, list):
                out.extend(b for b in content if b.get("type") == "tool_result")
        return out

    def assert_paired(self) -> None:
        """Every tool_use in the transcript has exactly one tool_result, after it."""
        seen: list[str] = []
        answered: list[str] = []
        for e in self.entries:
            content = e.get("message", {}).get("content")
            if not isinstance(content, list):
                continue
            for b in content:
                if b.get("type") == "tool_use":
                    seen.append(b["id"])
                elif b.get("type") == "tool_result":
                    assert b["tool_use_id"] in seen, f"result before its tool_use: {b['tool_use_id']}"
                    answered.append(b["tool_use_id"])
        assert sorted(seen) == sorted(answered), (seen, answered)
        assert len(answered) == len(set(answered))


def ctx_for(tmp_path, tools=None, **kw) -> ToolUseContext:
    return ToolUseContext(cwd=str(tmp_path), tools=tools if tools is not None else make_tools(Tracker()), **kw)


# ---------------------------------------------------------------------------------------------- §9 1–10
@aio
async def test_item1_text_only_one_call_completed(tmp_path):
    client = ScriptedModelClient([reply(text("Hello."))])
    run = Run(client, ctx_for(tmp_path))
    fin = await run.go()
    assert fin.reason == "completed" and fin.result_text == "Hello." and fin.num_turns == 1
    assert len(client.requests) == 1 and not run.of(ToolCallStarted)
    client.assert_done()


@pytest.mark.parametrize("streaming", [True, False])
@aio
async def test_items2_3_running_example_with_real_tools(workdir, streaming):
    from desktop_agent.tools.edit import EditTool
    from desktop_agent.tools.read.tool import ReadTool

    path = str(workdir / "app.ts")
    client = ScriptedModelClient([
        reply(text("Let me look."), tool_use("Read", {"file_path": path}, id="toolu_read_1")),
        reply(tool_use("Edit", {"file_path": path, "old_string": "value = 1", "new_string": "value = 2"},
                       id="toolu_edit_2")),
        reply(text("Changed `value` to 2.")),
    ], chunk_size=5)
    ctx = ToolUseContext(cwd=str(workdir), tools=[ReadTool(), EditTool()], prompter=FakePrompter())
    run = Run(client, ctx, streaming_tool_execution=streaming)
    fin = await run.go()
    assert fin.reason == "completed", run.of(ErrorEvent)
    client.assert_done()
    assert len(client.requests) == 3
    assert (workdir / "app.ts").read_text() == "export const value = 2"
    second = client.requests[1].messages
    assert second[-2]["role"] == "assistant" and second[-2]["content"][-1]["id"] == "toolu_read_1"
    assert second[-1]["role"] == "user"
    assert [b["tool_use_id"] for b in second[-1]["content"]] == ["toolu_read_1"]
    assert second[-1]["content"][0]["content"] == "1\texport const value = 1"
    assert [e["type"] for e in run.entries] == ["assistant", "user", "assistant", "user", "assistant"]
    edit_done = [e for e in run.of(ToolCallFinished) if e.tool_use_id == "toolu_edit_2"][0]
    assert not edit_done.is_error
    run.assert_paired()


@aio
async def test_item4_three_tool_uses_three_results_in_next_request(tmp_path):
    client = ScriptedModelClient([
        reply(tool_use("Read", {"file_path": "a"}, id="A"), tool_use("Grep", {"pattern": "x"}, id="B"),
              tool_use("Read", {"file_path": "c"}, id="C")),
        reply(text("ok")),
    ])
    run = Run(client, ctx_for(tmp_path))
    assert (await run.go()).reason == "completed"
    last = client.requests[1].messages[-1]
    assert last["role"] == "user"
    ids = [b["tool_use_id"] for b in last["content"] if b["type"] == "tool_result"]
    assert len(ids) == 3 and set(ids) == {"A", "B", "C"}
    client.assert_done()


@aio
async def test_item5_follow_up_by_content_not_stop_reason(tmp_path):
    client = ScriptedModelClient([
        reply(tool_use("Read", {"file_path": "a"}, id="A"), stop_reason="end_turn"),
        reply(text("done")),
    ])
    run = Run(client, ctx_for(tmp_path))
    assert (await run.go()).reason == "completed"
    assert len(client.requests) == 2 and [e.tool_use_id for e in run.of(ToolCallFinished)] == ["A"]
    client.assert_done()


@aio
async def test_item6_stop_reason_tool_use_without_block_completes(tmp_path):
    client = ScriptedModelClient([reply(text("no tools really"), stop_reason="tool_use")])
    run = Run(client, ctx_for(tmp_path))
    assert (await run.go()).reason == "completed"
    assert len(client.requests) == 1
    client.assert_done()


@aio
async def test_item7_max_turns_runs_tool_then_stops(tmp_path):
    tracker = Tracker()
    client = ScriptedModelClient([reply(tool_use("Read", {"file_path": "a"}, id="A"))])
    run = Run(client, ctx_for(tmp_path, make_tools(tracker)), max_turns=1)
    fin = await run.go()
    assert fin.reason == "max_turns"
    assert tracker.calls == ["Read:a"] and len(client.requests) == 1
    attachment = run.entries[-1]
    assert attachment["type"] == "attachment"
    assert attachment["attachment"] == {"type": "max_turns_reached", "maxTurns": 1, "turnCount": 2}
    run.assert_paired()
    client.assert_done()


@aio
async def test_item8_turn_count_starts_at_1_and_is_2_for_second_request(tmp_path):
    client = ScriptedModelClient([reply(tool_use("Read", {"file_path": "a"}, id="A")), reply(text("ok"))])
    run = Run(client, ctx_for(tmp_path))
    fin = await run.go()
    assert [e.turn for e in run.of(TurnStarted)] == [1, 2]
    assert [e.turn for e in run.of(RequestStarted)] == [1, 2]
    assert fin.num_turns == 2
    client.assert_done()


@pytest.mark.parametrize("streaming", [False, True])
@aio
async def test_item9_model_error_after_tool_use_fills_error_result(tmp_path, streaming):
    tracker = Tracker()
    boom = ModelError("The API returned a server error (500): boom", kind="server")
    # events: message_start, block_start, delta, block_stop → then the error.
    client = ScriptedModelClient([reply(tool_use("Edit", {"file_path": "f", "old_string": "a", "new_string": "b"},
                                                 id="E"), error=boom, break_after=4)])
    run = Run(client, ctx_for(tmp_path, make_tools(tracker)), streaming_tool_execution=streaming)
    fin = await run.go()
    assert fin.reason == "model_error" and "boom" in (fin.error or "")
    errors = run.of(ErrorEvent)
    assert len(errors) == 1 and errors[0].kind == "server"
    results = run.results()
    assert [r["tool_use_id"] for r in results] == ["E"]
    if not streaming:  # the call never ran: the result is the error text
        assert results[0]["is_error"] is True and "boom" in results[0]["content"]
        assert tracker.calls == []
    else:  # it had already started: the model is told what really happened
        assert tracker.calls == ["Edit:f"]
    run.assert_paired()
    assert len(client.requests) == 1
    client.assert_done()


@aio
async def test_item10_abort_during_tools_non_streaming(tmp_path):
    ctx = ctx_for(tmp_path)

    async def abort_then_run(self, input, c):
        ctx.abort.abort()
        await asyncio.sleep(0.01)
        return ToolResult(data="finished anyway")

    slow = build_tool("Slow", PathInput, permission_target=touches_nothing, call=abort_then_run, description="slow")
    ctx.tools = ctx.tools + [slow]
    client = ScriptedModelClient([
        reply(tool_use("Slow", {"file_path": "x"}, id="S"), tool_use("Edit", {
            "file_path": "f", "old_string": "a", "new_string": "b"}, id="E")),
    ])
    run = Run(client, ctx, streaming_tool_execution=False)
    fin = await run.go()
    assert fin.reason == "aborted_tools"
    assert len(client.requests) == 1
    by_id = {r["tool_use_id"]: r for r in run.results()}
    assert by_id["S"]["content"] == "finished anyway"  # it was running: its real result
    assert by_id["E"]["content"] == REJECT_MESSAGE and by_id["E"]["is_error"]  # never started
    assert run.entries[-1]["message"]["content"][0]["text"] == INTERRUPT_MESSAGE_FOR_TOOL_USE
    run.assert_paired()
    client.assert_done()


# ---------------------------------------------------------------------------------------------- abort while streaming
@aio
async def test_abort_mid_stream_answers_completed_calls_and_stops(tmp_path):
    tracker = Tracker()
    ctx = ctx_for(tmp_path, make_tools(tracker))
    client = ScriptedModelClient([
        reply(tool_use("Read", {"file_path": "a"}, id="A"), text("and now a long explanation " * 5),
              tool_use("Read", {"file_path": "b"}, id="B"), delay=0.005),
    ], chunk_size=4)

    def during(ev):
        if isinstance(ev, TextDelta) and not ctx.abort.aborted:
            ctx.abort.abort()

    run = Run(client, ctx)
    fin = await run.go(during)
    assert fin.reason == "aborted_streaming"
    assistant = run.entries[0]
    assert assistant["type"] == "assistant"
    blocks = assistant["message"]["content"]
    assert [b["type"] for b in blocks][:1] == ["tool_use"] and all(b.get("id") != "B" for b in blocks)
    assert [r["tool_use_id"] for r in run.results()] == ["A"]
    assert run.entries[-1]["message"]["content"][0]["text"] == INTERRUPT_MESSAGE
    run.assert_paired()
    assert len(client.requests) == 1


@aio
async def test_abort_mid_stream_non_streaming_execution_fills_interrupted(tmp_path):
    tracker = Tracker()
    ctx = ctx_for(tmp_path, make_tools(tracker))
    client = ScriptedModelClient([
        reply(tool_use("Read", {"file_path": "a"}, id="A"), text("x" * 60), delay=0.005),
    ], chunk_size=4)

    def during(ev):
        if isinstance(ev, TextDelta):
            ctx.abort.abort()

    run = Run(client, ctx, streaming_tool_execution=False)
    fin = await run.go(during)
    assert fin.reason == "aborted_streaming"
    assert tracker.calls == []
    (result,) = run.results()
    assert result == {"type": "tool_result", "tool_use_id": "A", "content": INTERRUPTED_MESSAGE, "is_error": True}
    run.assert_paired()


@aio
async def test_edit_running_at_abort_reports_its_real_result(tmp_path):
    """§6.3 decided: a write that happened is reported as written, never as REJECT_MESSAGE."""
    target = tmp_path / "f.txt"
    target.write_text("a")
    ctx = ctx_for(tmp_path)
    started = asyncio.Event()

    async def write(self, input, c):
        started.set()
        await asyncio.sleep(0.05)  # the abort lands here
        target.write_text(input.new_string)
        return ToolResult(data=f"The file {input.file_path} has been updated successfully.")

    edit = build_tool("Edit", EditLikeInput, permission_target=touches_nothing, call=write, description="edit")
    ctx.tools = [edit]
    client = ScriptedModelClient([
        reply(tool_use("Edit", {"file_path": "f.txt", "old_string": "a", "new_string": "b"}, id="E"),
              text("y" * 200), delay=0.002),
    ], chunk_size=2)

    def during(ev):
        if isinstance(ev, ToolCallStarted):
            asyncio.get_running_loop().call_later(0.01, ctx.abort.abort)

    run = Run(client, ctx)
    fin = await run.go(during)
    assert fin.reason == "aborted_streaming"
    assert target.read_text() == "b"
    (result,) = run.results()
    assert result["content"] == "The file f.txt has been updated successfully." and "is_error" not in result
    run.assert_paired()


@aio
async def test_already_aborted_makes_no_request(tmp_path):
    ctx = ctx_for(tmp_path)
    ctx.abort.abort()
    client = ScriptedModelClient([])
    run = Run(client, ctx)
    assert (await run.go()).reason == "aborted_streaming"
    assert client.requests == []


# ---------------------------------------------------------------------------------------------- §6.5 fallback
@aio
async def test_item98_stream_break_before_any_tool_ran_retries_without_streaming(tmp_path):
    tracker = Tracker()
    client = ScriptedModelClient([
        reply(text("partial answer that will br"), break_after=3),
        reply(tool_use("Read", {"file_path": "a"}, id="NEW_A"), non_streaming_only=True),
        reply(text("done")),
    ])
    run = Run(client, ctx_for(tmp_path, make_tools(tracker)))
    fin = await run.go()
    assert fin.reason == "completed", run.of(ErrorEvent)
    assert client.kinds == ["stream", "create", "stream"]
    assert client.requests[1].messages == client.requests[0].messages  # the same messages
    (fb,) = run.of(StreamFallback)
    assert fb.action == "discarded_partial"
    assert [r["tool_use_id"] for r in run.results()] == ["NEW_A"] and tracker.calls == ["Read:a"]
    assert "partial answer" not in str(run.entries)  # the partial reply never entered the transcript
    run.assert_paired()
    client.assert_done()


@aio
async def test_stream_break_after_a_started_tool_keeps_and_answers_it(tmp_path):
    tracker = Tracker()
    # message_start, A start/delta/stop (A starts now), text start, delta... then the break.
    client = ScriptedModelClient([
        reply(tool_use("Edit", {"file_path": "f", "old_string": "a", "new_string": "b"}, id="A"),
              text("more text that is lost"), break_after=6, delay=0.002),
        reply(text("done")),
    ])
    run = Run(client, ctx_for(tmp_path, make_tools(tracker)))
    fin = await run.go()
    assert fin.reason == "completed"
    assert client.kinds == ["stream", "stream"]
    (fb,) = run.of(StreamFallback)
    assert fb.action == "completed_tools_kept"
    assert tracker.calls == ["Edit:f"]  # ran exactly once, not repeated
    second = client.requests[1].messages
    assert second[-2]["content"][0]["id"] == "A" and second[-1]["content"][0]["tool_use_id"] == "A"
    run.assert_paired()
    client.assert_done()


@aio
async def test_item99_fallback_disabled_no_second_request(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "1")
    client = ScriptedModelClient([reply(text("partial"), break_after=3)])
    run = Run(client, ctx_for(tmp_path))
    fin = await run.go()
    assert fin.reason == "model_error"
    assert len(client.requests) == 1 and len(run.of(ErrorEvent)) == 1
    assert not run.of(StreamFallback)
    client.assert_done()


@aio
async def test_fallback_request_failing_ends_model_error(tmp_path):
    client = ScriptedModelClient([
        reply(text("partial"), break_after=2),
        fail(ModelError("Could not reach the API", kind="connection")),
    ])
    run = Run(client, ctx_for(tmp_path))
    fin = await run.go()
    assert fin.reason == "model_error" and run.of(ErrorEvent)[0].kind == "connection"
    client.assert_done()


# ---------------------------------------------------------------------------------------------- events and details
@aio
async def test_thinking_deltas_and_signature_kept_in_history(tmp_path):
    client = ScriptedModelClient([
        reply(thinking("Let me think about a.", signature="SIG123"), tool_use("Read", {"file_path": "a"}, id="A")),
        reply(text("ok")),
    ], chunk_size=5)
    run = Run(client, ctx_for(tmp_path), thinking={"type": "enabled", "budget_tokens": 2000})
    await run.go()
    assert "".join(e.text for e in run.of(ThinkingDelta)) == "Let me think about a."
    sent = client.requests[1].messages[-2]["content"][0]
    assert sent == {"type": "thinking", "thinking": "Let me think about a.", "signature": "SIG123"}
    assert client.requests[0].thinking == {"type": "enabled", "budget_tokens": 2000}


@aio
async def test_usage_and_cost_per_reply_and_totals(tmp_path):
    usage = {"input_tokens": 1000, "output_tokens": 100, "cache_read_input_tokens": 2000,
             "cache_creation_input_tokens": 500}
    client = ScriptedModelClient([reply(tool_use("Read", {"file_path": "a"}), usage=usage),
                                  reply(text("ok"), usage=usage)])
    tracker = CostTracker()
    run = Run(client, ctx_for(tmp_path), cost_tracker=tracker)
    fin = await run.go()
    usages = run.of(Usage)
    assert len(usages) == 2
    # sonnet: 3 $/MTok in, 15 out, 3.75 cache write, 0.30 cache read
    one = (1000 * 3 + 100 * 15 + 500 * 3.75 + 2000 * 0.3) / 1e6
    assert usages[0].cost_usd == pytest.approx(one)
    assert usages[1].session_cost_usd == pytest.approx(2 * one) == pytest.approx(fin.cost_usd)
    assert fin.usage["input_tokens"] == 2000 and tracker.usage["cache_read_input_tokens"] == 4000


@aio
async def test_permission_events_come_out_of_the_stream_in_order(tmp_path):
    def ask(self, input, ctx):  # an action the policy knows nothing about: default mode asks
        return PermissionTarget(kind="generic", summary=input.file_path)

    async def call(self, input, ctx):
        return ToolResult(data="written")

    guarded = build_tool("Write", PathInput, call=call, permission_target=ask, description="w")
    prompter = FakePrompter(delay=0.01)
    sentinel = []
    from desktop_agent.permissions.context import PermissionContext

    ctx = ctx_for(tmp_path, [guarded], prompter=prompter, emit=sentinel.append,
                  permission_context=PermissionContext(str(tmp_path)))
    client = ScriptedModelClient([reply(tool_use("Write", {"file_path": "p.txt"}, id="W")), reply(text("ok"))])
    run = Run(client, ctx)
    await run.go()
    kinds = [type(e).__name__ for e in run.events if isinstance(
        e, (ToolCallStarted, PermissionRequested, PermissionResolved, ToolCallFinished))]
    assert kinds == ["ToolCallStarted", "PermissionRequested", "PermissionResolved", "ToolCallFinished"]
    assert run.of(PermissionRequested)[0].request.tool_use_id == "W"
    assert sentinel == [] and ctx.emit == sentinel.append  # the caller's emit is restored


@pytest.mark.parametrize("streaming", [True, False])
@aio
async def test_permission_events_follow_their_start_in_a_concurrent_batch(tmp_path, streaming):
    from desktop_agent.permissions.context import PermissionContext

    def ask(self, input, ctx):
        return PermissionTarget(kind="generic", summary=input.file_path)

    async def call(self, input, ctx):
        return ToolResult(data="read")

    reader = build_tool("Read", PathInput, call=call, permission_target=ask, is_concurrency_safe=lambda s, i: True,
                        is_read_only=lambda s, i: True, description="r")
    ctx = ctx_for(tmp_path, [reader], prompter=FakePrompter(), permission_context=PermissionContext(str(tmp_path)))
    client = ScriptedModelClient([reply(tool_use("Read", {"file_path": "/etc/a"}, id="R1"),
                                        tool_use("Read", {"file_path": "/etc/b"}, id="R2")), reply(text("ok"))])
    run = Run(client, ctx, streaming_tool_execution=streaming)
    await run.go()
    for tid in ("R1", "R2"):
        mine = [type(e).__name__ for e in run.events if getattr(e, "tool_use_id", None) == tid
                or getattr(getattr(e, "request", None), "tool_use_id", None) == tid]
        assert mine == ["ToolCallStarted", "PermissionRequested", "PermissionResolved", "ToolCallFinished"], mine


@aio
async def test_stream_events_only_when_asked_and_assistant_once_per_reply(tmp_path):
    client = ScriptedModelClient([reply(text("hello there"))], chunk_size=3)
    run = Run(client, ctx_for(tmp_path), include_stream_events=True)
    await run.go()
    raw = [e.event["type"] for e in run.of(StreamEvent)]
    assert raw[0] == "message_start" and raw[-1] == "message_stop"
    assert "".join(e.text for e in run.of(TextDelta)) == "hello there"
    assert len(run.of(AssistantMessage)) == 1

    client2 = ScriptedModelClient([reply(text("hello"))])
    run2 = Run(client2, ctx_for(tmp_path))
    await run2.go()
    assert not run2.of(StreamEvent)


@aio
async def test_unknown_tool_gets_no_such_tool_and_loop_continues(tmp_path):
    client = ScriptedModelClient([reply(tool_use("NoSuchTool", {}, id="X")), reply(text("sorry"))])
    run = Run(client, ctx_for(tmp_path))
    assert (await run.go()).reason == "completed"
    (result,) = run.results()
    assert result["content"] == "<tool_use_error>Error: No such tool available: NoSuchTool</tool_use_error>"
    assert result["is_error"] is True


@aio
async def test_script_exhausted_fails_loudly(tmp_path):
    client = ScriptedModelClient([reply(tool_use("Read", {"file_path": "a"}))])  # no second reply
    run = Run(client, ctx_for(tmp_path))
    fin = await run.go()
    assert fin.reason == "model_error" and "unexpected request #2" in (fin.error or "")
    with pytest.raises(AssertionError, match="unexpected request"):
        client.assert_done()
    unused = ScriptedModelClient([reply(text("a")), reply(text("b"))])
    await Run(unused, ctx_for(tmp_path)).go()
    with pytest.raises(AssertionError, match="never requested"):
        unused.assert_done()


@aio
async def test_closing_the_stream_early_cancels_the_driver(tmp_path):
    client = ScriptedModelClient([reply(text("z" * 100), delay=0.01)], chunk_size=1)
    run = Run(client, ctx_for(tmp_path))
    before = set(asyncio.all_tasks())
    gen = query(run.params)
    async for ev in gen:
        if isinstance(ev, TextDelta):
            break
    await gen.aclose()
    await asyncio.sleep(0.02)
    assert set(asyncio.all_tasks()) <= before  # the driver and its stream are gone


@aio
async def test_incremental_request_messages_equal_full_normalisation(tmp_path):
    from desktop_agent.core.messages import normalize_for_api

    transcript: list[dict[str, Any]] = []
    mismatches: list[int] = []

    def same_as_full(request):
        expected = normalize_for_api(transcript[1:])  # everything after the compact boundary
        if request.messages != expected:
            mismatches.append(len(transcript))

    client = ScriptedModelClient([
        reply(text("a"), tool_use("Read", {"file_path": "1"}, id="A"), tool_use("Grep", {"pattern": "p"}, id="B"),
              check=same_as_full),
        reply(thinking("t", "S"), tool_use("Edit", {"file_path": "f", "old_string": "a", "new_string": "b"}, id="C"),
              check=same_as_full),
        reply(tool_use("Nope", {}, id="D"), check=same_as_full),
        reply(text("end"), check=same_as_full),
    ])
    run = Run(client, ctx_for(tmp_path))
    history = [user_entry("earlier"), {"type": "system", "subtype": "compact_boundary", "uuid": "b"},
               user_entry("summary", isCompactSummary=True)]
    run.params.messages = history + run.params.messages
    transcript.extend(run.params.messages)
    run.params.on_message = lambda e: (transcript.append(e), run.entries.append(e))
    assert (await run.go()).reason == "completed"
    client.assert_done()
    assert mismatches == []
    assert client.requests[0].messages[0]["content"][0]["text"] == "summary"
    assert [m["role"] for m in client.requests[-1].messages] == ["user", "assistant", "user", "assistant", "user",
                                                                 "assistant", "user"]


class StopHooks:
    """A hook runner stand-in: only the Stop event, answering from a list."""

    def __init__(self, outcomes):
        from desktop_agent.permissions.hooks import HookEventOutcome

        self.outcomes = [HookEventOutcome(**o) for o in outcomes]
        self.calls: list[bool] = []

    async def pre_tool_use(self, *a, **k):
        from desktop_agent.permissions.hooks import PreToolUseOutcome

        return PreToolUseOutcome()

    async def post_tool_use(self, *a, **k):
        from desktop_agent.permissions.hooks import PostToolUseOutcome

        return PostToolUseOutcome()

    async def stop(self, ctx, stop_hook_active=False):
        self.calls.append(stop_hook_active)
        return self.outcomes.pop(0)

    def has_hooks(self, event, match_value=None):  # core.context.ToolHooks: no PermissionRequest hooks
        return event == "Stop"

    async def permission_request(self, *a, **k):
        return None

    def notify_soon(self, *a, **k):
        pass


@aio
async def test_stop_hook_block_feeds_back_and_continues(tmp_path):
    hooks = StopHooks([{"block": True, "reason": "run the tests first"}, {}])
    client = ScriptedModelClient([reply(text("done?")), reply(text("tests pass, done."))])
    run = Run(client, ctx_for(tmp_path, hooks=hooks))
    fin = await run.go()
    assert fin.reason == "completed" and hooks.calls == [False, True]
    assert client.requests[1].messages[-1]["content"][-1]["text"] == "Stop hook feedback:\nrun the tests first"
    client.assert_done()


@aio
async def test_stop_hook_prevent_continuation(tmp_path):
    hooks = StopHooks([{"stop": True, "stop_reason": "enough"}])
    client = ScriptedModelClient([reply(text("done"))])
    run = Run(client, ctx_for(tmp_path, hooks=hooks))
    assert (await run.go()).reason == "stop_hook_prevented"


@aio
async def test_post_tool_use_hook_stop_ends_hook_stopped_after_results(tmp_path):
    from desktop_agent.permissions.hooks import PostToolUseOutcome

    class PostStop(StopHooks):
        async def post_tool_use(self, *a, **k):
            return PostToolUseOutcome(stop=True, stop_reason="policy says stop")

    client = ScriptedModelClient([reply(tool_use("Read", {"file_path": "a"}, id="A"))])
    run = Run(client, ctx_for(tmp_path, hooks=PostStop([])))
    assert (await run.go()).reason == "hook_stopped"
    assert [r["tool_use_id"] for r in run.results()] == ["A"]
    run.assert_paired()
    client.assert_done()


@aio
async def test_max_tokens_cut_asks_to_continue_and_drops_the_truncated_call(tmp_path):
    from desktop_agent.engine.loop import MAX_OUTPUT_TOKENS_MESSAGE

    tracker = Tracker()
    cut = reply(text("Writing the file now."), tool_use("Edit", '{"file_path": "big.py", "new_str', id="CUT"),
                stop_reason="max_tokens")
    client = ScriptedModelClient([cut, reply(text("smaller pieces then"))], chunk_size=6)
    run = Run(client, ctx_for(tmp_path, make_tools(tracker)))
    fin = await run.go()
    assert fin.reason == "completed" and fin.result_text == "smaller pieces then"
    assert tracker.calls == [] and not run.results()  # the cut call never ran and needs no result
    assert "CUT" not in str(client.requests[1].messages)
    assert client.requests[1].messages[-1]["content"][-1]["text"] == MAX_OUTPUT_TOKENS_MESSAGE
    client.assert_done()


@aio
async def test_max_tokens_recovery_is_bounded(tmp_path):
    client = ScriptedModelClient([reply(text(f"part {i}"), stop_reason="max_tokens") for i in range(4)])
    run = Run(client, ctx_for(tmp_path))
    fin = await run.go()
    assert fin.reason == "completed" and len(client.requests) == 4
    assert "output token limit" in run.of(ErrorEvent)[0].message
    client.assert_done()


@aio
async def test_invalid_tool_json_without_max_tokens_is_a_broken_stream(tmp_path):
    client = ScriptedModelClient([
        reply(tool_use("Read", '{"file_path": "a"', id="BAD")),
        reply(tool_use("Read", {"file_path": "a"}, id="GOOD"), non_streaming_only=True),
        reply(text("ok")),
    ])
    run = Run(client, ctx_for(tmp_path))
    assert (await run.go()).reason == "completed"
    assert client.kinds == ["stream", "create", "stream"]
    assert [r["tool_use_id"] for r in run.results()] == ["GOOD"]
    client.assert_done()


# ---------------------------------------------------------------------------------------------- before_request
@aio
async def test_before_request_runs_before_every_request_and_may_replace_its_messages(tmp_path):
    """The compaction hook: awaited after each RequestStarted with the messages about to be sent (the stream
    and the non-streaming retry alike); a returned list is what that request sends, None leaves it alone."""
    client = ScriptedModelClient([
        reply(tool_use("Read", {"file_path": "a"}, id="A")),
        reply(text("partial"), break_after=2),
        reply(text("done"), non_streaming_only=True),
    ])
    seen: list[tuple[int, list[dict[str, Any]]]] = []
    replacement = [{"role": "user", "content": [{"type": "text", "text": "summary"}]}]

    async def before_request(messages):
        await asyncio.sleep(0.01)  # the consumer has taken the RequestStarted by now
        seen.append((len(run.events), messages))
        return replacement if len(seen) >= 2 else None

    run = Run(client, ctx_for(tmp_path), before_request=before_request)
    fin = await run.go()
    assert fin.reason == "completed", run.of(ErrorEvent)
    assert client.kinds == ["stream", "stream", "create"]
    assert len(seen) == 3
    assert seen[0][1] == client.requests[0].messages  # None: sent as they were
    assert client.requests[1].messages == replacement and client.requests[2].messages == replacement
    assert seen[1][1][-1]["content"][0]["type"] == "tool_result"  # the hook saw the real next request
    starts = [i for i, e in enumerate(run.events) if isinstance(e, RequestStarted)]
    assert len(starts) == 3 and all(s < n for s, (n, _) in zip(starts, seen))


@aio
async def test_abort_during_before_request_ends_aborted_streaming_without_a_request(tmp_path):
    from desktop_agent.core.context import AbortSignal

    abort = AbortSignal()
    client = ScriptedModelClient([reply(text("never"))])

    async def before_request(messages):
        abort.abort()
        await asyncio.sleep(10)

    run = Run(client, ctx_for(tmp_path, abort=abort), before_request=before_request)
    fin = await asyncio.wait_for(run.go(), 5)
    assert fin.reason == "aborted_streaming" and client.requests == []
