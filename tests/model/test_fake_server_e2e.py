"""End to end: ``query()`` + the real ``AnthropicClient`` (real HTTP/SSE) + the fake server.

Every test runs twice: over the wire transport (``model/wire.py``, the default) and over the
``anthropic`` SDK (``model/sdk_transport.py``), so both meet the same behaviour.

The running example (§9 items 2–3) with the exact request sequence, and one test per injected
fault: each recovers (retry, fallback) or ends with a visible ``ErrorEvent``; in every case the
user's message and every completed tool result are in the transcript and the transcript would be
accepted by the API's pairing rules on the next request.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.events import (
    ErrorEvent, RetryWaiting, StreamFallback, TextDelta, ThinkingDelta, ToolCallFinished, TurnFinished, Usage,
)
from desktop_agent.engine.params import QueryParams
from desktop_agent.core.messages import normalize_for_api, user_entry
from desktop_agent.model.anthropic_client import AnthropicClient
from tests.engine.helpers import FakePrompter, Tracker, TurnRun, make_tools
from tests.fakes.anthropic_server import FakeAnthropic, fake_anthropic, http_error, reply, text, thinking, tool_use  # noqa: F401
from tests.model.aio import aio

SYSTEM = [{"type": "text", "text": "You are Desktop Agent."}]


@pytest.fixture(autouse=True, params=["wire", "sdk"])
def api_transport(request, monkeypatch):
    """The transport every ``AnthropicClient`` in the test uses."""
    monkeypatch.setenv("DESKTOP_AGENT_API_TRANSPORT", request.param)
    return request.param
PROMPT = "Change `value` to 2"


def assert_api_valid(entries: list[dict[str, Any]]) -> None:
    """What the API checks: user first, roles alternate, each tool_use answered in the next user message."""
    msgs = normalize_for_api(entries)
    assert msgs and msgs[0]["role"] == "user"
    for a, b in zip(msgs, msgs[1:]):
        assert a["role"] != b["role"], "roles must alternate"
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        uses = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
        if not uses:
            continue
        assert i + 1 < len(msgs), f"unanswered tool_use at the end: {uses}"
        results = [b["tool_use_id"] for b in msgs[i + 1]["content"] if b["type"] == "tool_result"]
        assert sorted(results) == sorted(uses), (uses, results)
        first_types = [b["type"] for b in msgs[i + 1]["content"]][: len(results)]
        assert set(first_types) == {"tool_result"}, "tool_results come first"


class E2E(TurnRun):
    def __init__(self, fake: FakeAnthropic, ctx: ToolUseContext, client: AnthropicClient | None = None, **kw: Any):
        self.fake = fake
        self.client = client or AnthropicClient("sk-test-key", fake.base_url, base_delay_s=0.01, max_delay_s=0.05)
        self.first = user_entry(PROMPT)
        self.entries: list[dict[str, Any]] = [self.first]
        self.events: list[Any] = []
        self.params = QueryParams(messages=[self.first], ctx=ctx, client=self.client, model="claude-sonnet-4-6",
                                  system_prompt=SYSTEM, on_message=self.entries.append, **kw)

    async def go(self, during: Any = None) -> TurnFinished:
        try:
            return await super().go(during)
        finally:
            await self.client.aclose()

    def check_transcript(self) -> None:
        assert self.entries[0] is self.first
        assert_api_valid(self.entries)


def ctx_for(path, tools=None, **kw) -> ToolUseContext:
    return ToolUseContext(cwd=str(path), tools=tools if tools is not None else make_tools(Tracker()), **kw)


# ---------------------------------------------------------------------------------------------- running example
@pytest.mark.parametrize("streaming", [True, False])
@aio
async def test_running_example_exact_request_sequence(workdir, fake_anthropic, streaming):
    from desktop_agent.tools.edit import EditTool
    from desktop_agent.tools.read.tool import ReadTool

    path = str(workdir / "app.ts")
    fake_anthropic.script([
        reply(tool_use("Read", {"file_path": path}, id="toolu_read_1")),
        reply(tool_use("Edit", {"file_path": path, "old_string": "export const value = 1",
                                "new_string": "export const value = 2"}, id="toolu_edit_2")),
        reply(text("Done: `value` is now 2.")),
    ])
    ctx = ToolUseContext(cwd=str(workdir), tools=[ReadTool(), EditTool()], prompter=FakePrompter())
    run = E2E(fake_anthropic, ctx, streaming_tool_execution=streaming)
    fin = await run.go()
    assert fin.reason == "completed", run.of(ErrorEvent)
    fake_anthropic.assert_done()
    assert (workdir / "app.ts").read_text() == "export const value = 2"

    reqs = fake_anthropic.requests
    assert len(reqs) == 3 and all(r.streaming for r in reqs)
    strip = lambda msgs: [{**m, "content": [{k: v for k, v in b.items() if k != "cache_control"}
                                            for b in m["content"]]} for m in msgs]
    m0, m1, m2 = (strip(r.messages) for r in reqs)
    assert m0 == [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}]
    assert m1 == m0 + [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_read_1", "name": "Read",
                                           "input": {"file_path": path}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_read_1",
                                      "content": "1\texport const value = 1"}]},
    ]
    assert m2[:3] == m1 and m2[3]["content"][0]["id"] == "toolu_edit_2"
    assert m2[4]["content"][0]["tool_use_id"] == "toolu_edit_2" and "is_error" not in m2[4]["content"][0]

    body = reqs[1].body
    assert body["model"] == "claude-sonnet-4-6" and body["max_tokens"] == 32000
    assert [t["name"] for t in body["tools"]] == ["Read", "Edit"]
    # prompt caching: system, last tool, latest message
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in body["tools"][0]
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sum("cache_control" in b for m in body["messages"] for b in m["content"]) == 1
    auth = reqs[0].headers.get("x-api-key") or reqs[0].headers.get("authorization", "")
    assert auth.endswith("sk-test-key")
    assert [e["type"] for e in run.entries] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert len(run.of(Usage)) == 3
    run.check_transcript()


@aio
async def test_thinking_streams_and_signature_goes_back(tmp_path, fake_anthropic):
    fake_anthropic.script([
        reply(thinking("The user wants a read first.", signature="EqQBCkYIB..sig"),
              tool_use("Read", {"file_path": "a"}, id="A")),
        reply(text("ok")),
    ])
    run = E2E(fake_anthropic, ctx_for(tmp_path), thinking={"type": "enabled", "budget_tokens": 1024})
    assert (await run.go()).reason == "completed"
    assert "".join(e.text for e in run.of(ThinkingDelta)) == "The user wants a read first."
    sent = fake_anthropic.requests[1].body["messages"][1]["content"][0]
    assert sent == {"type": "thinking", "thinking": "The user wants a read first.", "signature": "EqQBCkYIB..sig"}
    assert fake_anthropic.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 1024}


# ---------------------------------------------------------------------------------------------- retryable faults
@pytest.mark.parametrize("status,headers", [(429, {"retry-after": "0"}), (529, {}), (500, {})])
@aio
async def test_retryable_status_is_retried_and_shown(tmp_path, fake_anthropic, status, headers):
    fake_anthropic.script([http_error(status, "try later", headers=headers), reply(text("fine"))])
    run = E2E(fake_anthropic, ctx_for(tmp_path))
    fin = await run.go()
    assert fin.reason == "completed" and fin.result_text == "fine"
    (wait,) = run.of(RetryWaiting)
    assert wait.attempt == 1 and str(status) in wait.error
    if headers:
        assert wait.delay_s == 0.0  # retry-after honoured
    assert len(fake_anthropic.requests) == 2
    fake_anthropic.assert_done()
    run.check_transcript()


@aio
async def test_retry_after_header_sets_the_wait(tmp_path, fake_anthropic):
    fake_anthropic.script([http_error(429, headers={"retry-after": "0.3"}), reply(text("fine"))])
    run = E2E(fake_anthropic, ctx_for(tmp_path))
    t0 = time.monotonic()
    assert (await run.go()).reason == "completed"
    assert run.of(RetryWaiting)[0].delay_s == pytest.approx(0.3)
    assert fake_anthropic.requests[1].time - fake_anthropic.requests[0].time >= 0.28
    assert time.monotonic() - t0 < 5


@aio
async def test_retries_exhausted_is_a_visible_error(tmp_path, fake_anthropic):
    fake_anthropic.script([http_error(529, "Overloaded")] * 3)
    client = AnthropicClient("k", fake_anthropic.base_url, max_retries=2, base_delay_s=0.01)
    run = E2E(fake_anthropic, ctx_for(tmp_path), client=client)
    fin = await run.go()
    assert fin.reason == "model_error"
    (err,) = run.of(ErrorEvent)
    assert err.kind == "overloaded" and "gave up after 2 retries" in err.message
    assert len(run.of(RetryWaiting)) == 2 and len(fake_anthropic.requests) == 3
    run.check_transcript()


@aio
async def test_abort_during_retry_wait_is_immediate(tmp_path, fake_anthropic):
    fake_anthropic.script([http_error(429, headers={"retry-after": "30"})])
    ctx = ctx_for(tmp_path)
    run = E2E(fake_anthropic, ctx)
    t0 = time.monotonic()
    fin = await run.go(lambda ev: ctx.abort.abort() if isinstance(ev, RetryWaiting) else None)
    assert fin.reason == "aborted_streaming" and time.monotonic() - t0 < 3
    assert len(fake_anthropic.requests) == 1
    run.check_transcript()


# ---------------------------------------------------------------------------------------------- fatal statuses
@pytest.mark.parametrize("status,message,kind,words", [
    (401, "invalid x-api-key", "auth", "API key"),
    (403, "not allowed", "auth", "Permission denied"),
    (404, "model: claude-nope", "model_not_found", "claude-sonnet-4-6"),
    (400, "prompt is too long: 210000 tokens > 200000 maximum", "context_too_long", "too long"),
])
@aio
async def test_fatal_status_fails_at_once_with_clear_message(tmp_path, fake_anthropic, status, message, kind, words):
    fake_anthropic.script([http_error(status, message)])
    run = E2E(fake_anthropic, ctx_for(tmp_path))
    fin = await run.go()
    assert fin.reason == "model_error"
    (err,) = run.of(ErrorEvent)
    assert err.kind == kind and words in err.message and not run.of(RetryWaiting)
    assert len(fake_anthropic.requests) == 1
    run.check_transcript()


@aio
async def test_wrong_key_against_a_checking_server(tmp_path):
    with FakeAnthropic(api_key="right") as fake:
        run = E2E(fake, ctx_for(tmp_path), client=AnthropicClient("wrong", fake.base_url))
        fin = await run.go()
    assert fin.reason == "model_error" and run.of(ErrorEvent)[0].kind == "auth"


# ---------------------------------------------------------------------------------------------- broken streams
@pytest.mark.parametrize("fault", ["break_after", "malformed_after"])
@aio
async def test_broken_stream_before_tools_falls_back_to_non_streaming(tmp_path, fake_anthropic, fault):
    tracker = Tracker()
    fake_anthropic.script([
        reply(text("I will start by reading the file and then"), **{fault: 4}),
        reply(tool_use("Read", {"file_path": "a"}, id="toolu_fb_1")),  # the non-streaming answer
        reply(text("done")),
    ])
    run = E2E(fake_anthropic, ctx_for(tmp_path, make_tools(tracker)))
    fin = await run.go()
    assert fin.reason == "completed", run.of(ErrorEvent)
    reqs = fake_anthropic.requests
    assert [r.streaming for r in reqs] == [True, False, True]
    assert reqs[1].messages == reqs[0].messages
    (fb,) = run.of(StreamFallback)
    assert fb.action == "discarded_partial"
    assert tracker.calls == ["Read:a"]
    assert "I will start" not in str(run.entries)
    fake_anthropic.assert_done()
    run.check_transcript()


@aio
async def test_drop_after_a_tool_started_keeps_and_answers_it(tmp_path, fake_anthropic):
    tracker = Tracker()
    fake_anthropic.script([
        reply(tool_use("Edit", {"file_path": "f", "old_string": "a", "new_string": "b"}, id="toolu_e"),
              text("now some words that get lost in the drop"), break_after=12, delay=0.01),
        reply(text("finished")),
    ])
    run = E2E(fake_anthropic, ctx_for(tmp_path, make_tools(tracker)))
    fin = await run.go()
    assert fin.reason == "completed", run.of(ErrorEvent)
    assert [f.action for f in run.of(StreamFallback)] == ["completed_tools_kept"]
    assert tracker.calls == ["Edit:f"]
    second = fake_anthropic.requests[1].messages
    assert second[-1]["content"][0]["tool_use_id"] == "toolu_e"
    run.check_transcript()


@aio
async def test_stalled_stream_is_caught_by_the_watchdog(tmp_path, fake_anthropic):
    fake_anthropic.script([reply(text("halfway there and then nothing more"), stall_after=3),
                           reply(text("recovered"))])
    client = AnthropicClient("k", fake_anthropic.base_url, idle_timeout_s=0.3, base_delay_s=0.01)
    run = E2E(fake_anthropic, ctx_for(tmp_path), client=client)
    t0 = time.monotonic()
    fin = await run.go()
    assert fin.reason == "completed" and fin.result_text == "recovered"
    assert time.monotonic() - t0 < 5
    (fb,) = run.of(StreamFallback)
    assert "watchdog" in fb.detail
    run.check_transcript()


@aio
async def test_stall_before_first_event_is_retried(tmp_path, fake_anthropic, monkeypatch):
    monkeypatch.setenv("DESKTOP_AGENT_STREAM_IDLE_TIMEOUT_S", "0.3")
    fake_anthropic.script([reply(text("never"), stall_after=0), reply(text("second try"))])
    client = AnthropicClient("k", fake_anthropic.base_url, base_delay_s=0.01)
    assert client.idle_timeout_s == 0.3
    run = E2E(fake_anthropic, ctx_for(tmp_path), client=client)
    fin = await run.go()
    assert fin.reason == "completed" and fin.result_text == "second try"
    assert len(run.of(RetryWaiting)) == 1 and not run.of(StreamFallback)


@aio
async def test_drop_with_fallback_disabled_is_an_error(tmp_path, fake_anthropic, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "1")
    fake_anthropic.script([reply(text("some partial text here"), break_after=4)])
    run = E2E(fake_anthropic, ctx_for(tmp_path))
    fin = await run.go()
    assert fin.reason == "model_error" and len(fake_anthropic.requests) == 1
    assert run.of(ErrorEvent)[0].kind == "connection"
    run.check_transcript()


@aio
async def test_slow_chunks_then_user_abort_mid_stream(tmp_path, fake_anthropic):
    tracker = Tracker()
    ctx = ctx_for(tmp_path, make_tools(tracker))
    fake_anthropic.script([
        reply(tool_use("Read", {"file_path": "a"}, id="A"), text("explaining slowly " * 10), delay=0.01),
    ])
    seen = []

    def during(ev):
        if isinstance(ev, TextDelta):
            seen.append(ev)
            if len(seen) == 2:
                ctx.abort.abort()

    run = E2E(fake_anthropic, ctx)
    fin = await run.go(during)
    assert fin.reason == "aborted_streaming"
    assert [e.tool_use_id for e in run.of(ToolCallFinished)] == ["A"]
    assert len(fake_anthropic.requests) == 1
    run.check_transcript()


@aio
async def test_non_streaming_create_retries_too(fake_anthropic):
    from desktop_agent.model.client import ModelRequest

    fake_anthropic.script([http_error(529), reply(text("whole"))])
    client = AnthropicClient("k", fake_anthropic.base_url, base_delay_s=0.01)
    waits = []
    msg = await client.create(ModelRequest(model="m", messages=[{"role": "user", "content": "hi"}]),
                              on_retry=lambda *a: waits.append(a))
    await client.aclose()
    assert msg["content"] == [{"type": "text", "text": "whole"}] and len(waits) == 1
    assert [r.streaming for r in fake_anthropic.requests] == [False, False]


@aio
async def test_unexpected_request_fails_loudly(tmp_path, fake_anthropic):
    run = E2E(fake_anthropic, ctx_for(tmp_path))
    fin = await run.go()
    assert fin.reason == "model_error" and "no scripted reply" in run.of(ErrorEvent)[0].message
    with pytest.raises(AssertionError, match="unexpected request"):
        fake_anthropic.assert_done()


# ---------------------------------------------------------------------------------------------- resume after faults
@pytest.mark.parametrize("fault", ["error_event_after_tool", "abort_mid_stream", "drop_fallback_disabled"])
@aio
async def test_transcript_after_a_fault_is_accepted_on_the_next_turn(tmp_path, fake_anthropic, monkeypatch, fault):
    """The user's message and every completed result survive; a follow-up query is accepted by the
    API's pairing rules (the fake server rejects invalid requests with 400, as the real API does)."""
    tracker = Tracker()
    ctx = ctx_for(tmp_path, make_tools(tracker))
    # events: message_start, block start, 8 input deltas, block stop (#10) → the Edit starts; text from #11
    edit_a = tool_use("Edit", {"file_path": "f", "old_string": "a", "new_string": "b"}, id="toolu_a")
    words = text("some words that will not all arrive " * 3)
    during = None
    if fault == "error_event_after_tool":
        fake_anthropic.script([reply(edit_a, words, error_event_after=13, delay=0.005), reply(text("resumed"))])
        expected = "completed"
    elif fault == "drop_fallback_disabled":
        monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "1")
        fake_anthropic.script([reply(edit_a, words, break_after=13, delay=0.005)])
        expected = "model_error"
    else:
        fake_anthropic.script([reply(edit_a, words, delay=0.005)])
        expected = "aborted_streaming"
        during = lambda ev: ctx.abort.abort() if isinstance(ev, TextDelta) else None  # noqa: E731
    run = E2E(fake_anthropic, ctx)
    fin = await run.go(during)
    assert fin.reason == expected, run.of(ErrorEvent)
    if expected != "aborted_streaming":
        assert [f.action for f in run.of(StreamFallback)] == ["completed_tools_kept"]
    run.check_transcript()
    assert run.entries[0]["message"]["content"] == PROMPT
    assert tracker.calls == ["Edit:f"]  # it ran once, and its result is in the transcript
    assert any(b.get("tool_use_id") == "toolu_a" for e in run.entries if e["type"] == "user"
               for b in (e["message"]["content"] if isinstance(e["message"]["content"], list) else []))

    # the next user turn, resumed from the transcript
    fake_anthropic.script([reply(text("continuing"))])
    follow = E2E(fake_anthropic, ctx_for(tmp_path))
    follow.params.messages = run.entries + [user_entry("go on")]
    assert (await follow.go()).reason == "completed", follow.of(ErrorEvent)
    fake_anthropic.assert_done()
