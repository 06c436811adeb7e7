"""The host's further control requests (SPEC App. D.5) and ``--await-initialize``, through the real CLI on stdio
against the fake Anthropic API and the real fake MCP server (``tests/fakes/mcp_server.py``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.test_cli import Driver, cli_env, fake, tool_results  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def servers(log: Path | None = None) -> dict[str, Any]:
    env = {"PYTHONPATH": str(ROOT)}
    if log is not None:
        env["MCP_FAKE_LOG"] = str(log)
    return {"fake": {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"], "env": env}}


def answer(d: Driver, request: dict[str, Any]) -> dict[str, Any]:
    rid = d.control(request)
    msg = d.expect(lambda m: m.get("type") == "control_response" and m["response"]["request_id"] == rid, timeout=40)
    return msg["response"]


def ok(d: Driver, request: dict[str, Any]) -> dict[str, Any]:
    body = answer(d, request)
    assert body["subtype"] == "success", body
    return body.get("response") or {}


def launch(fake, workdir: Path, tmp_path: Path, init: dict[str, Any], *args: str) -> tuple[Driver, dict[str, Any]]:
    d = Driver(["--permission-prompt-tool", "stdio", "--await-initialize", *args], workdir,
               cli_env(fake, tmp_path / "h"))
    return d, answer(d, {"subtype": "initialize", **init})


def test_await_initialize_reads_mcp_servers_settings_and_disallowed_tools(fake, workdir, tmp_path):
    log = tmp_path / "mcp.log"
    fake.script([reply(tool_use("mcp__fake__echo", {"text": "hi"}, id="toolu_e")), reply(text("done"))])
    d, init = launch(fake, workdir, tmp_path, {
        "mcpServers": servers(log), "disallowedTools": ["Write"],
        "settings": {"permissions": {"allow": ["mcp__fake__echo"], "deny": ["Bash(rm:*)"]}}})
    try:
        assert init["subtype"] == "success", init
        body = init["response"]
        assert body["mcp_servers_applied"] is True and body["settings_applied"] is True
        assert body["disallowed_tools_applied"] is True and body["claude_code_version"]
        d.user("echo it")
        sysinit = d.expect(lambda m: m.get("subtype") == "init")
        assert sysinit["mcp_servers"] == [{"name": "fake", "status": "connected"}]
        assert "mcp__fake__echo" in sysinit["tools"] and "Write" not in sysinit["tools"]
        assert d.result()["subtype"] == "success"
        assert tool_results(d, "toolu_e")[0]["content"] == "echo: hi"  # allowed by the initialize settings
        assert log.read_text() == "echo hi\n"
        again = answer(d, {"subtype": "initialize", "mcpServers": {"other": {"command": "true"}}})
        assert again["response"]["mcp_servers_applied"] is False  # a late initialize loads nothing
    finally:
        assert d.close() == 0
    # the servers' env stayed off the command line: nothing of it in argv
    assert str(log) not in " ".join(d.proc.args)


def test_await_initialize_with_a_bad_disallowed_rule_is_refused_and_nothing_starts(fake, workdir, tmp_path):
    d, init = launch(fake, workdir, tmp_path, {"disallowedTools": ["Bash(rm:*"]})
    assert init["subtype"] == "error" and "Bash(rm:*" in init["error"]
    assert d.close() == 2
    assert fake.requests == []


def test_mcp_status_toggle_reconnect(fake, workdir, tmp_path):
    fake.script([reply(text("ok"))])
    d, init = launch(fake, workdir, tmp_path, {"mcpServers": servers()})
    try:
        assert init["subtype"] == "success"
        status = ok(d, {"subtype": "mcp_status"})["mcpServers"]
        assert len(status) == 1
        server = status[0]
        assert server["name"] == "fake" and server["status"] == "connected" and server["scope"] == "dynamic"
        assert server["serverInfo"]["name"] == "fake-tools"
        assert server["config"] == {"type": "stdio", "command": sys.executable,
                                    "args": ["-m", "tests.fakes.mcp_server", "stdio"]}  # no env
        names = {t["name"]: t for t in server["tools"]}
        assert {"echo", "add", "write_file"} <= set(names) and names["echo"]["description"] == "Echo the text back."
        assert ok(d, {"subtype": "mcp_toggle", "serverName": "fake", "enabled": False}) == {}
        off = ok(d, {"subtype": "mcp_status"})["mcpServers"][0]
        assert off["status"] == "disabled" and off["tools"] == []
        d.user("anything")  # the turn's request no longer offers the server's tools
        d.result()
        refused = answer(d, {"subtype": "mcp_reconnect", "serverName": "fake"})
        assert refused == {"subtype": "error", "request_id": refused["request_id"], "error": "Server is disabled: fake"}
        ok(d, {"subtype": "mcp_toggle", "serverName": "fake", "enabled": True})
        assert ok(d, {"subtype": "mcp_status"})["mcpServers"][0]["status"] == "connected"
        assert ok(d, {"subtype": "mcp_reconnect", "serverName": "fake"}) == {}
        after = ok(d, {"subtype": "mcp_status"})["mcpServers"][0]
        assert after["status"] == "connected" and after["tools"]
        missing = answer(d, {"subtype": "mcp_toggle", "serverName": "nope", "enabled": True})
        assert missing["subtype"] == "error" and missing["error"] == "Server not found: nope"
    finally:
        assert d.close() == 0
    offered = [t["name"] for t in fake.requests[0].body["tools"]]
    assert "Read" in offered and not any(n.startswith("mcp__fake__") for n in offered)


def test_context_usage_counts_the_last_request(fake, workdir, tmp_path):
    (workdir / "CLAUDE.md").write_text("Always answer in one word.\n" * 20)
    fake.script([reply(text("hello"))])
    d, _ = launch(fake, workdir, tmp_path, {})
    try:
        before = ok(d, {"subtype": "get_context_usage"})
        assert before["apiUsage"] is None and before["model"] and before["rawMaxTokens"] == 200_000
        d.user("hi")
        d.result()
        after = ok(d, {"subtype": "get_context_usage", "detail": "summary"})
    finally:
        assert d.close() == 0
    usage = fake.requests[0].body
    assert usage["model"] == after["model"]
    api = after["apiUsage"]
    assert api is not None and api["input_tokens"] > 0 and api["output_tokens"] > 0
    rows = {c["id"]: c for c in after["categories"]}
    assert set(rows) >= {"system_prompt", "system_tools", "memory_files", "messages", "free_space"}
    assert rows["memory_files"]["tokens"] > 100 and after["memoryFiles"][0]["path"] == str(workdir / "CLAUDE.md")
    used = sum(c["tokens"] for c in after["categories"] if c["kind"] == "used")
    assert used == after["totalTokens"] >= sum(api.values())
    assert after["percentage"] == round(after["totalTokens"] * 100 / after["rawMaxTokens"])
    assert sum(c["tokens"] for c in after["categories"]) == after["rawMaxTokens"]
    assert len(after["gridRows"]) == 10 and all(len(r) == 10 for r in after["gridRows"])
    assert after["isAutoCompactEnabled"] is True and after["autoCompactThreshold"] < after["maxTokens"]


def test_apply_flag_settings_applies_rules_and_refuses_bad_payloads_whole(fake, workdir, tmp_path):
    target = workdir / "a.txt"
    fake.script([reply(tool_use("Write", {"file_path": str(target), "content": "x\n"}, id="toolu_w")),
                 reply(text("done"))])
    d, _ = launch(fake, workdir, tmp_path, {}, "--permission-mode", "acceptEdits")
    try:
        bad = answer(d, {"subtype": "apply_flag_settings",
                         "settings": {"permissions": {"deny": ["Write", "Bash(rm:*"]}}})
        assert bad["subtype"] == "error" and "Bash(rm:*" in bad["error"] and "Nothing was applied" in bad["error"]
        refused = answer(d, {"subtype": "apply_flag_settings", "settings": {"hooks": {}, "fastMode": True}})
        assert refused["subtype"] == "error" and "hooks, fastMode" in refused["error"]
        ok(d, {"subtype": "apply_flag_settings", "settings": {"permissions": {"deny": ["Write"]}}})
        d.user("write it")
        d.result()
        assert not target.exists()  # the flag deny rule holds
        assert "Write" in json.dumps(tool_results(d, "toolu_w"))
        ok(d, {"subtype": "apply_flag_settings", "settings": {"permissions": {"defaultMode": "plan"}}})
        status = d.expect(lambda m: m.get("type") == "system" and m.get("subtype") == "status")
        assert status["permissionMode"] == "plan"
        ok(d, {"subtype": "apply_flag_settings", "settings": {"model": "claude-test-model", "permissions": None}})
    finally:
        assert d.close() == 0


def test_update_settings_writes_only_the_allowlist(fake, workdir, tmp_path):
    d, _ = launch(fake, workdir, tmp_path, {})
    local = workdir / ".claude" / "settings.local.json"
    try:
        refused = answer(d, {"subtype": "update_settings", "source": "localSettings",
                             "settings": {"permissions": {"allow": ["Bash"]}}})
        assert refused["subtype"] == "error" and "outputStyle" in refused["error"]
        assert not local.exists()
        ok(d, {"subtype": "update_settings", "source": "localSettings", "settings": {"outputStyle": "default"}})
        assert json.loads(local.read_text()) == {"outputStyle": "default"}
        ok(d, {"subtype": "update_settings", "source": "userSettings", "settings": {"effortLevel": "low"}})
        user = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
        assert json.loads(user.read_text()) == {"effortLevel": "low"}
        bad = answer(d, {"subtype": "update_settings", "source": "userSettings", "settings": {"effortLevel": 3}})
        assert bad["subtype"] == "error"
    finally:
        assert d.close() == 0


def test_seed_read_state_lets_edit_run_only_inside_and_when_unchanged(fake, workdir, tmp_path):
    app = workdir / "app.ts"
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    secret = workdir / "secret.txt"
    secret.write_text("s")
    fake.script([reply(tool_use("Edit", {"file_path": str(app), "old_string": "value = 1",
                                         "new_string": "value = 2"}, id="toolu_e")), reply(text("edited"))])
    d, _ = launch(fake, workdir, tmp_path, {"settings": {"permissions": {"deny": ["Read(./secret.txt)"]}}},
                  "--permission-mode", "acceptEdits")
    try:
        mtime = os.stat(app).st_mtime_ns // 1_000_000
        stale = answer(d, {"subtype": "seed_read_state", "path": str(app), "mtime": mtime - 10_000})
        assert stale["subtype"] == "success"  # skipped: the file changed since the host's read
        no = answer(d, {"subtype": "seed_read_state", "path": str(outside), "mtime": 10**13})
        assert no["subtype"] == "error" and "outside the working folders" in no["error"]
        denied = answer(d, {"subtype": "seed_read_state", "path": "secret.txt", "mtime": 10**13})
        assert denied["subtype"] == "error" and "denied" in denied["error"]
        ok(d, {"subtype": "seed_read_state", "path": "app.ts", "mtime": mtime})
        d.user("edit")
        assert d.result()["subtype"] == "success"
    finally:
        assert d.close() == 0
    assert app.read_text() == "export const value = 2"


def test_an_unknown_request_is_answered_with_its_name(fake, workdir, tmp_path):
    d, _ = launch(fake, workdir, tmp_path, {})
    try:
        body = answer(d, {"subtype": "reload_plugins"})
        assert body == {"subtype": "error", "request_id": body["request_id"],
                        "error": "Unsupported control request: reload_plugins"}
    finally:
        assert d.close() == 0


def test_lines_before_initialize_wait_and_a_malformed_request_is_answered(fake, workdir, tmp_path):
    fake.script([reply(text("hi there"))])
    d = Driver(["--await-initialize"], workdir, cli_env(fake, tmp_path / "h"))
    try:
        d.user("hello")  # before initialize: taken once the session is built from it
        broken = answer(d, {"subtype": "initialize", "mcpServers": ["not", "an", "object"]})
        assert broken["subtype"] == "error" and broken["error"].startswith("bad control_request")  # no hang
        rid = d.control({"subtype": "initialize"})
        first = d.expect(lambda m: m.get("type") in ("control_response", "system"))
        assert first["type"] == "control_response" and first["response"]["request_id"] == rid
        assert d.result()["result"] == "hi there"
        bad = answer(d, {"subtype": "mcp_toggle", "enabled": True})
        assert bad["subtype"] == "error" and bad["error"].startswith("bad control_request")
    finally:
        assert d.close() == 0


def test_stdin_closing_before_initialize_starts_nothing(fake, workdir, tmp_path):
    d = Driver(["--await-initialize"], workdir, cli_env(fake, tmp_path / "h"))
    assert d.close() == 1
    assert "before the initialize request" in (d.proc.stderr.read() if d.proc.stderr else "")
    assert fake.requests == [] and not (tmp_path / "h" / "data").exists()
