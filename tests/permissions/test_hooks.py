"""Command hooks with real shell scripts in temp dirs (App. B §B.5, SPEC §4.7, §9 items 73–76)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time

import pytest

from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions.hooks import HookRunner, matcher_matches
from desktop_agent.core.permission import PermissionReply
from tests.permissions import util
from tests.permissions.util import make_ctx, make_workspace


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def env(tmp_path):
    util.CALLS.clear()
    e = make_workspace(str(tmp_path))
    e["hooks"] = str(tmp_path / "hooks")
    os.makedirs(e["hooks"])
    return e


def script(env, name, body):
    path = os.path.join(env["hooks"], name)
    with open(path, "w") as fh:
        fh.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


def runner(event, matcher, *commands, timeout=None):
    hooks = [{"type": "command", "command": c, **({"timeout": timeout} if timeout else {})} for c in commands]
    return HookRunner({event: [{"matcher": matcher, "hooks": hooks}]}, session_id="s1")


class Prompter:
    waits = True  # core.permission.PermissionPrompter: a person answers

    def __init__(self, reply=None, delay=0.0):
        self.reply = reply or PermissionReply(behavior="allow")
        self.delay = delay
        self.requests = []
        self.cancelled = 0

    async def ask(self, request):
        self.requests.append(request)
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return self.reply


def bash(cmd, id="toolu_b"):
    return {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": cmd}}


def test_matchers():
    assert matcher_matches(None, "Bash") and matcher_matches("", "Bash") and matcher_matches("*", "Edit")
    assert matcher_matches("Edit|Write", "Write") and not matcher_matches("Edit|Write", "Bash")
    assert not matcher_matches("Edit", "NotebookEdit")  # exact names, not substrings
    assert matcher_matches("Notebook.*", "NotebookEdit") and matcher_matches("mcp__.*__write", "mcp__fs__write")
    assert matcher_matches("Edit, Write", "Write")


def test_stdin_payload_and_env(env):
    out_file = os.path.join(env["hooks"], "payload.json")
    cmd = script(env, "dump.sh", f'cat > {out_file}; echo "$CLAUDE_PROJECT_DIR" > {out_file}.dir')
    r = runner("PreToolUse", "Bash", cmd)
    ctx = make_ctx(env["ws"], hooks=r, mode="bypassPermissions")
    assert not run(run_tool_use(bash("ls"), ctx)).is_error
    data = json.load(open(out_file))
    assert data["hook_event_name"] == "PreToolUse" and data["tool_name"] == "Bash"
    assert data["tool_input"] == {"command": "ls"} and data["tool_use_id"] == "toolu_b"
    assert data["cwd"] == env["ws"] and data["permission_mode"] == "bypassPermissions" and data["session_id"] == "s1"
    assert open(out_file + ".dir").read().strip() == env["ws"]


def test_exit_2_blocks_with_stderr_text(env):
    cmd = script(env, "block.sh", 'cat >/dev/null; echo "rm is not allowed" >&2; exit 2')
    ctx = make_ctx(env["ws"], hooks=runner("PreToolUse", "Bash", cmd), mode="bypassPermissions")
    out = run(run_tool_use(bash("rm x"), ctx))
    assert out.is_error and out.block["content"] == f"PreToolUse:Bash hook error: [{cmd}]: rm is not allowed\n"
    assert util.CALLS == []


def test_exit_1_is_non_blocking(env):
    cmd = script(env, "fail.sh", 'cat >/dev/null; echo oops >&2; exit 1')
    r = runner("PreToolUse", "Bash", cmd)
    ctx = make_ctx(env["ws"], hooks=r, mode="bypassPermissions")
    assert not run(run_tool_use(bash("ls"), ctx)).is_error
    assert r.notices and "exit code 1" in r.notices[0]


@pytest.mark.spec("73")
def test_73_json_deny_reason_is_the_result(env):
    cmd = script(env, "deny.sh", 'cat >/dev/null; echo \'{"hookSpecificOutput":{"hookEventName":"PreToolUse",'
                                 '"permissionDecision":"deny","permissionDecisionReason":"Use the Makefile"}}\'')
    prompter = Prompter()
    ctx = make_ctx(env["ws"], hooks=runner("PreToolUse", "Bash", cmd), prompter=prompter)
    out = run(run_tool_use(bash("npm test"), ctx))
    assert out.block["content"] == "Use the Makefile" and out.is_error
    assert prompter.requests == [] and util.CALLS == []


@pytest.mark.needs_sandbox
@pytest.mark.spec("74")
def test_74_json_allow_with_deny_rule_still_denies(env):
    cmd = script(env, "allow.sh", 'cat >/dev/null; echo \'{"hookSpecificOutput":{"permissionDecision":"allow"}}\'')
    prompter = Prompter()
    ctx = make_ctx(env["ws"], hooks=runner("PreToolUse", "Bash", cmd), prompter=prompter,
                   rules={"deny": ["Bash(rm *)"]})
    out = run(run_tool_use(bash("rm x"), ctx))
    assert out.is_error and out.block["content"] == "Permission to use Bash with command rm x has been denied."
    out = run(run_tool_use(bash("npm test", "t2"), ctx))
    assert not out.is_error and prompter.requests == []  # allowed by the hook without a dialog


@pytest.mark.spec("75")
def test_75_json_ask_prompts_even_when_allowed(env):
    cmd = script(env, "ask.sh", 'cat >/dev/null; echo \'{"hookSpecificOutput":{"permissionDecision":"ask",'
                                '"permissionDecisionReason":"confirm please"}}\'')
    prompter = Prompter()
    ctx = make_ctx(env["ws"], hooks=runner("PreToolUse", "Bash", cmd), prompter=prompter)
    assert not run(run_tool_use(bash("ls"), ctx)).is_error
    assert len(prompter.requests) == 1 and prompter.requests[0].message == "confirm please"


def test_precedence_deny_beats_ask_beats_allow_and_parallel(env):
    allow = script(env, "a.sh", 'cat >/dev/null; sleep 0.6; echo \'{"hookSpecificOutput":{"permissionDecision":"allow"}}\'')
    ask = script(env, "b.sh", 'cat >/dev/null; sleep 0.6; echo \'{"hookSpecificOutput":{"permissionDecision":"ask"}}\'')
    deny = script(env, "c.sh", 'cat >/dev/null; sleep 0.6; echo \'{"hookSpecificOutput":{"permissionDecision":"deny",'
                               '"permissionDecisionReason":"no"}}\'')
    r = runner("PreToolUse", "*", allow, ask, deny)
    ctx = make_ctx(env["ws"])
    t0 = time.monotonic()
    outcome = run(r.pre_tool_use("Bash", {"command": "ls"}, "t", ctx))
    assert time.monotonic() - t0 < 1.6  # three 0.6 s hooks ran in parallel (serial: 1.8 s)
    assert outcome.decision == "deny" and outcome.reason == "no"
    outcome = run(runner("PreToolUse", "*", allow, ask).pre_tool_use("Bash", {"command": "ls"}, "t", ctx))
    assert outcome.decision == "ask"


def test_updated_input_replaces_input(env):
    cmd = script(env, "rewrite.sh", 'cat >/dev/null; echo \'{"hookSpecificOutput":{"permissionDecision":"allow",'
                                    '"updatedInput":{"command":"echo rewritten"}}}\'')
    ctx = make_ctx(env["ws"], hooks=runner("PreToolUse", "Bash", cmd))
    assert not run(run_tool_use(bash("rm -rf build"), ctx)).is_error
    assert util.CALLS == ["Bash:echo rewritten"]


def test_timeout_is_non_blocking(env):
    cmd = script(env, "slow.sh", 'sleep 5')
    r = runner("PreToolUse", "Bash", cmd, timeout=0.3)
    ctx = make_ctx(env["ws"], hooks=r, mode="bypassPermissions")
    t0 = time.monotonic()
    assert not run(run_tool_use(bash("ls"), ctx)).is_error
    assert time.monotonic() - t0 < 3
    assert any("did not complete" in n for n in r.notices)


def test_matcher_and_if_filter(env):
    marker = os.path.join(env["hooks"], "ran")
    cmd = script(env, "mark.sh", f'cat >/dev/null; echo x >> {marker}')
    r = HookRunner({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": cmd,
                                                                   "if": "Bash(git *)"}]}]})
    ctx = make_ctx(env["ws"], hooks=r, mode="bypassPermissions")
    run(run_tool_use(bash("ls"), ctx))
    assert not os.path.exists(marker)
    run(run_tool_use(bash("git status"), ctx))
    assert open(marker).read().count("x") == 1


def test_post_tool_use_block_and_updated_output(env):
    cmd = script(env, "post.sh", 'cat >/dev/null; echo \'{"decision":"block","reason":"lint failed",'
                                 '"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedToolOutput":"replaced"}}\'')
    ctx = make_ctx(env["ws"], hooks=runner("PostToolUse", "Bash", cmd), mode="bypassPermissions")
    out = run(run_tool_use(bash("ls"), ctx))
    assert out.block["content"].startswith("replaced")
    assert "PostToolUse:Bash hook blocking error: lint failed" in out.block["content"]


def test_permission_request_hook_script_allows(env):
    cmd = script(env, "pr.sh", 'cat >/dev/null; echo \'{"hookSpecificOutput":{"hookEventName":"PermissionRequest",'
                               '"decision":{"behavior":"allow"}}}\'')
    prompter = Prompter(delay=5)
    ctx = make_ctx(env["ws"], hooks=runner("PermissionRequest", "Bash", cmd), prompter=prompter)
    out = run(run_tool_use(bash("npm test"), ctx))
    assert not out.is_error and prompter.cancelled == 1


def test_permission_request_hook_deny_and_exit2_ignored(env):
    deny = script(env, "prd.sh", 'cat >/dev/null; echo \'{"hookSpecificOutput":{"decision":{"behavior":"deny",'
                                 '"message":"not on Fridays"}}}\'')
    ctx = make_ctx(env["ws"], hooks=runner("PermissionRequest", "Bash", deny), prompter=Prompter(delay=5))
    assert run(run_tool_use(bash("npm test"), ctx)).block["content"] == "not on Fridays"
    two = script(env, "pr2.sh", 'cat >/dev/null; echo nope >&2; exit 2')
    prompter = Prompter(PermissionReply(behavior="allow"), delay=0.2)
    ctx = make_ctx(env["ws"], hooks=runner("PermissionRequest", "Bash", two), prompter=prompter)
    assert not run(run_tool_use(bash("npm test"), ctx)).is_error and prompter.cancelled == 0


@pytest.mark.needs_sandbox
def test_permission_request_payload_has_suggestions(env):
    out_file = os.path.join(env["hooks"], "pr.json")
    cmd = script(env, "prs.sh", f'cat > {out_file}')
    ctx = make_ctx(env["ws"], hooks=runner("PermissionRequest", "*", cmd), prompter=Prompter(delay=0.5))
    run(run_tool_use(bash("npm test"), ctx))
    data = json.load(open(out_file))
    assert data["permission_suggestions"][0]["type"] == "addRules"
    assert data["permission_suggestions"][0]["rules"] == [{"toolName": "Bash", "ruleContent": "npm test"}] or \
        data["permission_suggestions"][0]["rules"][0]["toolName"] == "Bash"


def test_other_events(env):
    ctx = make_ctx(env["ws"])
    ups = script(env, "ups.sh", 'cat >/dev/null; echo "extra context"')
    o = run(runner("UserPromptSubmit", None, ups).user_prompt_submit("hi", ctx))
    assert o.additional_context == "extra context" and not o.block
    blk = script(env, "upsb.sh", 'cat >/dev/null; echo \'{"decision":"block","reason":"no secrets"}\'')
    o = run(runner("UserPromptSubmit", None, blk).user_prompt_submit("hi", ctx))
    assert o.block and o.reason == "no secrets"
    stop = script(env, "stop.sh", 'cat >/dev/null; echo "keep going" >&2; exit 2')
    o = run(runner("Stop", None, stop).stop(ctx))
    assert o.block and o.reason == "keep going"
    ss = script(env, "ss.sh", 'cat >/dev/null; echo \'{"hookSpecificOutput":{"hookEventName":"SessionStart",'
                              '"additionalContext":"branch main"},"continue":false,"stopReason":"halt"}\'')
    o = run(runner("SessionStart", "startup", ss).session_start("startup", ctx))
    assert o.additional_context == "branch main" and o.stop and o.stop_reason == "halt"
    nf_file = os.path.join(env["hooks"], "nf.json")
    nf = script(env, "nf.sh", f'cat > {nf_file}')
    run(runner("Notification", None, nf).notification("Claude needs your permission", ctx))
    assert json.load(open(nf_file))["message"] == "Claude needs your permission"


def test_callback_hooks(env):
    seen = []

    async def cb(payload, tool_use_id):
        seen.append((payload["hook_event_name"], tool_use_id))
        return {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "via SDK"}}

    r = HookRunner()
    r.register_callback("PreToolUse", "Bash", cb)
    ctx = make_ctx(env["ws"], hooks=r, mode="bypassPermissions")
    assert run(run_tool_use(bash("ls"), ctx)).block["content"] == "via SDK"
    assert seen == [("PreToolUse", "toolu_b")]


def test_from_settings(env, monkeypatch, tmp_path):
    from desktop_agent.permissions.context import PermissionContext

    monkeypatch.setenv("DESKTOP_AGENT_MANAGED_SETTINGS_DIR", str(tmp_path / "none"))
    cmd = script(env, "deny2.sh", 'cat >/dev/null; echo "from settings" >&2; exit 2')
    os.makedirs(os.path.join(env["ws"], ".claude"), exist_ok=True)
    with open(os.path.join(env["ws"], ".claude", "settings.json"), "w") as fh:
        json.dump({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": cmd}]}]}}, fh)
    pc = PermissionContext.load(env["ws"], trusted=True)  # a project's hooks run only in a trusted folder
    ctx = make_ctx(env["ws"], hooks=HookRunner.from_permission_context(pc))
    ctx.permission_context = pc
    out = run(run_tool_use(bash("ls"), ctx))
    assert out.block["content"] == f"PreToolUse:Bash hook error: [{cmd}]: from settings\n"
