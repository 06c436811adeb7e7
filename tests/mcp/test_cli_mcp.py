"""MCP through the real CLI (``--mcp-config``) against the fake Anthropic API and a real MCP server:
``system/init`` lists the server and its tools, a call asked over ``can_use_tool`` is allowed (the server
writes the file) or denied (nothing written, the message verbatim), a crashed server shows as failed in
``mcp_status`` and comes back on the next call, and an untrusted folder's ``.mcp.json`` never starts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.test_cli import cli_env, fake, jsonl, run_cli, start, tool_results  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def server_json(log: Path | None = None) -> str:
    env = {"PYTHONPATH": str(ROOT)}
    if log is not None:
        env["MCP_FAKE_LOG"] = str(log)
    return json.dumps({"mcpServers": {"fake": {"command": sys.executable,
                                               "args": ["-m", "tests.fakes.mcp_server", "stdio"], "env": env}}})


def test_dialog_allows_and_denies_an_mcp_call_and_a_crash_is_visible(fake, workdir, tmp_path):
    allowed, denied = workdir / "allowed.txt", workdir / "denied.txt"
    fake.script([
        reply(tool_use("mcp__fake__write_file", {"path": str(allowed), "text": "yes"}, id="toolu_m1")),
        reply(tool_use("mcp__fake__write_file", {"path": str(denied), "text": "no"}, id="toolu_m2")),
        reply(tool_use("mcp__fake__crash", {}, id="toolu_m3")),
        reply(tool_use("mcp__fake__echo", {"text": "again"}, id="toolu_m4")),
        reply(text("done")),
    ])
    d = start(fake, workdir, tmp_path, "--mcp-config", server_json(), "--allowedTools", "mcp__fake__crash",
              "mcp__fake__echo")
    try:
        d.user("use the server")
        init = d.expect(lambda m: m.get("subtype") == "init")
        assert init["mcp_servers"] == [{"name": "fake", "status": "connected"}]
        assert "mcp__fake__write_file" in init["tools"] and "Read" in init["tools"]
        ask = d.control_request("can_use_tool")
        assert ask["request"]["tool_name"] == "mcp__fake__write_file" and ask["request"]["tool_use_id"] == "toolu_m1"
        d.respond(ask["request_id"], {"behavior": "allow", "updatedInput": ask["request"]["input"]})
        ask = d.control_request("can_use_tool")
        assert ask["request"]["tool_use_id"] == "toolu_m2"
        d.respond(ask["request_id"], {"behavior": "deny", "message": "not that file"})
        result = d.result()
        assert result["subtype"] == "success", result
        assert allowed.read_text() == "yes" and not denied.exists()
        assert tool_results(d, "toolu_m1")[0]["content"] == f"wrote 3 characters to {allowed}"
        r2 = tool_results(d, "toolu_m2")[0]
        assert r2["content"] == "not that file" and r2["is_error"] is True
        r3 = tool_results(d, "toolu_m3")[0]
        assert r3["is_error"] and "stopped during the call" in json.dumps(r3["content"])
        assert tool_results(d, "toolu_m4")[0]["content"] == "echo: again"  # restarted for this call
        rid = d.control({"subtype": "mcp_status"})
        status = d.expect(lambda m: m.get("type") == "control_response" and m["response"]["request_id"] == rid)
        server = status["response"]["response"]["mcpServers"][0]
        assert server["name"] == "fake" and server["status"] == "connected" and server["restarts"] == 1
    finally:
        assert d.close() == 0
    fake.assert_done()


def test_untrusted_project_mcp_json_never_starts_and_trust_enables_it(fake, workdir, tmp_path):
    log = tmp_path / "mcp.log"
    (workdir / ".mcp.json").write_text(server_json(log))
    fake.script([reply(text("hi"))])
    out = run_cli(["-p", "hi", "--output-format", "stream-json", "--verbose"], workdir, cli_env(fake, tmp_path / "h"))
    assert out.returncode == 0, out.stderr
    init = next(m for m in jsonl(out.stdout) if m.get("subtype") == "init")
    assert init["mcp_servers"] == [] and not any(t.startswith("mcp__") for t in init["tools"])
    fake.script([reply(tool_use("mcp__fake__echo", {"text": "t"}, id="toolu_e")), reply(text("ok"))])
    out = run_cli(["-p", "hi", "--output-format", "stream-json", "--verbose", "--trust",
                   "--allowedTools", "mcp__fake"], workdir, cli_env(fake, tmp_path / "h"))
    assert out.returncode == 0, out.stderr
    lines = jsonl(out.stdout)
    assert next(m for m in lines if m.get("subtype") == "init")["mcp_servers"] == [
        {"name": "fake", "status": "connected"}]
    results = [b for m in lines if m.get("type") == "user" for b in m["message"]["content"]
               if isinstance(b, dict) and b.get("tool_use_id") == "toolu_e"]
    assert results[0]["content"] == "echo: t" and log.read_text() == "echo t\n"


def test_bad_mcp_config_is_a_start_up_error(fake, workdir, tmp_path):
    out = run_cli(["-p", "hi", "--mcp-config", "missing.json"], workdir, cli_env(fake, tmp_path / "h"))
    assert out.returncode != 0 and "no such file: missing.json" in out.stderr
