"""MCP names as an attacker would use them, through the real CLI in bypass (nothing asks): a deny rule naming the
server as configured (``mcp__my.fs``) stops the tools it really has (``mcp__my_fs__…``), and a server whose name
holds ``__`` (which would make ``mcp__a__b__c`` ambiguous) is refused with a clear error and never starts. Each
case has its control: the same call with no deny rule writes the canary."""

from __future__ import annotations

import json
import os
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


# ---------------------------------------------------------------------------------------------- every mode
MODES = ["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"]


def servers_with(name: str, *, args: list[str] | None = None, **env: str) -> str:
    return json.dumps({"mcpServers": {name: {
        "command": sys.executable, "args": args or ["-m", "tests.fakes.mcp_server", "stdio"],
        "env": {"PYTHONPATH": str(ROOT), **env}}}})


def run_mode(fake, workdir, tmp_path, mode: str, config: str, tool: str, canary: Path, *flags: str, home=None):
    """``-p`` in ``mode`` with one MCP call: (init line, the call's tool_result)."""
    fake.script([reply(tool_use(tool, {"path": str(canary), "text": "pwned"}, id="toolu_w")), reply(text("done"))])
    out = run_cli(["-p", "go", "--output-format", "stream-json", "--verbose", "--permission-mode", mode,
                   "--mcp-config", config, *flags], workdir, cli_env(fake, home or tmp_path / "h"), timeout=90)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    lines = jsonl(out.stdout)
    [result] = [b for m in lines if m.get("type") == "user" for b in m["message"]["content"]
                if isinstance(b, dict) and b.get("tool_use_id") == "toolu_w"]
    fake.assert_done()
    return next(m for m in lines if m.get("subtype") == "init"), result


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_deny_rule_beats_an_allow_of_its_server_in_every_mode(fake, workdir, tmp_path, mode):
    """``mcp__fs__write_file`` denied, the whole server allowed: the deny holds in every mode, bypass included."""
    canary = workdir / "canary.txt"
    _init, result = run_mode(fake, workdir, tmp_path, mode, servers_with("fs"), "mcp__fs__write_file", canary,
                             "--allowedTools", "mcp__fs", "--disallowedTools", "mcp__fs__write_file")
    assert result.get("is_error") is True and not canary.exists(), (mode, result)


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions", "dontAsk"])
def test_control_the_allowed_server_writes_in_the_modes_that_run_tools(fake, workdir, tmp_path, mode):
    canary = workdir / "canary.txt"
    _init, result = run_mode(fake, workdir, tmp_path, mode, servers_with("fs"), "mcp__fs__write_file", canary,
                             "--allowedTools", "mcp__fs")
    assert canary.read_text() == "pwned", (mode, result)


@pytest.mark.parametrize("mode", MODES)
def test_tool_names_that_make_rules_ambiguous_are_not_offered(fake, workdir, tmp_path, mode):
    """A server listing ``write__file`` (``mcp__fs__write__file``) and ``echo.text`` beside ``echo_text`` (one name
    once normalised): none of these is offered or runs, in any mode; the rest of the server's tools are."""
    canary = workdir / "canary.txt"
    config = servers_with("fs", MCP_FAKE_AMBIGUOUS_NAMES="1")
    init, result = run_mode(fake, workdir, tmp_path, mode, config, "mcp__fs__write__file", canary,
                            "--allowedTools", "mcp__fs")
    assert result.get("is_error") is True and not canary.exists(), (mode, result)
    offered = {t for t in init["tools"] if t.startswith("mcp__fs__")}
    assert "mcp__fs__write_file" in offered and "mcp__fs__echo" in offered
    assert not offered & {"mcp__fs__write__file", "mcp__fs__echo_text"}, offered
    assert init["mcp_servers"] == [{"name": "fs", "status": "connected"}]
    # the normalised twin is refused too: a call to it does not run either
    canary2 = workdir / "canary2.txt"
    _init, result2 = run_mode(fake, workdir, tmp_path, mode, config, "mcp__fs__echo_text", canary2,
                              "--allowedTools", "mcp__fs")
    assert result2.get("is_error") is True and not canary2.exists()


def test_which_listed_names_are_refused_and_why():
    from desktop_agent.mcp.client import usable_tools

    specs = [{"name": n} for n in ("echo", "write__file", "echo.text", "echo_text", "a..b", "", "ok-1", "x_y")]
    kept, refused = usable_tools(specs)
    assert [k["name"] for k in kept] == ["echo", "ok-1", "x_y"]
    why = dict(refused)
    assert set(why) == {"write__file", "echo.text", "echo_text", "a..b", ""}
    assert "__" in why["write__file"] and "__" in why["a..b"] and "normalised" in why["echo_text"]


LAUNCH = """import os, runpy, sys
open(sys.argv[1], "w").write("started")
sys.argv = ["mcp_server", "stdio"]
runpy.run_module("tests.fakes.mcp_server", run_name="__main__")
"""


@pytest.mark.parametrize("mode, how", [("default", "name"), ("acceptEdits", "command"), ("plan", "user_settings"),
                                       ("bypassPermissions", "untrusted_project"), ("dontAsk", "server_rule"),
                                       ("bypassPermissions", "name")])
def test_a_denied_server_is_never_started(fake, workdir, tmp_path, mode, how):
    """Settings ``deniedMcpServers`` (by name, by command; from ``--settings``, the user's settings file, or even
    an untrusted folder's own settings: a deny list only restricts) or a deny rule on the whole server: the
    server in ``--mcp-config`` is listed failed with the reason and its process never starts, in every mode."""
    launcher, marker, canary = tmp_path / "launch.py", tmp_path / "started", workdir / "canary.txt"
    launcher.write_text(LAUNCH)
    args = [str(launcher), str(marker)]
    config = servers_with("fs", args=args)
    home = tmp_path / "h"
    flags: list[str] = ["--allowedTools", "mcp__fs"]
    deny_name = {"deniedMcpServers": [{"serverName": "fs"}]}
    if how == "name":
        flags += ["--settings", json.dumps(deny_name)]
    elif how == "command":
        flags += ["--settings", json.dumps({"deniedMcpServers": [{"serverCommand": [sys.executable, *args]}]})]
    elif how == "user_settings":  # the CLI's CLAUDE_CONFIG_DIR is the test's (cli_env keeps it)
        user = Path(os.environ["CLAUDE_CONFIG_DIR"])
        user.mkdir(parents=True, exist_ok=True)
        (user / "settings.json").write_text(json.dumps(deny_name))
    elif how == "untrusted_project":
        (workdir / ".claude").mkdir()
        (workdir / ".claude" / "settings.json").write_text(json.dumps(deny_name))
    elif how == "server_rule":
        flags += ["--disallowedTools", "mcp__fs"]
    init, result = run_mode(fake, workdir, tmp_path, mode, config, "mcp__fs__write_file", canary, *flags,
                            home=home)
    assert not marker.exists(), "the denied server was started"
    assert result.get("is_error") is True and not canary.exists()
    assert init["mcp_servers"] == [{"name": "fs", "status": "failed"}]
    assert not any(t.startswith("mcp__fs") for t in init["tools"])


def test_the_reason_a_server_is_denied_is_given(tmp_path):
    """What the Servers view and a host's ``mcp_status`` show for a denied server: which setting denied it."""
    from desktop_agent.app import build

    proj = tmp_path / "p"
    proj.mkdir()
    cfg = servers_with("my.fs")
    for settings, expect in (({"deniedMcpServers": [{"serverName": "my.fs"}]}, "deniedMcpServers in --settings"),
                             ({"deniedMcpServers": [{"serverCommand": [sys.executable, "-m", "tests.fakes.mcp_server",
                                                                       "stdio"]}]}, "command of MCP server"),
                             ({"permissions": {"deny": ["mcp__my.fs"]}}, "denied by the rule mcp__my.fs")):
        pc = build.load_permission_context(str(proj), allowed=[], disallowed=[], settings_arg=json.dumps(settings),
                                           mode=None, add_dirs=[], trusted=True)
        manager = build.make_mcp(str(proj), pc, [cfg])
        [status] = manager.status()
        assert status["status"] == "failed" and expect in status["error"] and "not started" in status["error"], \
            (settings, status)
    pc = build.load_permission_context(str(proj), allowed=[], disallowed=[], mode=None, add_dirs=[], trusted=True,
                                       settings_arg=json.dumps({"deniedMcpServers": [{"serverName": "other"}]}))
    assert build.make_mcp(str(proj), pc, [cfg]).status()[0]["status"] == "pending"


def test_control_the_same_server_undenied_starts(fake, workdir, tmp_path):
    launcher, marker, canary = tmp_path / "launch.py", tmp_path / "started", workdir / "canary.txt"
    launcher.write_text(LAUNCH)
    config = servers_with("fs", args=[str(launcher), str(marker)])
    init, _result = run_mode(fake, workdir, tmp_path, "bypassPermissions", config, "mcp__fs__write_file", canary,
                             "--settings", json.dumps({"deniedMcpServers": [{"serverName": "other"}]}))
    assert marker.exists() and canary.read_text() == "pwned"
    assert init["mcp_servers"][0]["status"] == "connected"
