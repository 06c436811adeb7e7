"""The session's compaction policy (SPEC §5.5; §9 items 89–91): auto-compaction before a turn and between the
requests of a turn (the loop's before_request hook), /compact, the appended lines, the post-compact request,
the failure limit, an interrupt during compaction."""

from __future__ import annotations

import asyncio
import json

import pytest

from desktop_agent.app.session import AgentSession
from desktop_agent.core.context import FileStateEntry
from desktop_agent.core.events import Compacted, ErrorEvent, TurnFinished
from desktop_agent.core.messages import assistant_entry, user_entry
from desktop_agent.model.client import ModelError
from desktop_agent.model.scripted import ScriptedModelClient, fail, reply, text
from desktop_agent.session import compact as c
from desktop_agent.session.resume import load_conversation_for_resume
from desktop_agent.session.store import read_transcript


def _lines_bytes(path) -> bytes:
    return open(path, "rb").read()


def _files(workdir, n: int) -> list[str]:
    paths = []
    for i in range(n):
        p = workdir / f"f{i}.py"
        p.write_text(f"value_{i} = {i}\n")
        paths.append(str(p))
    return paths


def test_auto_compaction_appends_two_lines_and_continues(workdir, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "34000")  # threshold 1000 tokens
    client = ScriptedModelClient([
        reply(text("y" * 6000)),  # turn 1: pushes the conversation over the threshold
        reply(text("<analysis>a</analysis><summary>The user asked for a long answer.</summary>")),  # summary
        reply(text("ok")),  # turn 2, after compaction
    ])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions")
    events = asyncio.run(s.run("first"))
    assert events[-1].reason == "completed"
    for p in _files(workdir, 7):
        s.ctx.read_file_state.set(p, FileStateEntry(content=open(p).read(), timestamp=0, offset=1))
    before = _lines_bytes(s.transcript_path)

    events = asyncio.run(s.run("second"))
    assert isinstance(events[0], Compacted) and events[0].pre_tokens > 1000
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "completed"
    after = _lines_bytes(s.transcript_path)
    assert after.startswith(before)  # earlier lines byte-identical
    new = [json.loads(x) for x in after[len(before):].splitlines()]
    boundary, summary = new[0], new[1]
    assert boundary["type"] == "system" and boundary["subtype"] == "compact_boundary"
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"]
    assert summary["isCompactSummary"] is True and summary["parentUuid"] == boundary["uuid"]
    assert summary["message"]["content"].startswith("This session is being continued from a previous conversation")
    assert s.transcript_path in summary["message"]["content"]
    # compaction added exactly these two lines; then the turn's own input and reply
    assert [n["type"] for n in new[2:]] == ["user", "assistant"]
    assert not any("This file was read before" in json.dumps(n) for n in new)  # attachments not persisted

    summary_req, post_req = client.requests[1], client.requests[2]
    assert summary_req.system[0]["text"] == c.SUMMARY_SYSTEM_PROMPT
    assert "summary" in json.dumps(summary_req.messages[-1]).lower()
    # the post-compact request: no system message at the API layer, ≤5 file attachments, then the input
    assert all(m["role"] in ("user", "assistant") for m in post_req.messages)
    body = json.dumps(post_req.messages)
    assert body.count("This file was read before the conversation was summarized") == 5
    assert "y" * 6000 not in body and "This session is being continued" in body
    assert post_req.messages[-1]["content"][-1]["text"] == "second"
    s.close()

    # resume starts at the boundary
    resumed = load_conversation_for_resume(read_transcript(s.transcript_path))
    assert resumed.messages[0]["uuid"] == boundary["uuid"] and resumed.messages[1]["uuid"] == summary["uuid"]


def test_three_failures_then_no_more_attempts(workdir, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "34000")
    err = ModelError("overloaded", kind="overloaded")
    client = ScriptedModelClient([
        reply(text("y" * 6000)),
        fail(err), reply(text("t2")),
        fail(err), reply(text("t3")),
        fail(err), reply(text("t4")),
        reply(text("t5")),  # no 4th compaction attempt: straight to the turn
    ])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions")
    asyncio.run(s.run("one"))
    errors = []
    for prompt in ("two", "three", "four", "five"):
        events = asyncio.run(s.run(prompt))
        assert events[-1].reason == "completed"
        errors += [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 3 and s.compaction.state.gave_up
    summaries = [r for r in client.requests if r.system and r.system[0]["text"] == c.SUMMARY_SYSTEM_PROMPT]
    assert len(summaries) == 3
    assert client.position == len(client.steps)
    s.close()


def test_manual_compact(workdir):
    client = ScriptedModelClient([reply(text("hello")), reply(text("<summary>S</summary>")), reply(text("after"))])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions")
    asyncio.run(s.run("hi"))
    ev = asyncio.run(s.compact("focus on tests"))
    assert isinstance(ev, Compacted) and ev.summary == "Summary:\nS"
    assert "focus on tests" in json.dumps(client.requests[1].messages)
    asyncio.run(s.run("next"))
    assert [m["role"] for m in client.requests[2].messages] == ["user"]
    s.close()


def test_compact_with_nothing_fails_cleanly(workdir):
    s = AgentSession.create(str(workdir), client=ScriptedModelClient([]))
    with pytest.raises(c.CompactError):
        asyncio.run(s.compact())
    s.close()


def test_interrupt_during_auto_compaction(workdir, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "34000")
    client = ScriptedModelClient([reply(text("y" * 6000)), reply(text("<summary>S</summary>"), delay=0.5)])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions")
    asyncio.run(s.run("first"))
    before = _lines_bytes(s.transcript_path)

    async def go():
        task = asyncio.ensure_future(s.run("second"))
        await asyncio.sleep(0.1)
        s.interrupt()
        return await asyncio.wait_for(task, 5)

    events = asyncio.run(go())
    assert events[-1].reason == "aborted_streaming"
    assert _lines_bytes(s.transcript_path) == before  # nothing half-written
    assert s.compaction.state.consecutive_failures == 0
    s.close()


def test_compact_before_request_for_the_loop(workdir, monkeypatch):
    """The loop's before_request hook: from a turn's second request on, over the threshold → boundary +
    continuation summary (+ attachments) appended, the Compacted event pending, the request from the boundary."""
    client = ScriptedModelClient([reply(text("<summary>Working on app.ts</summary>"))])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions")
    msgs = [user_entry("do it"), assistant_entry([{"type": "text", "text": "z" * 8000}])]
    s.messages.extend(msgs)
    hook = s.compaction.before_request
    s.compaction.start_turn()
    assert asyncio.run(hook([])) is None  # a turn's first request was checked before the prompt
    assert asyncio.run(hook([])) is None  # under the threshold: nothing
    monkeypatch.setenv("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "34000")
    sent = asyncio.run(hook([]))
    new = s.messages[len(msgs):]
    assert new[0]["subtype"] == "compact_boundary" and new[1]["isCompactSummary"]
    assert new[1]["message"]["content"].endswith(c.CONTINUE_INSTRUCTION)
    assert [type(e) for e in s.compaction.pending] == [Compacted]
    assert len(sent) == 1 and sent[0]["role"] == "user" and c.CONTINUE_INSTRUCTION in json.dumps(sent)
    assert asyncio.run(hook([])) == sent  # the rest of the turn starts at the boundary too
    assert client.position == 1
    on_disk = [json.loads(x) for x in open(s.transcript_path).read().splitlines()]
    assert [e.get("subtype") or e["type"] for e in on_disk[-2:]] == ["compact_boundary", "user"]
    s.close()


def test_auto_compaction_in_the_middle_of_a_turn(workdir, monkeypatch):
    """A tool round pushes the conversation over the threshold: the next request of the same turn is preceded
    by a summary request and starts from the summary (with the continue instruction and the file attachments)."""
    from desktop_agent.model.scripted import tool_use

    monkeypatch.setenv("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "34000")  # threshold 1000 tokens
    big = workdir / "big.txt"
    big.write_text("line of text\n" * 600)  # ~2000 tokens once read
    client = ScriptedModelClient([
        reply(tool_use("Read", {"file_path": str(big)}, id="toolu_read_1")),
        reply(text("<summary>Read big.txt; next: report its size.</summary>")),  # mid-turn summary
        reply(text("It has 600 lines.")),
    ])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions")
    events = asyncio.run(s.run("how long is big.txt?"))
    assert events[-1].reason == "completed" and events[-1].result_text == "It has 600 lines."
    assert [type(e).__name__ for e in events].count("Compacted") == 1
    summary_req, post = client.requests[1], client.requests[2]
    assert summary_req.system[0]["text"] == c.SUMMARY_SYSTEM_PROMPT
    assert [m["role"] for m in post.messages] == ["user"]
    body = json.dumps(post.messages)
    assert c.CONTINUE_INSTRUCTION in body and "This file was read before the conversation was summarized" in body
    assert "toolu_read_1" not in body
    s.close()
    lines = [json.loads(x) for x in open(s.transcript_path).read().splitlines()]
    kinds = [x.get("subtype") or x["type"] for x in lines if x["type"] in ("user", "assistant", "system")]
    assert kinds == ["user", "assistant", "user", "compact_boundary", "user", "assistant"]
    # resumed later: the chain starts at the boundary and ends with the reply
    resumed = load_conversation_for_resume(read_transcript(s.transcript_path))
    assert resumed.messages[0]["subtype"] == "compact_boundary" and resumed.messages[-1]["type"] == "assistant"


@pytest.mark.parametrize("streaming", [True, False])
def test_the_compacted_event_keeps_its_place_in_the_stream(workdir, monkeypatch, streaming):
    """Mid-turn: Compacted right after the RequestStarted of the request it precedes, before that request's
    blocks; before a turn: Compacted first, before TurnStarted (the order a front end has always seen)."""
    from desktop_agent.model.scripted import tool_use

    monkeypatch.setenv("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "34000")
    big = workdir / "big.txt"
    big.write_text("line of text\n" * 600)
    client = ScriptedModelClient([
        reply(tool_use("Read", {"file_path": str(big)}, id="toolu_read_1")),
        reply(text("<summary>Read big.txt</summary>")),
        reply(text("It has 600 lines.")),
    ])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions")
    s.streaming_tool_execution = streaming
    names = [type(e).__name__ for e in asyncio.run(s.run("how long is big.txt?")) if type(e).__name__ != "TextDelta"]
    assert names[names.index("UserMessage") + 1:] == [
        "TurnStarted", "RequestStarted", "Compacted", "AssistantBlock", "AssistantMessage", "Usage", "TurnFinished"]
    s.close()

    client = ScriptedModelClient([reply(text("y" * 6000)), reply(text("<summary>S</summary>")), reply(text("ok"))])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions")
    asyncio.run(s.run("first"))
    names = [type(e).__name__ for e in asyncio.run(s.run("second")) if type(e).__name__ != "TextDelta"]
    assert names == ["Compacted", "TurnStarted", "RequestStarted", "AssistantBlock", "AssistantMessage", "Usage",
                     "TurnFinished"]
    s.close()
