"""The Python ``claude-agent-sdk`` drives ``desktop-agent`` through ``cli_path=`` against the fake server
(App. C): ``can_use_tool`` deny (the message reaches the model verbatim) and allow, an SDK ``PreToolUse``
hook callback denying Bash, ``set_permission_mode``, ``interrupt`` while a permission is pending, and the info calls
``get_mcp_status`` (the fake MCP server, given as ``mcp_servers``) and ``get_context_usage``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use

sdk = pytest.importorskip("claude_agent_sdk")

ROOT = Path(__file__).resolve().parents[1]


def edit(app: Path, old: str, new: str, id: str):
    return reply(tool_use("Edit", {"file_path": str(app), "old_string": f"value = {old}",
                                   "new_string": f"value = {new}"}, id=id))


def test_sdk_session(workdir, tmp_path):
    from claude_agent_sdk import (
        ClaudeAgentOptions, ClaudeSDKClient, HookMatcher, PermissionResultAllow, PermissionResultDeny, ResultMessage,
    )

    app = workdir / "app.ts"
    home = tmp_path / "h"
    cli = tmp_path / "desktop-agent"
    cli.write_text(f"#!/bin/sh\nexec {sys.executable} -m desktop_agent \"$@\"\n")
    cli.chmod(0o755)

    asked: list[tuple[str, dict]] = []
    gate = asyncio.Event()
    policy = {"mode": "deny"}

    async def can_use_tool(tool_name, tool_input, context):
        asked.append((tool_name, dict(tool_input)))
        if policy["mode"] == "deny":
            return PermissionResultDeny(message="Not now: the user wants to review first")
        if policy["mode"] == "block":
            gate.set()
            await asyncio.sleep(60)  # answered never: the interrupt cancels it
        return PermissionResultAllow()

    hook_calls: list[dict] = []

    async def deny_bash(input_data, tool_use_id, context):
        hook_calls.append(dict(input_data))
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "Bash is blocked by the SDK hook"}}

    async def collect(client) -> list:
        return [m async for m in client.receive_response()]

    with FakeAnthropic() as fake:
        fake.script([
            reply(tool_use("Read", {"file_path": str(app)}, id="toolu_read_1")),
            edit(app, "1", "2", "toolu_edit_2"), reply(text("denied")),                 # 1: deny
            edit(app, "1", "2", "toolu_edit_3"), reply(text("edited")),                 # 2: allow
            reply(tool_use("Bash", {"command": "ls"}, id="toolu_bash_1")), reply(text("no bash")),  # 3: hook
            edit(app, "2", "3", "toolu_edit_4"), reply(text("accepted")),               # 4: acceptEdits
            edit(app, "3", "4", "toolu_edit_5"),                                        # 5: interrupted
        ])
        env = {"HOME": str(home), "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "cfg"),
               "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url, "PYTHONPATH": str(ROOT),
               "CLAUDE_CODE_MAX_RETRIES": "0"}
        options = ClaudeAgentOptions(
            cli_path=str(cli), cwd=str(workdir), env=env, permission_mode="default", can_use_tool=can_use_tool,
            hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[deny_bash])]},
            mcp_servers={"fake": {"type": "stdio", "command": sys.executable,
                                  "args": ["-m", "tests.fakes.mcp_server", "stdio"], "env": {"PYTHONPATH": str(ROOT)}}},
        )

        async def scenario() -> dict:
            out: dict = {}
            async with ClaudeSDKClient(options=options) as client:
                await client.query("Change `value` to 2")
                out["deny"] = await collect(client)
                out["mcp_status"] = await client.get_mcp_status()
                out["context"] = await client.get_context_usage()
                policy["mode"] = "allow"
                await client.query("Please try again")
                out["allow"] = await collect(client)
                await client.query("List the files")
                out["hook"] = await collect(client)
                await client.set_permission_mode("acceptEdits")
                await client.query("Now 3")
                out["accept"] = await collect(client)
                await client.set_permission_mode("default")
                policy["mode"] = "block"
                await client.query("Now 4")
                await asyncio.wait_for(gate.wait(), 30)
                await client.interrupt()
                out["interrupt"] = await collect(client)
            return out

        out = asyncio.run(asyncio.wait_for(scenario(), 120))
        fake.assert_done()
        requests = fake.requests

    def result(msgs) -> ResultMessage:
        assert isinstance(msgs[-1], ResultMessage), msgs[-1]
        return msgs[-1]

    # 1. deny: the callback's message is the tool_result, verbatim, is_error
    assert result(out["deny"]).subtype == "success"
    denied = [b for m in requests[2].messages for b in m["content"] if b.get("tool_use_id") == "toolu_edit_2"]
    assert denied[0]["content"] == "Not now: the user wants to review first" and denied[0]["is_error"] is True
    # the info calls: the MCP server as McpServerStatus, the context usage from the last request's usage
    (server,) = out["mcp_status"]["mcpServers"]
    assert server["name"] == "fake" and server["status"] == "connected" and server["serverInfo"]["name"] == "fake-tools"
    assert {"echo", "write_file"} <= {t["name"] for t in server["tools"]}
    usage = out["context"]
    assert usage["model"] == requests[2].body["model"] and usage["apiUsage"]["input_tokens"] > 0
    assert usage["percentage"] == round(usage["totalTokens"] * 100 / usage["rawMaxTokens"])
    assert any(t["serverName"] == "fake" and t["name"] == "mcp__fake__echo" for t in usage["mcpTools"])
    assert {c["id"] for c in usage["categories"]} >= {"system_prompt", "system_tools", "mcp_tools", "messages"}
    # 2. allow: the edit happened with the model's input
    assert result(out["allow"]).subtype == "success"
    assert [name for name, _ in asked[:2]] == ["Edit", "Edit"]
    # 3. the SDK hook callback saw the Bash call and its deny reason reached the model
    assert hook_calls and hook_calls[0]["tool_name"] == "Bash" and hook_calls[0]["tool_input"] == {"command": "ls"}
    blocked = [b for m in requests[6].messages for b in m["content"] if b.get("tool_use_id") == "toolu_bash_1"]
    assert blocked[0]["content"] == "Bash is blocked by the SDK hook" and blocked[0]["is_error"] is True
    assert all(name != "Bash" for name, _ in asked)
    # 4. acceptEdits: no question asked for the Edit
    assert result(out["accept"]).subtype == "success"
    assert len(asked) == 3  # deny, allow, and the interrupted one
    # 5. interrupt while the permission was pending: error result, file untouched by the 5th edit
    assert result(out["interrupt"]).subtype == "error_during_execution"
    assert app.read_text() == "export const value = 3"
    assert len(requests) == 10  # no request after the interrupt
