"""The built-in tools and the default tool set offered to the model."""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

# Module, class name. Each tool lives in its own module of desktop_agent.tools.
_BUILTINS: list[tuple[str, str]] = [
    ("desktop_agent.tools.read.tool", "ReadTool"),
    ("desktop_agent.tools.edit", "EditTool"),
    ("desktop_agent.tools.write", "WriteTool"),
    ("desktop_agent.tools.notebook_edit", "NotebookEditTool"),
    ("desktop_agent.tools.grep", "GrepTool"),
    ("desktop_agent.tools.glob", "GlobTool"),
    ("desktop_agent.tools.bash.tool", "BashTool"),
    ("desktop_agent.tools.bash.background", "BashOutputTool"),
    ("desktop_agent.tools.bash.background", "KillShellTool"),
]


@cache
def all_builtin_tools() -> tuple[Any, ...]:
    tools = []
    for module_name, cls_name in _BUILTINS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:  # not written yet
                continue
            raise
        cls = getattr(module, cls_name, None)
        if cls is not None:
            tools.append(cls())
    return tuple(tools)


def default_tools(names: list[str] | None = None) -> list[Any]:
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


def tool_by_name(name: str) -> Any | None:
    for tool in all_builtin_tools():
        if tool.matches_name(name):
            return tool
    return None
