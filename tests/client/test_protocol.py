"""``desktop_agent.protocol`` round trips, and the subprocess client against an executor that behaves as Claude
Code does (``fake_claude.py``): no patch in ``can_use_tool``, so the patch is computed here (``computed_here``),
the executable path and the Claude Code flag set are used, the changes panel's data comes from the result."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from desktop_agent.client import SessionOptions
from desktop_agent.client.lines import reply_body, with_computed_patch
from desktop_agent.client.subprocess import SubprocessClient, executor_argv
from desktop_agent.core.events import ToolCallFinished, ToolCallStarted, TurnFinished, Usage
from desktop_agent.core.permission import PermissionReply, PermissionRequest, PermissionUpdate
from desktop_agent.protocol import ProtocolError, decode, encode
from desktop_agent.protocol.control import (
    CanUseToolRequest, ControlCancelRequest, ControlRequest, ControlResponse, InterruptRequest, McpStatusRequest,
    OtherRequest, PermissionAllow, SetPermissionModeRequest,
)
from desktop_agent.protocol.stream_json import AssistantLine, ResultLine, SystemInit, UnknownLine, UserLine

from .conftest import ScriptedPrompter

HERE = Path(__file__).parent

CAN_USE_TOOL = {"type": "control_request", "request_id": "r-1", "request": {
    "subtype": "can_use_tool", "tool_name": "Edit", "display_name": "Edit", "input": {"file_path": "/w/app.ts"},
    "description": "app.ts", "permission_suggestions": [{"type": "setMode", "mode": "acceptEdits",
                                                         "destination": "session"}],
    "tool_use_id": "toolu_02", "structured_patch": [{"oldStart": 1, "lines": ["-a", "+b"]}],
    "original_file": "a\n", "future_field": 7}}


def test_lines_round_trip_exactly():
    lines = [
        CAN_USE_TOOL,
        {"type": "control_response", "response": {"subtype": "success", "request_id": "x"}},
        {"type": "control_response", "response": {"subtype": "error", "request_id": "x", "error": "no"}},
        {"type": "control_cancel_request", "request_id": "r-1"},
        {"type": "control_request", "request_id": "q", "request": {"subtype": "mcp_status"}},
        {"type": "system", "subtype": "init", "cwd": "/w", "session_id": "s", "tools": ["Read"], "mcp_servers": [],
         "model": "m", "permissionMode": "default", "apiKeySource": "ANTHROPIC_API_KEY", "uuid": "u"},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "hi"}]}, "parent_tool_use_id": None,
         "session_id": "s", "uuid": "u"},
        {"type": "user", "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": None, "session_id": ""},
        {"type": "control_request", "request_id": "q2", "request": {"subtype": "reload_skills", "x": 1}},
    ]
    for obj in lines:
        assert json.loads(encode(decode(json.dumps(obj)))) == obj
    assert isinstance(decode(json.dumps(CAN_USE_TOOL)).request, CanUseToolRequest)
    assert isinstance(decode(json.dumps(lines[4])).request, McpStatusRequest)
    assert isinstance(decode(json.dumps(lines[8])).request, OtherRequest)
    assert isinstance(decode(json.dumps(lines[3])), ControlCancelRequest)
    assert isinstance(decode(json.dumps(lines[5])), SystemInit)
    assert isinstance(decode(json.dumps(lines[6])), AssistantLine)
    assert isinstance(decode('{"type":"result","subtype":"error_max_budget_usd"}'), ResultLine)
    assert isinstance(decode('{"type":"keep_alive"}'), UnknownLine)
    for bad in ("not json", "[1]", '{"type":"control_request","request_id":"x"}', '{"type":"assistant"}'):
        with pytest.raises(ProtocolError):
            decode(bad)


def test_encoding_what_the_host_sends():
    assert json.loads(encode(UserLine.prompt("hi"))) == {
        "type": "user", "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": None, "session_id": ""}
    req = json.loads(encode(ControlRequest(request=SetPermissionModeRequest(mode="plan"))))
    assert req["request"] == {"subtype": "set_permission_mode", "mode": "plan"} and req["request_id"]
    assert json.loads(encode(ControlRequest(request_id="i", request=InterruptRequest()))) == {
        "type": "control_request", "request_id": "i", "request": {"subtype": "interrupt"}}
    body = PermissionAllow(updatedInput={"a": 1}).to_wire()
    assert json.loads(encode(ControlResponse.success("r", body))) == {"type": "control_response", "response": {
        "subtype": "success", "request_id": "r", "response": {"behavior": "allow", "updatedInput": {"a": 1}}}}


def test_reply_bodies():
    suggestion = PermissionUpdate(type="setMode", mode="acceptEdits", destination="session")
    allow = reply_body(PermissionReply(behavior="allow", updated_permissions=[suggestion]), {"x": 1}).to_wire()
    assert allow == {"behavior": "allow", "updatedInput": {"x": 1},
                     "updatedPermissions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]}
    deny = reply_body(PermissionReply(behavior="deny", message="User denied via UI", feedback="use tabs"), {})
    # the feedback folded into the message (what the model reads) and kept as our extension field (what every
    # client shows as "You denied … and told the agent")
    assert deny.to_wire() == {"behavior": "deny", "message": "User denied via UI. The user said: use tabs",
                              "feedback": "use tabs"}
    assert reply_body(PermissionReply(behavior="deny", message="No.", interrupt=True), {}).to_wire() == {
        "behavior": "deny", "message": "No.", "interrupt": True}


def test_computed_patch_uses_the_edit_tools_code(tmp_path):
    f = tmp_path / "a.py"
    f.write_text("one\ntwo\nthree\n")
    req = PermissionRequest(tool_name="Edit", tool_use_id="t", cwd=str(tmp_path),
                            input={"file_path": "a.py", "old_string": "two", "new_string": "TWO"})
    out = with_computed_patch(req)
    assert out.computed_here and out.original_file == "one\ntwo\nthree\n" and out.file_path == str(f)
    assert out.structured_patch == [{"oldStart": 1, "oldLines": 3, "newStart": 1, "newLines": 3,
                                     "lines": [" one", "-two", "+TWO", " three"]}]
    new = with_computed_patch(PermissionRequest(tool_name="Write", tool_use_id="t", cwd=str(tmp_path),
                                                input={"file_path": str(tmp_path / "n.txt"), "content": "x\n"}))
    assert new.computed_here and new.original_file is None and new.structured_patch[0]["lines"] == ["+x"]
    bash = PermissionRequest(tool_name="Bash", tool_use_id="t", cwd=str(tmp_path), input={"command": "ls"})
    assert with_computed_patch(bash) is bash


def test_claude_code_flag_set():
    argv = executor_argv("claude", SessionOptions(permission_mode="bypassPermissions", trusted=True,
                                                  allowed_tools=["Bash(git *)"]), session_id=None, resume="abc")
    assert argv[:9] == ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                        "--include-partial-messages", "--permission-prompt-tool", "stdio"]
    assert "--dangerously-skip-permissions" in argv and argv[argv.index("--resume") + 1] == "abc"
    assert "--allowedTools=Bash(git *)" in argv and "--trust" not in argv


@pytest.mark.asyncio
async def test_claude_code_executor_gets_a_computed_patch(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    target = ws / "app.ts"
    target.write_text("export const value = 1\n")
    monkeypatch.setenv("FAKE_CLAUDE_ARGV", str(tmp_path / "argv.json"))
    client = SubprocessClient([sys.executable, str(HERE / "fake_claude.py")], flavor="claude")
    assert client.kind == "claude"
    prompter = ScriptedPrompter([lambda r: PermissionReply(behavior="allow", updated_permissions=r.suggestions[:1])])
    handle = await client.open(str(ws), SessionOptions(prompter=prompter))
    events = [e async for e in handle.submit(str(target))]
    await handle.close()
    [asked] = prompter.asked
    assert asked.computed_here and asked.original_file == "export const value = 1\n"
    assert asked.structured_patch[0]["lines"] == ["-export const value = 1", "+export const value = 2"]
    # "Allow for session" is this file's rule; Claude Code's mode switch stays, last, as a choice of its own
    assert [u.to_wire() for u in asked.suggestions] == [
        {"type": "addRules", "rules": [{"toolName": "Edit", "ruleContent": f"/{target}"}], "behavior": "allow",
         "destination": "session"},
        {"type": "setMode", "mode": "acceptEdits", "destination": "session"}]
    assert target.read_text() == "export const value = 2\n"
    assert handle.model == "claude-fake" and handle.transcript_path == ""
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert started.name == finished.name == "Edit" and finished.data["structuredPatch"]
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.session_tokens == 15 and usage.session_cost_usd == 0.001
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "completed"
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert "--permission-prompt-tool" in argv and "--session-id" in argv


def _events():
    from desktop_agent.core.events import ErrorEvent, PermissionResolved, TextDelta, ToolCallProgress

    return [TextDelta(index=0, text="naïve 日本 \"quoted\" \\ \n"),
            TurnFinished(reason="completed", duration_ms=1.5e-7, cost_usd=0.1, usage={"input_tokens": 3}),
            TurnFinished(reason="completed", duration_ms=float("inf"), duration_api_ms=1e300),
            ToolCallProgress(tool_use_id="t", data={"text": "x" * 5000, "n": [1, 2.5, None]}),
            ErrorEvent(message="boom", retryable=False),
            PermissionResolved(request_id="r", tool_use_id="t", reply=PermissionReply(behavior="allow"))]


def test_agent_event_lines_encode_as_the_general_encoder_would():
    from desktop_agent.protocol.stream_json import AgentEventLine, decode_agent_event

    for event in _events():
        line = AgentEventLine.of(event)
        assert line == AgentEventLine.model_construct(type="agent_event", event=event)
        assert (line.__pydantic_fields_set__, line.__pydantic_extra__, line.__pydantic_private__) == \
            ({"type", "event"}, {}, None)
        text = encode(line)
        assert text.endswith("\n") and "\n" not in text[:-1]
        assert json.loads(text) == json.loads(json.dumps(line.to_wire(), ensure_ascii=False))
        assert "\\u" not in text  # non-ASCII kept as is, as json.dumps(ensure_ascii=False) keeps it
        back = decode_agent_event(text.strip())
        assert back is not None and back.agent_event() == event
        assert decode(text).agent_event() == event


def test_the_quick_agent_event_decode_takes_exactly_its_own_lines():
    """A line that starts as ``encode`` writes one but says more is decoded the general way (or refused), never
    read as the event alone."""
    from desktop_agent.host.connections import Malformed, decode_line
    from desktop_agent.protocol.stream_json import AGENT_EVENT_PREFIX, decode_agent_event

    event = '{"type":"text_delta","index":0,"text":"hi"}'
    assert decode_agent_event(AGENT_EVENT_PREFIX + event + "}") is not None
    more_keys = AGENT_EVENT_PREFIX + event + ', "type": "control_request", "request_id": "r", "request": ' \
        '{"subtype": "interrupt"}}'
    assert decode_agent_event(more_keys) is None
    assert type(decode_line(more_keys)).__name__ == "ControlRequest"  # what json.loads makes of it: the last "type"
    for bad in (AGENT_EVENT_PREFIX + '{"type":"text_delta"}}', AGENT_EVENT_PREFIX + "{" * 5000 + "}",
                AGENT_EVENT_PREFIX + '{"type":"no_such_event"}}', AGENT_EVENT_PREFIX + "}"):
        assert decode_agent_event(bad) is None
        assert isinstance(decode_line(bad), Malformed)
    assert isinstance(decode_line((AGENT_EVENT_PREFIX + event + "}").encode()[:-3] + b"\xff}}"), Malformed)
