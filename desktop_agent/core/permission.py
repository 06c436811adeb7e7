"""Plain data types of the permission layer: modes, rules, decisions, updates, and the ask round trip.

These are the shapes that cross the seams: the executor asks with a ``PermissionRequest``, a
front end (dialog, stdio control protocol, test fake) answers with a ``PermissionReply``.
Field names follow the reference agent; ``to_wire()`` gives its camelCase JSON.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"]
PERMISSION_MODES: tuple[PermissionMode, ...] = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
RuleBehavior = Literal["allow", "deny", "ask"]
# Where a rule came from. "session" rules are grants made while the app runs.
RuleSource = Literal[
    "policySettings", "userSettings", "projectSettings", "localSettings", "flagSettings", "cliArg", "session", "hook"
]


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class RuleValue(_Wire):
    tool_name: str
    rule_content: str | None = None

    def __str__(self) -> str:
        return self.tool_name if self.rule_content is None else f"{self.tool_name}({self.rule_content})"


class PermissionRule(_Wire):
    """One rule with where it came from (the file path, when it came from a settings file)."""

    value: RuleValue
    behavior: RuleBehavior
    source: RuleSource
    source_path: str | None = None

    def __str__(self) -> str:
        return str(self.value)


class PermissionUpdate(_Wire):
    """A change to the permission context, as the reference agent's ``PermissionUpdate``.

    ``type`` is ``addRules`` (with ``rules`` and ``behavior``) or ``setMode`` (with ``mode``) or
    ``addDirectories`` (with ``directories``); ``destination`` says where it is stored.
    """

    type: Literal["addRules", "replaceRules", "removeRules", "setMode", "addDirectories", "removeDirectories"]
    rules: list[RuleValue] | None = None
    behavior: RuleBehavior | None = None
    mode: PermissionMode | None = None
    directories: list[str] | None = None
    destination: Literal["session", "localSettings", "projectSettings", "userSettings", "cliArg"] = "session"


class DecisionReason(_Wire):
    """Why a decision was made: ``rule``, ``mode``, ``safetyCheck``, ``workingDir``, ``hook``, ``other``..."""

    type: str
    rule: PermissionRule | None = None
    mode: PermissionMode | None = None
    reason: str | None = None
    hook_name: str | None = None

    def describe(self) -> str:
        """A sentence for the user: which mode or rule (and settings file) made the decision."""
        if self.type == "rule" and self.rule is not None:
            where = f" in {self.rule.source_path}" if self.rule.source_path else f" ({self.rule.source})"
            return f"rule {self.rule}{where}"
        if self.type == "mode" and self.mode:
            return f"{self.mode} mode"
        return self.reason or self.type


class PermissionDecision(BaseModel):
    """The outcome of a permission check (``permissions.decide``, or one of its steps)."""

    model_config = ConfigDict(defer_build=True)

    behavior: Literal["allow", "deny", "ask", "passthrough"]
    message: str | None = None
    updated_input: dict[str, Any] | None = None
    decision_reason: DecisionReason | None = None
    suggestions: list[PermissionUpdate] = Field(default_factory=list)
    blocked_path: str | None = None
    # Set when the user changed the proposal in the dialog (Edit's new_string, a Bash command).
    user_modified: bool = False
    # Filled for ask decisions the user answered, so the UI can show who decided.
    feedback: str | None = None
    # The hunks the user rejected in the dialog (original line ranges, 1-based inclusive) of how many.
    rejected_hunks: list[tuple[int, int]] | None = None
    total_hunks: int | None = None


class PermissionRequest(BaseModel):
    """An ``ask`` sent to the front end. ``request_id`` is new per wait; it is not the tool_use_id."""

    model_config = ConfigDict(defer_build=True)

    request_id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    tool_name: str
    tool_use_id: str
    input: dict[str, Any]
    cwd: str
    message: str = ""
    decision_reason: DecisionReason | None = None
    suggestions: list[PermissionUpdate] = Field(default_factory=list)
    blocked_path: str | None = None
    # For Edit/Write: what exactly would be written (hunks as in the tool's structured patch).
    file_path: str | None = None
    structured_patch: list[dict[str, Any]] | None = None
    original_file: str | None = None
    # The patch was computed by the host from the input and the file on disk (an executor that sends none,
    # such as Claude Code), not by the engine that will write: the dialog labels it so.
    computed_here: bool = False
    # For Bash: the parsed sub-commands, so the user sees each part of a compound command.
    subcommands: list[str] | None = None
    description: str | None = None

    @property
    def reason_text(self) -> str:
        return self.decision_reason.describe() if self.decision_reason else (self.message or "")


class PermissionReply(BaseModel):
    """The front end's answer. Deny carries ``message`` (default ``User denied via UI``) and optional feedback."""

    model_config = ConfigDict(defer_build=True)

    behavior: Literal["allow", "deny"]
    updated_input: dict[str, Any] | None = None
    updated_permissions: list[PermissionUpdate] = Field(default_factory=list)
    message: str | None = None
    feedback: str | None = None
    interrupt: bool = False
    # Allow with some hunks rejected: ``updated_input`` writes only the accepted ones; these name the
    # rejected ones by their original line ranges (1-based, inclusive), of ``total_hunks``.
    rejected_hunks: list[tuple[int, int]] | None = None
    total_hunks: int | None = None


# read / write: a path (the path checks); bash: a command (the command analysis and the sandbox gate); generic: an
# action the policy knows nothing about (MCP tools: asks unless a rule allows it); none: nothing the policy guards
# (allowed unless a rule or the mode objects: BashOutput, KillShell, the ``Tool`` default).
TargetKind = Literal["read", "write", "bash", "generic", "none"]


class PermissionTarget(BaseModel):
    """What one call touches, as its tool declares it (``Tool.permission_target``); ``permissions.decide`` rules on
    it without calling the tool back. ``path`` is absolute (read/write); ``command`` is the shell text (bash);
    ``summary`` is the key argument shown on cards, requests and events (a path, a command, a pattern)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: TargetKind
    summary: str = ""
    path: str | None = None
    command: str | None = None
    # bash: the call asked to run outside the sandbox (``dangerouslyDisableSandbox``).
    disable_sandbox: bool = False


class ToolFacts(BaseModel):
    """What ``permissions.decide`` knows of the tool itself, for one call (``core.tool.tool_facts`` fills it)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    # For this input; a tool whose answer raises is not read-only (the cautious answer).
    is_read_only: bool = False
    requires_user_interaction: bool = False
    is_mcp: bool = False


class ReadPolicy(Protocol):
    """The Read deny rules as a running tool needs them (Read listing a directory, Grep and Glob dropping results).

    ``permissions.context.PermissionContext`` implements it; tools reach it through ``ToolUseContext.read_policy``
    and never import the permission layer."""

    def path_denied(self, abs_path: str, operation: Literal["read", "edit"], *, checked: list[str] | None = None,
                    is_dir: bool | None = None) -> bool:
        """A deny rule covers the path (or one of the ``checked`` forms) for the operation."""
        ...

    def opened_denied(self, fd: int, operation: Literal["read", "edit"]) -> bool:
        """The file open on ``fd`` is denied for the operation: by its identity, a folder it really lies in, or
        a rule on the path it really has (checked on what was opened, not on the name asked for)."""
        ...

    def has_read_denies(self) -> bool:
        """At least one Read deny rule exists (a search needs no filter otherwise)."""
        ...

    def read_deny_globs(self, search_root: str) -> list[str]:
        """ripgrep ``!glob`` exclusions for the Read deny rules that apply under ``search_root`` (best effort)."""
        ...


class PermissionPrompter(Protocol):
    """The second seam: how the engine asks a person. The GUI shows a modal dialog, the CLI a control_request.

    ``waits``: the prompter waits for a person's (or a host's) answer, so a ``permission_prompt`` Notification is
    worth raising; a prompter that answers at once (``-p`` without a host) says False."""

    @property
    def waits(self) -> bool: ...

    async def ask(self, request: PermissionRequest) -> PermissionReply: ...
