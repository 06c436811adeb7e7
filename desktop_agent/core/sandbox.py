"""The sandbox seam: how a tool that runs shell commands gets them contained without knowing the policy.

Owns ``CommandSandbox``, the Protocol ``permissions.sandbox_launch.BubblewrapSandbox`` implements and the app sets
on ``ToolUseContext.sandbox`` (``tools.bash`` starts every shell through it), and ``ShellLaunch``, the argv and
environment one shell starts with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from desktop_agent.core.context import ToolUseContext


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
