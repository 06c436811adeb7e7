"""``host.server``: the lossless ``agent_event`` line (SPEC App. D.1) — every ``AgentEvent`` type survives the wire
exactly, and only a client that asked gets it (an SDK never does); the host's refusals (App. D.2) over stdio; and
``serve_connection`` on a real Unix socket listing sessions and pending questions."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import typing

import pytest

from desktop_agent.core import events as ev
from desktop_agent.core.permission import DecisionReason, PermissionReply, PermissionRequest, PermissionUpdate
from desktop_agent.host.server import Host, serve_connection
from desktop_agent.protocol import stream_json
from desktop_agent.protocol.control import (
    AttachSessionRequest, ControlRequest, ControlResponse, ListPendingRequest, ListSessionsRequest,
    OpenSessionRequest, SessionSettings,
)
from desktop_agent.protocol.permission import reply_from_wire, reply_to_wire, request_from_wire, request_to_wire
from tests.fakes.anthropic_server import reply, text, tool_use
from tests.test_cli import fake, start, tool_results  # noqa: F401 - the fixture

REQUEST = PermissionRequest(
    request_id="req_1", tool_name="Edit", tool_use_id="toolu_1", input={"file_path": "/w/a.py", "old_string": "é",
                                                                     "new_string": "ü"},
    cwd="/w", message="Edit needs approval", decision_reason=DecisionReason(type="mode", reason="default mode"),
    suggestions=[PermissionUpdate(type="setMode", mode="acceptEdits", destination="session")],
    file_path="/w/a.py", structured_patch=[{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
                                           "lines": ["-é", "+ü"]}], original_file="é\n")
REPLY = PermissionReply(behavior="deny", message="no", feedback="keep it", interrupt=True)

SAMPLES: list[typing.Any] = [
    ev.TurnStarted(turn=1), ev.RequestStarted(turn=2, model="m"), ev.TextDelta(index=0, text="héllo\n"),
    ev.ThinkingDelta(index=1, text="hm"), ev.StreamEvent(event={"type": "message_start", "message": {"id": "x"}}),
    ev.AssistantMessage(message={"type": "assistant", "uuid": "u", "message": {"content": []}}),
    ev.AssistantBlock(message={"role": "assistant", "content": [{"type": "text", "text": "t"}]}),
    ev.UserMessage(message={"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t"}]}}),
    ev.ToolCallStarted(tool_use_id="t", name="Bash", input={"command": "ls"}, summary="ls"),
    ev.ToolCallProgress(tool_use_id="t", data={"line": "x", "n": [1, 2.5, None]}),
    ev.ToolCallFinished(tool_use_id="t", name="Edit", content=[{"type": "text", "text": "ok"}], is_error=True,
                        data={"structuredPatch": [], "rejectedHunks": [[1, 2]]}, duration_ms=1.5, denied=True),
    ev.PermissionRequested(request=REQUEST),
    ev.PermissionResolved(request_id="req_1", tool_use_id="toolu_1", reply=REPLY, decided_by="hook"),
    ev.RetryWaiting(attempt=1, max_attempts=3, delay_s=0.5, error="overloaded"),
    ev.StreamFallback(action="discarded_partial", detail="d"),
    ev.Usage(input_tokens=1, output_tokens=2, cache_read_input_tokens=3, cache_creation_input_tokens=4, cost_usd=0.1,
             session_cost_usd=0.2, session_tokens=10),
    ev.Compacted(pre_tokens=1234, summary="s"),
    ev.ErrorEvent(message="Bad key", kind="auth", retryable=True),
    ev.TurnFinished(reason="max_turns", num_turns=3, result_text="r", duration_ms=1.0, duration_api_ms=2.0,
                    cost_usd=0.3, usage={"input_tokens": 5}, error="e"),
]


def test_every_agent_event_type_is_sampled():
    union = typing.get_args(typing.get_args(ev.AgentEvent)[0])
    assert {type(s) for s in SAMPLES} == set(union)


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: type(e).__name__)
def test_agent_event_line_round_trips_exactly(event):
    line = stream_json.encode(stream_json.AgentEventLine.of(event))
    assert line.endswith("\n") and line.count("\n") == 1
    back = stream_json.decode(line)
    assert isinstance(back, stream_json.AgentEventLine)
    assert back.agent_event() == event and type(back.agent_event()) is type(event)
    assert json.loads(line)["event"] == event.model_dump(mode="json")


def test_permission_mappings_both_ways():
    wire = request_to_wire(REQUEST)
    back = request_from_wire("req_1", type(wire).model_validate(json.loads(json.dumps(wire.to_wire()))), "/w")
    assert back.input == REQUEST.input and back.structured_patch == REQUEST.structured_patch
    assert back.suggestions == REQUEST.suggestions and back.original_file == REQUEST.original_file
    deny = reply_from_wire(reply_to_wire(REPLY, REQUEST.input).to_wire())
    assert (deny.behavior, deny.message, deny.feedback, deny.interrupt) == (
        "deny", "no", "keep it", True)
    allow = PermissionReply(behavior="allow", updated_input={**REQUEST.input, "new_string": "x"},
                            updated_permissions=REQUEST.suggestions, rejected_hunks=[(2, 3)], total_hunks=4)
    got = reply_from_wire(reply_to_wire(allow, REQUEST.input).to_wire())
    assert got == allow
    # hostile bodies fail closed: no behavior is a deny; a malformed hunk list or update is dropped, not widened
    assert reply_from_wire({}).behavior == "deny" and reply_from_wire(None).behavior == "deny"
    assert reply_from_wire({"behavior": "Allow"}).behavior == "deny"
    odd = reply_from_wire({"behavior": "allow", "updatedInput": [1], "rejectedHunks": [[3, 1]],
                           "updatedPermissions": [{"type": "nonsense"}]})
    assert odd.updated_input is None and odd.rejected_hunks is None and odd.updated_permissions == []


def test_agent_events_only_for_the_client_that_asks(fake, workdir, tmp_path):  # noqa: F811
    fake.script([reply(text("plain")), reply(text("with events"))])
    d = start(fake, workdir, tmp_path)  # an SDK's initialize: no desktopAgent
    d.user("one")
    assert d.result()["result"] == "plain"
    assert not [m for m in d.seen if m.get("type") == "agent_event"]
    assert [m for m in d.seen if m.get("type") == "assistant"]
    # a second initialize asking for them (our own client does it first thing)
    rid = d.control({"subtype": "initialize", "desktopAgent": {"agentEvents": True}})
    d.expect(lambda m: m.get("type") == "control_response" and m["response"]["request_id"] == rid)
    before = len(d.seen)
    d.user("two")
    assert d.result()["result"] == "with events"
    later = d.seen[before:]
    kinds = [m["event"]["type"] for m in later if m.get("type") == "agent_event"]
    assert kinds[0] == "turn_started" and kinds[-1] == "turn_finished" and "text_delta" in kinds
    assert not [m for m in later if m.get("type") in ("assistant", "user", "stream_event")]  # the events say it
    assert d.close() == 0


def test_a_stale_or_unknown_answer_gets_an_error_reply_and_changes_nothing(fake, workdir, tmp_path):  # noqa: F811
    path = workdir / "a.txt"
    path.write_text("one\n")
    fake.script([reply(tool_use("Read", {"file_path": str(path)}, id="toolu_r"),
                       tool_use("Edit", {"file_path": str(path), "old_string": "one", "new_string": "two"},
                                id="toolu_e")),
                 reply(text("done"))])
    d = start(fake, workdir, tmp_path)
    d.user("edit")
    req = d.control_request("can_use_tool")
    d.respond("req_unknown", {"behavior": "allow", "updatedInput": {}})
    err = d.expect(lambda m: m.get("type") == "control_response" and m["response"]["request_id"] == "req_unknown")
    assert err["response"] == {"subtype": "error", "request_id": "req_unknown",
                               "error": "No pending permission request with this id in this session"}
    d.respond(req["request_id"], {"behavior": "deny", "message": "No."})
    d.respond(req["request_id"], {"behavior": "allow", "updatedInput": {}})  # the late second answer
    err = d.expect(lambda m: m.get("type") == "control_response"
                   and m["response"]["request_id"] == req["request_id"])
    assert err["response"]["error"] == "This permission request was already answered"
    assert d.result()["subtype"] == "success"
    assert d.close() == 0
    assert path.read_text() == "one\n"
    assert tool_results(d, "toolu_e")[0]["content"] == "No."


def test_serve_connection_opens_lists_and_attaches_on_a_unix_socket(monkeypatch, tmp_path):
    async def scenario() -> None:
        host = Host()
        folder = tmp_path / "w"
        folder.mkdir()
        sock_dir = tempfile.mkdtemp(dir="/tmp")
        path = os.path.join(sock_dir, "h.sock")
        server = await asyncio.start_unix_server(lambda r, w: serve_connection(host, r, w, peer="test"), path)
        try:
            reader, writer = await asyncio.open_unix_connection(path)

            async def ask(request) -> dict:
                message = ControlRequest(request=request)
                writer.write(stream_json.encode(message).encode())
                while True:
                    line = stream_json.decode(await asyncio.wait_for(reader.readline(), 30))
                    if isinstance(line, ControlResponse) and line.request_id == message.request_id:
                        return line.response.to_wire()

            empty = await ask(ListSessionsRequest())
            assert empty["response"] == {"sessions": []}
            refused = await ask(AttachSessionRequest(session_id="nope"))
            assert refused["subtype"] == "error" and "No session nope" in refused["error"]
            opened = await ask(OpenSessionRequest(folder=str(folder), settings=SessionSettings(trusted=True)))
            info = opened["response"]
            assert info["cwd"] == str(folder) and info["session_id"] and info["pending"] == 0
            listed = await ask(ListSessionsRequest())
            assert [s["session_id"] for s in listed["response"]["sessions"]] == [info["session_id"]]
            pending = await ask(ListPendingRequest())
            assert pending["response"] == {"questions": []}
            garbage = await ask(type(ListSessionsRequest())())  # still answering after the others
            assert garbage["subtype"] == "success"
            writer.write(b'{"type": "control_request", "request_id": "bad", "request": {"subtype": "desktop_agent_open"}}\n')
            line = stream_json.decode(await asyncio.wait_for(reader.readline(), 30))
            assert isinstance(line, ControlResponse) and line.response.subtype == "error" and line.request_id == "bad"
            writer.close()
        finally:
            server.close()
            await server.wait_closed()
            await host.close()
            os.unlink(path)
            os.rmdir(sock_dir)

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    asyncio.run(scenario())


def test_socket_lines_of_one_loop_turn_go_out_in_one_write_in_order():
    """``StreamConnection`` coalesces the lines written in one turn of the loop into one write (a streamed reply's
    events), keeps their order, encodes a line shared by two clients once, and flushes what is pending on close."""
    import socket

    from desktop_agent.core.events import TextDelta
    from desktop_agent.host import connections
    from desktop_agent.protocol import stream_json
    from desktop_agent.protocol.stream_json import AgentEventLine

    async def go():
        a, b = socket.socketpair()
        reader, writer = await asyncio.open_connection(sock=a)
        writes = []
        real_write = writer.write
        writer.write = lambda data: (writes.append(data), real_write(data))[1]
        conn = connections.StreamConnection(reader, writer, peer="t")
        lines = [AgentEventLine.of(TextDelta(index=0, text=f"é{i}")) for i in range(50)]
        for line in lines:
            conn.line(line)
        assert writes == []  # not yet: at the end of this turn of the loop
        await asyncio.sleep(0)
        assert len(writes) == 1
        expected = "".join(stream_json.encode(x) for x in lines).encode("utf-8")
        assert writes[0] == expected
        assert connections.encoded(lines[-1]) is connections.encoded(lines[-1])  # the second client: no re-encode
        conn.line(lines[0])
        conn.close()  # flushed before the close
        assert writes[-1] == stream_json.encode(lines[0]).encode("utf-8")
        b.setblocking(False)
        await asyncio.sleep(0.05)
        got = b""
        while True:
            try:
                chunk = b.recv(1 << 20)
            except BlockingIOError:
                break
            if not chunk:
                break
            got += chunk
        assert got == expected + writes[-1]
        b.close()

    asyncio.run(go())
