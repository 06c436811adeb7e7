"""The tool-use context: everything a tool call may read or change besides its input.

Owns ``ToolUseContext`` (cwd, permission state and what tools see of it — the ``working_dirs`` view and the
``read_policy`` —, prompter, hooks, file history, abort signal; the seams typed by ``core.seams``),
``ReadFileState`` (what the model has seen of each file, bounded LRU, SPEC §3.5),
``AbortSignal`` and ``expand_path``; and the seams whose methods take the context, so that the types that refer
to each other live in one module: ``ToolHooks`` (``permissions.hooks.HookRunner`` implements it),
``CommandSandbox`` with ``ShellLaunch`` (``permissions.sandbox_launch.BubblewrapSandbox``; ``tools.bash`` starts
every shell through it) and ``OfferedTool``, what the engine reads of the turn's tools (``core.tool.Tool``).
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal, Protocol

if TYPE_CHECKING:  # pragma: no cover - annotations only; none of these modules imports this one
    from desktop_agent.core.events import AgentEvent
    from desktop_agent.core.permission import PermissionPrompter, PermissionReply, PermissionUpdate, ReadPolicy
    from desktop_agent.core.seams import (
        FileBackups, HookEvent, PermissionState, PostToolUseVerdict, PreToolUseVerdict, ToolCheckpoints,
    )

MAX_FILE_STATE_ENTRIES = 100
MAX_FILE_STATE_BYTES = 25 * 1024 * 1024


def expand_path(path: str, cwd: str) -> str:
    """``~`` expansion, relative-to-cwd resolution and normalization (no symlink resolution)."""
    p = os.path.expanduser(path.strip()) if path else ""
    if not os.path.isabs(p):
        p = os.path.join(cwd, p)
    return os.path.normpath(p)


@dataclass
class FileStateEntry:
    content: str
    timestamp: int  # mtime in ms
    offset: int | None = None
    limit: int | None = None
    is_partial_view: bool = False


class ReadFileState:
    """Normalized absolute path → what was last read or written. LRU, 100 entries / 25 MB."""

    def __init__(self, max_entries: int = MAX_FILE_STATE_ENTRIES, max_bytes: int = MAX_FILE_STATE_BYTES):
        self._entries: OrderedDict[str, FileStateEntry] = OrderedDict()
        self._bytes = 0
        self.max_entries = max_entries
        self.max_bytes = max_bytes

    @staticmethod
    def _key(path: str) -> str:
        return os.path.normpath(path)

    def get(self, path: str) -> FileStateEntry | None:
        key = self._key(path)
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def set(self, path: str, entry: FileStateEntry) -> None:
        key = self._key(path)
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= len(old.content)
        self._entries[key] = entry
        self._bytes += len(entry.content)
        while self._entries and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= len(evicted.content)

    def delete(self, path: str) -> None:
        old = self._entries.pop(self._key(path), None)
        if old is not None:
            self._bytes -= len(old.content)

    def __contains__(self, path: str) -> bool:
        return self._key(path) in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def items(self) -> list[tuple[str, FileStateEntry]]:
        return list(self._entries.items())


class AbortSignal:
    """A cancellable flag with a reason (``user_interrupted``, ``interrupt``, ``sibling_error``...).

    ``wait()`` lets awaiting code (a permission wait, a subprocess) race the abort.
    Children follow their parent but can be aborted alone (sibling cancellation).
    """

    def __init__(self, parent: AbortSignal | None = None):
        self._event = asyncio.Event()
        self.reason: str | None = None
        self._children: list[AbortSignal] = []
        if parent is not None:
            parent._children.append(self)
            if parent.aborted:
                self.abort(parent.reason)

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    def abort(self, reason: str | None = "user_interrupted") -> None:
        if self._event.is_set():
            return
        self.reason = reason
        self._event.set()
        for child in self._children:
            child.abort(reason)

    async def wait(self) -> None:
        await self._event.wait()

    def child(self) -> AbortSignal:
        return AbortSignal(self)


class OfferedTool(Protocol):
    """What the engine reads of a tool the turn offers the model (``ToolUseContext.tools``; ``core.tool.Tool``
    has it): its API schema and whether a ``tool_use`` name (or alias) is it."""

    def to_api_schema(self) -> dict[str, Any]: ...

    def matches_name(self, name: str) -> bool: ...


class ShellLaunch(Protocol):
    """How to start one shell: the argv (the sandbox's launcher around the shell, or the shell as is) and its
    environment."""

    argv: list[str]
    env: dict[str, str]


class CommandSandbox(Protocol):
    def private_tmpdir(self) -> str:
        """The directory shells may write temporary files to (their TMPDIR; writable inside the sandbox)."""
        ...

    def plan_launch(self, argv: list[str], cwd: str, env: dict[str, str], ctx: ToolUseContext, *, command: str = "",
                    disable_sandbox: bool = False) -> ShellLaunch:
        """How to start ``argv`` (``[shell, "-c", script]``) for ``ctx``; ``command`` is the model's command text,
        ``disable_sandbox`` its ``dangerouslyDisableSandbox`` (honoured only where the settings allow it)."""
        ...


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


@dataclass
class ToolUseContext:
    """Mutable per-session state tools run against. Context modifiers may return a changed copy."""

    cwd: str
    # The directory the session started in (``cwd`` at creation); the permission state's ``original_cwd`` wins.
    origin: str = ""
    read_file_state: ReadFileState = field(default_factory=ReadFileState)
    abort: AbortSignal = field(default_factory=AbortSignal)
    # permissions.context.PermissionContext (mode, rules, trust); None decides as ``default`` mode
    # with no rules (fail closed), never as bypass.
    permission_context: PermissionState | None = None
    prompter: PermissionPrompter | None = None
    # permissions.hooks.HookRunner, or None for no hooks.
    hooks: ToolHooks | None = None
    # session.history.FileHistory (backups before each write), or None.
    file_history: FileBackups | None = None
    # app.rewind.SessionCheckpoints (a snapshot after each tool that may write), or None: checkpointing is off.
    checkpoints: ToolCheckpoints | None = None
    session_id: str = ""
    transcript_path: str = ""
    # The tools sent to the model this turn (lookup searches these first).
    tools: list[OfferedTool] = field(default_factory=list)
    # Called with (tool_use_id, data) for UI-only progress; never reaches the model.
    on_progress: Callable[[str, Any], None] | None = None
    # Called with AgentEvents the permission flow produces (permission requested / resolved).
    emit: Callable[[AgentEvent], None] | None = None
    # Answered tool_use_ids: a duplicate permission reply for one of these is ignored.
    answered_tool_use_ids: set[str] = field(default_factory=set)
    # How shells start (permissions.sandbox_launch.BubblewrapSandbox); None: as they are, unsandboxed (tests).
    sandbox: CommandSandbox | None = None
    # Free-form per-session extras (e.g. background shells) keyed by owner module.
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.cwd = os.path.abspath(self.cwd)
        if not self.origin:
            self.origin = self.cwd

    @property
    def working_dirs(self) -> list[str]:
        """The working directories, read from their one owner, the permission state, at every call (an added,
        removed or re-added directory counts at once); the original cwd alone without a permission state.
        A fresh list: changing it changes nothing (``PermissionContext.apply_updates`` does)."""
        pc = self.permission_context
        dirs = list(pc.working_dirs) if pc is not None else []
        return dirs or [self.original_cwd]

    @property
    def read_policy(self) -> ReadPolicy | None:
        """The Read deny rules for a running tool (the permission state implements ``ReadPolicy``); None: none."""
        policy: ReadPolicy | None = self.permission_context
        return policy

    def path_denied(self, abs_path: str, operation: Literal["read", "edit"]) -> bool:
        """A deny rule covers ``abs_path`` for ``operation`` (Edit's, Write's and Read's validation use it)."""
        policy = self.read_policy
        return policy is not None and policy.path_denied(abs_path, operation)

    def opened_denied(self, fd: int, operation: Literal["read", "edit"]) -> bool:
        """The file open on ``fd`` is a denied one (see ``ReadPolicy.opened_denied``)."""
        policy = self.read_policy
        return policy is not None and policy.opened_denied(fd, operation)

    @property
    def original_cwd(self) -> str:
        pc = self.permission_context
        return str(getattr(pc, "original_cwd", "") or self.origin) if pc is not None else self.origin

    def expand(self, path: str) -> str:
        return expand_path(path, self.cwd)
