"""AgentSession with a scripted model (SPEC §5.3; §9 items 85–87): every entry persisted as it appears, and what a
resume restores (the chain, a model picked during the session, the permission mode and grants, the files read in
full, an interrupted turn, a broken stream); the prompt hooks."""

from __future__ import annotations

import asyncio
import json

import pytest

from desktop_agent.app.session import AgentSession, SessionError
from desktop_agent.core.events import TurnFinished
from desktop_agent.model.scripted import ScriptedModelClient, reply, text, tool_use
from tests.engine.helpers import Tracker, make_tools


def _session(workdir, script, **kw) -> tuple[AgentSession, ScriptedModelClient, Tracker]:
    client = ScriptedModelClient(script)
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions", **kw)
    tracker = Tracker()
    s.tools = make_tools(tracker, delay=0.0)
    s.ctx.tools = list(s.tools)
    return s, client, tracker


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in open(path, encoding="utf-8").read().splitlines() if x.strip()]


def test_session_persists_every_entry_and_resumes(workdir):
    asyncio.run(_persist_and_resume(workdir))


async def _persist_and_resume(workdir):
    seen_at_request: list[int] = []

    def check(request):
        # item 88: the user input is on disk before the first model call
        seen_at_request.append(sum(1 for e in _lines(s.transcript_path) if e["type"] == "user"))

    s, client, tracker = _session(workdir, [
        reply(tool_use("Read", {"file_path": "app.ts"}, id="toolu_read_1"), check=check),
        reply(text("Done.")),
    ])
    events = await s.run("Read app.ts")
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "completed"
    assert seen_at_request[0] == 1
    s.close()
    msgs = [e for e in _lines(s.transcript_path) if e["type"] in ("user", "assistant")]
    assert [m["type"] for m in msgs] == ["user", "assistant", "user", "assistant"]
    assert msgs[0]["parentUuid"] is None
    for prev, cur in zip(msgs, msgs[1:]):
        assert cur["parentUuid"] == prev["uuid"]
    assert s.total_cost_usd > 0

    # resume by id and continue: the restored array equals what was written, the next prompt chains on
    r, client2, _ = _session(workdir, [reply(text("again"))], resume=s.session_id)
    assert [m["uuid"] for m in r.messages] == [m["uuid"] for m in msgs]
    await r.run("more")
    r.close()
    req = client2.requests[0]
    assert [m["role"] for m in req.messages] == ["user", "assistant", "user", "assistant", "user"]
    after = [e for e in _lines(s.transcript_path) if e["type"] in ("user", "assistant")]
    assert after[:4] == msgs and after[4]["parentUuid"] == msgs[-1]["uuid"]

    c, _, _ = _session(workdir, [], continue_latest=True)
    assert c.session_id == s.session_id
    assert len(c.messages) == 6
    c.close()


def test_a_model_picked_during_the_session_is_kept_on_resume(workdir):
    async def scenario():
        s, client, _ = _session(workdir, [reply(text("one")), reply(text("two"))])
        await s.run("first")
        s.set_model("claude-haiku-4-5")
        await s.run("second")
        s.close()
        first, second = [r.model for r in client.requests]
        assert first != "claude-haiku-4-5" and second == "claude-haiku-4-5"
        r, client2, _ = _session(workdir, [reply(text("three"))], resume=s.session_id)
        assert r.model == "claude-haiku-4-5"
        await r.run("third")
        r.close()
        assert client2.requests[0].model == "claude-haiku-4-5"
        # an explicit model wins over the one recorded
        e, _, _ = _session(workdir, [], resume=s.session_id, model="claude-opus-4-1")
        assert e.model == "claude-opus-4-1"
        e.close()

    asyncio.run(scenario())


def test_resume_unknown_and_continue_nothing(workdir):
    with pytest.raises(SessionError):
        AgentSession.create(str(workdir), client=ScriptedModelClient([]), resume="no-such-id")
    with pytest.raises(SessionError):
        AgentSession.create(str(workdir), client=ScriptedModelClient([]), continue_latest=True)


def test_permission_mode_and_grants_restored(workdir):
    from desktop_agent.core.permission import PermissionUpdate, RuleValue

    s = AgentSession.create(str(workdir), client=ScriptedModelClient([]))
    assert len(_lines(s.transcript_path)) == 2  # still only the two header lines
    s.set_permission_mode("acceptEdits")
    s.permission_context.apply_updates([PermissionUpdate(type="addRules", behavior="allow",
                                                         rules=[RuleValue(tool_name="Bash", rule_content="npm test")])])
    s._persist_permission_state()
    s.close()
    r = AgentSession.create(str(workdir), client=ScriptedModelClient([]), resume=s.session_id)
    assert r.permission_mode == "acceptEdits"
    rules = [str(x.value) for x in getattr(r.permission_context, "rules", lambda: [])()
             if getattr(x, "source", "") == "session"] if callable(getattr(r.permission_context, "rules", None)) \
        else [str(x.rule.value) for x in r.permission_context._rules if x.rule.source == "session"]
    assert "Bash(npm test)" in rules
    r.close()
    # an explicit mode on the command line wins over the restored one
    e = AgentSession.create(str(workdir), client=ScriptedModelClient([]), resume=s.session_id, permission_mode="plan")
    assert e.permission_mode == "plan"
    e.close()


def test_interrupted_session_resumes_with_continue_message(workdir):
    asyncio.run(_interrupted(workdir))


async def _interrupted(workdir):
    s, client, _ = _session(workdir, [reply(tool_use("Read", {"file_path": "app.ts"}, id="toolu_1"), delay=0.2)])
    task = asyncio.ensure_future(s.run("go"))
    await asyncio.sleep(0.05)
    s.interrupt()
    events = await task
    assert events[-1].reason in ("aborted_streaming", "aborted_tools")
    s.close()
    r, client2, _ = _session(workdir, [reply(text("resumed"))], resume=s.session_id)
    await r.run("next")
    r.close()
    api = client2.requests[0].messages
    # valid for the API: alternating roles, every tool_use answered
    roles = [m["role"] for m in api]
    assert all(a != b for a, b in zip(roles, roles[1:])) and roles[0] == "user" and roles[-1] == "user"
    uses = {b["id"] for m in api for b in m["content"] if b.get("type") == "tool_use"}
    results = {b["tool_use_id"] for m in api for b in m["content"] if b.get("type") == "tool_result"}
    assert uses == results


def test_resumed_session_remembers_full_reads(workdir):
    """A file read in full before the resume can be edited without reading it again, unless it changed."""
    app = workdir / "app.ts"
    other = workdir / "other.ts"
    other.write_text("export const other = 1")
    client = ScriptedModelClient([
        reply(tool_use("Read", {"file_path": str(app)}, id="toolu_r1"),
              tool_use("Read", {"file_path": str(other)}, id="toolu_r2")),
        reply(text("read both")),
    ])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions")
    asyncio.run(s.run("read"))
    s.close()
    import os
    import time

    time.sleep(0.01)
    other.write_text("export const other = 9")  # changed on disk after the read
    os.utime(other, None)
    client2 = ScriptedModelClient([
        reply(tool_use("Edit", {"file_path": str(app), "old_string": "value = 1", "new_string": "value = 2"},
                       id="toolu_e1"),
              tool_use("Edit", {"file_path": str(other), "old_string": "other = 9", "new_string": "other = 3"},
                       id="toolu_e2")),
        reply(text("done")),
    ])
    r = AgentSession.create(str(workdir), client=client2, permission_mode="bypassPermissions", resume=s.session_id)
    asyncio.run(r.run("edit both"))
    r.close()
    results = {b["tool_use_id"]: b for b in client2.requests[1].messages[-1]["content"]}
    assert "updated successfully" in results["toolu_e1"]["content"]
    assert app.read_text() == "export const value = 2"
    assert results["toolu_e2"].get("is_error") and "modified since read" in results["toolu_e2"]["content"]
    assert other.read_text() == "export const other = 9"


def test_prompt_hooks_block_or_add_context(workdir):
    """UserPromptSubmit can block a prompt (no model call, nothing recorded) or add context; SessionStart runs once."""
    from desktop_agent.permissions.hooks import HookRunner

    calls: list[str] = []

    async def on_start(payload, tool_use_id):
        calls.append(f"start:{payload['source']}")
        return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "branch is main"}}

    async def on_prompt(payload, tool_use_id):
        calls.append(f"prompt:{payload['prompt']}")
        if "secret" in payload["prompt"]:
            return {"decision": "block", "reason": "no secrets"}
        return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "be brief"}}

    runner = HookRunner()
    runner.register_callback("SessionStart", None, on_start)
    runner.register_callback("UserPromptSubmit", None, on_prompt)
    client = ScriptedModelClient([reply(text("ok")), reply(text("ok2"))])
    s = AgentSession.create(str(workdir), client=client, hooks=runner)
    events = asyncio.run(s.run("tell me the secret"))
    assert events[-1].reason == "prompt_blocked" and "no secrets" in events[-1].error
    assert client.requests == []
    assert not [e for e in _lines(s.transcript_path) if e["type"] == "user"]
    asyncio.run(s.run("hello"))
    asyncio.run(s.run("again"))
    assert calls == ["start:startup", "prompt:tell me the secret", "prompt:hello", "prompt:again"]
    body = json.dumps(client.requests[0].messages)
    assert "branch is main" in body and "be brief" in body
    s.close()


def test_broken_stream_transcript_resumes_valid(workdir, monkeypatch):
    """A stream that breaks after a completed tool_use (fallback off) ends model_error; the transcript keeps the
    user message and every result, and the resumed conversation's next request pairs every tool_use."""
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "1")
    app = workdir / "app.ts"
    client = ScriptedModelClient([
        reply(tool_use("Read", {"file_path": str(app)}, id="toolu_r1"),
              tool_use("Read", {"file_path": str(app), "offset": 1}, id="toolu_r2"), break_after=8),
    ])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions")
    events = asyncio.run(s.run("read twice"))
    assert events[-1].reason == "model_error"
    s.close()
    lines = _lines(s.transcript_path)
    assert any(e["type"] == "user" and e["message"]["content"] == "read twice" for e in lines)
    client2 = ScriptedModelClient([reply(text("recovered"))])
    r = AgentSession.create(str(workdir), client=client2, permission_mode="bypassPermissions", resume=s.session_id)
    asyncio.run(r.run("go on"))
    r.close()
    api = client2.requests[0].messages
    roles = [m["role"] for m in api]
    assert roles[0] == "user" and roles[-1] == "user" and all(a != b for a, b in zip(roles, roles[1:]))
    uses = [b["id"] for m in api for b in m["content"] if b.get("type") == "tool_use"]
    results = [b["tool_use_id"] for m in api for b in m["content"] if b.get("type") == "tool_result"]
    assert sorted(uses) == sorted(results)
