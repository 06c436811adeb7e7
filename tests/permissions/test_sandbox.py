"""The sandbox policy (desktop_agent/permissions/sandbox.py) built from real permission contexts over real files:
what is writable, masked and read-only, the settings ``sandbox`` block and trust, the git overrides (run
against a real repository with hostile config), the gate on the static analysis' decision, and the probe."""

from __future__ import annotations

import os
import subprocess

import pytest

from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.settings import SettingsSource
from desktop_agent.core.permission import DecisionReason, PermissionDecision, PermissionRule
from desktop_agent.permissions.rules import parse_rule
from desktop_agent.permissions import sandbox
from desktop_agent.permissions import protected, sandbox_launch, sandbox_policy, sandbox_settings
from desktop_agent.util import git_env


def pc_with(ws, deny=(), trusted=True, mode="default"):
    rules = [PermissionRule(value=parse_rule(r), behavior="deny", source="session") for r in deny]
    return PermissionContext(str(ws), mode=mode, rules=rules, trusted=trusted)


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    (d / "src").mkdir(parents=True)
    (d / "src" / "app.ts").write_text("x")
    (d / ".env").write_text("SECRET=1")
    (d / "secrets").mkdir()
    (d / "secrets" / "a.key").write_text("k")
    (d / "deep" / "er").mkdir(parents=True)
    (d / "deep" / "er" / ".env").write_text("S2")
    (d / "deep" / "er" / "c.pem").write_text("pem")
    return d


def build(ws, **kw):
    pc = pc_with(ws, **kw)
    return sandbox_policy.build_policy(pc, pc.working_dirs, tmpdir=str(ws.parent / "tmpdir"),
                                settings=sandbox_settings.SandboxSettings())


def test_writable_is_the_working_dirs_and_the_private_tmpdir(ws, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    pc = PermissionContext(str(ws), additional_dirs=[str(extra)])
    policy = sandbox_policy.build_policy(pc, pc.working_dirs, tmpdir=str(tmp_path / "t"), settings=sandbox_settings.SandboxSettings())
    assert policy.writable == [str(ws), str(extra), str(tmp_path / "t")]
    assert not policy.network and not policy.masked_files and not policy.masked_dirs
    args = policy.bwrap_args()
    assert args[:3] == ["--ro-bind", "/", "/"] and "--unshare-all" in args and "--share-net" not in args
    assert ["--cap-drop", "ALL"] == args[args.index("--cap-drop"):args.index("--cap-drop") + 2]
    assert "--new-session" not in args and "--die-with-parent" in args


def test_read_deny_masks_files_and_directories(ws):
    policy = build(ws, deny=["Read(./.env)", "Read(./secrets/**)", "Read(./secrets/a.key)", "Read(./missing)"])
    assert policy.masked_files == [str(ws / ".env")]
    assert policy.masked_dirs == [str(ws / "secrets")]  # the file inside is covered by the directory
    args = policy.bwrap_args()
    i = args.index(str(ws / ".env"))
    assert args[i - 2:i] == ["--ro-bind", "/dev/null"]
    j = args.index("--tmpfs")
    assert args[j:j + 4] == ["--tmpfs", str(ws / "secrets"), "--remount-ro", str(ws / "secrets")]
    assert j > max(k for k, a in enumerate(args) if a == "--bind")  # masks come after the writable binds


def test_globs_and_unanchored_patterns_are_expanded(ws):
    policy = build(ws, deny=["Read(.env)", "Read(**/*.pem)", "Read(./.ENV)"])
    assert sorted(policy.masked_files) == sorted([str(ws / ".env"), str(ws / "deep/er/.env"),
                                                  str(ws / "deep/er/c.pem")])


def test_symlink_is_masked_at_its_target(ws, tmp_path):
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("s")
    os.symlink(out / "secret.txt", ws / "link")
    policy = build(ws, deny=["Read(./link)"])
    assert policy.masked_files == [str(out / "secret.txt")]


def test_edit_deny_git_and_claude_dirs_are_read_only(ws):
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    hooks = ws / ".git" / "hooks"
    subprocess.run(["rm", "-rf", str(hooks)], check=True)
    (ws / ".claude").mkdir()
    policy = build(ws, deny=["Edit(./src/**)", "Edit(//etc/passwd)"])
    assert hooks.is_dir()  # created so a command cannot plant one
    # /etc is read-only anyway; the rest of the protected list (placeholders, commondir) is tests/permissions/
    # test_protected.py's
    assert {str(ws / "src"), str(hooks), str(ws / ".git" / "config"), str(ws / ".claude")} <= set(policy.read_only)
    assert "/etc/passwd" not in policy.read_only and policy.pinned == [str(ws / ".git")]


def test_a_worktree_git_file_protects_the_real_git_dir(ws):
    real = ws / "gitdirs" / "real.git"  # inside the writable dir (outside it everything is read-only anyway)
    (real / "hooks").mkdir(parents=True)
    (real / "config").write_text("[core]\n")
    (ws / ".git").write_text(f"gitdir: {os.path.relpath(real, ws)}\n")
    assert protected.dot_git(str(ws)) == str(real)
    policy = build(ws)
    assert {str(real / "hooks"), str(real / "config"), str(ws / ".git")} <= set(policy.read_only)
    assert policy.pinned == [str(ws / "gitdirs"), str(real)]  # `mv gitdirs/real.git x`, `mv gitdirs y` fail
    (ws / ".git").write_text("not a gitdir line\n")
    policy = build(ws)
    assert protected.dot_git(str(ws)) is None and str(real / "config") not in policy.read_only
    assert str(ws / ".git") in policy.read_only and policy.pinned == []


def test_settings_block_and_trust(tmp_path):
    proj = tmp_path / "p"
    (proj / ".claude").mkdir(parents=True)
    block = {"sandbox": {"enabled": False, "excludedCommands": ["git"], "allowUnsandboxedCommands": True,
                         "network": {"allowedDomains": ["example.com"]},
                         "filesystem": {"allowWrite": ["//opt/x"], "denyRead": ["./private"], "denyWrite": ["~/k"]}}}
    src = SettingsSource("projectSettings", str(proj / ".claude" / "settings.json"), block, str(proj))
    untrusted = sandbox_settings.settings_from_sources([src], trusted=False, cwd=str(proj), home="/h")
    assert untrusted.enabled is None and not untrusted.network and not untrusted.excluded_commands
    assert not untrusted.allow_write
    assert [p.root for p in untrusted.deny_read] == [str(proj)] and [p.glob for p in untrusted.deny_read] == ["private"]
    assert [p.root for p in untrusted.deny_write] == ["/h"]
    trusted = sandbox_settings.settings_from_sources([src], trusted=True, cwd=str(proj), home="/h")
    assert trusted.enabled is False and trusted.network and trusted.excluded_commands == ("git",)
    assert trusted.allow_write == ("/opt/x",)
    user = SettingsSource("userSettings", "/h/.claude/settings.json",
                          {"sandbox": {"allowUnsandboxedCommands": False, "failIfUnavailable": True}}, "/h/.claude")
    merged = sandbox_settings.settings_from_sources([src, user], trusted=False, cwd=str(proj), home="/h")
    assert merged.fail_if_unavailable and not merged.allow_unsandboxed_commands


def test_excluded_commands_only_for_plain_command_lines():
    s = sandbox_settings.SandboxSettings(excluded_commands=("docker compose", "git:*"))
    assert sandbox_launch.is_excluded_command("git status", s) and sandbox_launch.is_excluded_command("docker compose up", s)
    for cmd in ["git status; rm -rf x", "git $(touch x)", "gitx", "docker ps", "git log > out", "git `id`"]:
        assert not sandbox_launch.is_excluded_command(cmd, s), cmd


def test_git_overrides_neutralise_hostile_repository_config(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    canary = tmp_path / "ran"

    def git(*args, env=None):
        return subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, text=True)

    git("init", "-q")
    (repo / "f").write_text("a\n")
    git("add", "f")
    git("-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "x")
    (repo / "f").write_text("b\n")
    for key in ("core.fsmonitor", "diff.external", "core.pager"):
        git("config", key, f"touch {canary}.{key}; false")
    (repo / ".git" / "hooks" / "pre-commit").write_text(f"#!/bin/sh\ntouch {canary}.hook\n")
    (repo / ".git" / "hooks" / "pre-commit").chmod(0o755)
    env = git_env.git_safety_env({**os.environ, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.name",
                                  "GIT_CONFIG_VALUE_0": "kept"})
    assert env["GIT_CONFIG_KEY_0"] == "user.name" and env["GIT_CONFIG_KEY_1"] == "core.fsmonitor"
    out = git("-p", "diff", env=env)
    assert out.returncode == 0 and "-a\n+b" in out.stdout
    git("status", env=env)
    assert git("-c", "user.email=a@b", "commit", "-qam", "y", env=env).returncode == 0
    assert git("log", "-1", "--format=%an", env=env).stdout.strip() == "kept"
    assert not list(tmp_path.glob("ran*"))
    git("status")  # without the overrides the repository's fsmonitor runs: the test's config is live
    assert list(tmp_path.glob("ran.core.fsmonitor"))


def test_without_analysis_keeps_rule_denials_only():
    rule = PermissionRule(value=parse_rule("Bash(rm:*)"), behavior="deny", source="session")
    deny = PermissionDecision(behavior="deny", message="no", decision_reason=DecisionReason(type="rule", rule=rule))
    assert sandbox.without_analysis(deny) is deny
    read_rule = PermissionRule(value=parse_rule("Read(./.env)"), behavior="deny", source="session")
    path_deny = PermissionDecision(behavior="deny", decision_reason=DecisionReason(type="rule", rule=read_rule))
    assert sandbox.without_analysis(path_deny).behavior == "allow"  # the sandbox masks the file instead
    other = PermissionDecision(behavior="deny", message="outside", decision_reason=DecisionReason(type="workingDir"))
    assert sandbox.without_analysis(other).behavior == "allow"
    assert sandbox.without_analysis(PermissionDecision(behavior="passthrough")).behavior == "allow"


@pytest.fixture
def no_bwrap(monkeypatch):
    monkeypatch.setenv(sandbox.BWRAP_ENV, "/nonexistent/bwrap")
    sandbox.reset_probe()
    yield
    sandbox.reset_probe()


def test_gate_unavailable_asks_unless_read_only(no_bwrap, ws, capsys):
    pc = pc_with(ws, mode="bypassPermissions")
    allow = PermissionDecision(behavior="allow")
    asked = sandbox.gate_decision(allow, read_only=False, disable_sandbox=False, pc=pc)
    assert asked.behavior == "ask" and asked.decision_reason.type == "safetyCheck"
    assert "could not start" in asked.message and "/nonexistent/bwrap" in asked.message
    assert sandbox.gate_decision(allow, read_only=True, disable_sandbox=False, pc=pc) is allow
    denied = PermissionDecision(behavior="deny", message="rule")
    assert sandbox.gate_decision(denied, read_only=False, disable_sandbox=False, pc=pc) is denied
    assert capsys.readouterr().err.count("sandbox could not start") == 1
    assert sandbox.sandbox_warning(pc) == asked.message


def test_gate_required_sandbox_denies(no_bwrap, ws, monkeypatch):
    monkeypatch.setenv(sandbox.MODE_ENV, "on")
    out = sandbox.gate_decision(PermissionDecision(behavior="allow"), read_only=False, disable_sandbox=False,
                                pc=pc_with(ws))
    assert out.behavior == "deny" and "refused" in out.message


def test_gate_escape_always_asks(ws):
    pc = pc_with(ws, mode="bypassPermissions")
    out = sandbox.gate_decision(PermissionDecision(behavior="allow"), read_only=True, disable_sandbox=True, pc=pc)
    assert out.behavior == "ask" and out.decision_reason.type == "safetyCheck"
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text('{"sandbox": {"allowUnsandboxedCommands": false}}')
    pc = pc_with(ws, mode="bypassPermissions")  # settings are read once per context: a new one reads the file
    assert sandbox_settings.load_sandbox_settings(pc).allow_unsandboxed_commands is False
    allow = PermissionDecision(behavior="allow")
    assert sandbox.gate_decision(allow, read_only=True, disable_sandbox=True, pc=pc) is allow


def test_status_modes(ws, monkeypatch):
    monkeypatch.setenv(sandbox.MODE_ENV, "off")
    assert sandbox.sandbox_status(None).state == "disabled" and sandbox.sandbox_warning(None) is None
    monkeypatch.setenv(sandbox.MODE_ENV, "auto")
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text('{"sandbox": {"enabled": false}}')
    pc = pc_with(ws)
    assert sandbox_settings.load_sandbox_settings(pc).enabled is False
    assert sandbox.sandbox_status(pc).state == "disabled"
    (ws / ".claude" / "settings.json").unlink()
    if sandbox.probe().ok:
        assert sandbox.sandbox_status(pc_with(ws)).state == "active"
