"""``desktop-agent -p`` as a real subprocess against the fake Anthropic server (App. C; §9 items 59–63,
77, 81–88): output formats, flags, sessions on disk, resume, and the control protocol on stdio."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Change `value` to 2"


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def cli_env(fake: FakeAnthropic | None, home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "cfg"),
               PYTHONPATH=str(ROOT), DESKTOP_AGENT_STREAM_IDLE_TIMEOUT_S="20", CLAUDE_CODE_MAX_RETRIES="0")
    if fake is not None:
        env.update(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=fake.base_url)
    env.update(extra)
    return env


def run_cli(args: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "desktop_agent", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=timeout)


def jsonl(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def strip_cache(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: strip_cache(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [strip_cache(x) for x in obj]
    return obj


def session_file(home: Path, cwd: Path, session_id: str) -> Path:
    import re

    return home / "data" / "desktop-agent" / "projects" / re.sub(r"[^a-zA-Z0-9]", "-", str(cwd)) / f"{session_id}.jsonl"


def running_example(app: Path, check_first: Callable[[dict], None] | None = None) -> list:
    return [
        reply(tool_use("Read", {"file_path": str(app)}, id="toolu_read_1"), check=check_first),
        reply(tool_use("Edit", {"file_path": str(app), "old_string": "export const value = 1",
                                "new_string": "export const value = 2"}, id="toolu_edit_2")),
        reply(text("Done. `value` is now 2.")),
    ]


# ------------------------------------------------------------------------------ the running example


def test_running_example_end_to_end_stream_json(fake, workdir, tmp_path):
    app = workdir / "app.ts"
    sid = str(uuid.uuid4())
    home = tmp_path / "h"
    on_disk_at_first_request: list[list[str]] = []

    def check_first(body: dict) -> None:
        path = session_file(home, workdir, sid)
        on_disk_at_first_request.append([json.loads(x)["type"] for x in path.read_text().splitlines()])

    fake.script(running_example(app, check_first))
    out = run_cli(["-p", PROMPT, "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits",
                   "--session-id", sid, "--include-partial-messages", "--tools", "Read,Edit,Bash",
                   "--disallowedTools", "Bash", "--append-system-prompt", "APPENDED-TEXT"], workdir, cli_env(fake, home))
    assert out.returncode == 0, out.stderr
    fake.assert_done()
    assert app.read_text() == "export const value = 2"

    # exactly three requests, each carrying exactly the conversation so far
    assert len(fake.requests) == 3
    msgs = [strip_cache(r.messages) for r in fake.requests]
    u1 = {"role": "user", "content": [{"type": "text", "text": PROMPT}]}
    a1 = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_read_1", "name": "Read",
                                            "input": {"file_path": str(app)}}]}
    r1 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_read_1",
                                       "content": "1\texport const value = 1"}]}
    a2 = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_edit_2", "name": "Edit", "input": {
        "file_path": str(app), "old_string": "export const value = 1", "new_string": "export const value = 2"}}]}
    r2 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_edit_2",
                                       "content": f"The file {app} has been updated successfully."}]}
    assert msgs == [[u1], [u1, a1, r1], [u1, a1, r1, a2, r2]]
    assert all(r.streaming for r in fake.requests)
    # --tools narrows the set, a whole-tool deny removes Bash; --append-system-prompt reaches the request
    assert [t["name"] for t in fake.requests[0].body["tools"]] == ["Read", "Edit"]
    assert "APPENDED-TEXT" in json.dumps(fake.requests[0].body["system"])

    all_lines = jsonl(out.stdout)
    partial = [x for x in all_lines if x["type"] == "stream_event"]
    assert partial and partial[0]["event"]["type"] == "message_start" and partial[0]["session_id"] == sid
    assert {x["event"]["type"] for x in partial} >= {"content_block_delta", "message_stop"}
    assert all_lines.index(partial[0]) < next(i for i, x in enumerate(all_lines) if x["type"] == "assistant")
    lines = [x for x in all_lines if x["type"] != "stream_event"]
    assert lines[0]["type"] == "system" and lines[0]["subtype"] == "init"
    assert lines[0]["session_id"] == sid and lines[0]["permissionMode"] == "acceptEdits"
    assert lines[0]["cwd"] == str(workdir) and lines[0]["tools"] == ["Read", "Edit"]
    kinds = [(x["type"]) for x in lines[1:]]
    assert kinds == ["assistant", "user", "assistant", "user", "assistant", "result"]
    assert all(x["session_id"] == sid and x["uuid"] and "parent_tool_use_id" in x for x in lines[1:-1])
    result = lines[-1]
    assert result["subtype"] == "success" and result["is_error"] is False
    assert result["result"] == "Done. `value` is now 2." and result["num_turns"] == 3
    assert result["stop_reason"] == "end_turn" and result["session_id"] == sid
    assert result["permission_denials"] == [] and result["total_cost_usd"] > 0
    for key in ("duration_ms", "duration_api_ms", "usage"):
        assert key in result

    # the transcript (items 81, 82, 83, 88)
    # the input is on disk before the first request; the launch mode (not default) is kept with it
    assert on_disk_at_first_request == [["file-history-snapshot", "session-meta", "user", "permission-state"]]
    entries = [json.loads(x) for x in session_file(home, workdir, sid).read_text().splitlines()]
    assert [e["type"] for e in entries[:2]] == ["file-history-snapshot", "session-meta"]
    assert entries[1]["isMeta"] is True and entries[1]["workDir"] == str(workdir)
    chain = [e for e in entries if e["type"] in ("user", "assistant")]
    assert len(chain) == 6 and chain[0]["parentUuid"] is None
    for prev, cur in zip(chain, chain[1:]):
        assert cur["parentUuid"] == prev["uuid"]
    assert chain[2]["parentUuid"] == chain[1]["uuid"] and chain[4]["parentUuid"] == chain[3]["uuid"]
    assert not any(e["type"] == "progress" for e in entries)


def test_bearer_token_instead_of_an_api_key(workdir, tmp_path):
    """ANTHROPIC_AUTH_TOKEN alone (a gateway's token): sent as ``Authorization: Bearer``, no x-api-key."""
    with FakeAnthropic(api_key="tok-gateway") as fake:
        fake.script([reply(text("hi over a gateway"))])
        env = cli_env(fake, tmp_path / "h", ANTHROPIC_AUTH_TOKEN="tok-gateway")
        del env["ANTHROPIC_API_KEY"]
        out = run_cli(["-p", "hello"], workdir, env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "hi over a gateway"
        headers = fake.requests[0].headers
        assert headers["authorization"] == "Bearer tok-gateway" and "x-api-key" not in headers
        fake.assert_done()


def test_denials_by_a_permission_request_hook_are_listed(fake, workdir, tmp_path):
    """-p with no stdio prompter: a PermissionRequest command hook answers the ask (deny); the result
    line lists the denied call in ``permission_denials`` and the model gets the hook's message."""
    app = workdir / "app.ts"
    hook = tmp_path / "deny.sh"
    hook.write_text("#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"PermissionRequest\","
                    "\"decision\":{\"behavior\":\"deny\",\"message\":\"not on Fridays\"}}}'\n")
    hook.chmod(0o755)
    settings = {"hooks": {"PermissionRequest": [{"matcher": "Edit", "hooks": [{"type": "command",
                                                                                "command": str(hook)}]}]}}
    fake.script([*running_example(app)[:2], reply(text("denied, then"))])
    out = run_cli(["-p", PROMPT, "--output-format", "json", "--settings", json.dumps(settings)], workdir,
                  cli_env(fake, tmp_path / "h"))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["permission_denials"] == [{"tool_name": "Edit", "tool_use_id": "toolu_edit_2", "tool_input": {
        "file_path": str(app), "old_string": "export const value = 1", "new_string": "export const value = 2"}}]
    denied = fake.requests[-1].messages[-1]["content"][0]
    assert denied["is_error"] is True and "not on Fridays" in denied["content"]
    assert app.read_text() == "export const value = 1"


def test_resume_continue_text_json_max_turns_and_denials(fake, workdir, tmp_path):
    """A first session (JSON output); --resume with the prompt on stdin, text output and --max-turns;
    --continue in default mode without a prompter (the ask is denied with its own text); unknown flags."""
    app = workdir / "app.ts"
    home = tmp_path / "h"
    fake.script([
        reply(text("first answer")),
        reply(tool_use("Grep", {"pattern": "value"}, id="toolu_grep_1")),
        *running_example(app)[:2], reply(text("could not")),
    ])
    out = run_cli(["-p", "hello", "--output-format", "json"], workdir, cli_env(fake, home))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["type"] == "result" and result["result"] == "first answer" and result["subtype"] == "success"
    sid = result["session_id"]

    # --resume by id, prompt on stdin, --max-turns 1, --model: the tool runs, then error_max_turns (exit 1)
    out = run_cli(["-p", "--resume", sid, "--max-turns", "1", "--model", "claude-test-model"], workdir,
                  cli_env(fake, home), stdin="search\n")
    assert out.returncode == 1
    assert out.stdout == "" and "max turns" in out.stderr.lower()
    assert strip_cache(fake.requests[1].messages) == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "first answer"}]},
        {"role": "user", "content": [{"type": "text", "text": "search\n"}]},
    ]
    assert fake.requests[1].body["model"] == "claude-test-model"

    # --continue, default mode, no prompter; unknown flags (with and without values) are ignored
    out = run_cli(["-p", "--continue", "--output-format", "json", "--future-flag", "--fallback-model", "m2",
                   "--fork-session", PROMPT], workdir, cli_env(fake, home))
    assert out.returncode == 0, out.stderr
    assert "--future-flag" in out.stderr and "--fallback-model" in out.stderr
    result = json.loads(out.stdout)
    assert result["session_id"] == sid and result["result"] == "could not"
    assert result["permission_denials"] == [{"tool_name": "Edit", "tool_use_id": "toolu_edit_2", "tool_input": {
        "file_path": str(app), "old_string": "export const value = 1", "new_string": "export const value = 2"}}]
    denied = fake.requests[-1].messages[-1]["content"][0]
    assert denied["is_error"] is True and denied["tool_use_id"] == "toolu_edit_2"
    assert denied["content"].startswith("Claude requested permissions to ")
    # the continued request: the earlier turns (the max-turns one included), then the new prompt
    roles = [m["role"] for m in fake.requests[2].messages]
    assert roles[:4] == ["user", "assistant", "user", "assistant"] and roles[-1] == "user"
    assert app.read_text() == "export const value = 1"
    fake.assert_done()


def test_flag_errors_and_missing_key(fake, workdir, tmp_path):
    home = tmp_path / "h"
    # a bad flag value: one clear line on stderr, non-zero exit, no request
    out = run_cli(["-p", "x", "--output-format", "yaml"], workdir, cli_env(fake, home))
    assert out.returncode != 0 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and "--output-format" in out.stderr
    out = run_cli(["-p", "x", "--max-turns", "zero"], workdir, cli_env(fake, home))
    assert out.returncode != 0 and "--max-turns" in out.stderr
    out = run_cli(["-p", "x", "--permission-mode", "yolo"], workdir, cli_env(fake, home))
    assert out.returncode != 0 and "--permission-mode" in out.stderr
    # missing API key: one line, non-zero, and no session file left behind
    out = run_cli(["-p", "x"], workdir, cli_env(None, home))
    assert out.returncode != 0 and len(out.stderr.strip().splitlines()) == 1
    assert "ANTHROPIC_API_KEY" in out.stderr
    assert not (home / "data" / "desktop-agent" / "projects").exists()
    assert fake.requests == []


def test_parse_args_reference_flags():
    from desktop_agent.cli.argv import UsageError, parse_args

    o = parse_args(["--output-format", "stream-json", "--verbose", "--system-prompt", "", "--permission-prompt-tool",
                    "stdio", "--permission-mode", "acceptEdits", "--input-format", "stream-json", "--tools", "",
                    "--allowedTools", "Read,Bash(git log *)", "--allowedTools", "Edit", "--disallowedTools",
                    "Bash(rm *)", "--add-dir", "../x", "--add-dir=../y", "--setting-sources=user", "--max-turns",
                    "3", "--resume=abc", "--settings", '{"permissions":{}}', "--max-thinking-tokens", "100"])
    assert o.headless and o.out_format == "stream-json" and o.input_format == "stream-json"
    assert o.system_prompt == "" and o.permission_prompt_tool == "stdio" and o.permission_mode == "acceptEdits"
    assert o.tools == [] and o.allowed_tools == ["Read", "Bash(git log *)", "Edit"]
    assert o.disallowed_tools == ["Bash(rm *)"] and o.add_dirs == ["../x", "../y"] and o.max_turns == 3
    assert o.resume == "abc" and o.settings == '{"permissions":{}}'
    assert o.unknown == ["--setting-sources", "--max-thinking-tokens"] and o.positionals == []
    o = parse_args(["-p", "--dangerously-skip-permissions", "--trust", "--", "--not-a-flag"])
    assert o.print and o.permission_mode == "bypassPermissions" and o.trust and o.positionals == ["--not-a-flag"]
    o = parse_args(["some/folder"])
    assert not o.headless and o.positionals == ["some/folder"]
    for bad in (["--model"], ["-p", "--max-turns", "0"], ["--input-format", "stream-json"],
                ["-p", "--session-id", "not-a-uuid"], ["-p", "--permission-prompt-tool", "mcp__x"],
                ["-p", "--print=yes"]):
        with pytest.raises(UsageError):
            parse_args(bad)


# ------------------------------------------------------------------------------ the control protocol


class Driver:
    """A ``desktop-agent`` child speaking stream-json on stdio, read by a thread."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "desktop_agent", "--output-format", "stream-json", "--verbose",
             "--input-format", "stream-json", *args],
            cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            bufsize=1)
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self.lines.put(json.loads(line))
        self.lines.put(None)

    def send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def user(self, content: str) -> None:
        self.send({"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": None,
                   "session_id": ""})

    def control(self, request: dict[str, Any]) -> str:
        rid = f"req_{uuid.uuid4().hex[:8]}"
        self.send({"type": "control_request", "request_id": rid, "request": request})
        return rid

    def respond(self, request_id: str, response: dict[str, Any]) -> None:
        self.send({"type": "control_response", "response": {"subtype": "success", "request_id": request_id,
                                                             "response": response}})

    def expect(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out; seen: {[s.get('type') for s in self.seen]}")
            try:
                item = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if item is None:
                raise AssertionError(f"stdout closed; stderr: {self.proc.stderr.read() if self.proc.stderr else ''}")
            self.seen.append(item)
            if pred(item):
                return item

    def control_request(self, subtype: str) -> dict[str, Any]:
        return self.expect(lambda m: m.get("type") == "control_request" and m["request"]["subtype"] == subtype)

    def result(self) -> dict[str, Any]:
        return self.expect(lambda m: m.get("type") == "result")

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            rc = self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        while True:  # keep what was printed after the last expect
            try:
                item = self.lines.get(timeout=2)
            except queue.Empty:
                break
            if item is None:
                break
            self.seen.append(item)
        return rc


def start(fake, workdir, tmp_path, *args: str, hooks: Any = None) -> Driver:
    d = Driver(["--permission-prompt-tool", "stdio", *args], workdir, cli_env(fake, tmp_path / "h"))
    rid = d.control({"subtype": "initialize", "hooks": hooks})
    resp = d.expect(lambda m: m.get("type") == "control_response")
    assert resp["response"]["request_id"] == rid and resp["response"]["subtype"] == "success"
    assert resp["response"]["response"]["pid"] == d.proc.pid
    return d


def tool_results(d: Driver, tool_use_id: str) -> list[dict[str, Any]]:
    return [b for m in d.seen if m.get("type") == "user" for b in m["message"]["content"]
            if isinstance(b, dict) and b.get("tool_use_id") == tool_use_id]


def edit(app: Path, old: str, new: str, id: str):
    return reply(tool_use("Edit", {"file_path": str(app), "old_string": f"value = {old}",
                                   "new_string": f"value = {new}"}, id=id))


def test_control_protocol_session(fake, workdir, tmp_path):
    """One stream-json session, turn by turn: can_use_tool deny + duplicate reply (59, 60, 63), allow with an
    empty updatedInput (61), an SDK PreToolUse hook callback denying Bash, set_permission_mode, and
    "allow for session" with the suggested updates (62)."""
    app = workdir / "app.ts"
    fake.script([
        *running_example(app)[:2], reply(text("denied, ok")),                               # turn 1
        edit(app, "1", "2", "toolu_edit_3"), reply(text("done 2")),                          # turn 2
        reply(tool_use("Bash", {"command": "rm -rf build"}, id="toolu_bash_1")),              # turn 3
        reply(text("bash was blocked")),
        edit(app, "2", "3", "toolu_edit_4"), reply(text("done 3")),                          # turn 4
        edit(app, "3", "4", "toolu_edit_5"), edit(app, "4", "5", "toolu_edit_6"),            # turn 5
        reply(text("both done")),
    ])
    hooks = {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"]}]}
    d = start(fake, workdir, tmp_path, hooks=hooks)

    # turn 1: the ask (59), denied (60); a second reply for the same request is ignored (63)
    d.user(PROMPT)
    req = d.control_request("can_use_tool")
    r = req["request"]
    assert r["tool_name"] == "Edit" and r["tool_use_id"] == "toolu_edit_2"
    assert req["request_id"] != r["tool_use_id"]
    assert r["input"]["new_string"] == "export const value = 2"
    assert isinstance(r["permission_suggestions"], list) and r["permission_suggestions"]
    d.respond(req["request_id"], {"behavior": "deny", "message": "User denied via UI"})
    d.respond(req["request_id"], {"behavior": "allow", "updatedInput": {}})
    res = d.result()
    assert res["subtype"] == "success" and res["permission_denials"][0]["tool_use_id"] == "toolu_edit_2"
    assert tool_results(d, "toolu_edit_2") == [{"type": "tool_result", "tool_use_id": "toolu_edit_2",
                                                "content": "User denied via UI", "is_error": True}]
    assert app.read_text() == "export const value = 1"
    assert [b["content"] for b in fake.requests[2].messages[-1]["content"]] == ["User denied via UI"]

    # turn 2: allow with {} → the model's original input (61)
    d.user("try again")
    req2 = d.control_request("can_use_tool")
    assert req2["request_id"] != req["request_id"]
    d.respond(req2["request_id"], {"behavior": "allow", "updatedInput": {}})
    assert d.result()["subtype"] == "success"
    assert app.read_text() == "export const value = 2"
    assert "updated successfully" in tool_results(d, "toolu_edit_3")[0]["content"]

    # turn 3: the SDK's PreToolUse hook callback denies Bash; its reason is the tool_result
    d.user("clean up")
    hook = d.control_request("hook_callback")
    assert hook["request"]["callback_id"] == "hook_0"
    inp = hook["request"]["input"]
    assert inp["hook_event_name"] == "PreToolUse" and inp["tool_name"] == "Bash"
    assert inp["tool_input"] == {"command": "rm -rf build"} and inp["tool_use_id"] == "toolu_bash_1"
    assert inp["cwd"] == str(workdir) and inp["transcript_path"].endswith(".jsonl")
    d.respond(hook["request_id"], {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                          "permissionDecisionReason": "No Bash in tests"}})
    d.result()
    assert tool_results(d, "toolu_bash_1") == [{"type": "tool_result", "tool_use_id": "toolu_bash_1",
                                                "content": "No Bash in tests", "is_error": True}]

    # turn 4: set_permission_mode acceptEdits → the Edit runs without asking
    rid = d.control({"subtype": "set_permission_mode", "mode": "acceptEdits"})
    resp = d.expect(lambda m: m.get("type") == "control_response" and m["response"]["request_id"] == rid)
    assert resp["response"]["response"] == {"mode": "acceptEdits"}
    status = d.expect(lambda m: m.get("type") == "system" and m.get("subtype") == "status")
    assert status["permissionMode"] == "acceptEdits"
    d.user("to 3")
    init = d.expect(lambda m: m.get("type") == "system" and m.get("subtype") == "init")
    assert init["permissionMode"] == "acceptEdits"
    asks_before = sum(1 for m in d.seen if m.get("type") == "control_request")
    assert d.result()["subtype"] == "success"
    assert sum(1 for m in d.seen if m.get("type") == "control_request") == asks_before
    assert app.read_text() == "export const value = 3"

    # turn 5: back to default; "allow for session" with the suggested updates → the next Edit is not asked (62)
    rid = d.control({"subtype": "set_permission_mode", "mode": "default"})
    d.expect(lambda m: m.get("type") == "control_response" and m["response"]["request_id"] == rid)
    d.user("edit twice")
    req5 = d.control_request("can_use_tool")
    assert req5["request"]["tool_use_id"] == "toolu_edit_5"
    d.respond(req5["request_id"], {"behavior": "allow", "updatedInput": req5["request"]["input"],
                                   "updatedPermissions": req5["request"]["permission_suggestions"]})
    assert d.result()["subtype"] == "success"
    assert d.close() == 0
    assert not [m for m in d.seen if m.get("type") == "control_request" and
                m["request"].get("tool_use_id") == "toolu_edit_6"]
    assert app.read_text() == "export const value = 5"
    fake.assert_done()


def test_interrupt_while_permission_pending(fake, workdir, tmp_path):
    """Item 77 and App. C: interrupt → control_cancel_request for the pending ask, deny, the tool never runs,
    a ``[Request interrupted by user…]`` message, result ``error_during_execution``, exit code 1."""
    app = workdir / "app.ts"
    fake.script(running_example(app)[:2])
    d = start(fake, workdir, tmp_path)
    d.user(PROMPT)
    req = d.control_request("can_use_tool")
    rid = d.control({"subtype": "interrupt"})
    cancel = d.expect(lambda m: m.get("type") == "control_cancel_request")
    assert cancel["request_id"] == req["request_id"]
    res = d.result()
    assert res["subtype"] == "error_during_execution" and res["is_error"] is True
    assert any(m.get("type") == "control_response" and m["response"]["request_id"] == rid for m in d.seen)
    d.respond(req["request_id"], {"behavior": "allow", "updatedInput": {}})  # too late: ignored
    assert d.close() == 1
    assert app.read_text() == "export const value = 1"
    results = tool_results(d, "toolu_edit_2")
    assert len(results) == 1 and results[0]["is_error"] is True
    texts = [b.get("text") for m in d.seen if m.get("type") == "user" for b in m["message"]["content"]
             if isinstance(b, dict) and b.get("type") == "text"]
    assert any(t and t.startswith("[Request interrupted by user") for t in texts)
    fake.assert_done()


def test_session_composition_from_flags(workdir, tmp_path, monkeypatch):
    """--add-dir, --settings (JSON), --dangerously-skip-permissions, --trust, --tools, --system-prompt: what the
    headless run builds from them (in process; no model call)."""
    from desktop_agent.cli.argv import parse_args
    from desktop_agent.cli.headless import HeadlessRun

    extra = tmp_path / "extra"
    extra.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    opts = parse_args(["-p", "x", "--add-dir", str(extra), "--settings", '{"permissions":{"deny":["Grep"]}}',
                       "--dangerously-skip-permissions", "--trust", "--tools", "Read,Grep,Glob",
                       "--system-prompt", "CUSTOM", "--model", "claude-opus-4-5"])
    run = HeadlessRun(opts)
    run.create_session()
    s = run.session
    try:
        assert s.permission_mode == "bypassPermissions"
        assert [t.name for t in s.tools] == ["Read", "Glob"]
        assert str(extra) in s.ctx.working_dirs and s.ctx.working_dirs[0] == str(workdir)
        assert s.model == "claude-opus-4-5"
        assert s.permission_context.trusted is True
        import asyncio

        blocks = asyncio.run(s.system_prompt_blocks())
        assert blocks[0]["text"] == "CUSTOM"
        init = run.init_line()
        assert init.tools == ["Read", "Glob"] and init.permissionMode == "bypassPermissions"
    finally:
        s.close()


def test_compact_command_in_process(workdir, monkeypatch):
    """``/compact`` as the prompt compacts the session instead of running a model turn."""
    import asyncio
    import io

    from desktop_agent.app import build
    from desktop_agent.cli.argv import parse_args
    from desktop_agent.cli.headless import HeadlessRun
    from desktop_agent.cli.stdio import Output
    from desktop_agent.model.scripted import ScriptedModelClient

    client = ScriptedModelClient([reply(text("hi there")), reply(text("<summary>The user said hello.</summary>"))])
    monkeypatch.setattr(build, "make_client", lambda settings, provider=None: client)
    monkeypatch.chdir(workdir)

    def run(args: list[str]) -> tuple[int, list[dict]]:
        buf = io.StringIO()
        opts = parse_args(args)
        code = asyncio.run(HeadlessRun(opts, Output(buf)).main(" ".join(opts.positionals)))
        return code, jsonl(buf.getvalue())

    code, lines = run(["-p", "--output-format", "stream-json", "hello"])
    assert code == 0 and lines[-1]["result"] == "hi there"
    code, lines = run(["-p", "--continue", "--output-format", "stream-json", "/compact", "keep", "names"])
    assert code == 0, lines
    assert [(x["type"], x.get("subtype")) for x in lines] == [
        ("system", "init"), ("system", "compact_boundary"), ("result", "success")]
    assert lines[1]["compact_metadata"]["trigger"] == "manual"
    assert "keep names" in json.dumps(client.requests[1].messages)
    assert client.position == 2


@pytest.mark.parametrize("source", ["file", "devnull"])
def test_stream_json_input_from_a_file_or_dev_null_is_read_to_its_end(source, fake, workdir, tmp_path):
    """``desktop-agent -p --input-format stream-json < messages.jsonl`` (a regular file) answers every message
    and exits; with ``< /dev/null`` it exits at once. Both used to wait for ever: a character device passes
    asyncio's pipe check but cannot be polled, and the error was lost in a callback."""
    home = tmp_path / "h"
    args = [sys.executable, "-m", "desktop_agent", "-p", "--input-format", "stream-json", "--output-format",
            "stream-json", "--verbose"]
    if source == "file":
        fake.script([reply(text("first answer")), reply(text("second answer"))])
        messages = tmp_path / "messages.jsonl"
        messages.write_text("".join(json.dumps({"type": "user", "message": {"role": "user", "content": c}}) + "\n"
                                    for c in ("one", "two")))
        stdin = open(messages, "rb")
    else:
        stdin = open(os.devnull, "rb")
    with stdin:
        proc = subprocess.run(args, cwd=workdir, env=cli_env(fake, home), stdin=stdin, capture_output=True,
                              text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    results = [m for m in jsonl(proc.stdout) if m.get("type") == "result"]
    if source == "file":
        assert [r["result"] for r in results] == ["first answer", "second answer"]
    else:
        assert results == [] and len(fake.requests) == 0
