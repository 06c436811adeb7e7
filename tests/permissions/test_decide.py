"""``permissions.decide`` as a table: rules (with their sources) × the five modes × targets read / write / bash /
generic / none, calling the pure, synchronous ``decide(ctx, facts, target, input)`` directly (no tool object).

Every scenario runs in every mode; a row says what the decision must be, why (the reason's type) and, for a rule,
which source it came from. The deny rows pair the deny with an allow (and an ask) for the same call: deny wins in
every mode, bypass included.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import PermissionRule, PermissionTarget, ToolFacts
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.decide import decide
from desktop_agent.permissions.rules import parse_rule
from tests.permissions.util import make_workspace

MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
A, D, Q = "allow", "deny", "ask"
RULE, MODE, WD, SAFETY = "rule", "mode", "workingDir", "safetyCheck"

# (id, tool facts (name, read-only), target (kind, path or command), rules [(behavior, rule, source)],
#  one (behavior, reason type or None) per mode, in the order of MODES)
Scenario = tuple[str, tuple[str, bool], tuple[str, str], list[tuple[str, str, str]], list[tuple[str, str | None]]]

BYPASS = (A, MODE)
DONT_ASK_DENY = (D, MODE)
PLAN_DENY = (D, MODE)
DENY_ALL = [(D, RULE)] * 5

SCENARIOS: list[Scenario] = [
    # ---- read targets
    ("read-inside", ("Read", True), ("read", "{ws}/app.ts"), [],
     [(A, WD), (A, WD), (A, WD), BYPASS, (A, WD)]),
    ("read-outside", ("Read", True), ("read", "{out}/secret"), [],
     [(Q, WD), (Q, WD), (Q, WD), BYPASS, DONT_ASK_DENY]),
    ("read-outside-allowed", ("Read", True), ("read", "{out}/secret"), [(A, "Read(/{out}/**)", "userSettings")],
     [(A, RULE), (A, RULE), (A, RULE), BYPASS, (A, RULE)]),
    ("read-deny", ("Read", True), ("read", "{ws}/app.ts"), [(D, "Read(/{ws}/app.ts)", "projectSettings")], DENY_ALL),
    ("read-deny-beats-allow", ("Read", True), ("read", "{ws}/app.ts"),
     [(A, "Read(/{ws}/**)", "policySettings"), (D, "Read(/{ws}/app.ts)", "localSettings")], DENY_ALL),
    ("read-outside-deny-beats-allow", ("Read", True), ("read", "{out}/secret"),
     [(A, "Read(/{out}/**)", "userSettings"), (D, "Read(/{out}/**)", "cliArg")], DENY_ALL),
    ("read-ask-rule", ("Read", True), ("read", "{ws}/app.ts"), [(Q, "Read(/{ws}/app.ts)", "session")],
     [(Q, RULE), (Q, RULE), (Q, RULE), (Q, RULE), DONT_ASK_DENY]),
    ("read-whole-tool-deny", ("Read", True), ("read", "{ws}/app.ts"), [(D, "Read", "cliArg")], DENY_ALL),
    ("read-deny-file-under-allowed-dir", ("Read", True), ("read", "{out}/secret"),
     [(A, "Read(/{out}/**)", "policySettings"), (D, "Read(/{out}/secret)", "localSettings")], DENY_ALL),
    ("read-ask-beats-allow", ("Read", True), ("read", "{ws}/app.ts"),
     [(A, "Read(/{ws}/app.ts)", "userSettings"), (Q, "Read(/{ws}/app.ts)", "projectSettings")],
     [(Q, RULE), (Q, RULE), (Q, RULE), (Q, RULE), DONT_ASK_DENY]),
    # ---- write targets
    ("write-inside", ("Edit", False), ("write", "{ws}/app.ts"), [],
     [(Q, MODE), (A, MODE), PLAN_DENY, BYPASS, DONT_ASK_DENY]),
    ("write-outside", ("Edit", False), ("write", "{out}/secret"), [],
     [(Q, WD), (Q, WD), PLAN_DENY, BYPASS, DONT_ASK_DENY]),
    ("write-inside-allowed", ("Edit", False), ("write", "{ws}/app.ts"), [(A, "Edit(/{ws}/app.ts)", "userSettings")],
     [(A, RULE), (A, MODE), PLAN_DENY, BYPASS, (A, RULE)]),
    ("write-outside-allowed", ("Edit", False), ("write", "{out}/secret"),
     [(A, "Edit(/{out}/**)", "projectSettings")], [(A, RULE), (A, RULE), PLAN_DENY, BYPASS, (A, RULE)]),
    ("write-deny", ("Edit", False), ("write", "{ws}/app.ts"), [(D, "Edit(/{ws}/app.ts)", "localSettings")], DENY_ALL),
    ("write-deny-beats-allow", ("Write", False), ("write", "{ws}/app.ts"),
     [(A, "Edit(/{ws}/**)", "policySettings"), (D, "Edit(/{ws}/app.ts)", "session")], DENY_ALL),
    ("write-read-deny-blocks-writes", ("Edit", False), ("write", "{ws}/app.ts"),
     [(D, "Read(/{ws}/app.ts)", "userSettings")], DENY_ALL),
    ("write-protected-git", ("Edit", False), ("write", "{ws}/.git/config"), [],
     [(Q, SAFETY), (Q, SAFETY), PLAN_DENY, (Q, SAFETY), DONT_ASK_DENY]),
    ("write-whole-tool-allow", ("Edit", False), ("write", "{ws}/app.ts"), [(A, "Edit", "cliArg")],
     [(A, RULE), (A, MODE), PLAN_DENY, BYPASS, (A, RULE)]),
    ("write-whole-tool-deny-beats-allow", ("Edit", False), ("write", "{ws}/app.ts"),
     [(A, "Edit", "userSettings"), (D, "Edit", "projectSettings")], DENY_ALL),
    # ---- bash targets
    ("bash-allowed-prefix", ("Bash", False), ("bash", "npm test"), [(A, "Bash(npm test:*)", "localSettings")],
     [(A, RULE), (A, RULE), PLAN_DENY, BYPASS, (A, RULE)]),
    ("bash-unknown-command", ("Bash", False), ("bash", "npm test"), [],
     [(Q, None), (Q, None), PLAN_DENY, BYPASS, DONT_ASK_DENY]),
    ("bash-deny-beats-allow", ("Bash", False), ("bash", "rm -rf build"),
     [(A, "Bash(rm:*)", "userSettings"), (D, "Bash(rm:*)", "projectSettings")], DENY_ALL),
    ("bash-whole-tool-deny-beats-allow", ("Bash", False), ("bash", "npm test"),
     [(A, "Bash(npm test:*)", "localSettings"), (D, "Bash", "policySettings")], DENY_ALL),
    # ---- generic targets (an MCP tool)
    ("generic", ("mcp__srv__fetch", False), ("generic", "srv · fetch"), [],
     [(Q, MODE), (Q, MODE), PLAN_DENY, BYPASS, DONT_ASK_DENY]),
    ("generic-allowed", ("mcp__srv__fetch", False), ("generic", "srv · fetch"),
     [(A, "mcp__srv__fetch", "userSettings")], [(A, RULE), (A, RULE), PLAN_DENY, BYPASS, (A, RULE)]),
    ("generic-deny-beats-allow", ("mcp__srv__fetch", False), ("generic", "srv · fetch"),
     [(A, "mcp__srv__fetch", "policySettings"), (D, "mcp__srv", "localSettings")], DENY_ALL),
    ("generic-whole-tool-ask", ("mcp__srv__fetch", False), ("generic", "srv · fetch"),
     [(Q, "mcp__srv__fetch", "projectSettings")], [(Q, RULE), (Q, RULE), (Q, RULE), (Q, RULE), DONT_ASK_DENY]),
    ("generic-read-only", ("mcp__srv__list", True), ("generic", "srv · list"), [],
     [(Q, MODE), (Q, MODE), (Q, MODE), BYPASS, DONT_ASK_DENY]),
    # ---- none targets (nothing the policy guards: BashOutput, KillShell)
    ("none", ("KillShell", False), ("none", ""), [],
     [(A, None), (A, None), PLAN_DENY, BYPASS, (A, None)]),
    ("none-whole-tool-deny-beats-allow", ("KillShell", False), ("none", ""),
     [(A, "KillShell", "userSettings"), (D, "KillShell", "session")], DENY_ALL),
]

Row = tuple[str, Scenario, int]
ROWS: list[Row] = [(f"{s[0]}-{mode}", s, i) for s in SCENARIOS for i, mode in enumerate(MODES)]


def _params(rows: list[Row]) -> list[Any]:
    """A Bash row that expects an allow decides as the gate does under the active sandbox (without it, every
    command that is not read-only asks): it needs the sandbox (tests/conftest.py)."""
    return [pytest.param(r, id=r[0], marks=pytest.mark.needs_sandbox
                         if r[1][2][0] == "bash" and r[1][4][r[2]][0] == A else ()) for r in rows]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return make_workspace(str(tmp_path_factory.mktemp("decide")))


def _fill(text: str, env: dict[str, str]) -> str:
    return text.replace("{ws}", env["ws"]).replace("{out}", env["out"])


def _rules(spec: list[tuple[str, str, str]], env: dict[str, str]) -> list[PermissionRule]:
    out = []
    for behavior, text, source in spec:
        path = f"/settings/{source}.json" if source.endswith("Settings") else None
        out.append(PermissionRule(value=parse_rule(_fill(text, env)), behavior=behavior,  # type: ignore[arg-type]
                                  source=source, source_path=path))  # type: ignore[arg-type]
    return out


def _call(scenario: Scenario, env: dict[str, str]) -> tuple[PermissionTarget, dict[str, Any]]:
    kind, what = scenario[2]
    if kind in ("read", "write"):
        path = _fill(what, env)
        return PermissionTarget(kind=kind, path=path, summary=path), {"file_path": path}  # type: ignore[arg-type]
    if kind == "bash":
        return PermissionTarget(kind="bash", command=what, summary=what), {"command": what}
    return PermissionTarget(kind=kind, summary=what), {"url": "https://example.com"}  # type: ignore[arg-type]


def test_table_size() -> None:
    assert len(ROWS) >= 150
    kinds = {s[2][0] for s in SCENARIOS}
    assert kinds == {"read", "write", "bash", "generic", "none"}


def test_decide_is_synchronous() -> None:
    assert not inspect.iscoroutinefunction(decide)


@pytest.mark.parametrize("row", _params(ROWS))
def test_row(row: Row, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", env["home"])
    rid, scenario, mode_index = row
    mode = MODES[mode_index]
    name, read_only = scenario[1]
    rules = _rules(scenario[3], env)
    pc = PermissionContext(env["ws"], mode=mode, rules=rules)
    ctx = ToolUseContext(cwd=env["ws"], permission_context=pc)
    target, input_dict = _call(scenario, env)
    facts = ToolFacts(name=name, is_read_only=read_only, is_mcp=name.startswith("mcp__"))
    decision = decide(ctx, facts, target, input_dict)
    behavior, reason_type = scenario[4][mode_index]
    assert decision.behavior == behavior, (rid, decision)
    if reason_type is not None:
        assert decision.decision_reason is not None and decision.decision_reason.type == reason_type, (rid, decision)
    if reason_type == RULE:
        rule = decision.decision_reason.rule  # type: ignore[union-attr]
        assert rule is not None, (rid, decision)
        # the matched rule is one of the call's rules of the decided behaviour, with its own source
        wanted = {(r.behavior, str(r.value), r.source, r.source_path) for r in rules}
        assert (rule.behavior, str(rule.value), rule.source, rule.source_path) in wanted, (rid, rule)
        assert rule.behavior == behavior, (rid, rule)
    if behavior == "deny" and any(b == D for b, _, _ in scenario[3]):
        # deny beats allow: the rule that decided is the deny, with the deny's source
        deny_sources = {source for b, _, source in scenario[3] if b == D}
        assert decision.decision_reason.rule.source in deny_sources, (rid, decision)  # type: ignore[union-attr]
        assert decision.message, rid
    if mode == "dontAsk" and behavior == "deny" and reason_type == MODE:
        assert decision.message is not None and "don't ask mode" in decision.message, rid
    if mode == "plan" and reason_type == MODE and behavior == "deny":
        assert decision.message is not None and "plan mode" in decision.message, rid


def test_source_file_is_named_in_the_reason(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", env["home"])
    rules = _rules([(D, "Read(/{ws}/app.ts)", "projectSettings")], env)
    ctx = ToolUseContext(cwd=env["ws"], permission_context=PermissionContext(env["ws"], rules=rules))
    path = os.path.join(env["ws"], "app.ts")
    decision = decide(ctx, ToolFacts(name="Read", is_read_only=True),
                      PermissionTarget(kind="read", path=path, summary=path), {"file_path": path})
    assert decision.behavior == "deny"
    assert decision.decision_reason is not None
    assert decision.decision_reason.describe() == f"rule Read(/{env['ws']}/app.ts) in /settings/projectSettings.json"


def test_no_permission_state_is_default_mode(env: dict[str, str]) -> None:
    """Fail closed: a context without a permission state decides as ``default`` with no rules (never bypass)."""
    ctx = ToolUseContext(cwd=env["ws"])
    path = os.path.join(env["ws"], "app.ts")
    decision = decide(ctx, ToolFacts(name="Edit"), PermissionTarget(kind="write", path=path, summary=path),
                      {"file_path": path})
    assert decision.behavior == "ask"


def test_a_broken_target_is_a_deny(env: dict[str, str]) -> None:
    """A read/write target without a path cannot be checked: deny with the check-failed sentence, every mode."""
    for mode in MODES:
        ctx = ToolUseContext(cwd=env["ws"], permission_context=PermissionContext(env["ws"], mode=mode))
        decision = decide(ctx, ToolFacts(name="Read", is_read_only=True), PermissionTarget(kind="read"), {})
        assert decision.behavior == "deny", mode
        assert decision.message is not None and decision.message.startswith("Permission check failed:"), mode


@pytest.mark.parametrize("mode,expected", [("default", "deny"), ("acceptEdits", "deny"), ("dontAsk", "deny"),
                                           ("plan", "deny"), ("bypassPermissions", "allow")])
def test_a_tool_that_declares_nothing_is_asked_about_not_allowed(tmp_path, mode, expected):
    """Fail closed: a tool with no ``permission_target`` (a new tool that forgot it) is ``generic`` — the policy
    knows nothing of it, so it asks (denied headless, with no prompter) in every mode but bypass; its call, which
    writes a canary, never runs unasked. A tool opts in to ``none`` explicitly (BashOutput, KillShell)."""
    import asyncio

    from desktop_agent.core.context import ToolUseContext
    from desktop_agent.core.tool import ToolInput, ToolResult, build_tool
    from desktop_agent.engine.execution import run_tool_use
    from desktop_agent.permissions.context import PermissionContext
    from desktop_agent.tools.bash.background import BashOutputTool, KillShellTool

    canary = tmp_path / "canary"

    def call(self, input, ctx):
        canary.write_text("ran")
        return ToolResult("done")

    tool = build_tool("Deploy", ToolInput, description="deploys", call=call)
    ws = str(tmp_path)
    ctx = ToolUseContext(cwd=ws, permission_context=PermissionContext(ws, mode=mode), tools=[tool])
    out = asyncio.run(run_tool_use({"type": "tool_use", "id": "t1", "name": "Deploy", "input": {}}, ctx))
    assert (not out.is_error) == (expected == "allow")
    assert canary.exists() == (expected == "allow")
    for opted_in in (BashOutputTool(), KillShellTool()):
        model = opted_in.input_model.model_construct(bash_id="b1", shell_id="b1")
        assert opted_in.permission_target(model, ctx).kind == "none"


# ---- the opacity rule (issue 21 item 7): a trusted project allows ``Bash(python3 *)``; opaque code (an
# interpreter's inline code) stands against command deny rules, and against path deny rules only when the sandbox
# cannot hold them (it masks ``Read``-denied paths): mode × (command deny, path deny only, no deny, sandbox unavailable)
OPAQUE = "python3 -c 'print(1)'"
ALLOW_PY = (A, "Bash(python3 *)", "projectSettings")
UNAVAILABLE = "The shell sandbox could not start"
OPACITY: list[tuple[str, list[tuple[str, str, str]], bool, list[tuple[str, str | None]]]] = [
    ("command-deny", [ALLOW_PY, (D, "Bash(rm:*)", "projectSettings")], True,
     [(Q, SAFETY), (Q, SAFETY), PLAN_DENY, (D, SAFETY), (D, SAFETY)]),
    ("path-deny-only", [ALLOW_PY, (D, "Read(./secret.txt)", "projectSettings")], True,
     [(A, RULE), (A, RULE), PLAN_DENY, BYPASS, (A, RULE)]),
    ("no-deny", [ALLOW_PY], True, [(A, RULE), (A, RULE), PLAN_DENY, BYPASS, (A, RULE)]),
    ("sandbox-unavailable", [ALLOW_PY, (D, "Read(./secret.txt)", "projectSettings")], False,
     [(Q, SAFETY), (Q, SAFETY), PLAN_DENY, (D, SAFETY), (D, SAFETY)]),
    ("sandbox-unavailable-no-deny", [ALLOW_PY], False, [(Q, SAFETY), (Q, SAFETY), PLAN_DENY, (Q, SAFETY), (D, MODE)]),
    # a path deny the sandbox cannot hold (a glob: masked only where a walk found it) keeps opaque code asking
    ("path-deny-glob", [ALLOW_PY, (D, "Read(./**/*.pem)", "projectSettings")], True,
     [(Q, SAFETY), (Q, SAFETY), PLAN_DENY, (D, SAFETY), (D, SAFETY)]),
]
OPACITY_ROWS = [pytest.param(o, i, id=f"{o[0]}-{mode}", marks=pytest.mark.needs_sandbox if o[2] else ())
                for o in OPACITY for i, mode in enumerate(MODES)]


@pytest.mark.parametrize("row,mode_index", OPACITY_ROWS)
def test_opacity_row(row, mode_index: int, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from desktop_agent.permissions import sandbox

    rid, spec, available, expected = row
    mode = MODES[mode_index]
    monkeypatch.setenv("HOME", env["home"])
    if not available:  # bubblewrap "not installed": what a chroot or a container without user namespaces gives
        monkeypatch.setenv("DESKTOP_AGENT_BWRAP", os.path.join(env["root"], "no-such-bwrap"))
    sandbox.reset_probe()
    try:
        pc = PermissionContext(env["ws"], mode=mode, rules=_rules(spec, env))
        ctx = ToolUseContext(cwd=env["ws"], permission_context=pc)
        decision = decide(ctx, ToolFacts(name="Bash"), PermissionTarget(kind="bash", command=OPAQUE, summary=OPAQUE),
                          {"command": OPAQUE})
    finally:
        monkeypatch.delenv("DESKTOP_AGENT_BWRAP", raising=False)
        sandbox.reset_probe()
    behavior, reason_type = expected[mode_index]
    assert decision.behavior == behavior, (rid, mode, decision)
    assert decision.decision_reason is not None and decision.decision_reason.type == reason_type, (rid, decision)
    if behavior == Q:
        # the reference's text when opacity asks; the sandbox's own sentence when it cannot start
        if available:
            assert decision.message == "This command requires approval", (rid, decision.message)
        else:
            assert decision.message is not None and decision.message.startswith(UNAVAILABLE), (rid, decision.message)
    if behavior == D and reason_type == SAFETY:
        assert decision.message.startswith(f"Permission to use Bash with command {OPAQUE} has been denied. "), rid
        assert "could not be checked against the deny rules" in decision.message, rid
    if reason_type == RULE:
        assert str(decision.decision_reason.rule.value) == "Bash(python3 *)", rid  # type: ignore[union-attr]


@pytest.mark.needs_sandbox
@pytest.mark.parametrize("escape,expected_default", [
    ({"dangerouslyDisableSandbox": True}, "ask"),  # runs outside the sandbox: the path deny is not held there
])
def test_opacity_stands_when_the_command_escapes_the_sandbox(escape, expected_default, env, monkeypatch):
    monkeypatch.setenv("HOME", env["home"])
    rules = _rules([ALLOW_PY, (D, "Read(./secret.txt)", "projectSettings")], env)
    for mode, wanted in (("default", expected_default), ("bypassPermissions", "deny")):
        ctx = ToolUseContext(cwd=env["ws"], permission_context=PermissionContext(env["ws"], mode=mode, rules=rules))
        inp = {"command": OPAQUE, **escape}
        decision = decide(ctx, ToolFacts(name="Bash"), PermissionTarget(kind="bash", command=OPAQUE, summary=OPAQUE,
                                                                        disable_sandbox=True), inp)
        assert decision.behavior == wanted, (mode, decision)
