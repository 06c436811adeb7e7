"""A PreToolUse hook's ``defer`` (SPEC D.6) through the real CLI: ``-p`` ends with the call pending and saved
(``stop_reason``/``terminal_reason`` ``tool_deferred``, ``deferred_tool_use``), ``--resume`` runs the call again
through the hook and the permission check (the hook now allows: it runs; denies: it is denied), a ``kill -9`` of the
CLI at any point in between loses nothing, a reply with two calls cannot be deferred (``ask``, so denied in ``-p``),
and the desktop's way of resuming (an ``AgentSession`` with a prompter) finds the same valid conversation.

The hook is a real command reading what to answer from ``decision.txt`` (``defer``, ``allow``, ``deny``, ``defer-once``:
defer the first call then allow, or ``hang``: write its pid and sleep). The fake API checks every request the way the real one does (one tool_result per
tool_use, alternating roles), so a broken transcript fails the request."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.test_cli import cli_env, jsonl, run_cli, session_file

HOOK = """import json, os, sys, time
event = json.load(sys.stdin)
base = sys.argv[1]
with open(os.path.join(base, "calls.jsonl"), "a") as fh:
    fh.write(json.dumps(event) + "\\n")
decision = open(os.path.join(base, "decision.txt")).read().strip()
if decision == "defer-once":
    with open(os.path.join(base, "calls.jsonl")) as fh:
        decision = "defer" if len(fh.readlines()) == 1 else "allow"
if decision == "hang":
    open(os.path.join(base, "hook.pid"), "w").write(str(os.getpid()))
    time.sleep(120)
out = {"hookEventName": "PreToolUse", "permissionDecision": decision}
if decision == "deny":
    out["permissionDecisionReason"] = "not today"
print(json.dumps({"hookSpecificOutput": out}))
"""


def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    (proj / ".claude").mkdir(parents=True)
    (tmp_path / "hook.py").write_text(HOOK)
    cmd = f"{sys.executable} {tmp_path / 'hook.py'} {tmp_path}"
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Write", "hooks": [{"type": "command", "command": cmd}]}]}}))
    decide(tmp_path, "defer")
    return proj


def decide(tmp_path: Path, decision: str) -> None:
    (tmp_path / "decision.txt").write_text(decision)


def hook_calls(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def entries(home: Path, proj: Path, session_id: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in session_file(home, proj, session_id).read_text().splitlines() if line.strip()]


def one_result_per_use(items: list[dict[str, Any]]) -> None:
    uses, results = [], []
    for e in items:
        content = (e.get("message") or {}).get("content")
        for b in content if isinstance(content, list) else []:
            if b.get("type") == "tool_use":
                uses.append(b["id"])
            elif b.get("type") == "tool_result":
                results.append(b["tool_use_id"])
    assert sorted(uses) == sorted(results) and len(results) == len(set(results)), (uses, results)


WRITE = {"file_path": "", "content": "approved later\n"}


def deferred_run(fake: FakeAnthropic, tmp_path: Path, proj: Path, home: Path) -> dict[str, Any]:
    """``-p`` whose only call the hook defers: the result line and what is on disk."""
    fake.script([reply(text("I will write it."), tool_use("Write", dict(WRITE, file_path=str(proj / "out.txt")),
                                                         id="toolu_w1"))])
    proc = run_cli(["-p", "write out.txt", "--output-format", "json", "--trust"], proj, cli_env(fake, home))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def check_pending(result: dict[str, Any], tmp_path: Path, proj: Path, home: Path) -> None:
    assert result["subtype"] == "success" and not result["is_error"], result
    assert result["stop_reason"] == "tool_deferred" and result["terminal_reason"] == "tool_deferred"
    assert result["result"] == ""
    assert result["deferred_tool_use"] == {"id": "toolu_w1", "name": "Write",
                                           "input": dict(WRITE, file_path=str(proj / "out.txt"))}
    assert not (proj / "out.txt").exists()
    saved = entries(home, proj, result["session_id"])
    (record,) = [e for e in saved if (e.get("attachment") or {}).get("type") == "hook_deferred_tool"]
    assert record["attachment"]["toolUseID"] == "toolu_w1" and record["attachment"]["toolName"] == "Write"
    assert record["attachment"]["hookEvent"] == "PreToolUse" and record["attachment"]["permissionMode"] == "default"
    assert not any(b.get("type") == "tool_result" for e in saved
                   for b in ((e.get("message") or {}).get("content") or []) if isinstance(b, dict))


def test_defer_then_resume_with_an_allow_runs_the_call(tmp_path):
    proj, home = project(tmp_path), tmp_path / "h"
    with FakeAnthropic() as fake:
        result = deferred_run(fake, tmp_path, proj, home)
        fake.assert_done()
    check_pending(result, tmp_path, proj, home)
    session_id = result["session_id"]

    decide(tmp_path, "allow")
    with FakeAnthropic() as fake:
        fake.script([reply(text("Written."))])
        proc = run_cli(["-p", "--resume", session_id, "--output-format", "stream-json", "--verbose", "--trust"],
                       proj, cli_env(fake, home), stdin="")
        fake.assert_done()
        sent = fake.request_messages(0)
    out = jsonl(proc.stdout)
    assert out[-1]["type"] == "result" and out[-1]["subtype"] == "success", (proc.stderr, out[-1])
    assert out[-1]["result"] == "Written." and "deferred_tool_use" not in out[-1]
    assert (proj / "out.txt").read_text() == "approved later\n"
    # the hook was asked again about the same call
    assert [c["tool_use_id"] for c in hook_calls(tmp_path)] == ["toolu_w1", "toolu_w1"]
    # the model got the call's result right after the call, and nothing new from the user
    assert sent[-2]["role"] == "assistant" and sent[-2]["content"][-1]["id"] == "toolu_w1"
    (res,) = [b for b in sent[-1]["content"] if b.get("type") == "tool_result"]
    assert res["tool_use_id"] == "toolu_w1" and not res.get("is_error")
    # the tool_result went out as a user line on stdout too
    assert any(m.get("type") == "user" and m["message"]["content"][0].get("tool_use_id") == "toolu_w1" for m in out)
    one_result_per_use(entries(home, proj, session_id))


def test_resume_with_a_deny_denies_it_and_a_prompt_follows(tmp_path):
    proj, home = project(tmp_path), tmp_path / "h"
    with FakeAnthropic() as fake:
        result = deferred_run(fake, tmp_path, proj, home)
    session_id = result["session_id"]
    decide(tmp_path, "deny")
    with FakeAnthropic() as fake:
        fake.script([reply(text("Understood."))])
        proc = run_cli(["-p", "never mind", "--resume", session_id, "--output-format", "json", "--trust"], proj,
                       cli_env(fake, home))
        fake.assert_done()
        sent = fake.request_messages(0)
    final = json.loads(proc.stdout)
    assert final["result"] == "Understood." and not final["is_error"], (proc.stderr, final)
    assert not (proj / "out.txt").exists()
    user = sent[-1]["content"]
    assert user[0]["type"] == "tool_result" and user[0]["tool_use_id"] == "toolu_w1" and user[0]["is_error"]
    assert "not today" in (user[0]["content"] if isinstance(user[0]["content"], str) else user[0]["content"][0]["text"])
    assert any(b.get("type") == "text" and b["text"] == "never mind" for b in user)
    one_result_per_use(entries(home, proj, session_id))


def test_kill_9_between_and_during_the_resume_loses_nothing(tmp_path):
    """The deferring ``-p`` is killed the moment its result line is out; the first resume is killed while the hook
    is being asked again; a second resume with an allow still runs the call, once."""
    proj, home = project(tmp_path), tmp_path / "h"
    with FakeAnthropic() as fake:
        fake.script([reply(tool_use("Write", dict(WRITE, file_path=str(proj / "out.txt")), id="toolu_w1"))])
        env = cli_env(fake, home)
        proc = subprocess.Popen([sys.executable, "-m", "desktop_agent", "-p", "write", "--output-format", "stream-json",
                                 "--verbose", "--trust"], cwd=proj, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        result = None
        for line in proc.stdout:
            msg = json.loads(line)
            if msg.get("type") == "result":
                result = msg
                proc.send_signal(signal.SIGKILL)
                break
        proc.wait(30)
        assert result is not None and result["stop_reason"] == "tool_deferred", proc.stderr.read() if proc.stderr else ""
    session_id = result["session_id"]

    decide(tmp_path, "hang")
    with FakeAnthropic() as fake:
        proc = subprocess.Popen([sys.executable, "-m", "desktop_agent", "-p", "--resume", session_id, "--trust"],
                                cwd=proj, env=cli_env(fake, home), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not (tmp_path / "hook.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "hook.pid").exists(), "the resumed run never asked the hook"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        os.kill(int((tmp_path / "hook.pid").read_text()), signal.SIGKILL)
        assert fake.requests == []
    assert not (proj / "out.txt").exists()

    decide(tmp_path, "allow")
    with FakeAnthropic() as fake:
        fake.script([reply(text("Done at last."))])
        proc2 = run_cli(["-p", "--resume", session_id, "--output-format", "json", "--trust"], proj,
                        cli_env(fake, home), stdin="")
        fake.assert_done()
    assert json.loads(proc2.stdout)["result"] == "Done at last.", proc2.stderr
    assert (proj / "out.txt").read_text() == "approved later\n"
    assert len(hook_calls(tmp_path)) == 3
    one_result_per_use(entries(home, proj, session_id))


def test_two_calls_in_one_reply_cannot_be_deferred(tmp_path):
    """``defer`` with a sibling call is ``ask``: in ``-p`` without a host both Writes are denied, nothing pends."""
    proj, home = project(tmp_path), tmp_path / "h"
    with FakeAnthropic() as fake:
        fake.script([reply(tool_use("Write", dict(WRITE, file_path=str(proj / "a.txt")), id="toolu_a"),
                           tool_use("Write", dict(WRITE, file_path=str(proj / "b.txt")), id="toolu_b")),
                     reply(text("Both were refused."))])
        proc = run_cli(["-p", "write two", "--output-format", "json", "--trust"], proj, cli_env(fake, home))
        fake.assert_done()
    result = json.loads(proc.stdout)
    assert result["stop_reason"] != "tool_deferred" and "deferred_tool_use" not in result, result
    assert {d["tool_use_id"] for d in result["permission_denials"]} == {"toolu_a", "toolu_b"}
    assert not (proj / "a.txt").exists() and not (proj / "b.txt").exists()
    one_result_per_use(entries(home, proj, result["session_id"]))


def test_resume_without_a_prompt_needs_a_deferred_call(tmp_path):
    proj, home = project(tmp_path), tmp_path / "h"
    with FakeAnthropic() as fake:
        fake.script([reply(text("hi"))])
        first = json.loads(run_cli(["-p", "hello", "--output-format", "json", "--trust"], proj,
                                   cli_env(fake, home)).stdout)
        proc = run_cli(["-p", "--resume", first["session_id"], "--trust"], proj, cli_env(fake, home), stdin="")
        fake.assert_done()
    assert proc.returncode == 2 and "Input must be provided" in proc.stderr


def test_the_desktop_resume_asks_a_person_about_the_deferred_call(tmp_path, monkeypatch):
    """The window resumes through ``AgentSession`` (interactive: a hook's ``defer`` is ``ask``): its first turn
    asks its prompter about the pending call, runs it once allowed, then sends the prompt; the requests are valid."""
    from desktop_agent.app.session import AgentSession
    from desktop_agent.core.permission import PermissionReply
    from desktop_agent.model.anthropic_client import AnthropicClient

    proj, home = project(tmp_path), tmp_path / "h"
    with FakeAnthropic() as fake:
        session_id = deferred_run(fake, tmp_path, proj, home)["session_id"]

    asked: list[str] = []

    class Person:
        waits = True

        async def ask(self, request: Any) -> PermissionReply:
            asked.append(request.tool_use_id)
            return PermissionReply(behavior="allow")

    async def scenario(fake: FakeAnthropic) -> list[Any]:
        env = cli_env(fake, home)
        for key in ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
            monkeypatch.setenv(key, env[key])
        session = AgentSession.create(proj, client=AnthropicClient("test-key", fake.base_url), trusted=True,
                                      resume=session_id, prompter=Person())
        assert session.pending_deferred is not None and not session.defer_allowed
        events = await session.run("and now?")
        await session.end()
        return events

    with FakeAnthropic() as fake:
        fake.script([reply(text("It is written."))])
        events = asyncio.run(scenario(fake))
        fake.assert_done()
        sent = fake.request_messages(0)
    assert asked == ["toolu_w1"] and events[-1].reason == "completed"
    assert (proj / "out.txt").read_text() == "approved later\n"
    assert sent[-1]["content"][0]["tool_use_id"] == "toolu_w1"
    assert sent[-1]["content"][-1]["text"] == "and now?"
    one_result_per_use(entries(home, proj, session_id))


def test_a_stream_json_session_runs_the_deferred_call_before_its_next_message(tmp_path):
    """An SDK-style session that goes on after ``tool_deferred``: its next user message first runs the pending call
    (the hook allows it now), then is sent after the call's result."""
    proj, home = project(tmp_path), tmp_path / "h"
    decide(tmp_path, "defer-once")
    lines = [json.dumps({"type": "user", "message": {"role": "user", "content": c}, "parent_tool_use_id": None,
                         "session_id": "default"}) for c in ("write it", "go on")]
    with FakeAnthropic() as fake:
        fake.script([reply(tool_use("Write", dict(WRITE, file_path=str(proj / "out.txt")), id="toolu_w1")),
                     reply(text("Written, going on."))])
        proc = run_cli(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                        "--trust"], proj, cli_env(fake, home), stdin="\n".join(lines) + "\n")
        fake.assert_done()
        sent = fake.request_messages(1)
    results = [m for m in jsonl(proc.stdout) if m.get("type") == "result"]
    assert [r["stop_reason"] for r in results] == ["tool_deferred", "end_turn"], (proc.stderr, results)
    assert results[0]["deferred_tool_use"]["id"] == "toolu_w1" and "deferred_tool_use" not in results[1]
    assert (proj / "out.txt").read_text() == "approved later\n"
    user = sent[-1]["content"]
    assert user[0]["tool_use_id"] == "toolu_w1" and not user[0].get("is_error")
    assert user[-1]["text"] == "go on"
    one_result_per_use(entries(home, proj, results[0]["session_id"]))
