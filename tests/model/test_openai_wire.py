"""The OpenAI-compatible transport (``model/openai_wire.py``): the real ``AnthropicClient`` with
``transport="openai"`` over real HTTP and SSE ``chat.completion.chunk`` against ``tests/fakes/openai_server``.

The same flows as the Anthropic fake: the running example (Read → Edit → text) through ``query()``, a
streamed multi-tool turn, conversion of tool results, images and system blocks in the request, errors
mapped to the same retry/classify policy, a cut stream, the non-streaming fallback request.
"""

from __future__ import annotations

import json

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.events import ErrorEvent
from desktop_agent.model.anthropic_client import AnthropicClient
from desktop_agent.model.client import ModelError, ModelRequest, StreamBroken
from desktop_agent.model.openai_wire import ChunkConverter, to_chat_request
from desktop_agent.model.stream import MessageAccumulator
from tests.engine.helpers import FakePrompter
from tests.fakes.anthropic_server import http_error, reply, text, tool_use
from tests.fakes.openai_server import FakeOpenAI, fake_openai  # noqa: F401
from tests.model.aio import aio
from tests.model.test_fake_server_e2e import E2E


def client_for(fake: FakeOpenAI, **kw) -> AnthropicClient:
    return AnthropicClient(kw.pop("key", ""), fake.base_url, transport="openai", base_delay_s=0.01,
                           max_delay_s=0.05, **kw)


async def collect(client: AnthropicClient, req: ModelRequest) -> dict:
    acc = MessageAccumulator()
    async for ev in client.stream(req):
        acc.feed(ev)
    return acc.final_message()


@aio
async def test_running_example_read_edit_text(workdir, fake_openai):
    from desktop_agent.tools.edit import EditTool
    from desktop_agent.tools.read.tool import ReadTool

    path = str(workdir / "app.ts")
    fake_openai.script([
        reply(tool_use("Read", {"file_path": path}, id="call_read_1")),
        reply(tool_use("Edit", {"file_path": path, "old_string": "export const value = 1",
                                "new_string": "export const value = 2"}, id="call_edit_2")),
        reply(text("Done: `value` is now 2.")),
    ])
    ctx = ToolUseContext(cwd=str(workdir), tools=[ReadTool(), EditTool()], prompter=FakePrompter())
    run = E2E(fake_openai, ctx, client=client_for(fake_openai, key="sk-local"))
    fin = await run.go()
    assert fin.reason == "completed", run.of(ErrorEvent)
    fake_openai.assert_done()
    assert (workdir / "app.ts").read_text() == "export const value = 2"
    reqs = fake_openai.requests
    assert all(r.body["stream"] and r.body["stream_options"] == {"include_usage": True} for r in reqs)
    assert reqs[0].headers["authorization"] == "Bearer sk-local"
    m1 = reqs[1].body["messages"]
    assert m1[0] == {"role": "system", "content": "You are Desktop Agent."}
    assert m1[1] == {"role": "user", "content": "Change `value` to 2"}
    assert m1[2]["role"] == "assistant" and m1[2]["tool_calls"] == [
        {"id": "call_read_1", "type": "function", "function": {"name": "Read",
                                                               "arguments": json.dumps({"file_path": path})}}]
    assert m1[3] == {"role": "tool", "tool_call_id": "call_read_1", "content": "1\texport const value = 1"}
    tools = reqs[0].body["tools"]
    assert [t["function"]["name"] for t in tools] == ["Read", "Edit"]
    assert tools[0]["function"]["parameters"]["properties"]["file_path"]
    assert "max_tokens" not in reqs[0].body and "cache_control" not in json.dumps(reqs[0].body)
    assert run.entries[-1]["message"]["content"][0]["text"] == "Done: `value` is now 2."
    run.check_transcript()


@aio
async def test_streamed_multi_tool_turn_keeps_ids_and_arguments(tmp_path):
    with FakeOpenAI(chunk_size=3) as fake:  # arguments split every 3 characters
        fake.script([reply(text("Reading both."), tool_use("Read", {"file_path": "a.txt"}, id="call_A"),
                           tool_use("Grep", {"pattern": "x y", "path": "."}, id="call_B"),
                           usage={"input_tokens": 120, "output_tokens": 33})])
        client = client_for(fake)
        msg = await collect(client, ModelRequest(model="qwen2.5-coder", messages=[
            {"role": "user", "content": "go"}]))
        await client.aclose()
    assert msg["stop_reason"] == "tool_use"
    assert [b["type"] for b in msg["content"]] == ["text", "tool_use", "tool_use"]
    assert msg["content"][0]["text"] == "Reading both."
    assert msg["content"][1] == {"type": "tool_use", "id": "call_A", "name": "Read", "input": {"file_path": "a.txt"}}
    assert msg["content"][2]["input"] == {"pattern": "x y", "path": "."}
    assert msg["usage"]["input_tokens"] == 120 and msg["usage"]["output_tokens"] == 33
    assert "authorization" not in fake.requests[0].headers  # no key: a local server


def test_request_conversion_images_tool_results_and_errors():
    img = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
    body = to_chat_request({"model": "m", "system": [{"type": "text", "text": "S1"}, {"type": "text", "text": "S2"}],
                            "max_tokens": 100, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "look"}, img]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"},
                                          {"type": "tool_use", "id": "c1", "name": "Read", "input": {"file_path": "p"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "is_error": True,
                                      "content": [{"type": "text", "text": "shot"}, img]},
                                     {"type": "text", "text": "and?"}]},
    ], "tools": [{"name": "BatchTool", "input_schema": {}}]})
    msgs = body["messages"]
    assert msgs[0] == {"role": "system", "content": "S1\nS2"}
    assert msgs[1]["content"] == [{"type": "text", "text": "look"},
                                  {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}]
    assert msgs[2] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "p"}'}}]}
    assert msgs[3] == {"role": "tool", "tool_call_id": "c1", "content": "shot"}
    assert msgs[4]["role"] == "user" and msgs[4]["content"][1]["type"] == "image_url"
    assert msgs[4]["content"][-1] == {"type": "text", "text": "and?"}
    assert "tools" not in body and "max_tokens" not in body


def test_unparseable_arguments_become_raw_and_finish_reasons_map():
    conv = ChunkConverter()
    events = conv.feed({"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": "c9", "function": {"name": "Bash", "arguments": "{not json"}}]}}]})
    events += conv.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    events += conv.finish_events()
    acc = MessageAccumulator()
    for ev in events:
        acc.feed(ev)
    msg = acc.final_message()
    assert msg["content"][0]["input"] == {"raw": "{not json"}
    assert msg["stop_reason"] == "tool_use"  # calls were made though the server said "stop"
    conv = ChunkConverter()
    conv.feed({"choices": [{"index": 0, "delta": {"content": "cut"}, "finish_reason": "length"}]})
    assert conv.finish_events()[-2]["delta"]["stop_reason"] == "max_tokens"


@pytest.mark.parametrize("status,kind,retryable", [(401, "auth", False), (404, "model_not_found", False),
                                                   (429, "rate_limit", True), (500, "server", True)])
@aio
async def test_errors_follow_the_same_classify_and_retry_policy(status, kind, retryable):
    with FakeOpenAI() as fake:
        fake.script([http_error(status, "nope")] * (3 if retryable else 1))
        client = client_for(fake, max_retries=2)
        with pytest.raises(ModelError) as info:
            await collect(client, ModelRequest(model="m", messages=[{"role": "user", "content": "hi"}]))
        await client.aclose()
        assert info.value.kind == kind
        assert len(fake.requests) == (3 if retryable else 1)
        assert "nope" in str(info.value)


@aio
async def test_retry_then_success_and_cut_stream_is_stream_broken():
    with FakeOpenAI() as fake:
        fake.script([http_error(429, "slow down", headers={"retry-after": "0"}), reply(text("ok now"))])
        client = client_for(fake)
        msg = await collect(client, ModelRequest(model="m", messages=[{"role": "user", "content": "hi"}]))
        assert msg["content"][0]["text"] == "ok now"
        fake.script([reply(text("a long answer that will be cut"), break_after=3)])
        with pytest.raises(StreamBroken):
            await collect(client, ModelRequest(model="m", messages=[{"role": "user", "content": "hi"}]))
        await client.aclose()


@aio
async def test_non_streaming_create_converts_the_completion():
    with FakeOpenAI() as fake:
        fake.script([reply(text("plain"), tool_use("Read", {"file_path": "z"}, id="call_z"))])
        client = client_for(fake)
        msg = await client.create(ModelRequest(model="m", messages=[{"role": "user", "content": "hi"}]))
        await client.aclose()
    assert "stream" not in fake.requests[0].body
    assert msg["content"] == [{"type": "text", "text": "plain"},
                              {"type": "tool_use", "id": "call_z", "name": "Read", "input": {"file_path": "z"}}]
    assert msg["stop_reason"] == "tool_use"



def test_in_stream_error_chunk_raises_with_its_code():
    from desktop_agent.model.wire import APIStatusError

    for code, status in (("429", 429), ("rate_limited", 500), (None, 500)):
        with pytest.raises(APIStatusError) as info:
            ChunkConverter().feed({"error": {"message": "busy", "code": code}})
        assert info.value.status_code == status


@aio
async def test_hostile_provider_arguments_nested_10000_deep_get_one_error_result(workdir):
    """A provider streaming tool arguments nested 10,000 deep: no RecursionError anywhere; the call gets
    exactly one error tool_result (the input guard's) and the turn ends normally."""
    from desktop_agent.tools.read.tool import ReadTool

    deep = '{"file_path": ' + "[" * 10_000 + "]" * 10_000 + "}"
    with FakeOpenAI(chunk_size=500) as fake:
        fake.script([reply(tool_use("Read", deep, id="call_deep")), reply(text("gave up"))])
        ctx = ToolUseContext(cwd=str(workdir), tools=[ReadTool()], prompter=FakePrompter())
        run = E2E(fake, ctx, client=client_for(fake))
        fin = await run.go()
        fake.assert_done()
    assert fin.reason == "completed", run.of(ErrorEvent)
    results = [b for m in fake.requests[1].body["messages"] if m["role"] == "tool" for b in [m]]
    assert len(results) == 1 and results[0]["tool_call_id"] == "call_deep"
    assert "nested more than" in results[0]["content"]
