"""Contract scenarios that need more than one handle or a death: a per-hunk partial allow, the engine's side dying
with a question pending (pipe: the executor child is killed; unix: the host process is killed; memory has no other
process), and two clients attached to one session — the first answer wins, the other client's ask is withdrawn and
its late answer is refused (SPEC App. D.2)."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from desktop_agent.client import SessionOptions
from desktop_agent.client.session import HostClient, ProtocolSession, SocketClient
from desktop_agent.core.events import ErrorEvent, PermissionRequested, ToolCallFinished, TurnFinished, TextDelta
from desktop_agent.core.permission import PermissionReply
from desktop_agent.protocol.control import ControlResponse
from desktop_agent.protocol.permission import reply_to_wire
from desktop_agent.session.resume import load_conversation_for_resume
from desktop_agent.session.store import read_transcript
from desktop_agent.util.diff import apply_hunks, hunk_old_range, structured_patch
from tests.fakes.anthropic_server import reply, text, tool_use
from tests.faults.util import api_pairing_problems

from .conftest import HOLD, TRANSPORTS, ScriptedPrompter, run_turn

pytestmark = pytest.mark.asyncio
ORIGINAL = "".join(f"line {i}\n" for i in range(1, 61))


def _changed(keep: tuple[int, ...] = (5, 30, 55)) -> str:
    return "".join(f"line {i} changed\n" if i in keep else f"line {i}\n" for i in range(1, 61))


def _tool_result(fake, tool_use_id: str) -> dict:
    for rec in fake.requests:
        for m in rec.messages:
            content = m.get("content")
            for b in content if isinstance(content, list) else []:
                if b.get("type") == "tool_result" and b.get("tool_use_id") == tool_use_id:
                    return b
    raise AssertionError(f"no tool_result for {tool_use_id}")


def _transcript_ok(path: str) -> list[dict]:
    """The transcript on disk loads into a valid API sequence (an unanswered call gets its synthetic result)."""
    messages = load_conversation_for_resume(read_transcript(path)).messages
    assert api_pairing_problems(messages) == []
    return messages


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_per_hunk_partial_allow(kind, fake, ws, open_handle):
    path = ws / "lines.txt"
    path.write_text(ORIGINAL)
    fake.script([reply(tool_use("Read", {"file_path": str(path)}, id="toolu_r")),
                 reply(tool_use("Write", {"file_path": str(path), "content": _changed()}, id="toolu_w")),
                 reply(text("ok"))])
    hunks = structured_patch(ORIGINAL, _changed())
    a, b = hunk_old_range(hunks[1])

    def partial(request):
        assert request.structured_patch and len(request.structured_patch) == 3  # the patch the dialog shows
        content = apply_hunks(ORIGINAL, _changed(), hunks, [True, False, True])
        return PermissionReply(behavior="allow", updated_input={**request.input, "content": content},
                               rejected_hunks=[(a, b)], total_hunks=3)

    prompter = ScriptedPrompter([partial])
    handle = await open_handle(kind, prompter)
    events = await run_turn(handle, "change three lines")
    await handle.close()
    assert path.read_text() == _changed(keep=(5, 55))
    assert _tool_result(fake, "toolu_w")["content"] == (
        f"The file {path} has been updated successfully.  The user modified your proposed changes before "
        f"accepting them. . The user rejected 1 of 3 hunks (lines {a}\u2013{b}); those parts were NOT written.")
    finished = next(e for e in events if isinstance(e, ToolCallFinished) and e.tool_use_id == "toolu_w")
    assert finished.data["rejectedHunks"] == [[a, b]] and finished.data["totalHunks"] == 3  # the panel marks it


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_the_engine_side_dies_with_a_question_pending_then_the_session_resumes(kind, fake, ws, open_handle,
                                                                                   host_process):
    if kind == "memory":
        pytest.skip("the memory transport's host is this process: there is nothing to kill but the test")
    path = str(ws / "app.ts")
    fake.script([reply(tool_use("Read", {"file_path": path}, id="toolu_r"),
                       tool_use("Edit", {"file_path": path, "old_string": "1", "new_string": "2"}, id="toolu_e")),
                 reply(text("Resumed and fine."))])
    prompter = ScriptedPrompter([HOLD])
    handle = await open_handle(kind, prompter)
    pid = handle.state.pid

    def kill() -> None:
        if kind == "pipe":
            os.kill(pid, signal.SIGKILL)
        else:
            host_process.kill()

    def on_event(event):
        if isinstance(event, PermissionRequested):
            asyncio.get_running_loop().call_later(0.2, kill)

    events = await run_turn(handle, "edit it", on_event=on_event)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.kind == "executor"
    if kind == "pipe":
        assert f"pid {pid}" in error.message and "signal 9 (SIGKILL)" in error.message, error.message
    else:
        assert "desktop-agent host" in error.message and "stopped answering" in error.message, error.message
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "model_error"
    assert not handle.state.alive
    for _ in range(100):
        if prompter.cancelled:
            break
        await asyncio.sleep(0.01)
    assert prompter.cancelled == [prompter.asked[0].request_id]  # the dialog closes
    assert handle.pending_questions == []
    assert (ws / "app.ts").read_text() == "export const value = 1\n"
    _transcript_ok(handle.transcript_path)  # the unanswered call gets its synthetic result on load

    if kind == "unix":
        host_process.restart()  # a new host; the old one's socket file is gone
    await handle.restart()
    assert handle.state.alive
    events = await run_turn(handle, "go on")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Resumed and fine."
    sent = fake.requests[-1].messages
    assert "edit it" in str(sent[0]["content"]) and "go on" in str(sent[-1]["content"])
    await handle.close()
    _transcript_ok(handle.transcript_path)
    fake.assert_done()


@pytest.mark.parametrize("kind", ["memory", "unix"])
async def test_two_clients_see_one_question_and_the_first_answer_wins(kind, fake, ws, host_process):
    path = str(ws / "app.ts")
    fake.script([reply(tool_use("Read", {"file_path": path}, id="toolu_r"),
                       tool_use("Edit", {"file_path": path, "old_string": "1", "new_string": "2"}, id="toolu_e")),
                 reply(text("Done."))])
    client: HostClient | SocketClient = HostClient() if kind == "memory" else SocketClient(host_process.start())
    holder = ScriptedPrompter([HOLD])  # the first window: its dialog stays open
    first = await client.open(str(ws), SessionOptions(prompter=holder))
    answerer = ScriptedPrompter([PermissionReply(behavior="allow")])  # the second window answers
    second: ProtocolSession = await client.attach(first.session_id, SessionOptions(prompter=answerer))
    try:
        events = await run_turn(first, "edit it")
        assert (ws / "app.ts").read_text() == "export const value = 2\n"
        assert [r.tool_use_id for r in holder.asked] == ["toolu_e"] == [r.tool_use_id for r in answerer.asked]
        rid = holder.asked[0].request_id
        assert answerer.asked[0].request_id == rid
        for _ in range(100):
            if holder.cancelled:
                break
            await asyncio.sleep(0.01)
        assert holder.cancelled == [rid]  # the other dialog closes
        assert isinstance(events[-1], TurnFinished) and events[-1].reason == "completed"
        # a late answer from the first window is refused with an error reply and changes nothing
        request = holder.asked[0]
        first.transport.send(ControlResponse.success(rid, reply_to_wire(
            PermissionReply(behavior="deny", message="too late"), request.input).to_wire()))
        for _ in range(200):
            if first.refusals:
                break
            await asyncio.sleep(0.01)
        assert first.refusals == [(rid, "This permission request was already answered")]
        # an unknown id too
        first.transport.send(ControlResponse.success("req_nope", {"behavior": "allow", "updatedInput": {}}))
        for _ in range(200):
            if len(first.refusals) == 2:
                break
            await asyncio.sleep(0.01)
        assert first.refusals[1] == ("req_nope", "No pending permission request with this id in this session")
        assert (ws / "app.ts").read_text() == "export const value = 2\n"
        assert not _tool_result(fake, "toolu_e").get("is_error")
    finally:
        await second.detach()
        await first.close()
