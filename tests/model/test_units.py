"""Unit tests of the model layer: the stream accumulator, pricing, cache breakpoints, error classes,
``from_env`` and the scripted client's strictness."""

from __future__ import annotations

import copy

import anthropic
import httpx2
import pytest

from desktop_agent.model.anthropic_client import AnthropicClient, DEFAULT_MODEL, classify, default_model_from_env, \
    with_cache_control
from desktop_agent.model import wire
from desktop_agent.model.client import ModelError, ModelRequest, StreamBroken
from desktop_agent.model.pricing import CostTracker, cost_usd, price_for
from desktop_agent.model.scripted import ScriptedModelClient, reply, text, thinking, tool_use
from desktop_agent.model.sdk_transport import translate
from desktop_agent.model.stream import MessageAccumulator, message_to_events
from tests.model.aio import aio


# ---------------------------------------------------------------------------------------------- accumulator
def test_accumulator_rebuilds_message_from_split_events():
    msg = reply(thinking("hmm, thinking", "SIG"), text("Hello, world"),
                tool_use("Edit", {"file_path": "a.py", "old_string": "x = \"1\"", "new_string": "é"}, id="T"),
                usage={"input_tokens": 7, "output_tokens": 9, "cache_read_input_tokens": 3}).message("m")
    events = message_to_events(msg, chunk_size=3)
    assert sum(e["type"] == "content_block_delta" for e in events) > 10
    acc = MessageAccumulator()
    finished = [b for b in (acc.feed(e) for e in events) if b is not None]
    assert [b["type"] for b in finished] == ["thinking", "text", "tool_use"]
    final = acc.final_message()
    assert final["content"] == msg["content"] and final["stop_reason"] == "tool_use"
    assert final["usage"] == {"input_tokens": 7, "output_tokens": 9, "cache_read_input_tokens": 3,
                              "cache_creation_input_tokens": 0}
    assert acc.stopped


def test_partial_content_keeps_finished_blocks_and_unfinished_text_only():
    msg = reply(text("done text"), tool_use("Read", {"file_path": "a"}, id="A"), text("half"),
                tool_use("Read", {"file_path": "b"}, id="B")).message()
    events = message_to_events(msg)
    acc = MessageAccumulator()
    for e in events[:-5]:  # cut inside the last tool_use
        acc.feed(e)
    assert [b.get("id") or b.get("text") for b in acc.partial_content()] == ["done text", "A", "half"]
    assert [b.get("id") or b.get("text") for b in acc.completed_content()] == ["done text", "A", "half"]


@pytest.mark.parametrize("event", [
    {"type": "content_block_delta", "index": 5, "delta": {"type": "text_delta", "text": "x"}},
    {"type": "content_block_stop", "index": 9},
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
])
def test_malformed_events_raise_stream_broken(event):
    acc = MessageAccumulator()
    acc.feed(message_to_events(reply(text("a")).message())[0])
    with pytest.raises(StreamBroken):
        acc.feed(event)


def test_tool_input_that_is_not_json_breaks_the_stream():
    events = message_to_events(reply(tool_use("Read", '{"file_path": "a"')).message())
    acc = MessageAccumulator()
    with pytest.raises(StreamBroken, match="not valid JSON"):
        for e in events:
            acc.feed(e)


# ---------------------------------------------------------------------------------------------- pricing
def test_price_table_by_family():
    assert price_for("claude-sonnet-4-6")[0].input == 3.0
    assert price_for("claude-sonnet-4-5-20250929")[0].output == 15.0
    assert price_for("claude-opus-4-5-20251101")[0].input == 5.0
    assert price_for("claude-opus-4-1-20250805")[0].input == 15.0
    assert price_for("claude-haiku-4-5")[0].output == 5.0
    assert price_for("claude-3-5-haiku-latest")[0].input == 0.8
    assert price_for("some-proxy-model") == (price_for("claude-sonnet-4-6")[0], False)


def test_cost_includes_cache_reads_and_writes():
    usage = {"input_tokens": 1_000_000, "output_tokens": 1_000_000, "cache_creation_input_tokens": 1_000_000,
             "cache_read_input_tokens": 1_000_000}
    assert cost_usd("claude-sonnet-4-6", usage) == pytest.approx(3 + 15 + 3.75 + 0.3)
    tracker = CostTracker()
    tracker.add("claude-haiku-4-5", {"input_tokens": 1000, "output_tokens": 10})
    tracker.add("claude-haiku-4-5", {"input_tokens": 1000, "output_tokens": 10})
    assert tracker.cost_usd == pytest.approx(2 * (1000 * 1 + 10 * 5) / 1e6)
    assert tracker.total_tokens == 2020


# ---------------------------------------------------------------------------------------------- client pieces
def test_cache_breakpoints_on_system_last_tool_latest_message_without_mutation():
    params = {
        "system": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "tools": [{"name": "Read"}, {"name": "Edit"}],
        "messages": [{"role": "user", "content": "hi"},
                     {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}],
    }
    before = copy.deepcopy(params)
    out = with_cache_control(params)
    assert params == before
    eph = {"type": "ephemeral"}
    assert out["system"][1]["cache_control"] == eph and "cache_control" not in out["system"][0]
    assert out["tools"][1]["cache_control"] == eph and "cache_control" not in out["tools"][0]
    assert out["messages"][2]["content"][0]["cache_control"] == eph
    assert out["messages"][0] == {"role": "user", "content": "hi"}


def _status_error(status: int, body: dict) -> wire.APIStatusError:
    return wire.APIStatusError(status, body, {"content-type": "application/json"})


def _sdk_status_error(status: int, body: dict) -> anthropic.APIStatusError:
    request = httpx2.Request("POST", "http://x/v1/messages")
    response = httpx2.Response(status, request=request, json=body)
    return anthropic.APIStatusError("err", response=response, body=body)


@pytest.mark.parametrize("status,etype,message,kind,retryable", [
    (401, "authentication_error", "invalid x-api-key", "auth", False),
    (403, "permission_error", "no", "auth", False),
    (404, "not_found_error", "model: x", "model_not_found", False),
    (400, "invalid_request_error", "prompt is too long: 300000 tokens > 200000 maximum", "context_too_long", False),
    (400, "invalid_request_error", "messages: roles must alternate", "bad_request", False),
    (429, "rate_limit_error", "slow down", "rate_limit", True),
    (529, "overloaded_error", "Overloaded", "overloaded", True),
    (500, "api_error", "boom", "server", True),
    (503, "api_error", "unavailable", "server", True),
    (200, "overloaded_error", "Overloaded (in-stream error event)", "overloaded", True),
])
def test_classify_status_errors(status, etype, message, kind, retryable):
    body = {"type": "error", "error": {"type": etype, "message": message}}
    err = classify(_status_error(status, body), "m")
    assert err.kind == kind and err.retryable is retryable and message.split(":")[0] in str(err)
    # The SDK transport's errors, translated at its boundary, classify the same.
    sdk_err = classify(translate(_sdk_status_error(status, body)), "m")
    assert (sdk_err.kind, sdk_err.retryable, str(sdk_err)) == (err.kind, err.retryable, str(err))


def test_classify_transport_errors():
    assert classify(wire.APIConnectionError("ConnectError: refused")).kind == "connection"
    assert "Could not reach the API" in str(classify(wire.APIConnectionError("ConnectError: refused")))
    dropped = classify(wire.APIConnectionError("RemoteProtocolError: peer closed", mid_stream=True))
    assert dropped.kind == "connection" and dropped.retryable and "dropped" in str(dropped)
    assert classify(wire.APITimeoutError("read timeout")).retryable
    assert classify(ValueError("bad json")).kind == "malformed"
    request = httpx2.Request("POST", "http://x")
    assert classify(translate(anthropic.APIConnectionError(request=request))).kind == "connection"
    assert isinstance(translate(anthropic.APITimeoutError(request=request)), wire.APITimeoutError)


def test_from_env(monkeypatch):
    with pytest.raises(ModelError) as exc:
        AnthropicClient.from_env()
    assert exc.value.kind == "auth" and "ANTHROPIC_API_KEY" in str(exc.value)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-opus-4-8")
    client = AnthropicClient.from_env()
    assert client.api_key == "sk-env" and client.api.url == "http://127.0.0.1:9/v1/messages"
    assert client.api.headers["x-api-key"] == "sk-env" and client.api.headers["anthropic-version"] == "2023-06-01"
    sdk = AnthropicClient.from_env(transport="sdk").api.sdk
    assert sdk.api_key == "sk-env" and sdk.max_retries == 0 and str(sdk.base_url).startswith("http://127.0.0.1:9")
    assert default_model_from_env() == "claude-opus-4-8"
    monkeypatch.delenv("ANTHROPIC_MODEL")
    assert default_model_from_env() == DEFAULT_MODEL


def test_from_env_bearer_token_and_transport_choice(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-1")
    client = AnthropicClient.from_env()
    assert client.api.headers["authorization"] == "Bearer tok-1" and "x-api-key" not in client.api.headers
    monkeypatch.setenv("DESKTOP_AGENT_API_TRANSPORT", "sdk")
    assert type(AnthropicClient.from_env().api).__name__ == "SDKMessagesAPI"
    monkeypatch.setenv("DESKTOP_AGENT_API_TRANSPORT", "carrier-pigeon")
    with pytest.raises(ModelError) as exc:
        AnthropicClient.from_env()
    assert "DESKTOP_AGENT_API_TRANSPORT" in str(exc.value) and "wire, sdk" in str(exc.value)


def test_backoff_is_exponential_with_jitter_and_capped():
    client = AnthropicClient("k", "http://127.0.0.1:9", base_delay_s=0.5, max_delay_s=4)
    plain = RuntimeError("x")
    for attempt, base in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (8, 4.0)]:
        delays = {client.backoff(attempt, plain) for _ in range(20)}
        assert all(base * 0.75 <= d <= base * 1.25 for d in delays) and len(delays) > 1


# ---------------------------------------------------------------------------------------------- scripted client
@aio
async def test_scripted_client_strictness_and_check():
    seen = []
    client = ScriptedModelClient([reply(text("a"), check=lambda r: seen.append(r.model))])
    req = ModelRequest(model="m1", messages=[])
    events = [e async for e in client.stream(req)]
    assert events[0]["type"] == "message_start" and seen == ["m1"]
    with pytest.raises(AssertionError, match="unexpected request #2"):
        [e async for e in client.stream(req)]
    with pytest.raises(AssertionError):
        client.assert_done()

    def bad(r):
        assert r.model == "other", "wrong model"

    client2 = ScriptedModelClient([reply(text("a"), check=bad)])
    with pytest.raises(AssertionError, match="wrong model"):
        [e async for e in client2.stream(req)]
    with pytest.raises(AssertionError, match="wrong model"):
        client2.assert_done()


def test_fake_server_validator_catches_pairing_errors():
    from tests.fakes.anthropic_server import api_problems

    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
    hi = {"role": "user", "content": "hi"}
    assert api_problems({"messages": [hi, use, result]}) == []
    assert "without `tool_result`" in api_problems({"messages": [hi, use]})[0]
    assert "without `tool_result`" in api_problems({"messages": [hi, use, hi]})[0]
    assert "unexpected `tool_use_id`" in api_problems({"messages": [hi, {"role": "assistant", "content": "a"},
                                                                   result]})[0]
    assert "alternate" in api_problems({"messages": [hi, hi]})[0]
    assert "first message" in api_problems({"messages": [use, result]})[0]
