"""The official TypeScript SDK (``@anthropic-ai/claude-agent-sdk``, pinned in ``tests/sdk_ts/package.json`` and
its lock) drives ``desktop-agent`` through ``pathToClaudeCodeExecutable`` against the fake Anthropic server
(App. C): allow and deny an Edit (the deny message reaches the model verbatim), a PreToolUse hook callback
denying Bash, ``canUseTool``'s ``updatedInput`` landing on disk, two prompts in one streaming session,
``resume``, ``maxTurns``, ``allowedTools``/``disallowedTools``, ``includePartialMessages``,
``setPermissionMode`` + ``interrupt``, and the info calls. Every case also checks the order rule on the wire.

All cases run in one node process (``tests/sdk_ts/cases.mjs``), each against its own fake server and folder.
The SDK is installed with ``npm ci`` (optional native binaries omitted: the SDK runs our CLI) into a cache outside
the checkout keyed by the lock's hash (``DESKTOP_AGENT_SDK_TS_CACHE`` overrides the cache root). Skipped only when
``node`` or ``npm`` is missing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.test_cli import cli_env

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "tests" / "sdk_ts"
# The real home, read at import (the autouse fixture points HOME at a temp dir for each test).
_CACHE_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
CACHE_ROOT = Path(os.environ.get("DESKTOP_AGENT_SDK_TS_CACHE") or _CACHE_HOME / "desktop-agent-tests" / "sdk_ts")
REAL_HOME = os.environ.get("HOME", str(Path.home()))

pytestmark = pytest.mark.skipif(not (shutil.which("node") and shutil.which("npm")), reason="node/npm not installed")


def install_sdk() -> Path:
    """``npm ci`` of tests/sdk_ts into the cache (once per lock); returns the SDK's entry module."""
    lock = (PKG / "package-lock.json").read_bytes()
    digest = hashlib.sha256(lock + (PKG / "package.json").read_bytes()).hexdigest()[:16]
    where = CACHE_ROOT / digest
    entry = where / "node_modules" / "@anthropic-ai" / "claude-agent-sdk" / "sdk.mjs"
    if not entry.exists():
        where.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(PKG / name, where / name)
        env = dict(os.environ, HOME=REAL_HOME)
        proc = subprocess.run(["npm", "ci", "--omit=optional", "--no-audit", "--no-fund", "--loglevel=error"],
                              cwd=where, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0 and entry.exists(), f"npm ci failed:\n{proc.stdout}\n{proc.stderr}"
    return entry


def results_of(fake: FakeAnthropic, n: int) -> dict[str, dict[str, Any]]:
    return {b["tool_use_id"]: b for m in fake.request_messages(n) if isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"}


def edit(app: Path, old: str, new: str, id: str):
    return reply(tool_use("Edit", {"file_path": str(app), "old_string": f"value = {old}",
                                   "new_string": f"value = {new}"}, id=id))


def scripts(cwd: Path) -> dict[str, list]:
    app = cwd / "app.ts"
    read = reply(tool_use("Read", {"file_path": str(app)}, id="toolu_read_1"))
    return {
        "allow_edit": [read, edit(app, "1", "2", "toolu_edit_1"), reply(text("edited"))],
        "deny_edit": [read, edit(app, "1", "2", "toolu_edit_1"), reply(text("denied"))],
        "hook_deny_bash": [reply(tool_use("Bash", {"command": "ls"}, id="toolu_bash_1")), reply(text("no bash"))],
        "updated_input": [reply(tool_use("Write", {"file_path": str(cwd / "notes.txt"), "content": "model text\n"},
                                         id="toolu_write_1")), reply(text("written"))],
        "two_prompts": [reply(text("one")), reply(text("two"))],
        "resume": [reply(text("Noted.")), reply(text("It was 42."))],
        "max_turns": [read],
        "allowed_disallowed": [
            reply(tool_use("Edit", {"file_path": str(app), "old_string": "1", "new_string": "2"}, id="toolu_edit_1"),
                  tool_use("Bash", {"command": "echo hi"}, id="toolu_bash_1")),
            reply(text("done"))],
        "include_partial": [reply(text("Hello there"))],
        "mode_and_interrupt": [
            reply(tool_use("Write", {"file_path": str(cwd / "a.txt"), "content": "a\n"}, id="toolu_write_a")),
            reply(text("wrote a")),
            reply(tool_use("Write", {"file_path": str(cwd / "b.txt"), "content": "b\n"}, id="toolu_write_b"))],
        "info": [],
        "mcp_servers": [reply(tool_use("mcp__fake__echo", {"text": "hi"}, id="toolu_mcp_1")), reply(text("echoed"))],
        "mcp_methods": [],
        "context_usage": [reply(text("hello"))],
        "flag_settings": [reply(tool_use("Write", {"file_path": str(cwd / "notes.txt"), "content": "x\n"},
                                         id="toolu_write_1")), reply(text("blocked"))],
        "update_settings": [],
        "seed_read_state": [edit(app, "1", "2", "toolu_edit_1"), reply(text("edited"))],
        "unknown_request": [],
    }


def mcp_servers() -> dict[str, Any]:
    """The fake MCP server as the SDK's ``mcpServers`` option (sent in ``initialize``, env off the command line)."""
    return {"fake": {"type": "stdio", "command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"],
                     "env": {"PYTHONPATH": str(ROOT)}}}


def test_typescript_sdk_drives_the_cli(tmp_path):
    sdk = install_sdk()
    home = tmp_path / "h"
    fakes: dict[str, FakeAnthropic] = {}
    cases: dict[str, Any] = {}
    try:
        for name in scripts(tmp_path):  # names only; each case gets its own folder below
            cwd = tmp_path / name
            cwd.mkdir()
            (cwd / "app.ts").write_text("export const value = 1")
            fake = FakeAnthropic().start()
            fake.script(scripts(cwd)[name])
            fakes[name] = fake
            cases[name] = {"url": fake.base_url, "cwd": str(cwd), "wire": str(tmp_path / f"{name}.wire.jsonl"),
                           "mcp": mcp_servers()}
        env = cli_env(None, home, ANTHROPIC_API_KEY="test-key", DA_PYTHON=sys.executable)
        env.pop("ANTHROPIC_BASE_URL", None)
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"sdk": str(sdk), "cli": str(PKG / "desktop-agent.sh"), "env": env,
                                      "cases": cases}))
        proc = subprocess.run(["node", str(PKG / "cases.mjs"), str(config)], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env=dict(os.environ, HOME=str(home)))
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        failed = {k: v for k, v in report.items() if not v["ok"]}
        assert not failed, json.dumps(failed, indent=1)
        assert set(report) == set(cases)
        for name, fake in fakes.items():
            fake.assert_done()
    finally:
        for fake in fakes.values():
            fake.stop()

    # What reached the model: the deny message verbatim, the hook's reason, the whole-tool deny text.
    denied = results_of(fakes["deny_edit"], 2)["toolu_edit_1"]
    assert denied["content"] == "Not now: the user wants to review first" and denied["is_error"] is True
    blocked = results_of(fakes["hook_deny_bash"], 1)["toolu_bash_1"]
    assert blocked["content"] == "Bash is blocked by the SDK hook" and blocked["is_error"] is True
    both = results_of(fakes["allowed_disallowed"], 1)
    assert both["toolu_edit_1"]["content"] == (
        "<tool_use_error>Error: No such tool available: Edit. Edit exists but is not enabled in this context. "
        "Use one of the available tools instead.</tool_use_error>")
    assert both["toolu_bash_1"]["content"] == "hi" and not both["toolu_bash_1"].get("is_error")
    assert "Edit" not in [t["name"] for t in fakes["allowed_disallowed"].requests[0].body["tools"]]
    # --await-initialize: the servers came in initialize, never on the command line, and the call reached the server.
    assert results_of(fakes["mcp_servers"], 1)["toolu_mcp_1"]["content"] == "echo: hi"
    for name in ("mcp_servers", "mcp_methods"):
        argv = (tmp_path / f"{name}.wire.jsonl.args").read_text().splitlines()
        assert "--await-initialize" in argv and not any(a.startswith("--mcp-config") for a in argv), argv
        assert "PYTHONPATH" not in " ".join(argv)
    # apply_flag_settings' deny rule reached the model as a denial; seed_read_state let Edit run without a Read.
    assert results_of(fakes["flag_settings"], 1)["toolu_write_1"]["is_error"] is True
    assert not results_of(fakes["seed_read_state"], 1)["toolu_edit_1"].get("is_error")
    resumed = json.dumps(fakes["resume"].request_messages(1))
    assert "Remember 42" in resumed and "Noted." in resumed
    # The order rule held where requests were made (hook callbacks and can_use_tool).
    for name in ("allow_edit", "deny_edit", "hook_deny_bash", "updated_input", "mode_and_interrupt"):
        assert report[name]["order"]["requests"] >= 1, (name, report[name])
