"""Hooks (SPEC §4.7, App. B §B.5). FOUNDATION: only the outcome types and the runner interface.

``run_tool_use`` calls ``ctx.hooks.pre_tool_use(...)`` after validation and before the permission
check, and ``ctx.hooks.post_tool_use(...)`` after the result block is mapped. ``ctx.hooks`` is None
when there are no hooks. The permissions issue implements command hooks from settings files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol


@dataclass
class PreToolUseOutcome:
    decision: Literal["allow", "deny", "ask"] | None = None
    reason: str | None = None
    updated_input: dict[str, Any] | None = None
    # Exit code 2: the text fed to the model (``PreToolUse:<Tool> hook error: [<cmd>]: <stderr>``).
    blocking_error: str | None = None
    additional_context: str | None = None
    stop: bool = False  # "continue": false
    stop_reason: str | None = None


@dataclass
class PostToolUseOutcome:
    block_reason: str | None = None
    updated_output: Any = None
    additional_context: str | None = None
    stop: bool = False
    stop_reason: str | None = None


class HookRunnerProtocol(Protocol):
    async def pre_tool_use(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str, ctx: Any) -> PreToolUseOutcome: ...

    async def post_tool_use(
        self, tool_name: str, tool_input: dict[str, Any], tool_response: Any, tool_use_id: str, ctx: Any
    ) -> PostToolUseOutcome: ...
