"""The Bash tool's permission decision: the static analysis of the command against the rules, then the sandbox gate.

Owns ``bash_decision`` (what ``permissions.decide`` asks for a target of kind ``bash``): the rule matching of
``bash_commands.check_bash_permission``, the test-only skip-analysis switch (``sandbox.skip_analysis_requested``)
and ``sandbox.gate_decision`` (``dangerouslyDisableSandbox`` always asks; a sandbox that cannot start makes every
command not proven read-only ask).
"""

from __future__ import annotations

from typing import Any

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import PermissionDecision, PermissionTarget
from desktop_agent.permissions import bash_commands, sandbox


def _is_read_only(command: str) -> bool:
    try:
        return bool(bash_commands.is_read_only_command(command))
    except Exception:
        return False


def bash_decision(target: PermissionTarget, input: dict[str, Any], ctx: ToolUseContext) -> PermissionDecision:
    """The decision for one Bash call (``input`` is the call's input as the model sent it, unset fields left out)."""
    decision = bash_commands.check_bash_permission(input, ctx)
    skip = sandbox.skip_analysis_requested()
    if skip:  # test-only: the sandbox alone holds the line
        decision = sandbox.without_analysis(decision)
    return sandbox.gate_decision(decision, read_only=not skip and _is_read_only(target.command or ""),
                                 disable_sandbox=target.disable_sandbox, pc=ctx.permission_context)
