"""Bash command analysis: splitting compound commands, read-only classification, permission checks.

PLACEHOLDER from the foundation (the permissions issue replaces it with a real shell parse):
a conservative read-only check and ``check_bash_permission`` returning passthrough.
"""

from __future__ import annotations

import shlex
from typing import Any

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.types import PermissionDecision

_READ_ONLY = {"ls", "cat", "echo", "pwd", "head", "tail", "grep", "find", "wc", "which", "diff", "stat", "du"}


def is_read_only_command(command: str) -> bool:
    if any(ch in command for ch in ";&|><`$\n"):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    return bool(argv) and argv[0] in _READ_ONLY


def check_bash_permission(input: dict[str, Any], ctx: ToolUseContext) -> PermissionDecision:
    command = str(input.get("command", ""))
    if is_read_only_command(command):
        return PermissionDecision(behavior="allow", updated_input=input)
    return PermissionDecision(behavior="passthrough", message="This command requires approval", updated_input=input)
