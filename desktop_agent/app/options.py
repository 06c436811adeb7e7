"""What the window opens with: the typed result of the command line's window flags.

``desktop_agent.cli.argv`` (the one parser of the ``desktop-agent`` command) fills ``WindowOptions``;
``desktop_agent.ui.main`` reads them. The window may not import ``cli`` (they are sibling floors), so the
record lives here, below both. Plain data with no run-time imports: the window's start-up loads nothing for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from desktop_agent.core.permission import PermissionMode

Theme = Literal["system", "light", "dark"]
THEMES: tuple[Theme, ...] = ("system", "light", "dark")
# Where the window's sessions run (``client.ExecutorKind``): in the window, in a child CLI, or with Claude Code.
Executor = Literal["inprocess", "process", "claude"]
EXECUTORS: tuple[Executor, ...] = ("inprocess", "process", "claude")


@dataclass(frozen=True)
class WindowOptions:
    """``desktop-agent [FOLDER] [--demo] [--resume ID] [--theme T] [--permission-mode M]
    [--dangerously-skip-permissions] [--executor E] [--claude-path PATH]``.

    ``permission_mode`` is already ``bypassPermissions`` for ``--dangerously-skip-permissions`` and ``default``
    for the legacy ``manual``; ``None`` means "Settings' default"."""

    folder: str | None = None
    demo: bool = False
    resume: str | None = None
    theme: Theme | None = None
    permission_mode: PermissionMode | None = None
    executor: Executor | None = None
    claude_path: str | None = None
