"""Isolation: the executor process dies (kill -9) while a question is pending and while a tool runs.

The handle reports which process and how it ended (an ``ErrorEvent`` and a ``TurnFinished``), the pending
question is withdrawn (the front end's ask is cancelled) and resolved as a deny, the transcript on disk loads
into a valid API sequence, and ``restart()`` resumes the session in a new executor (``--resume``) whose requests
pass the fake API's validation and carry the earlier conversation. Also: a duplicate answer is ignored, and an
executor that cannot start says why.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from desktop_agent.client import ClientError, SessionOptions, make_client
from desktop_agent.core.events import ErrorEvent, PermissionResolved, TextDelta, ToolCallStarted, TurnFinished
from desktop_agent.core.permission import PermissionReply
from desktop_agent.session.resume import load_conversation_for_resume
from desktop_agent.session.store import read_transcript
from tests.faults.util import api_pairing_problems
from tests.fakes.anthropic_server import reply, text, tool_use

from .conftest import HOLD, ScriptedPrompter, run_turn

pytestmark = pytest.mark.asyncio


def _transcript_ok(path: str) -> list[dict]:
    entries = read_transcript(path)
    messages = load_conversation_for_resume(entries).messages
    assert api_pairing_problems(messages) == []
    return messages


def _died(events: list, pid: int) -> ErrorEvent:
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert f"pid {pid}" in error.message and "signal 9 (SIGKILL)" in error.message, error.message
    assert error.kind == "executor"
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "model_error"
    return error


async def test_kill_while_a_question_is_pending_then_restart(fake, ws, open_handle):
    path = str(ws / "app.ts")
    fake.script([reply(tool_use("Read", {"file_path": path}, id="toolu_r"),
                       tool_use("Edit", {"file_path": path, "old_string": "1", "new_string": "2"}, id="toolu_e")),
                 reply(text("Resumed and fine."))])
    prompter = ScriptedPrompter([HOLD])
    handle = await open_handle("process", prompter)
    pid = handle.pid

    def on_event(event):
        if type(event).__name__ == "PermissionRequested":
            asyncio.get_running_loop().call_later(0.2, os.kill, pid, signal.SIGKILL)

    events = await run_turn(handle, "edit it", on_event=on_event)
    _died(events, pid)
    assert not handle.alive and handle.returncode == -9
    for _ in range(100):
        if prompter.cancelled:
            break
        await asyncio.sleep(0.01)
    assert prompter.cancelled == [prompter.asked[0].request_id]  # the dialog closes
    resolved = [e for e in events if isinstance(e, PermissionResolved)]
    assert [(r.reply.behavior, r.decided_by) for r in resolved] == [("deny", "cancel")]
    assert handle.pending_questions == []
    assert (ws / "app.ts").read_text() == "export const value = 1\n"
    _transcript_ok(handle.transcript_path)

    # a turn on the dead handle says so at once
    dead = await run_turn(handle, "hello?")
    assert isinstance(dead[0], ErrorEvent) and f"pid {pid}" in dead[0].message

    await handle.restart()
    assert handle.alive and handle.pid != pid
    events = await run_turn(handle, "go on")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Resumed and fine."
    sent = fake.requests[-1].messages
    assert "edit it" in str(sent[0]["content"]) and "go on" in str(sent[-1]["content"])
    fake.assert_done()  # every request passed the API checks
    await handle.close()
    _transcript_ok(handle.transcript_path)


async def test_kill_while_a_tool_runs_then_restart(fake, ws, open_handle):
    fake.script([reply(tool_use("Bash", {"command": "sleep 8; echo never"}, id="toolu_b")),
                 reply(text("Back."))])
    handle = await open_handle("process", ScriptedPrompter([PermissionReply(behavior="allow")]),
                               permission_mode="acceptEdits")
    pid = handle.pid
    started: list[float] = []

    def on_event(event):
        if isinstance(event, ToolCallStarted) and not started:
            started.append(1)
            asyncio.get_running_loop().call_later(1.0, os.kill, pid, signal.SIGKILL)

    events = await run_turn(handle, "run it", on_event=on_event)
    _died(events, pid)
    messages = _transcript_ok(handle.transcript_path)
    assert any(m.get("type") == "assistant" for m in messages)  # the tool_use is on disk, answered on load
    await handle.restart()
    events = await run_turn(handle, "again")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Back."
    fake.assert_done()
    await handle.close()


async def test_duplicate_answer_is_ignored(fake, ws, open_handle):
    path = str(ws / "app.ts")
    fake.script([reply(tool_use("Read", {"file_path": path}, id="toolu_r"),
                       tool_use("Edit", {"file_path": path, "old_string": "1", "new_string": "2"}, id="toolu_e")),
                 reply(text("ok"))])
    handle = await open_handle("process", None)  # no prompter: the front end answers by id
    answers: list[bool] = []

    def on_event(event):
        if type(event).__name__ == "PermissionRequested":
            rid = event.request.request_id
            answers.append(handle.answer(rid, PermissionReply(behavior="allow")))
            answers.append(handle.answer(rid, PermissionReply(behavior="deny", message="late")))

    events = await run_turn(handle, "edit", on_event=on_event)
    await handle.close()
    assert answers == [True, False]
    assert [e.reply.behavior for e in events if isinstance(e, PermissionResolved)] == ["allow"]
    assert (ws / "app.ts").read_text() == "export const value = 2\n"


async def test_executor_that_cannot_start_says_why(ws, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ClientError) as info:
        await make_client("process").open(str(ws), SessionOptions())
    assert "exited with status 1" in str(info.value) and "API key" in str(info.value)
