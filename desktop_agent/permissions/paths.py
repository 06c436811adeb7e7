"""Path permission checks for Read and Edit/Write (SPEC §4.4, §4.5).

PLACEHOLDER from the foundation (the permissions issue replaces the bodies, keeping the signatures):
writes → passthrough (so the engine asks), reads inside the working dirs → allow, else ask.
"""

from __future__ import annotations

import os
from typing import Any

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.types import DecisionReason, PermissionDecision


def is_inside(path: str, directory: str) -> bool:
    path, directory = os.path.normpath(path), os.path.normpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def in_working_dirs(path: str, ctx: ToolUseContext) -> bool:
    return any(is_inside(path, d) for d in ctx.working_dirs)


def check_write_permission_for_tool(tool_name: str, abs_path: str, input: dict[str, Any],
                                    ctx: ToolUseContext) -> PermissionDecision:
    """Edit/Write path check (§4.4). Returns allow / deny / ask / passthrough."""
    return PermissionDecision(
        behavior="ask",
        message=f"Claude requested permissions to write to {abs_path}, but you haven't granted it yet.",
        updated_input=input,
        decision_reason=DecisionReason(type="workingDir" if not in_working_dirs(abs_path, ctx) else "mode",
                                       mode=getattr(ctx.permission_context, "mode", "default")),
    )


def check_read_permission_for_tool(tool_name: str, abs_path: str, input: dict[str, Any],
                                   ctx: ToolUseContext) -> PermissionDecision:
    """Read path check (§4.5)."""
    if in_working_dirs(abs_path, ctx):
        return PermissionDecision(behavior="allow", updated_input=input)
    return PermissionDecision(
        behavior="ask",
        message=f"Claude requested permissions to read from {abs_path}, but you haven't granted it yet.",
        updated_input=input, decision_reason=DecisionReason(type="workingDir"),
    )


def is_path_denied(abs_path: str, operation: str, ctx: ToolUseContext) -> bool:
    """True when a deny rule covers the path for ``operation`` ("read" or "edit"); Edit's validation uses it."""
    pc = ctx.permission_context
    fn = getattr(pc, "is_path_denied", None)
    return bool(fn(abs_path, operation, ctx)) if fn is not None else False
