"""The model is told about the changes panel's reverts and redos (issue 21, item 4): the next user message sent to the
model starts with one ``<system-reminder>`` note naming them (file, lines), sent once, also after a resume (a revert
made, the window closed before the next message); a prompt a hook blocks tells nothing and keeps the note for the
next one. The record comes from a worker thread, as the panel records it."""

from __future__ import annotations

import asyncio
import json
import threading

from desktop_agent.app.session import AgentSession
from desktop_agent.core.messages import CHANGE_RECORDS_TOLD, change_record_entry
from desktop_agent.model.scripted import ScriptedModelClient, reply, text
from desktop_agent.permissions.hooks import HookRunner


def _record(path, tid="toolu_e", action="revert", outcome="restored") -> dict:
    return change_record_entry(action, toolUseId=tid, tool="Edit", filePath=str(path), added=2, removed=1,
                               ranges=[[3, 6]], outcome=outcome, hashBefore="sha256:aa", hashAfter="sha256:bb",
                               encoding="utf-8", lineEnding="LF", mode=0o644)


def _from_a_thread(session: AgentSession, entry: dict) -> None:
    t = threading.Thread(target=session.record, args=(entry,))
    t.start()
    t.join()


def _last_user(client: ScriptedModelClient, n: int) -> list[dict]:
    message = client.requests[n].messages[-1]
    assert message["role"] == "user"
    return message["content"]


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in open(path, encoding="utf-8").read().splitlines() if x.strip()]


def test_the_next_message_starts_with_the_note_once(workdir):
    client = ScriptedModelClient([reply(text("one")), reply(text("two")), reply(text("three"))])
    s = AgentSession.create(str(workdir), client=client)
    asyncio.run(s.run("first"))
    revert = _record(workdir / "src" / "app.py")
    _from_a_thread(s, revert)
    redo = _record(workdir / "src" / "app.py", action="redo", outcome="reapplied")
    _from_a_thread(s, redo)
    asyncio.run(s.run("second"))
    note, prompt = _last_user(client, 1)
    assert prompt == {"type": "text", "text": "second"}
    assert note["text"] == (
        "<system-reminder>\nSince your last turn the user changed files from the changes panel:\n"
        "- The user reverted your Edit of src/app.py (tool use toolu_e; +2 -1 lines, lines 3\u20136): the file is "
        "back to what it was before that change.\n"
        "- The user re-applied your Edit of src/app.py (tool use toolu_e; +2 -1 lines, lines 3\u20136) after "
        "reverting it: the file holds that change again.\n"
        "Do not rely on what you remember of these files; read them again before you edit them.\n</system-reminder>")
    asyncio.run(s.run("third"))
    assert _last_user(client, 2) == [{"type": "text", "text": "third"}]  # told once
    assert json.dumps(client.requests[2].messages).count("The user reverted your Edit") == 1  # in the history
    s.close()
    meta = [e for e in _lines(s.transcript_path) if e.get(CHANGE_RECORDS_TOLD)]
    assert len(meta) == 1 and meta[0]["isMeta"] and meta[0][CHANGE_RECORDS_TOLD] == [revert["recordId"],
                                                                                      redo["recordId"]]


def test_a_revert_before_closing_is_told_after_the_resume_and_only_once(workdir):
    client = ScriptedModelClient([reply(text("one"))])
    s = AgentSession.create(str(workdir), client=client)
    asyncio.run(s.run("first"))
    _from_a_thread(s, _record(workdir / "app.ts"))
    s.close()  # the window closes before the next message

    client2 = ScriptedModelClient([reply(text("two"))])
    r = AgentSession.create(str(workdir), client=client2, resume=s.session_id)
    asyncio.run(r.run("back again"))
    note, prompt = _last_user(client2, 0)
    assert "The user reverted your Edit of app.ts" in note["text"] and prompt["text"] == "back again"
    r.close()

    client3 = ScriptedModelClient([reply(text("three"))])
    again = AgentSession.create(str(workdir), client=client3, resume=s.session_id)
    assert again.change_notes.pending == []
    asyncio.run(again.run("and again"))
    assert _last_user(client3, 0) == [{"type": "text", "text": "and again"}]
    assert json.dumps(client3.requests[0].messages).count("The user reverted your Edit") == 1
    again.close()


def test_a_blocked_prompt_keeps_the_note_for_the_next(workdir):
    async def on_prompt(payload, tool_use_id):
        return {"decision": "block", "reason": "not now"} if "blocked" in payload["prompt"] else {}

    runner = HookRunner()
    runner.register_callback("UserPromptSubmit", None, on_prompt)
    client = ScriptedModelClient([reply(text("ok"))])
    s = AgentSession.create(str(workdir), client=client, hooks=runner)
    _from_a_thread(s, _record(workdir / "app.ts"))
    events = asyncio.run(s.run("blocked prompt"))
    assert events[-1].reason == "prompt_blocked" and client.requests == []
    assert len(s.change_notes.pending) == 1
    asyncio.run(s.run("go"))
    note, prompt = _last_user(client, 0)
    assert "reverted your Edit of app.ts" in note["text"] and prompt["text"] == "go"
    s.close()


def test_our_cli_resumes_such_a_transcript_and_tells_the_model(workdir):
    """The record and the note keep the transcript valid for ``--resume`` of the real CLI (a child process), and the
    CLI's session tells a revert the window recorded before it closed — once."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.fakes.anthropic_server import FakeAnthropic

    s = AgentSession.create(str(workdir), client=ScriptedModelClient([reply(text("one"))]))
    asyncio.run(s.run("first"))
    _from_a_thread(s, _record(workdir / "app.ts"))
    s.close()
    root = Path(__file__).resolve().parents[2]
    with FakeAnthropic() as fake:
        fake.script([reply(text("two")), reply(text("three"))])
        env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url,
               "PYTHONPATH": str(root), "CLAUDE_CODE_MAX_RETRIES": "0"}
        for prompt in ("second", "third"):
            out = subprocess.run([sys.executable, "-m", "desktop_agent", "-p", "--resume", s.session_id, prompt],
                                 cwd=workdir, env=env, capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
        first, second = fake.request_messages(0)[-1]["content"], fake.request_messages(1)[-1]["content"]
    assert [b["type"] for b in first] == ["text", "text"] and first[1]["text"] == "second"
    assert first[0]["text"].startswith("<system-reminder>") and "reverted your Edit of app.ts" in first[0]["text"]
    assert [b["text"] for b in second] == ["third"]
