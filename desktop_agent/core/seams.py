"""The typed seams of ``ToolUseContext`` that do not take the context themselves: what the engine, the permission
gateway and the tools need of the session's permission state and file history, and what the hook runner answers.

Owns ``PermissionState`` (``permissions.context.PermissionContext`` implements it), the verdicts
``core.context.ToolHooks`` returns (``permissions.hooks.HookRunner``'s outcome dataclasses implement them),
``FileBackups`` (``session.history.FileHistory``), ``ToolCheckpoints`` (``app.rewind.SessionCheckpoints``) and the closed set of hook event names, ``HookEvent``. These are
structural types: core imports neither package, and a test's stand-in conforms by having the members. The seams
whose methods take a ``ToolUseContext`` (``ToolHooks``, ``CommandSandbox``) live with it in ``core.context``.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from desktop_agent.core.permission import PermissionMode, ReadPolicy

HookEvent = Literal["PreToolUse", "PostToolUse", "PermissionRequest", "UserPromptSubmit", "Stop", "SessionStart",
                    "Notification", "SubagentStop", "PreCompact", "SessionEnd", "PostToolUseFailure", "PostToolBatch",
                    "PermissionDenied", "UserPromptExpansion"]


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

    @property
    def deferred(self) -> bool:
        """A hook answered ``defer`` (SPEC D.6)."""
        ...


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


class PermissionDeniedVerdict(Protocol):
    """What ``run_tool_use`` reads of the PermissionDenied hooks' outcome."""

    @property
    def retry(self) -> bool: ...


class PostToolBatchVerdict(Protocol):
    """What the loop reads of the PostToolBatch hooks' outcome."""

    @property
    def additional_context(self) -> str | None: ...

    @property
    def stop(self) -> bool: ...

    @property
    def stop_reason(self) -> str | None: ...


class FileBackups(Protocol):
    """The session's file history: a backup of a file's current content before a tool writes it."""

    def backup(self, abs_path: str, tag: str | None = None) -> str | None: ...


class ToolCheckpoints(Protocol):
    """The session's checkpoints (``app.rewind.SessionCheckpoints``): a snapshot of the folder after a tool that may
    have changed it (Bash, a write) ran, and, before any tool runs, the wait for the turn's first snapshot. Never raises: a failure of the store is logged, the call's result stands."""

    async def after_tool(self, tool_name: str, tool_use_id: str, paths: list[str] | None = None) -> None:
        """``paths``: the files the call wrote when its input names them (Write, Edit, MultiEdit, NotebookEdit);
        None: it may have changed anything (Bash)."""
        ...

    async def before_tool(self) -> None:
        """Wait for the turn's snapshot before the user message (taken beside the first model request) to be done:
        a tool that changes the folder must not run before it."""
        ...

