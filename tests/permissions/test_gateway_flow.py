"""The permission flow through the gateway with a fake prompter (SPEC §9 items 58, 60–79, as spec markers) and the App. A texts."""

from __future__ import annotations

import asyncio
import os

import pytest

from desktop_agent.core.events import PermissionRequested, PermissionResolved
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions import bash_paths
from desktop_agent.permissions.decide import filter_denied_tools
from desktop_agent.permissions.gateway import can_use_tool, decide_for
from desktop_agent.core.permission import PermissionReply, PermissionRequest
from tests.permissions import util
from tests.permissions.util import TOOLS, make_ctx, make_workspace


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def env(tmp_path):
    util.CALLS.clear()
    return make_workspace(str(tmp_path))


class Prompter:
    waits = True  # core.permission.PermissionPrompter: a person answers

    def __init__(self, reply=None, delay=0.0, reply_fn=None):
        self.reply = reply or PermissionReply(behavior="allow")
        self.reply_fn = reply_fn
        self.delay = delay
        self.requests: list[PermissionRequest] = []
        self.cancelled: list[str] = []  # request_ids whose wait was cancelled (control_cancel_request)

    async def ask(self, request):
        self.requests.append(request)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled.append(request.request_id)
            raise
        return self.reply_fn(request) if self.reply_fn else self.reply


def edit_block(path, id="toolu_edit_2"):
    return {"type": "tool_use", "id": id, "name": "Edit",
            "input": {"file_path": path, "old_string": "1", "new_string": "2"}}


def decide(tool, inp, ctx):
    return decide_for(TOOLS[tool], TOOLS[tool].input_model.model_validate(inp), ctx)


# ---------------------------------------------------------------------------------------- 58
@pytest.mark.spec("58")
def test_58_default_edit_inside_asks_with_suggestions(env):
    ctx = make_ctx(env["ws"])
    path = os.path.join(env["ws"], "app.ts")
    d = decide("Edit", {"file_path": path}, ctx)
    assert d.behavior == "ask"
    assert d.message == f"Claude requested permissions to write to {path}, but you haven't granted it yet."
    assert d.suggestions and d.suggestions[0].type == "addRules"
    assert str(d.suggestions[0].rules[0]) == "Edit(/app.ts)"


@pytest.mark.spec("58")
def test_58_suggestion_for_subdir_is_the_directory(env):
    ctx = make_ctx(env["ws"])
    d = decide("Edit", {"file_path": os.path.join(env["ws"], "src", "a.py")}, ctx)
    assert str(d.suggestions[0].rules[0]) == "Edit(/src/**)"
    assert d.suggestions[0].destination == "session"


# ---------------------------------------------------------------------------------------- 59/60/61
@pytest.mark.spec("59", "60")
def test_59_60_deny_from_ui(env):
    events = []
    prompter = Prompter(PermissionReply(behavior="deny"))
    ctx = make_ctx(env["ws"], prompter=prompter, emit=events.append)
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert out.block == {"type": "tool_result", "tool_use_id": "toolu_edit_2", "is_error": True,
                         "content": "User denied via UI"} or (out.block["content"] == "User denied via UI"
                                                                and out.block["is_error"])
    req = prompter.requests[0]
    assert req.tool_name == "Edit" and req.tool_use_id == "toolu_edit_2" and req.request_id != "toolu_edit_2"
    assert util.CALLS == []
    assert [type(e) for e in events] == [PermissionRequested, PermissionResolved]


@pytest.mark.spec("61")
def test_61_allow_with_empty_updated_input_keeps_original(env):
    prompter = Prompter(PermissionReply(behavior="allow", updated_input={}))
    ctx = make_ctx(env["ws"], prompter=prompter)
    path = os.path.join(env["ws"], "app.ts")
    out = run(run_tool_use(edit_block(path), ctx))
    assert not out.is_error
    assert util.CALLS == [f"Edit:{path}"]


@pytest.mark.spec("61")
def test_61_allow_with_updated_input_is_used_and_marked(env):
    path = os.path.join(env["ws"], "app.ts")
    prompter = Prompter(PermissionReply(behavior="allow", updated_input={"file_path": path, "old_string": "1",
                                                                          "new_string": "3"}))
    ctx = make_ctx(env["ws"], prompter=prompter)
    d = run(can_use_tool(TOOLS["Edit"], TOOLS["Edit"].input_model.model_validate(
        {"file_path": path, "old_string": "1", "new_string": "2"}), ctx, "t1"))
    assert d.behavior == "allow" and d.updated_input["new_string"] == "3" and d.user_modified


def test_deny_feedback_reaches_the_model(env):
    prompter = Prompter(PermissionReply(behavior="deny", feedback="use a test file"))
    ctx = make_ctx(env["ws"], prompter=prompter)
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert "User denied via UI" in out.block["content"] and "use a test file" in out.block["content"]


# ---------------------------------------------------------------------------------------- 62
@pytest.mark.spec("62")
def test_62_allow_for_session_no_second_prompt(env):
    prompter = Prompter(reply_fn=lambda req: PermissionReply(behavior="allow", updated_permissions=req.suggestions))
    ctx = make_ctx(env["ws"], prompter=prompter)
    path = os.path.join(env["ws"], "app.ts")
    assert not run(run_tool_use(edit_block(path, "t1"), ctx)).is_error
    assert not run(run_tool_use(edit_block(path, "t2"), ctx)).is_error
    assert len(prompter.requests) == 1
    assert len(util.CALLS) == 2


@pytest.mark.needs_sandbox
@pytest.mark.spec("62")
def test_62_bash_always_allow_written_to_local_settings_matches_next_time(env):
    from desktop_agent.permissions.context import PermissionContext

    prompter = Prompter(reply_fn=lambda req: PermissionReply(behavior="allow", updated_permissions=req.suggestions))
    ctx = make_ctx(env["ws"], prompter=prompter)
    block = {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "npm test -- --watch=false"}}
    assert not run(run_tool_use(block, ctx)).is_error
    sugg = prompter.requests[0].suggestions
    assert str(sugg[0].rules[0]) == "Bash(npm test:*)" and sugg[0].destination == "localSettings"
    path = os.path.join(env["ws"], ".claude", "settings.local.json")
    assert os.path.exists(path)
    # same session: no second prompt
    assert not run(run_tool_use(dict(block, id="b2"), ctx)).is_error
    assert len(prompter.requests) == 1
    # next session, loaded from disk (trusted folder): still allowed, also with other args
    pc = PermissionContext.load(env["ws"], trusted=True)
    ctx2 = make_ctx(env["ws"])
    ctx2.permission_context = pc
    d = decide_for(TOOLS["Bash"], TOOLS["Bash"].input_model.model_validate({"command": "npm test"}), ctx2)
    assert d.behavior == "allow" and d.decision_reason.rule.source == "localSettings"
    d = decide_for(TOOLS["Bash"], TOOLS["Bash"].input_model.model_validate({"command": "npm test && curl x | sh"}),
                   ctx2)
    assert d.behavior == "ask"


# ---------------------------------------------------------------------------------------- 63
@pytest.mark.spec("63")
def test_63_duplicate_reply_one_result(env):
    prompter = Prompter(PermissionReply(behavior="allow"))
    events = []
    ctx = make_ctx(env["ws"], prompter=prompter, emit=events.append)
    tool = TOOLS["Edit"]
    inp = tool.input_model.model_validate({"file_path": os.path.join(env["ws"], "app.ts")})
    first = run(can_use_tool(tool, inp, ctx, "toolu_dup"))
    second = run(can_use_tool(tool, inp, ctx, "toolu_dup"))
    assert first.behavior == "allow" and second.behavior == "deny"
    assert len(prompter.requests) == 1
    assert sum(isinstance(e, PermissionResolved) for e in events) == 1


# ---------------------------------------------------------------------------------------- 64–72
@pytest.mark.spec("64")
def test_64_accept_edits(env):
    ctx = make_ctx(env["ws"], mode="acceptEdits")
    assert decide("Edit", {"file_path": os.path.join(env["ws"], "app.ts")}, ctx).behavior == "allow"
    d = decide("Edit", {"file_path": os.path.join(env["out"], "x")}, ctx)
    assert d.behavior == "ask" and d.decision_reason.type == "workingDir"


@pytest.mark.spec("65")
def test_65_accept_edits_with_ask_rule(env):
    ctx = make_ctx(env["ws"], mode="acceptEdits", rules={"ask": ["Edit(app.ts)"]})
    assert decide("Edit", {"file_path": os.path.join(env["ws"], "app.ts")}, ctx).behavior == "ask"


@pytest.mark.spec("66")
def test_66_bypass_whole_tool_deny_text(env):
    prompter = Prompter()
    ctx = make_ctx(env["ws"], mode="bypassPermissions", rules={"deny": ["Edit"]}, prompter=prompter)
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert out.block["content"] == "Permission to use Edit has been denied." and out.is_error
    assert prompter.requests == []


@pytest.mark.spec("66")
def test_66_whole_tool_deny_removes_tool_and_lookup_text(env):
    ctx = make_ctx(env["ws"], rules={"deny": ["Edit"]})
    ctx.tools = filter_denied_tools(ctx.tools, ctx)
    assert "Edit" not in [t.name for t in ctx.tools]
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert out.block["content"] == ("<tool_use_error>Error: No such tool available: Edit. Edit exists but is not "
                                    "enabled in this context. Use one of the available tools instead.</tool_use_error>")
    # an unknown tool keeps the plain text
    out = run(run_tool_use({"type": "tool_use", "id": "x", "name": "Frobnicate", "input": {}}, ctx))
    assert out.block["content"] == "<tool_use_error>Error: No such tool available: Frobnicate</tool_use_error>"


@pytest.mark.spec("67")
def test_67_bypass_protected_path_safety_check(env):
    ctx = make_ctx(env["ws"], mode="bypassPermissions")
    d = decide("Edit", {"file_path": os.path.join(env["ws"], ".git", "config")}, ctx)
    assert d.behavior == "ask" and d.decision_reason.type == "safetyCheck"


@pytest.mark.spec("67")
def test_67_sensitive_file_text_headless(env):
    ctx = make_ctx(env["ws"], mode="acceptEdits")
    out = run(run_tool_use(edit_block(".git/config"), ctx))
    assert out.block["content"] == "Claude requested permissions to edit .git/config which is a sensitive file."


@pytest.mark.spec("68")
def test_68_bypass_plain_allow(env):
    prompter = Prompter()
    ctx = make_ctx(env["ws"], mode="bypassPermissions", prompter=prompter)
    assert not run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx)).is_error
    assert prompter.requests == []


@pytest.mark.spec("69")
def test_69_dont_ask_denies_without_request(env):
    events = []
    prompter = Prompter()
    ctx = make_ctx(env["ws"], mode="dontAsk", prompter=prompter, emit=events.append)
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert out.is_error and prompter.requests == [] and events == []


@pytest.mark.spec("70")
def test_70_whole_tool_allow(env):
    ctx = make_ctx(env["ws"], rules={"allow": ["Edit"]})
    assert decide("Edit", {"file_path": os.path.join(env["ws"], "app.ts")}, ctx).behavior == "allow"


@pytest.mark.spec("71")
def test_71_passthrough_asks(env):
    ctx = make_ctx(env["ws"])
    d = decide("WebFetch", {"url": "https://x.org"}, ctx)
    assert d.behavior == "ask"
    assert d.message == "Claude requested permissions to use WebFetch, but you haven't granted it yet."


@pytest.mark.spec("72")
def test_72_read(env):
    ctx = make_ctx(env["ws"])
    assert decide("Read", {"file_path": os.path.join(env["ws"], "app.ts")}, ctx).behavior == "allow"
    d = decide("Read", {"file_path": "/etc/hostname"}, ctx)
    assert d.behavior == "ask"
    assert d.message == "Claude requested permissions to read from /etc/hostname, but you haven't granted it yet."
    ctx = make_ctx(env["ws"], rules={"deny": ["Read(./.env)"]})
    d = decide("Read", {"file_path": os.path.join(env["ws"], ".env")}, ctx)
    assert d.behavior == "deny"
    assert d.message == "<tool_use_error>File is in a directory that is denied by your permission settings.</tool_use_error>"


@pytest.mark.needs_sandbox
def test_headless_texts(env):
    ctx = make_ctx(env["ws"])
    out = run(run_tool_use({"type": "tool_use", "id": "w", "name": "Write",
                            "input": {"file_path": os.path.join(env["ws"], "p.txt"), "content": "x"}}, ctx))
    assert out.block["content"] == (f"Claude requested permissions to write to {env['ws']}/p.txt, but you haven't "
                                    "granted it yet.")
    out = run(run_tool_use({"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "npm test"}}, ctx))
    assert out.block["content"] == "This command requires approval"
    out = run(run_tool_use({"type": "tool_use", "id": "b", "name": "Bash",
                            "input": {"command": "ls && npm test && make"}}, ctx))
    assert out.block["content"] == ("This Bash command contains multiple operations. The following parts require "
                                    "approval: npm test, make")
    ctx = make_ctx(env["ws"], mode="bypassPermissions", rules={"deny": ["Bash(rm *)"]})
    out = run(run_tool_use({"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "rm x"}}, ctx))
    assert out.block["content"] == "Permission to use Bash with command rm x has been denied."
    ctx = make_ctx(env["ws"], mode="plan")
    out = run(run_tool_use(edit_block("app.ts"), ctx))
    assert out.block["content"] == "Cannot write to app.ts while in plan mode."


# ---------------------------------------------------------------------------------------- 76, 77
class SlowHookRunner:
    """A PermissionRequest hook answering after ``delay`` (the real runner is tested in test_hooks)."""

    def __init__(self, reply, delay):
        self.reply, self.delay = reply, delay

    def has_hooks(self, event, value=None):
        return event == "PermissionRequest"

    async def permission_request(self, tool_name, tool_input, suggestions, ctx, tool_use_id=None):
        await asyncio.sleep(self.delay)
        return self.reply

    def notify_soon(self, message, ctx, notification_type, title=None):  # no Notification hooks
        pass

    async def pre_tool_use(self, *a):
        from desktop_agent.permissions.hooks import PreToolUseOutcome

        return PreToolUseOutcome()

    async def post_tool_use(self, *a):
        from desktop_agent.permissions.hooks import PostToolUseOutcome

        return PostToolUseOutcome()


@pytest.mark.spec("76")
def test_76_permission_request_hook_wins_and_cancels_prompter(env):
    events = []
    prompter = Prompter(delay=5)
    hooks = SlowHookRunner(PermissionReply(behavior="allow"), 0.01)
    ctx = make_ctx(env["ws"], prompter=prompter, hooks=hooks, emit=events.append)
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert not out.is_error
    assert prompter.cancelled == [prompter.requests[0].request_id]
    resolved = [e for e in events if isinstance(e, PermissionResolved)]
    assert resolved[0].decided_by == "hook"


@pytest.mark.spec("76")
def test_76_prompter_wins_and_hook_is_ignored(env):
    prompter = Prompter(PermissionReply(behavior="deny"))
    hooks = SlowHookRunner(PermissionReply(behavior="allow"), 5)
    ctx = make_ctx(env["ws"], prompter=prompter, hooks=hooks)
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert out.block["content"] == "User denied via UI"


@pytest.mark.spec("76")
def test_76_hook_without_opinion_leaves_the_prompter(env):
    prompter = Prompter(PermissionReply(behavior="allow"), delay=0.05)
    hooks = SlowHookRunner(None, 0.0)
    ctx = make_ctx(env["ws"], prompter=prompter, hooks=hooks)
    assert not run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx)).is_error
    assert prompter.cancelled == []


@pytest.mark.spec("77")
def test_77_interrupt_while_pending(env):
    prompter = Prompter(delay=5)
    ctx = make_ctx(env["ws"], prompter=prompter)

    async def scenario():
        task = asyncio.ensure_future(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
        await asyncio.sleep(0.05)
        ctx.abort.abort("user_interrupted")
        return await task

    out = run(scenario())
    assert out.is_error and util.CALLS == []
    assert prompter.cancelled == [prompter.requests[0].request_id]


# ---------------------------------------------------------------------------------------- 73–75 (callback hooks)
def _runner_with(event_output):
    from desktop_agent.permissions.hooks import HookRunner

    runner = HookRunner()

    async def cb(payload, tool_use_id):
        return event_output

    runner.register_callback("PreToolUse", "Edit|Bash", cb)
    return runner


def _pre(decision, reason="because"):
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                   "permissionDecisionReason": reason}}


@pytest.mark.spec("73")
def test_73_hook_deny(env):
    prompter = Prompter()
    ctx = make_ctx(env["ws"], prompter=prompter, hooks=_runner_with(_pre("deny", "no edits today")),
                   mode="bypassPermissions")
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert out.block["content"] == "no edits today" and out.is_error
    assert prompter.requests == [] and util.CALLS == []


@pytest.mark.spec("74")
def test_74_hook_allow_still_respects_ask_and_deny_rules(env):
    prompter = Prompter(PermissionReply(behavior="deny"))
    ctx = make_ctx(env["ws"], prompter=prompter, hooks=_runner_with(_pre("allow")), rules={"ask": ["Edit(app.ts)"]})
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert len(prompter.requests) == 1 and out.is_error
    ctx = make_ctx(env["ws"], prompter=prompter, hooks=_runner_with(_pre("allow")), rules={"deny": ["Edit(app.ts)"]})
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert out.is_error and len(prompter.requests) == 1
    # and with no rule the hook's allow skips the dialog
    ctx = make_ctx(env["ws"], prompter=prompter, hooks=_runner_with(_pre("allow")))
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert not out.is_error and len(prompter.requests) == 1


@pytest.mark.spec("74")
def test_74_hook_allow_still_respects_safety_check(env):
    prompter = Prompter(PermissionReply(behavior="deny"))
    ctx = make_ctx(env["ws"], prompter=prompter, hooks=_runner_with(_pre("allow")))
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], ".git", "config")), ctx))
    assert out.is_error and len(prompter.requests) == 1


@pytest.mark.spec("75")
def test_75_hook_ask_while_rules_allow(env):
    prompter = Prompter(PermissionReply(behavior="allow"))
    ctx = make_ctx(env["ws"], prompter=prompter, hooks=_runner_with(_pre("ask", "check this")),
                   rules={"allow": ["Edit"]})
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert not out.is_error and len(prompter.requests) == 1
    assert prompter.requests[0].message == "check this"


# ---------------------------------------------------------------------------------------- 78, 79
@pytest.mark.spec("78")
def test_78_bash_paths(env):
    ctx = make_ctx(env["ws"])
    assert bash_paths.check_path_constraints("ls ../another-project", ctx).behavior == "ask"
    assert bash_paths.check_path_constraints("ls ./src", ctx).behavior == "passthrough"
    d = decide("Bash", {"command": "ls ../another-project"}, ctx)
    assert d.behavior == "ask" and d.decision_reason.type == "workingDir"


@pytest.mark.spec("79")
def test_79_cd_then_write(env):
    ctx = make_ctx(env["ws"], mode="acceptEdits")
    assert bash_paths.check_path_constraints("cd sub && echo x > f.txt", ctx).behavior == "ask"
    assert decide("Bash", {"command": "cd sub && echo x > f.txt"}, ctx).behavior == "ask"


def test_mode_switch_mid_session(env):
    ctx = make_ctx(env["ws"])
    path = os.path.join(env["ws"], "app.ts")
    assert decide("Edit", {"file_path": path}, ctx).behavior == "ask"
    from desktop_agent.core.permission import PermissionUpdate

    ctx.permission_context.apply_updates([PermissionUpdate(type="setMode", mode="acceptEdits")])
    assert decide("Edit", {"file_path": path}, ctx).behavior == "allow"
    ctx.permission_context.set_mode("plan")
    assert decide("Edit", {"file_path": path}, ctx).behavior == "deny"


def test_bare_permission_context_object_is_tolerated(env):
    """A bare permission state (``core.seams.PermissionState`` without rules): no rules, modes still apply."""

    class Bare:
        mode = "default"
        working_dirs: list[str] = []

    prompter = Prompter(PermissionReply(behavior="deny"))
    ctx = make_ctx(env["ws"], prompter=prompter)
    ctx.permission_context = Bare()
    out = run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts")), ctx))
    assert out.block["content"] == "User denied via UI" and len(prompter.requests) == 1
    out = run(run_tool_use({"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "ls"}}, ctx))
    assert not out.is_error
    Bare.mode = "bypassPermissions"
    assert not run(run_tool_use(edit_block(os.path.join(env["ws"], "app.ts"), "t9"), ctx)).is_error


@pytest.mark.needs_sandbox
def test_every_ask_carries_suggestions(env):
    ctx = make_ctx(env["ws"])
    cases = [("Edit", {"file_path": os.path.join(env["ws"], "src", "a.py")}),
             ("Edit", {"file_path": os.path.join(env["out"], "a.py")}),
             ("Read", {"file_path": os.path.join(env["out"], "secret")}),
             ("Bash", {"command": "npm test"}), ("Bash", {"command": "ls ../x && make"}),
             ("WebFetch", {"url": "https://x.org"})]
    for tool, inp in cases:
        d = decide(tool, inp, ctx)
        assert d.behavior == "ask" and d.suggestions, (tool, inp)
    d = decide("Bash", {"command": "ls ../x && make"}, ctx)
    assert {str(r) for s in d.suggestions for r in s.rules} == {f"Read(/{os.path.dirname(env['ws'])}/x/**)",
                                                                  "Bash(make)"}
    assert str(decide("Edit", {"file_path": os.path.join(env["out"], "a.py")}, ctx).suggestions[0].rules[0]) == \
        f"Edit(/{env['out']}/**)"


@pytest.mark.needs_sandbox
def test_session_scoped_allow_does_not_write_settings(env):
    from desktop_agent.permissions.gateway import session_scoped

    prompter = Prompter(reply_fn=lambda req: PermissionReply(behavior="allow",
                                                             updated_permissions=session_scoped(req.suggestions)))
    ctx = make_ctx(env["ws"], prompter=prompter)
    block = {"type": "tool_use", "id": "s1", "name": "Bash", "input": {"command": "npm test"}}
    assert not run(run_tool_use(block, ctx)).is_error
    assert not run(run_tool_use(dict(block, id="s2"), ctx)).is_error
    assert len(prompter.requests) == 1
    assert not os.path.exists(os.path.join(env["ws"], ".claude", "settings.local.json"))
    assert ctx.permission_context.to_json()["session_rules"] == [{"behavior": "allow", "rule": "Bash(npm test:*)"}] \
        or ctx.permission_context.to_json()["session_rules"] == [{"behavior": "allow", "rule": "Bash(npm test)"}]


def test_hook_allow_cannot_leave_plan_mode(env):
    ctx = make_ctx(env["ws"], mode="plan", hooks=_runner_with(_pre("allow")))
    out = run(run_tool_use(edit_block("app.ts"), ctx))
    assert out.block["content"] == "Cannot write to app.ts while in plan mode."
