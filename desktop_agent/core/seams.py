"""The typed seams of ``ToolUseContext`` besides the prompter and the sandbox: what the engine, the permission
gateway and the tools need of the session's permission state, hook runner and file history.

Owns ``PermissionState`` (``permissions.context.PermissionContext`` implements it), ``ToolHooks`` with the
verdicts it returns (``permissions.hooks.HookRunner`` and its outcome dataclasses implement them), ``FileBackups``
(``session.history.FileHistory``) and the closed set of hook event names, ``HookEvent``. These are structural
types: core imports neither package, and a test's stand-in conforms by having the members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from desktop_agent.core.permission import PermissionMode, PermissionReply, PermissionUpdate, ReadPolicy

if TYPE_CHECKING:  # pragma: no cover
    from desktop_agent.core.context import ToolUseContext

HookEvent = Literal["PreToolUse", "PostToolUse", "PermissionRequest", "UserPromptSubmit", "Stop", "SessionStart",
                    "Notification", "SubagentStop", "PreCompact", "SessionEnd"]


class PermissionState(ReadPolicy, Protocol):
    """The session's permission state as the engine and the tools read it: the mode, the working directories
    (the original cwd first, then ``--add-dir`` / settings / session grants) and the Read deny rules
    (``ReadPolicy``). Rules and their caches stay behind ``permissions``, which narrows to its own class."""

    @property
    def mode(self) -> PermissionMode: ...

    @property
    def working_dirs(self) -> list[str]: ...

    @property
    def original_cwd(self) -> str: ...


class PreToolUseVerdict(Protocol):
    """What ``run_tool_use`` reads of the PreToolUse hooks' combined outcome."""

    @property
    def decision(self) -> Literal["allow", "deny", "ask"] | None: ...

    @property
    def reason(self) -> str | None: ...

    @property
    def updated_input(self) -> dict[str, Any] | None: ...

    @property
    def blocking_error(self) -> str | None: ...

    @property
    def additional_context(self) -> str | None: ...


class PostToolUseVerdict(Protocol):
    """What ``run_tool_use`` reads of the PostToolUse hooks' combined outcome."""

    @property
    def block_reason(self) -> str | None: ...

    @property
    def updated_output(self) -> Any: ...

    @property
    def additional_context(self) -> str | None: ...

    @property
    def stop(self) -> bool: ...

    @property
    def stop_reason(self) -> str | None: ...


class ToolHooks(Protocol):
    """What the tool-call path asks of the session's hook runner: PreToolUse and PostToolUse around each call,
    PermissionRequest hooks raced against the prompter, and the ``permission_prompt`` Notification."""

    async def pre_tool_use(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str,
                           ctx: ToolUseContext | None) -> PreToolUseVerdict: ...

    async def post_tool_use(self, tool_name: str, tool_input: dict[str, Any], tool_response: Any, tool_use_id: str,
                            ctx: ToolUseContext | None) -> PostToolUseVerdict: ...

    async def permission_request(self, tool_name: str, tool_input: dict[str, Any],
                                 suggestions: list[PermissionUpdate], ctx: ToolUseContext | None,
                                 tool_use_id: str | None = None) -> PermissionReply | None:
        """A reply when a PermissionRequest hook decides, else None."""
        ...

    def has_hooks(self, event: HookEvent, match_value: str | None = None) -> bool:
        """At least one hook of ``event`` matches ``match_value`` (a tool name, a notification type...)."""
        ...

    def notify_soon(self, message: str, ctx: ToolUseContext | None, notification_type: str,
                    title: str | None = None) -> None:
        """Notification hooks started in the background (nothing waits for them)."""
        ...


class FileBackups(Protocol):
    """The session's file history: a backup of a file's current content before a tool writes it."""

    def backup(self, abs_path: str, tag: str | None = None) -> str | None: ...
