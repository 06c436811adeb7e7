"""Unit tests: rule parsing, Bash pattern matching, suggestions (the shell parse and the read-only
classification are tested in tests/shell/)."""

from __future__ import annotations

import pytest

from desktop_agent.permissions.bash import check_bash_permission, suggest_rule
from desktop_agent.shell.parse import parse_command
from desktop_agent.permissions.rules import (bash_pattern_matches, compile_path_pattern, parse_rule, split_rule_list,
                                             tool_name_matches)


@pytest.mark.parametrize("text,name,content", [
    ("Bash", "Bash", None), ("Bash(*)", "Bash", None), ("Bash()", "Bash", None),
    ("Bash(npm test:*)", "Bash", "npm test:*"), ("Read(./.env)", "Read", "./.env"),
    ("Bash(echo \\(x\\))", "Bash", "echo (x)"), ("Bash(python -c 'print(1)')", "Bash", "python -c 'print(1)'"),
    ("mcp__srv__tool", "mcp__srv__tool", None), ("WebFetch(domain:x.org)", "WebFetch", "domain:x.org"),
])
def test_parse_rule(text, name, content):
    v = parse_rule(text)
    assert (v.tool_name, v.rule_content) == (name, content)


def test_split_rule_list():
    assert split_rule_list(["Bash(git log *),Edit", "Read Write"]) == ["Bash(git log *)", "Edit", "Read", "Write"]


@pytest.mark.parametrize("pattern,command,expected", [
    ("npm test:*", "npm test", True), ("npm test:*", "npm test -- -x", True), ("npm test:*", "npm tests", False),
    ("ls *", "ls", True), ("ls *", "ls -la", True), ("ls *", "lsof", False), ("ls*", "lsof", True),
    ("git * main", "git push origin main", True), ("git * main", "git push origin dev", False),
    ("git:* push", "git push", False), ("git:* push", "git:x push", True),
    ("echo \\*", "echo *", True), ("echo \\*", "echo x", False),
    ("make build", "make build", True), ("make build", "make build all", False),
    ("*", "anything at all", True),
])
def test_bash_pattern(pattern, command, expected):
    assert bash_pattern_matches(pattern, command) is expected


def test_tool_name_globs():
    assert tool_name_matches("*", "Edit", "deny") and not tool_name_matches("*", "Edit", "allow")
    assert tool_name_matches("mcp__*", "mcp__a__b", "ask") and not tool_name_matches("mcp__*", "mcp__a__b", "allow")
    assert tool_name_matches("mcp__a__*", "mcp__a__b", "allow") and tool_name_matches("mcp__a", "mcp__a__b", "allow")
    assert not tool_name_matches("mcp__a", "mcp__ab__c", "deny")


def test_path_pattern_forms(tmp_path):
    cwd, home = "/w/proj", "/h"
    assert compile_path_pattern("//etc/**", "deny", cwd, cwd, home).matches("/etc/passwd")
    assert compile_path_pattern("~/x/**", "allow", cwd, cwd, home).matches("/h/x/y")
    assert compile_path_pattern("/src/**", "allow", "/root/of/settings", cwd, home).matches("/root/of/settings/src/a")
    assert not compile_path_pattern("/src/**", "allow", "/root/of/settings", cwd, home).matches("/w/proj/src/a")
    assert compile_path_pattern(".env", "deny", cwd, cwd, home).matches("/elsewhere/.env")  # deny: anywhere
    assert not compile_path_pattern(".env", "allow", cwd, cwd, home).matches("/elsewhere/.env")
    assert compile_path_pattern("docs/*.md", "allow", cwd, cwd, home).matches("/w/proj/docs/a.md")
    assert not compile_path_pattern("docs/*.md", "allow", cwd, cwd, home).matches("/w/proj/docs/x/a.md")


@pytest.mark.parametrize("command,rule", [
    ("npm test", "Bash(npm test:*)"), ("npm test --watch", "Bash(npm test:*)"), ("make", "Bash(make)"),
    ("./run.sh --fast", "Bash(./run.sh --fast)"), ("python script.py", "Bash(python script.py)"),
    ("rm -rf build", "Bash(rm -rf build)"), ("NODE_ENV=x npm test", "Bash(npm test:*)"),
    ("git commit -m 'x'", "Bash(git commit:*)"),
])
def test_suggestions(command, rule):
    p = parse_command(command)
    assert suggest_rule(p.commands[0]) == rule


def test_compound_suggestions_capped_at_five():
    from desktop_agent.permissions.context import PermissionContext
    from desktop_agent.core.context import ToolUseContext

    ctx = ToolUseContext(cwd="/tmp", permission_context=PermissionContext("/tmp"))
    cmd = " && ".join(f"tool{i} run" for i in range(8))
    d = check_bash_permission({"command": cmd}, ctx)
    assert d.behavior == "passthrough"
    assert len(d.suggestions[0].rules) == 5 and d.suggestions[0].destination == "localSettings"
    assert d.message.startswith("This Bash command contains multiple operations. The following parts require "
                                "approval: tool0 run, tool1 run")


@pytest.mark.parametrize("command,again,other", [
    ("rm -f *.o", "rm -f *.o", "rm -f *.c"),
    ('python tool.py "a (b)"', 'python tool.py "a (b)"', 'python tool.py "a (c)"'),
    ("./build.sh  --release", "./build.sh --release", "./build.sh --debug"),
    ("cargo build --release", "cargo build", "cargo test"),
])
def test_always_allow_matches_again_and_only_that(command, again, other, tmp_path):
    """The saved rule (through settings.local.json and a reload) matches the same command next time."""
    import json

    from desktop_agent.core.context import ToolUseContext
    from desktop_agent.permissions.context import PermissionContext

    ws = str(tmp_path)
    pc = PermissionContext(ws)
    ctx = ToolUseContext(cwd=ws, permission_context=pc)
    first = check_bash_permission({"command": command}, ctx)
    assert first.behavior == "passthrough"
    pc.apply_updates(first.suggestions)
    with open(tmp_path / ".claude" / "settings.local.json") as fh:
        saved = json.load(fh)["permissions"]["allow"]
    fresh = PermissionContext.load(ws, trusted=True)
    assert [str(r.value) for r in fresh.rules if r.behavior == "allow"] == saved
    ctx2 = ToolUseContext(cwd=ws, permission_context=fresh)
    assert check_bash_permission({"command": again}, ctx2).behavior == "allow"
    assert check_bash_permission({"command": other}, ctx2).behavior == "passthrough"


def test_read_deny_globs_for_ripgrep(tmp_path):
    from desktop_agent.core.context import ToolUseContext
    from desktop_agent.permissions.context import PermissionContext
    from desktop_agent.permissions.path_rules import read_deny_globs

    ws = str(tmp_path)
    pc = PermissionContext(ws)
    pc.add_rules(["Read(.env)", "Read(./secrets/**)", "Read(//etc/**)"], "deny")
    ctx = ToolUseContext(cwd=ws, permission_context=pc)
    globs = read_deny_globs(ws, pc)
    assert "!**/.env" in globs and "!secrets/**" in globs
    assert not any("etc" in g for g in globs)
    sub = read_deny_globs(str(tmp_path / "secrets"), pc)
    assert "!**" in sub
