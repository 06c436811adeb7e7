"""The contract suite: the same UI-flow scenarios, the same assertions, over every transport of a
``ProtocolSession`` — memory (the host in this process), unix (a host process on a socket) and pipe (our CLI as an
executor child) — against the fake Anthropic API.

Allow an Edit (the file changes; the question carries the engine's patch; the tool result feeds the changes
panel), deny with feedback (the message verbatim in the tool_result), allow for session (a second Edit is not
asked), an edited proposal (updatedInput lands), Stop during a running Bash (the turn ends, the session goes
on), and resume.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from desktop_agent.core.events import (
    ErrorEvent, PermissionRequested, PermissionResolved, TextDelta, ToolCallFinished, ToolCallStarted, TurnFinished,
)
from desktop_agent.core.permission import PermissionReply
from tests.fakes.anthropic_server import reply, text, tool_use

from .conftest import TRANSPORTS, ScriptedPrompter, run_turn

pytestmark = [pytest.mark.asyncio, pytest.mark.parametrize("kind", TRANSPORTS)]


def _edit(ws, old: str, new: str, id: str) -> dict:
    return tool_use("Edit", {"file_path": str(ws / "app.ts"), "old_string": old, "new_string": new}, id=id)


def _read(ws, id: str = "toolu_r") -> dict:
    return tool_use("Read", {"file_path": str(ws / "app.ts")}, id=id)


def _tool_result(fake, tool_use_id: str) -> dict:
    for rec in fake.requests:
        for m in rec.messages:
            content = m.get("content")
            for b in content if isinstance(content, list) else []:
                if b.get("type") == "tool_result" and b.get("tool_use_id") == tool_use_id:
                    return b
    raise AssertionError(f"no tool_result for {tool_use_id}")


def _content_text(block: dict) -> str:
    c = block.get("content")
    return c if isinstance(c, str) else "".join(p.get("text", "") for p in c or [])


async def test_allow_edit(kind, fake, ws, open_handle):
    fake.script([reply(_read(ws), _edit(ws, "value = 1", "value = 2", "toolu_e")), reply(text("Done."))])
    prompter = ScriptedPrompter([PermissionReply(behavior="allow")])
    handle = await open_handle(kind, prompter)
    events = await run_turn(handle, "make it 2")
    await handle.close()
    assert (ws / "app.ts").read_text() == "export const value = 2\n"
    [asked] = prompter.asked
    assert asked.tool_name == "Edit" and asked.tool_use_id == "toolu_e"
    assert asked.structured_patch and not asked.computed_here  # the engine's own patch
    assert asked.original_file == "export const value = 1\n"
    kinds = [type(e).__name__ + ":" + getattr(e, "tool_use_id", "") for e in events]
    # the call is shown before the question about it, the answer before its result
    assert kinds.index("ToolCallStarted:toolu_e") < kinds.index("PermissionResolved:toolu_e") \
        < kinds.index("ToolCallFinished:toolu_e")
    assert any(isinstance(e, PermissionRequested) and e.request.tool_use_id == "toolu_e" for e in events)
    finished = next(e for e in events if isinstance(e, ToolCallFinished) and e.tool_use_id == "toolu_e")
    assert not finished.is_error and finished.name == "Edit"
    assert finished.data and finished.data["structuredPatch"]  # what the changes panel shows
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Done."
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "completed"
    fake.assert_done()


async def test_deny_with_feedback(kind, fake, ws, open_handle):
    fake.script([reply(_read(ws), _edit(ws, "value = 1", "value = 2", "toolu_e")), reply(text("Understood."))])
    message = "No: keep the value at 1 and add a comment instead."
    prompter = ScriptedPrompter([PermissionReply(behavior="deny", message=message)])
    handle = await open_handle(kind, prompter)
    events = await run_turn(handle, "make it 2")
    await handle.close()
    assert (ws / "app.ts").read_text() == "export const value = 1\n"
    result = _tool_result(fake, "toolu_e")
    assert result.get("is_error") is True and _content_text(result) == message
    finished = next(e for e in events if isinstance(e, ToolCallFinished) and e.tool_use_id == "toolu_e")
    assert finished.is_error and finished.denied
    resolved = next(e for e in events if isinstance(e, PermissionResolved))
    assert resolved.reply.behavior == "deny" and resolved.decided_by == "user"


async def test_allow_for_session(kind, fake, ws, open_handle):
    fake.script([reply(_read(ws), _edit(ws, "value = 1", "value = 2", "toolu_e1")),
                 reply(_edit(ws, "value = 2", "value = 3", "toolu_e2")), reply(text("Both done."))])
    prompter = ScriptedPrompter([lambda r: PermissionReply(behavior="allow", updated_permissions=list(r.suggestions))])
    handle = await open_handle(kind, prompter)
    await run_turn(handle, "make it 2 then 3")
    mode = handle.permission_mode
    await handle.close()
    assert (ws / "app.ts").read_text() == "export const value = 3\n"
    assert [r.tool_use_id for r in prompter.asked] == ["toolu_e1"]  # the second Edit was not asked
    assert prompter.asked[0].suggestions  # "allow for session" came from the request's suggestions
    assert mode in ("default", "acceptEdits")


async def test_edited_proposal(kind, fake, ws, open_handle):
    fake.script([reply(_read(ws), _edit(ws, "value = 1", "value = 2", "toolu_e")), reply(text("Ok."))])

    def edited(request):
        return PermissionReply(behavior="allow", updated_input={**request.input, "new_string": "value = 42"})

    prompter = ScriptedPrompter([edited])
    handle = await open_handle(kind, prompter)
    events = await run_turn(handle, "make it 2")
    await handle.close()
    assert (ws / "app.ts").read_text() == "export const value = 42\n"
    finished = next(e for e in events if isinstance(e, ToolCallFinished) and e.tool_use_id == "toolu_e")
    assert not finished.is_error and finished.data["newString"] == "value = 42"
    assert finished.data.get("userModified") is True


async def test_stop_during_running_bash(kind, fake, ws, open_handle):
    fake.script([reply(text("Sleeping."), tool_use("Bash", {"command": "sleep 30; echo never"}, id="toolu_b")),
                 reply(text("Still here."))])
    prompter = ScriptedPrompter([PermissionReply(behavior="allow")])
    handle = await open_handle(kind, prompter)
    stopped_at: list[float] = []

    def on_event(event):
        if isinstance(event, (PermissionResolved, ToolCallStarted)) and getattr(event, "tool_use_id", "") == "toolu_b":
            if not stopped_at:
                stopped_at.append(0.0)

                def stop():
                    stopped_at[0] = time.monotonic()
                    handle.interrupt()

                asyncio.get_running_loop().call_later(1.0, stop)

    events = await run_turn(handle, "sleep", on_event=on_event)
    took = time.monotonic() - stopped_at[0]
    finished = events[-1]
    assert isinstance(finished, TurnFinished) and finished.reason == "aborted_tools", finished
    assert took < 10, f"Stop took {took:.1f} s"
    assert not any(isinstance(e, ErrorEvent) for e in events)
    result = _tool_result_entry(events, "toolu_b")
    assert result is not None and result.is_error
    assert handle.alive  # Stop ends the tools, not the session
    events = await run_turn(handle, "are you there?")
    await handle.close()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Still here."


def _tool_result_entry(events, tool_use_id):
    return next((e for e in events if isinstance(e, ToolCallFinished) and e.tool_use_id == tool_use_id), None)


async def test_resume(kind, fake, ws, open_handle):
    fake.script([reply(text("First answer.")), reply(text("Second answer."))])
    handle = await open_handle(kind, ScriptedPrompter())
    await run_turn(handle, "first question")
    session_id = handle.session_id
    await handle.close()
    again = await open_handle(kind, ScriptedPrompter(), resume=session_id)
    assert again.session_id == session_id
    events = await run_turn(again, "second question")
    await again.close()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Second answer."
    texts = [str(m.get("content")) for m in fake.requests[-1].messages]
    assert "first question" in texts[0] and "First answer." in texts[1] and "second question" in texts[2]
    fake.assert_done()


async def test_interrupt_withdraws_the_pending_question(kind, fake, ws, open_handle):
    """Stop while the dialog is open: the engine withdraws the question (``control_cancel_request`` from the
    executor), the front end's ask is cancelled (its dialog closes), nothing is written; a late answer is
    ignored."""
    from .conftest import HOLD

    fake.script([reply(_read(ws), _edit(ws, "value = 1", "value = 2", "toolu_e"))])
    prompter = ScriptedPrompter([HOLD])
    handle = await open_handle(kind, prompter)

    def on_event(event):
        if isinstance(event, PermissionRequested):
            asyncio.get_running_loop().call_later(0.3, handle.interrupt)

    events = await run_turn(handle, "make it 2", on_event=on_event)
    for _ in range(100):  # the front end's ask sees its cancellation on its next step
        if prompter.cancelled:
            break
        await asyncio.sleep(0.01)
    assert any(isinstance(e, PermissionResolved) and e.decided_by == "cancel" for e in events)
    assert prompter.cancelled == [prompter.asked[0].request_id]
    assert handle.pending_questions == []
    assert handle.answer(prompter.asked[0].request_id, PermissionReply(behavior="allow")) is False
    assert isinstance(events[-1], TurnFinished) and events[-1].reason in ("aborted_tools", "aborted_streaming")
    await handle.close()
    assert (ws / "app.ts").read_text() == "export const value = 1\n"
