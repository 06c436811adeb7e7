"""Hostile spellings of a denied command: with ``deny: Bash(rm:*)`` and ``allow: Bash`` every way of running
``rm`` must be denied (or at least not allowed), in ``default`` and in ``bypassPermissions`` mode.

All spellings are pinned as regressions. ``BYPASS`` were found by this suite and fixed: a command name built
at run time (``rm${IFS}x``, ``$(echo rm)``, ``$a``) cannot be matched against a deny rule, so it asks as a
safety check; ``find -exec rm`` runs ``rm`` as an argument, so the deny rules see it. Prints each decision.
"""

from __future__ import annotations

import asyncio

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.gateway import decide_for
from desktop_agent.permissions.rules import parse_rule
from desktop_agent.core.permission import PermissionRule
from desktop_agent.tools.registry import all_builtin_tools

TOOLS = {t.name: t for t in all_builtin_tools()}

CAUGHT = ["rm x", "\\rm x", "'rm' x", '"rm" x', 'r""m x', "ls; rm x", "ls && rm x", "ls | rm x", "echo $(rm x)",
          "echo `rm x`", "bash -c 'rm x'", 'sh -c "rm x"', "env rm x", "command rm x", "nice rm x",
          "timeout 5 rm x", "xargs rm < f", "FOO=1 rm x", "/bin/rm x", "(rm x)", "{ rm x; }",
          "if true; then rm x; fi", "eval rm x", "exec rm x", "sudo rm x", "nohup rm x &", "builtin rm x",
          "time rm x", "true\nrm x"]
BYPASS = ["find . -exec rm {} +", "rm${IFS}x", "$(echo rm) x", "a=rm; $a x"]


def _decide(mode: str, command: str, ws: str):
    rules = [PermissionRule(value=parse_rule("Bash"), behavior="allow", source="localSettings"),
             PermissionRule(value=parse_rule("Bash(rm:*)"), behavior="deny", source="localSettings")]
    ctx = ToolUseContext(cwd=ws, permission_context=PermissionContext(ws, mode=mode, rules=rules),
                         tools=list(TOOLS.values()))
    bash = TOOLS["Bash"]
    return decide_for(bash, bash.input_model.model_validate({"command": command}), ctx)


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
@pytest.mark.parametrize("command", CAUGHT)
def test_denied_spellings_stay_denied(tmp_path, mode, command):
    d = _decide(mode, command, str(tmp_path))
    print(f"{mode}: {command!r} → {d.behavior}")
    assert d.behavior == "deny"


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
@pytest.mark.parametrize("command", BYPASS)
def test_dynamic_or_nested_rm_is_not_allowed(tmp_path, mode, command):
    d = _decide(mode, command, str(tmp_path))
    print(f"{mode}: {command!r} → {d.behavior}")
    assert d.behavior != "allow"
