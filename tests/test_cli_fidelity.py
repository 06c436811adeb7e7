"""Model- and SDK-facing fidelity of the headless CLI (issue 14; SPEC App. A, App. B §B.5, App. C), each on the
streaming execution path (the default) and the batch path (``streaming_tool_execution: false`` in the app
settings): the texts of a whole-tool deny and of ``dontAsk`` mode, a PreToolUse hook's verbatim stderr and its
input keys, the protocol order (the ``assistant`` line with a tool_use precedes every ``hook_callback`` and
``can_use_tool`` request about it, over many prompts), ``initialize``/``init`` fields (``agents``,
``account.apiKeySource``), the interrupt reply without ``response``, and the result's ``terminal_reason`` and
``num_turns``. Real CLI subprocesses against the fake Anthropic server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.test_cli import cli_env, jsonl, run_cli

PATHS = ["streaming", "batch"]
NOT_ENABLED = ("<tool_use_error>Error: No such tool available: {0}. {0} exists but is not enabled in this context. "
               "Use one of the available tools instead.</tool_use_error>")
DONT_ASK = (
    "Permission to use {0} has been denied because Desktop Agent is running in don't ask mode. IMPORTANT: You *may* "
    "attempt to accomplish this action using other tools that might naturally be used to accomplish this goal, e.g. "
    "using head instead of cat. But you *should not* attempt to work around this denial in malicious ways, e.g. do "
    "not use your ability to run tests to execute non-test actions. You should only try to work around this "
    "restriction in reasonable ways that do not attempt to bypass the intent behind this denial. If you believe "
    "this capability is essential to complete the user's request, STOP and explain to the user what you were "
    "trying to do and why you need this permission. Let the user decide how to proceed.")
HOOK_INPUT_KEYS = ["cwd", "effort", "hook_event_name", "permission_mode", "prompt_id", "session_id", "tool_input",
                   "tool_name", "tool_use_id", "transcript_path"]


def env_for(fake: FakeAnthropic | None, home: Path, path: str, **extra: str) -> dict[str, str]:
    env = cli_env(fake, home, **extra)
    if path == "batch":
        cfg = home / "cfg" / "desktop-agent"
        cfg.mkdir(parents=True, exist_ok=True)
        (cfg / "settings.json").write_text(json.dumps({"streaming_tool_execution": False}))
    return env


def results_of(fake: FakeAnthropic, n: int) -> dict[str, dict[str, Any]]:
    """The tool_result blocks sent in the n-th request, by tool_use_id."""
    return {b["tool_use_id"]: b for m in fake.request_messages(n) if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"}


@pytest.mark.parametrize("path", PATHS)
def test_whole_tool_deny_and_dont_ask_texts(workdir, tmp_path, path):
    """``--disallowedTools Edit`` and ``permissions.deny: ["Write"]`` answer "exists but is not enabled"; in
    dontAsk mode a Bash command that would ask gets the don't-ask text. The result line carries
    ``terminal_reason`` and counts ``num_turns`` as the reference (prompt + one per tool_result)."""
    app = workdir / "app.ts"
    with FakeAnthropic() as fake:
        fake.script([
            reply(tool_use("Edit", {"file_path": str(app), "old_string": "1", "new_string": "2"}, id="toolu_e"),
                  tool_use("Write", {"file_path": str(workdir / "new.txt"), "content": "x"}, id="toolu_w"),
                  tool_use("Bash", {"command": "touch made-by-bash"}, id="toolu_b")),
            reply(text("done")),
        ])
        env = env_for(fake, tmp_path / "h", path)
        proc = run_cli(["-p", "go", "--output-format", "json", "--permission-mode", "dontAsk",
                        "--disallowedTools", "Edit", "--settings", json.dumps({"permissions": {"deny": ["Write"]}})],
                       workdir, env)
        assert proc.returncode == 0, proc.stderr
        fake.assert_done()
        tools = [t["name"] for t in fake.requests[0].body["tools"]]
        results = results_of(fake, 1)
    assert "Edit" not in tools and "Write" not in tools and "Bash" in tools
    assert results["toolu_e"]["content"] == NOT_ENABLED.format("Edit") and results["toolu_e"]["is_error"]
    assert results["toolu_w"]["content"] == NOT_ENABLED.format("Write") and results["toolu_w"]["is_error"]
    assert results["toolu_b"]["content"] == DONT_ASK.format("Bash") and results["toolu_b"]["is_error"]
    assert not (workdir / "made-by-bash").exists() and not (workdir / "new.txt").exists()
    result = json.loads(proc.stdout)
    assert result["subtype"] == "success" and result["terminal_reason"] == "completed"
    assert result["num_turns"] == 4  # the prompt and three tool_results (two API requests)
    assert {d["tool_use_id"] for d in result["permission_denials"]} == {"toolu_b"}


@pytest.mark.parametrize("path", PATHS)
def test_hook_stderr_verbatim_and_hook_input_keys(workdir, tmp_path, path):
    """An exit-2 PreToolUse hook's stderr keeps its trailing newline; the hook input has the reference's keys,
    with ``effort`` ``{"level": "high"}`` and one ``prompt_id`` per user prompt. ``--max-turns 2`` ends with
    ``error_max_turns``, ``terminal_reason: max_turns`` and the reference's count (prompt + results)."""
    dumps = tmp_path / "inputs"
    dumps.mkdir()
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ncat > \"$(mktemp {dumps}/in.XXXXXX)\"\n"
                    "echo 'Blocked: command contains forbidden' >&2\nexit 2\n")
    hook.chmod(0o755)
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": str(hook)}]}]}}
    with FakeAnthropic() as fake:
        fake.script([reply(tool_use("Bash", {"command": "echo one"}, id="toolu_1")),
                     reply(tool_use("Bash", {"command": "echo two"}, id="toolu_2"))])
        env = env_for(fake, tmp_path / "h", path)
        proc = run_cli(["-p", "go", "--output-format", "json", "--max-turns", "2", "--permission-mode",
                        "bypassPermissions", "--settings", json.dumps(settings)], workdir, env)
        fake.assert_done()
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and result["subtype"] == "error_max_turns" and result["is_error"]
    assert result["terminal_reason"] == "max_turns" and result["num_turns"] == 3
    session = result["session_id"]
    transcript = (Path(env["XDG_DATA_HOME"]) / "desktop-agent" / "projects").rglob(f"{session}.jsonl")
    entries = [json.loads(line) for line in next(transcript).read_text().splitlines()]
    contents = {b["tool_use_id"]: b["content"] for e in entries if e.get("type") == "user"
                and isinstance(e["message"]["content"], list) for b in e["message"]["content"]
                if b.get("type") == "tool_result"}
    for tool_use_id in ("toolu_1", "toolu_2"):
        assert contents[tool_use_id] == f"PreToolUse:Bash hook error: [{hook}]: Blocked: command contains forbidden\n"
    inputs = [json.loads(f.read_text()) for f in dumps.iterdir()]
    assert len(inputs) == 2 and all(sorted(i) == HOOK_INPUT_KEYS for i in inputs)
    assert inputs[0]["effort"] == {"level": "high"} and inputs[0]["session_id"] == session
    assert inputs[0]["prompt_id"] and inputs[0]["prompt_id"] == inputs[1]["prompt_id"]


# ------------------------------------------------------------------------------------- the stdio protocol


class Host:
    """A minimal SDK host on the CLI's stdio: reads lines on a thread, answers control requests, records order."""

    def __init__(self, proc: subprocess.Popen[str], answer: Any):
        self.proc = proc
        self.answer = answer
        self.lines: list[dict[str, Any]] = []
        self.shown: set[str] = set()  # tool_use ids of assistant lines seen so far
        self.violations: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            if not raw.strip():
                continue
            line = json.loads(raw)
            if line.get("type") == "assistant":
                for b in line["message"]["content"]:
                    if b.get("type") == "tool_use":
                        self.shown.add(b["id"])
            if line.get("type") == "control_request":
                req = line["request"]
                tool_use_id = req.get("tool_use_id") or (req.get("input") or {}).get("tool_use_id")
                if tool_use_id and tool_use_id not in self.shown:
                    self.violations.append(f"{req['subtype']} for {tool_use_id} before its assistant line")
                self.requests.append(req)
                self.send({"type": "control_response", "response": {
                    "subtype": "success", "request_id": line["request_id"], "response": self.answer(req)}})
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()

    def wait_for(self, pred: Any, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    if pred(line):
                        return line
                left = deadline - time.monotonic()
                assert left > 0, f"timed out; last lines: {self.lines[-5:]}"
                self.cond.wait(left)


def answer(req: dict[str, Any]) -> dict[str, Any]:
    if req["subtype"] == "hook_callback":
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "no Bash here"}}
    return {"behavior": "allow", "updatedInput": req["input"]}


@pytest.mark.parametrize("path", PATHS)
def test_protocol_order_initialize_and_interrupt(workdir, tmp_path, path):
    """Six prompts in one stdio session, each a slowly streamed reply with text, a Write (can_use_tool allows
    it) and a Bash call (the SDK hook callback denies it): every request comes after the assistant line of
    its tool_use, one assistant line per block. ``initialize`` answers ``agents: []`` and the key's source,
    ``system/init`` says the same, and the interrupt reply has no ``response`` key."""
    rounds = 6
    with FakeAnthropic(chunk_size=3) as fake:
        for i in range(rounds):
            fake.script([
                reply(text(f"Round {i}: running both."),
                      tool_use("Write", {"file_path": str(workdir / f"w{i}.txt"), "content": f"{i}\n"},
                               id=f"toolu_write_{i}"),
                      tool_use("Bash", {"command": f"echo {i}"}, id=f"toolu_bash_{i}"), delay=0.002),
                reply(text(f"done {i}")),
            ])
        env = env_for(fake, tmp_path / "h", path)
        proc = subprocess.Popen(
            [sys.executable, "-m", "desktop_agent", "--output-format", "stream-json", "--verbose", "--input-format",
             "stream-json", "--permission-prompt-tool", "stdio", "--permission-mode", "default"],
            cwd=workdir, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        host = Host(proc, answer)
        try:
            hooks = {"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"]}]}
            host.send({"type": "control_request", "request_id": "req_1_init",
                       "request": {"subtype": "initialize", "hooks": hooks}})
            init = host.wait_for(lambda m: m.get("type") == "control_response")["response"]
            for i in range(rounds):
                host.send({"type": "user", "message": {"role": "user", "content": f"round {i}"},
                           "parent_tool_use_id": None, "session_id": "default"})
                host.wait_for(lambda m, n=i + 1: sum(x.get("type") == "result" for x in host.lines) >= n)
            host.send({"type": "control_request", "request_id": "req_2_int", "request": {"subtype": "interrupt"}})
            interrupt = host.wait_for(lambda m: m.get("type") == "control_response"
                                      and m["response"].get("request_id") == "req_2_int")["response"]
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(30)
        fake.assert_done()
    assert host.violations == []
    subtypes = [r["subtype"] for r in host.requests]
    assert subtypes.count("hook_callback") == rounds and subtypes.count("can_use_tool") == rounds
    assistant = [m for m in host.lines if m.get("type") == "assistant"]
    assert all(len(m["message"]["content"]) == 1 for m in assistant)  # one line per block
    assert len(assistant) == rounds * 4  # text, Write, Bash; then the closing text
    assert all((workdir / f"w{i}.txt").read_text() == f"{i}\n" for i in range(rounds))
    results = [m for m in host.lines if m.get("type") == "result"]
    assert all(r["subtype"] == "success" and r["num_turns"] == 3 for r in results)
    hooked = [r["input"] for r in host.requests if r["subtype"] == "hook_callback"]
    assert all(sorted(h) == HOOK_INPUT_KEYS for h in hooked) and len({h["prompt_id"] for h in hooked}) == rounds
    response = init["response"]
    assert response["agents"] == [] and response["account"]["apiKeySource"] == "ANTHROPIC_API_KEY"
    inits = [m for m in host.lines if m.get("subtype") == "init"]
    assert inits and all(m["apiKeySource"] == "ANTHROPIC_API_KEY" for m in inits)
    assert interrupt == {"subtype": "success", "request_id": "req_2_int"}


@pytest.mark.parametrize("source", ["ANTHROPIC_AUTH_TOKEN", "config file"])
def test_api_key_source(workdir, tmp_path, source):
    home = tmp_path / "h"
    with FakeAnthropic() as fake:
        fake.script([reply(text("hi"))])
        env = cli_env(fake, home)
        del env["ANTHROPIC_API_KEY"]
        if source == "ANTHROPIC_AUTH_TOKEN":
            env["ANTHROPIC_AUTH_TOKEN"] = "test-token"
        else:
            creds = home / "cfg" / "desktop-agent" / "credentials.json"
            creds.parent.mkdir(parents=True)
            creds.write_text(json.dumps({"anthropic_api_key": "test-key"}))
            os.chmod(creds, 0o600)
        env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"  # never the machine's keyring
        proc = run_cli(["-p", "hi", "--output-format", "stream-json", "--verbose"], workdir, env)
        assert proc.returncode == 0, proc.stderr
        fake.assert_done()
    init = next(m for m in jsonl(proc.stdout) if m.get("subtype") == "init")
    assert init["apiKeySource"] == source


def test_initialize_system_prompt_replaces_and_appends(workdir, tmp_path):
    """``initialize`` with ``systemPrompt`` (a list of parts) and ``appendSystemPrompt``, as the SDKs send them:
    the next model request's system text is the custom prompt plus the appended text (``set_system_prompt``)."""
    with FakeAnthropic() as fake:
        fake.script([reply(text("ok"))])
        proc = subprocess.Popen(
            [sys.executable, "-m", "desktop_agent", "--output-format", "stream-json", "--verbose", "--input-format",
             "stream-json"], cwd=workdir, env=env_for(fake, tmp_path / "h", "streaming"), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        host = Host(proc, answer)
        try:
            host.send({"type": "control_request", "request_id": "req_1", "request": {
                "subtype": "initialize", "systemPrompt": ["You are the release bot. ", "Be terse."],
                "appendSystemPrompt": "Always sign with -- rb."}})
            host.wait_for(lambda m: m.get("type") == "control_response")
            host.send({"type": "user", "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": None,
                       "session_id": "default"})
            host.wait_for(lambda m: m.get("type") == "result")
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(30)
        fake.assert_done()
    system = fake.requests[0].body["system"]
    joined = "\n".join(b["text"] for b in system) if isinstance(system, list) else system
    assert "You are the release bot. Be terse." in joined and "Always sign with -- rb." in joined
    assert joined.index("release bot") < joined.index("sign with")
