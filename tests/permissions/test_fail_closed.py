"""Fail closed in the code (issue 12 item 5, DESIGN §1): no permission state is ``default`` mode with no allow
rules (never bypass); a hooks configuration that cannot be loaded stops start-up with a message; an exception
while deciding a permission is a deny that says so, with exactly one tool_result for the call."""

from __future__ import annotations

import asyncio
import os

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions.decide import current_mode
from desktop_agent.permissions.gateway import decide_after_hook_for, decide_for
from desktop_agent.tools.registry import default_tools

FAILED = "Permission check failed: {}. The tool was not run."


def _ctx(ws, **kw) -> ToolUseContext:
    return ToolUseContext(cwd=str(ws), tools=default_tools(), **kw)


@pytest.mark.needs_sandbox
def test_no_permission_state_is_default_mode_never_bypass(tmp_path):
    ctx = _ctx(tmp_path)  # no permission_context, no prompter (headless)
    assert ctx.permission_context is None and current_mode(ctx) == "default"
    target = tmp_path / "p.txt"
    write = run_tool_use_sync({"type": "tool_use", "id": "toolu_w", "name": "Write",
                               "input": {"file_path": str(target), "content": "x"}}, ctx)
    assert write.is_error and write.block["tool_use_id"] == "toolu_w"
    assert write.block["content"] == (f"Claude requested permissions to write to {target}, "
                                      "but you haven't granted it yet.")
    assert not target.exists()
    canary = tmp_path / "ran"
    bash = run_tool_use_sync({"type": "tool_use", "id": "toolu_b", "name": "Bash",
                              "input": {"command": f"touch {canary}"}}, ctx)
    assert bash.is_error and bash.block["content"] == "This command requires approval"
    assert not canary.exists()


def test_no_permission_state_asks_when_there_is_someone_to_ask(tmp_path):
    from tests.engine.helpers import FakePrompter
    from desktop_agent.core.permission import PermissionReply

    prompter = FakePrompter(PermissionReply(behavior="deny", message="no"))
    ctx = _ctx(tmp_path, prompter=prompter)
    out = run_tool_use_sync({"type": "tool_use", "id": "toolu_w", "name": "Write",
                             "input": {"file_path": str(tmp_path / "p.txt"), "content": "x"}}, ctx)
    assert [r.tool_name for r in prompter.requests] == ["Write"] and out.block["content"] == "no"


def run_tool_use_sync(block, ctx):
    return asyncio.run(run_tool_use(block, ctx))


@pytest.mark.parametrize("broken_part", ["path check", "permission_target"])
def test_exception_in_the_permission_check_is_a_deny_in_every_mode(tmp_path, monkeypatch, broken_part):
    """The path matcher inside ``decide`` raises, or the tool's declaration does: a deny in every mode."""
    from desktop_agent.permissions import paths
    from desktop_agent.permissions.context import PermissionContext
    from desktop_agent.tools.read.tool import ReadTool

    def broken(*args, **kwargs):
        raise RuntimeError("matcher blew up")

    if broken_part == "path check":
        monkeypatch.setattr(paths, "check_read_permission_for_tool", broken)
    else:
        monkeypatch.setattr(ReadTool, "permission_target", broken)
    (tmp_path / "f.txt").write_text("secret\n")
    for mode in ("default", "acceptEdits", "bypassPermissions", "dontAsk"):
        ctx = _ctx(tmp_path, permission_context=PermissionContext(str(tmp_path), mode=mode))
        tool = next(t for t in ctx.tools if t.name == "Read")
        decision = decide_for(tool, tool.input_model(file_path="f.txt"), ctx)
        assert decision.behavior == "deny" and decision.message == FAILED.format("matcher blew up"), mode
        out = run_tool_use_sync({"type": "tool_use", "id": "toolu_r", "name": "Read",
                                 "input": {"file_path": str(tmp_path / "f.txt")}}, ctx)
        assert out.is_error and out.block["content"] == FAILED.format("matcher blew up"), mode
        assert "secret" not in str(out.block["content"])


def test_exception_while_deciding_after_a_hook_allow_is_a_deny(tmp_path, monkeypatch):
    """A PreToolUse hook said allow; the rule check that still runs fails → deny, not allow."""
    from desktop_agent.permissions.context import PermissionContext
    from desktop_agent.permissions import decide

    def broken(*args, **kwargs):
        raise ValueError("parser crashed")

    monkeypatch.setattr(decide, "bash_decision", broken)
    ctx = _ctx(tmp_path, permission_context=PermissionContext(str(tmp_path), mode="bypassPermissions"))
    tool = next(t for t in ctx.tools if t.name == "Bash")
    decision = decide_after_hook_for(tool, tool.input_model(command="true"), ctx, "allow", None)
    assert decision.behavior == "deny" and decision.message == FAILED.format("parser crashed")


def test_exception_in_permission_target_one_tool_result_through_the_session(tmp_path, monkeypatch):
    """The whole turn, bypass mode: the broken check denies with the sentence, the call gets exactly one
    tool_result in the next request, and the session goes on."""
    from desktop_agent.app.session import AgentSession
    from desktop_agent.model.scripted import ScriptedModelClient, reply, text, tool_use
    from desktop_agent.tools.write import WriteTool

    def broken(self, input, ctx):
        raise KeyError("rules")

    monkeypatch.setattr(WriteTool, "permission_target", broken)
    target = tmp_path / "w.txt"
    client = ScriptedModelClient([
        reply(tool_use("Write", {"file_path": str(target), "content": "x"}, id="toolu_w1")),
        reply(text("ok")),
    ])
    s = AgentSession.create(tmp_path, client=client, permission_mode="bypassPermissions", trusted=False)
    try:
        asyncio.run(s.run("write it"))
    finally:
        s.close()
    assert not target.exists()
    last = client.requests[-1].messages[-1]
    results = [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert len(results) == 1 and results[0]["tool_use_id"] == "toolu_w1" and results[0]["is_error"] is True
    content = results[0]["content"]
    content = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    assert content == FAILED.format("'rules'")


def test_broken_hooks_module_is_a_start_up_error(tmp_path, monkeypatch, capsys):
    """HookRunner cannot be built from the settings → ConfigError at create; the CLI prints it and exits 1."""
    from desktop_agent.app.session import AgentSession, ConfigError
    from desktop_agent.cli.argv import parse_args
    from desktop_agent.cli.headless import run_headless
    from desktop_agent.model.scripted import ScriptedModelClient
    from desktop_agent.permissions import hooks

    def boom(cls, pc, **kw):
        raise RuntimeError("hooks config unreadable")

    monkeypatch.setattr(hooks.HookRunner, "from_permission_context", classmethod(boom))
    with pytest.raises(ConfigError, match="could not load the hooks from the settings: RuntimeError: hooks config"):
        AgentSession.create(tmp_path, client=ScriptedModelClient([]))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # never reached
    code = run_headless(parse_args(["-p", "hello"]))
    err = capsys.readouterr().err
    assert code == 1 and "could not load the hooks from the settings" in err and "hooks config unreadable" in err
    assert not os.path.exists(os.path.join(os.environ["XDG_DATA_HOME"], "desktop-agent", "projects"))


def test_no_import_fallbacks_left_in_the_composition_root():
    import inspect

    from desktop_agent.app import build, compaction, lifecycle, session, workspace

    for module in (build, compaction, lifecycle, session, workspace):
        source = inspect.getsource(module)
        assert "except ImportError" not in source and "_SimplePermissionContext" not in source
