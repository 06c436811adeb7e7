"""The built-in tools and the default tool set offered to the model."""

from __future__ import annotations

from functools import cache

from desktop_agent.core.tool import Tool
from desktop_agent.tools.bash.background import BashOutputTool, KillShellTool
from desktop_agent.tools.bash.tool import BashTool
from desktop_agent.tools.edit import EditTool
from desktop_agent.tools.glob import GlobTool
from desktop_agent.tools.grep import GrepTool
from desktop_agent.tools.notebook_edit import NotebookEditTool
from desktop_agent.tools.read.tool import ReadTool
from desktop_agent.tools.write import WriteTool

# In the order they are offered to the model.
_BUILTINS: tuple[type[Tool], ...] = (ReadTool, EditTool, WriteTool, NotebookEditTool, GrepTool, GlobTool, BashTool,
                                     BashOutputTool, KillShellTool)


@cache
def all_builtin_tools() -> tuple[Tool, ...]:
    """One instance of every built-in tool (imported directly: a tool that fails to import is a start-up error)."""
    return tuple(cls() for cls in _BUILTINS)


def default_tools(names: list[str] | None = None) -> list[Tool]:
    """The tools sent to the model; ``names`` (``--tools``) narrows the set."""
    tools = list(all_builtin_tools())
    if names is not None:
        wanted = set(names)
        tools = [t for t in tools if t.name in wanted]
    return tools


@cache
def builtin_tool_names() -> frozenset[str]:
    """Every built-in tool's name and aliases (a call to one that was removed "exists but is not enabled")."""
    return frozenset(n for tool in all_builtin_tools() for n in (tool.name, *tool.aliases))


def tool_by_name(name: str) -> Tool | None:
    for tool in all_builtin_tools():
        if tool.matches_name(name):
            return tool
    return None
