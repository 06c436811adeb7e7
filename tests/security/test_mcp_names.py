"""MCP names as an attacker would use them, through the real CLI in bypass (nothing asks): a deny rule naming the
server as configured (``mcp__my.fs``) stops the tools it really has (``mcp__my_fs__…``), and a server whose name
holds ``__`` (which would make ``mcp__a__b__c`` ambiguous) is refused with a clear error and never starts. Each
case has its control: the same call with no deny rule writes the canary."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.test_cli import cli_env, fake, jsonl, run_cli  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def servers(name: str) -> str:
    return json.dumps({"mcpServers": {name: {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"],
                                             "env": {"PYTHONPATH": str(ROOT)}}}})


def run(fake, workdir, tmp_path, server: str, tool: str, canary: Path, *flags: str):
    fake.script([reply(tool_use(tool, {"path": str(canary), "text": "pwned"}, id="toolu_w")), reply(text("done"))])
    out = run_cli(["-p", "go", "--output-format", "stream-json", "--verbose", "--permission-mode",
                   "bypassPermissions", "--mcp-config", servers(server), *flags], workdir,
                  cli_env(fake, tmp_path / "h"), timeout=90)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = jsonl(out.stdout)
    [result] = [b for m in lines if m.get("type") == "user" for b in m["message"]["content"]
                if isinstance(b, dict) and b.get("tool_use_id") == "toolu_w"]
    fake.assert_done()
    return next(m for m in lines if m.get("subtype") == "init"), result


@pytest.mark.parametrize("rule", ["mcp__my.fs", "mcp__my.fs__write_file", "mcp__my_fs", "mcp__my_fs__*"])
def test_a_deny_rule_naming_the_configured_server_stops_its_tools(fake, workdir, tmp_path, rule):
    canary = workdir / "canary.txt"
    _init, result = run(fake, workdir, tmp_path, "my.fs", "mcp__my_fs__write_file", canary, "--disallowedTools", rule)
    assert result.get("is_error") is True and not canary.exists(), result


def test_control_without_the_rule_the_call_writes(fake, workdir, tmp_path):
    canary = workdir / "canary.txt"
    _init, result = run(fake, workdir, tmp_path, "my.fs", "mcp__my_fs__write_file", canary)
    assert canary.read_text() == "pwned", result


@pytest.mark.parametrize("server", ["my__fs", "my._fs"])
def test_a_server_name_with_a_double_underscore_is_refused(fake, workdir, tmp_path, server):
    canary = workdir / "canary.txt"
    init, result = run(fake, workdir, tmp_path, server, "mcp__my__fs__write_file", canary,
                       "--disallowedTools", "mcp__my")
    assert not canary.exists() and result.get("is_error") is True
    assert not any(t.startswith("mcp__my") for t in init["tools"])
    [status] = init["mcp_servers"]
    assert status["status"] == "failed"
