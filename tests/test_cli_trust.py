"""Untrusted folders through the real CLI (issue 12 item 6, App. A): ``desktop-agent -p`` against the fake API in a
folder whose ``.claude/settings.json`` carries hooks for five events (each ``touch``es a canary), an ``env``
variable, a permissive allow rule and a deny rule. Untrusted: no hook runs, the env is not applied, the allow
rule does not count, the deny rule does. Trusted by ``--trust`` or by Claude Code's own record (``~/.claude.json``
→ ``projects[<folder or a parent>].hasTrustDialogAccepted``, read and never written): the hooks run and the env
applies. Also the list flags' variadic parsing as the CLI sees it (exit 2 naming an invalid rule)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.test_cli import cli_env, jsonl, run_cli

EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart", "Stop")


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def cloned(tmp_path):
    """A cloned project (not trusted by anyone yet) and a canary dir outside it."""
    proj = tmp_path / "clones" / "proj"
    canaries = tmp_path / "canaries"
    (proj / ".claude").mkdir(parents=True)
    canaries.mkdir()
    (proj / "notes.txt").write_text("hello notes\n")
    (proj / "victim").write_text("keep me\n")
    hooks = {event: [{"matcher": "*" if event in ("PreToolUse", "PostToolUse") else "",
                      "hooks": [{"type": "command", "command": f"touch {canaries / event}"}]}] for event in EVENTS}
    settings = {"hooks": hooks, "env": {"PROJ_ENV_CANARY": "from-project"},
                "permissions": {"deny": ["Bash(rm *)"], "allow": ["Bash(printenv:*)"]}}
    (proj / ".claude" / "settings.json").write_text(json.dumps(settings))
    return proj, canaries


def _env(fake: FakeAnthropic, home: Path, *, claude_config_dir: Path | None = None) -> dict[str, str]:
    env = cli_env(fake, home)
    env.pop("CLAUDE_CONFIG_DIR", None)
    env.pop("PROJ_ENV_CANARY", None)
    if claude_config_dir is not None:
        env["CLAUDE_CONFIG_DIR"] = str(claude_config_dir)
    return env


def _turn(fake: FakeAnthropic, proj: Path) -> None:
    """One scripted turn: printenv, a Read, an rm the project denies (one call per model message, so that no
    error cancels a sibling); then the final text."""
    fake.script([
        reply(tool_use("Bash", {"command": "printenv"}, id="toolu_env")),
        reply(tool_use("Read", {"file_path": str(proj / "notes.txt")}, id="toolu_read")),
        reply(tool_use("Bash", {"command": "rm victim"}, id="toolu_rm")),
        reply(text("done")),
    ])


def _results(out_stdout: str) -> dict[str, dict]:
    results: dict[str, dict] = {}
    for line in jsonl(out_stdout):
        if line.get("type") == "user" and isinstance(line["message"]["content"], list):
            for b in line["message"]["content"]:
                if b.get("type") == "tool_result":
                    assert b["tool_use_id"] not in results, "one tool_result per tool_use"
                    results[b["tool_use_id"]] = b
    return results


def _text(block: dict) -> str:
    c = block.get("content")
    return c if isinstance(c, str) else "".join(x.get("text", "") for x in c or [])


def _run(fake, proj, env, *extra: str):
    _turn(fake, proj)
    out = run_cli(["-p", "look around", "--output-format", "stream-json", "--verbose", *extra], proj, env)
    assert out.returncode == 0, out.stderr
    results = _results(out.stdout)
    assert set(results) == {"toolu_env", "toolu_read", "toolu_rm"}
    fake.assert_done()
    return results


def _assert_deny_holds(proj: Path, results: dict[str, dict]) -> None:
    assert results["toolu_rm"]["is_error"] and "denied" in _text(results["toolu_rm"])
    assert (proj / "victim").read_text() == "keep me\n"
    assert "hello notes" in _text(results["toolu_read"])


def test_untrusted_folder_runs_no_project_hook_and_applies_no_project_env(fake, cloned, tmp_path):
    proj, canaries = cloned
    home = tmp_path / "home"
    home.mkdir()
    # Claude Code's record exists but does not trust this folder (false, or another folder)
    (home / ".claude.json").write_text(json.dumps({"projects": {
        str(proj): {"hasTrustDialogAccepted": False}, str(tmp_path / "elsewhere"): {"hasTrustDialogAccepted": True}}}))
    before = (home / ".claude.json").read_text()
    results = _run(fake, proj, _env(fake, home))
    assert sorted(os.listdir(canaries)) == []  # no hook of any of the five events ran
    assert "PROJ_ENV_CANARY" not in _text(results["toolu_env"])
    _assert_deny_holds(proj, results)
    assert (home / ".claude.json").read_text() == before  # read, never written


@pytest.mark.needs_sandbox
def test_untrusted_in_bypass_mode_deny_still_holds_and_env_stays_out(fake, cloned, tmp_path):
    proj, canaries = cloned
    home = tmp_path / "home"
    home.mkdir()
    results = _run(fake, proj, _env(fake, home), "--permission-mode", "bypassPermissions")
    assert sorted(os.listdir(canaries)) == []
    assert not results["toolu_env"].get("is_error") and "PATH=" in _text(results["toolu_env"])
    assert "PROJ_ENV_CANARY" not in _text(results["toolu_env"])
    _assert_deny_holds(proj, results)


@pytest.mark.needs_sandbox
def test_trust_flag_applies_the_project_configuration(fake, cloned, tmp_path):
    proj, canaries = cloned
    home = tmp_path / "home"
    home.mkdir()
    results = _run(fake, proj, _env(fake, home), "--trust")
    assert sorted(os.listdir(canaries)) == sorted(EVENTS)
    assert not results["toolu_env"].get("is_error") and "PROJ_ENV_CANARY=from-project" in _text(results["toolu_env"])
    _assert_deny_holds(proj, results)


@pytest.mark.needs_sandbox
def test_claude_code_record_trusts_the_folder(fake, cloned, tmp_path):
    proj, canaries = cloned
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps({"projects": {str(proj): {"hasTrustDialogAccepted": True}}}))
    before = (home / ".claude.json").read_text()
    results = _run(fake, proj, _env(fake, home))
    assert sorted(os.listdir(canaries)) == sorted(EVENTS)
    assert "PROJ_ENV_CANARY=from-project" in _text(results["toolu_env"])
    _assert_deny_holds(proj, results)
    assert (home / ".claude.json").read_text() == before


def test_claude_code_record_of_a_parent_under_claude_config_dir(fake, cloned, tmp_path):
    """As the reference: trusting a folder trusts its children; ``$CLAUDE_CONFIG_DIR/.claude.json`` is the record."""
    proj, canaries = cloned
    home = tmp_path / "home"
    config = tmp_path / "cc-config"
    home.mkdir()
    config.mkdir()
    (home / ".claude.json").write_text(json.dumps({"projects": {}}))  # not the file used when the dir is set
    (config / ".claude.json").write_text(json.dumps({"projects": {str(proj.parent): {"hasTrustDialogAccepted": True}}}))
    _run(fake, proj, _env(fake, home, claude_config_dir=config))
    assert sorted(os.listdir(canaries)) == sorted(EVENTS)


def test_list_flags_take_several_values_and_an_invalid_rule_is_exit_2(fake, tmp_path):
    """``--disallowedTools Edit "Bash(rm *)"`` is two deny rules, in bypass mode too; a value that is no rule
    (a prompt put after a list flag) stops the CLI naming it, and no model call is made."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "victim").write_text("keep\n")
    home = tmp_path / "home"
    home.mkdir()
    env = _env(fake, home)
    fake.script([reply(tool_use("Bash", {"command": "rm victim"}, id="toolu_rm"),
                       tool_use("Edit", {"file_path": str(ws / "victim"), "old_string": "keep",
                                         "new_string": "gone"}, id="toolu_ed")),
                 reply(text("ok"))])
    out = run_cli(["--disallowedTools", "Edit", "Bash(rm *)", "--dangerously-skip-permissions",
                   "--output-format", "stream-json", "--verbose", "-p", "--", "remove it"], ws, env)
    assert out.returncode == 0, out.stderr
    results = _results(out.stdout)
    assert _text(results["toolu_rm"]) == "Permission to use Bash with command rm victim has been denied."
    assert "Edit exists but is not enabled in this context" in _text(results["toolu_ed"])
    assert (ws / "victim").read_text() == "keep\n"
    fake.assert_done()
    n = len(fake.requests)
    out = run_cli(["-p", "--disallowedTools", "Edit", "Bash(rm *)", "remove the file"], ws, env)
    assert out.returncode == 2 and out.stdout == ""
    assert "'remove' is not a valid permission rule" in out.stderr and "--disallowedTools" in out.stderr
    assert len(fake.requests) == n
