"""MCP end to end below the CLI: a real MCP server (tests/fakes/mcp_server.py, the SDK's server side) over
stdio and streamable HTTP, its tools through ``run_tool_use`` — schemas, permission (asks by default;
``mcp__server`` and ``mcp__server__tool`` rules), text and image results, isError, a crash and the restart,
a server that never starts, and the config sources (trust gates ``.mcp.json``)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.mcp.client import McpManager
from desktop_agent.mcp.config import McpServerConfig, load_server_configs
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.core.permission import PermissionReply
from tests.engine.helpers import FakePrompter, tool_use

ROOT = Path(__file__).resolve().parents[2]


def stdio_cfg(name: str = "fake", **env: str) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=["-m", "tests.fakes.mcp_server", "stdio"],
                           env={"PYTHONPATH": str(ROOT), **env}, cwd=str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def http_server():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.fakes.mcp_server", "http", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)


def ctx_for(tmp_path, manager, mode="default", allow=(), deny=(), prompter=None) -> ToolUseContext:
    pc = PermissionContext(str(tmp_path), mode=mode)
    if allow:
        pc.add_rules(list(allow), "allow", "userSettings")
    if deny:
        pc.add_rules(list(deny), "deny", "userSettings")
    return ToolUseContext(cwd=str(tmp_path), tools=manager.tools(), permission_context=pc, prompter=prompter)


async def _session(cfg, body):
    manager = McpManager([cfg])
    try:
        await manager.start()
        return await body(manager)
    finally:
        await manager.aclose()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_tools_listed_called_and_mapped(tmp_path, transport, request):
    cfg = stdio_cfg() if transport == "stdio" else McpServerConfig(
        name="fake", transport="http", url=request.getfixturevalue("http_server"))

    async def body(manager):
        st = manager.status()[0]
        assert st["status"] == "connected", st
        names = [t.name for t in manager.tools()]
        assert names == ["mcp__fake__echo", "mcp__fake__add", "mcp__fake__write_file", "mcp__fake__picture",
                         "mcp__fake__fail", "mcp__fake__crash"]
        add = next(t for t in manager.tools() if t.name == "mcp__fake__add")
        schema = add.to_api_schema()["input_schema"]
        assert schema["properties"]["a"]["type"] == "integer" and schema["required"] == ["a", "b"]
        ctx = ctx_for(tmp_path, manager, allow=["mcp__fake"])
        out = await run_tool_use(tool_use("mcp__fake__add", {"a": 2, "b": 40}, "t1"), ctx)
        assert out.block["content"] == "42" and not out.is_error
        out = await run_tool_use(tool_use("mcp__fake__picture", {}, "t2"), ctx)
        assert out.block["content"][0]["type"] == "image"
        assert out.block["content"][0]["source"]["media_type"] == "image/png"
        out = await run_tool_use(tool_use("mcp__fake__fail", {}, "t3"), ctx)
        assert out.is_error and "fail" in json.dumps(out.block["content"])
        out = await run_tool_use(tool_use("mcp__fake__add", {"a": "two", "b": 1}, "t4"), ctx)
        assert out.is_error and "InputValidationError" in out.block["content"] and "'two'" in out.block["content"]
        return True

    assert asyncio.run(asyncio.wait_for(_session(cfg, body), 60))


def test_permission_asks_by_default_and_rules_decide(tmp_path):
    target = tmp_path / "from-mcp.txt"

    async def body(manager):
        args = {"path": str(target), "text": "hi"}
        # headless, no prompter: an ask is a deny, nothing written
        out = await run_tool_use(tool_use("mcp__fake__write_file", args, "w1"), ctx_for(tmp_path, manager))
        assert out.is_error and "haven't granted it yet" in out.block["content"] and not target.exists()
        # the dialog says no
        prompter = FakePrompter(PermissionReply(behavior="deny"))
        out = await run_tool_use(tool_use("mcp__fake__write_file", args, "w2"),
                                 ctx_for(tmp_path, manager, prompter=prompter))
        assert out.is_error and not target.exists() and prompter.requests[0].tool_name == "mcp__fake__write_file"
        # a deny rule on the server beats bypass
        out = await run_tool_use(tool_use("mcp__fake__write_file", args, "w3"),
                                 ctx_for(tmp_path, manager, mode="bypassPermissions", deny=["mcp__fake"]))
        assert out.is_error and not target.exists()
        # an allow rule for the one tool
        out = await run_tool_use(tool_use("mcp__fake__write_file", args, "w4"),
                                 ctx_for(tmp_path, manager, allow=["mcp__fake__write_file"]))
        assert not out.is_error and target.read_text() == "hi"
        return True

    assert asyncio.run(asyncio.wait_for(_session(stdio_cfg(), body), 60))


def test_crash_is_visible_and_the_server_restarts(tmp_path):
    async def body(manager):
        ctx = ctx_for(tmp_path, manager, allow=["mcp__fake"])
        out = await run_tool_use(tool_use("mcp__fake__crash", {}, "c1"), ctx)
        assert out.is_error and "stopped during the call" in out.block["content"]
        st = manager.status()[0]
        assert st["status"] == "failed" and st["error"]
        out = await run_tool_use(tool_use("mcp__fake__echo", {"text": "back"}, "c2"), ctx)
        assert out.block["content"] == "echo: back", out.block
        st = manager.status()[0]
        assert st["status"] == "connected" and st["restarts"] == 1
        return True

    assert asyncio.run(asyncio.wait_for(_session(stdio_cfg(), body), 60))


def test_a_server_that_never_starts_is_failed_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_TIMEOUT", "8000")

    async def body(manager):
        st = manager.status()[0]
        assert st["status"] == "failed" and st["error"], st
        assert manager.tools() == []
        return True

    assert asyncio.run(asyncio.wait_for(_session(stdio_cfg(MCP_FAKE_CRASH_ON_START="1"), body), 60))
    bad = McpServerConfig(name="nope", command="/nonexistent/mcp-server")
    assert asyncio.run(asyncio.wait_for(_session(bad, body), 60))


def test_config_sources_and_trust(tmp_path, monkeypatch):
    from desktop_agent.util.dirs import claude_global_config_path

    home = Path.home()
    Path(claude_global_config_path()).parent.mkdir(parents=True, exist_ok=True)
    Path(claude_global_config_path()).write_text(json.dumps({
        "mcpServers": {"user one": {"command": "u"}},
        "projects": {str(tmp_path): {"mcpServers": {"local": {"command": "l"}}}}}))
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "proj": {"command": "${PROJ_CMD:-fallback}", "args": ["--x", "${HOME}"]},
        "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "old": {"type": "sse", "url": "http://x"}, "broken": {"args": []}}}))
    monkeypatch.setenv("TOKEN", "t0k")
    warnings: list[str] = []
    untrusted = load_server_configs(str(tmp_path), trusted=False, warnings=warnings)
    assert [c.name for c in untrusted] == ["user_one"]
    assert any(".mcp.json ignored" in w for w in warnings)
    cfgs = {c.name: c for c in load_server_configs(str(tmp_path), trusted=True,
                                                   cli_values=['{"mcpServers": {"cli": {"command": "c"}}}'])}
    assert set(cfgs) == {"user_one", "local", "proj", "web", "old", "broken", "cli"}
    assert cfgs["proj"].command == "fallback" and cfgs["proj"].args == ["--x", str(home)]
    assert cfgs["web"].transport == "http" and cfgs["web"].headers == {"Authorization": "Bearer t0k"}
    assert "not supported" in cfgs["old"].error and "command" in cfgs["broken"].error
    with pytest.raises(ValueError, match="no such file"):
        load_server_configs(str(tmp_path), trusted=True, cli_values=["missing.json"])


def test_user_servers_come_from_claude_config_dir_like_the_trust_record(tmp_path, monkeypatch):
    """With ``CLAUDE_CONFIG_DIR`` set, Claude Code's global config (user servers and the folder's own) is
    ``$CLAUDE_CONFIG_DIR/.claude.json`` — where the trust record is read — and ``~/.claude.json`` is not read."""
    from desktop_agent.util.dirs import claude_global_config_path

    home, conf, proj = Path.home(), tmp_path / "claude-conf", tmp_path / "proj"
    conf.mkdir()
    proj.mkdir()
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"from_home": {"command": "h"}}}))
    (conf / ".claude.json").write_text(json.dumps({
        "mcpServers": {"from_conf": {"command": "c"}},
        "projects": {str(proj): {"mcpServers": {"conf_local": {"command": "l"}}}}}))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(conf))
    assert claude_global_config_path() == str(conf / ".claude.json")
    cfgs = {c.name: c for c in load_server_configs(str(proj), trusted=True)}
    assert set(cfgs) == {"from_conf", "conf_local"}
    assert cfgs["from_conf"].source == str(conf / ".claude.json")
    # the legacy .config.json in that directory wins, as it does for the trust record
    (conf / ".config.json").write_text(json.dumps({"mcpServers": {"legacy": {"command": "x"}}}))
    assert [c.name for c in load_server_configs(str(proj), trusted=True)] == ["legacy"]
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    assert [c.name for c in load_server_configs(str(proj), trusted=True)] == ["from_home"]


def test_post_tool_use_hook_rewrites_mcp_output_before_mapping(tmp_path):
    """SPEC §3.11: an MCP tool's result is mapped after PostToolUse, so updatedMCPToolOutput is what the model sees."""
    from desktop_agent.permissions.hooks import HookRunner

    seen: list[dict] = []

    async def hook(data, tool_use_id):
        seen.append(data)
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedMCPToolOutput": {
            "content": [{"type": "text", "text": "redacted by hook"}], "isError": False}}}

    async def body(manager):
        ctx = ctx_for(tmp_path, manager, allow=["mcp__fake"])
        ctx.hooks = HookRunner()
        ctx.hooks.register_callback("PostToolUse", "mcp__fake__echo", hook)
        out = await run_tool_use(tool_use("mcp__fake__echo", {"text": "secret"}, "h1"), ctx)
        assert out.block["content"] == "redacted by hook" and not out.is_error
        assert seen and "secret" in json.dumps(seen[0]["tool_response"])
        return True

    assert asyncio.run(asyncio.wait_for(_session(stdio_cfg(), body), 60))
