"""Test tools that declare ``permission_target`` the way the real Read/Edit/Write/Grep/Glob/Bash tools do, and a
workspace fixture with symlinks in both directions."""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field

from desktop_agent.core.context import ToolUseContext
from desktop_agent.shell.readonly import is_read_only_command
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.rules import parse_rule
from desktop_agent.core.permission import PermissionRule, PermissionTarget
from desktop_agent.core.tool import ToolInput, ToolResult, build_tool


class FileInput(ToolInput):
    file_path: str = Field(description="path")
    old_string: str | None = None
    new_string: str | None = None
    content: str | None = None


class SearchInput(ToolInput):
    pattern: str = "x"
    path: str | None = None


class BashInput(ToolInput):
    command: str
    run_in_background: bool | None = None
    timeout: int | None = None
    description: str | None = None


class UrlInput(ToolInput):
    url: str


CALLS: list[str] = []


async def _call(self, input, ctx):
    CALLS.append(f"{self.name}:{getattr(input, 'file_path', getattr(input, 'command', ''))}")
    return ToolResult(data=f"{self.name} ok")


def _write_target(self, input, ctx):
    return PermissionTarget(kind="write", path=ctx.expand(input.file_path), summary=input.file_path)


def _read_target(self, input, ctx):
    return PermissionTarget(kind="read", path=ctx.expand(input.file_path), summary=input.file_path)


def _search_target(self, input, ctx):
    return PermissionTarget(kind="read", path=ctx.expand(input.path or ctx.cwd), summary=input.pattern)


def _bash_target(self, input, ctx):
    return PermissionTarget(kind="bash", command=input.command, summary=input.command)


def _generic_target(self, input, ctx):
    return PermissionTarget(kind="generic", summary=self.summary(input.model_dump(exclude_unset=True)))


def make_tools() -> dict[str, Any]:
    ro = {"is_read_only": lambda self, i: True, "is_concurrency_safe": lambda self, i: True}
    return {
        "Edit": build_tool("Edit", FileInput, call=_call, permission_target=_write_target, description="e"),
        "Write": build_tool("Write", FileInput, call=_call, permission_target=_write_target, description="w"),
        "Read": build_tool("Read", FileInput, call=_call, permission_target=_read_target, description="r", **ro),
        "Grep": build_tool("Grep", SearchInput, call=_call, permission_target=_search_target, description="g", **ro),
        "Glob": build_tool("Glob", SearchInput, call=_call, permission_target=_search_target, description="g", **ro),
        "Bash": build_tool("Bash", BashInput, call=_call, permission_target=_bash_target, description="b",
                           is_read_only=lambda self, i: is_read_only_command(i.command)),
        "WebFetch": build_tool("WebFetch", UrlInput, call=_call, permission_target=_generic_target, description="f",
                               **ro),
    }


TOOLS = make_tools()


def rules_of(spec: dict[str, list[str]] | None, source: str = "session") -> list[PermissionRule]:
    out = []
    for behavior, items in (spec or {}).items():
        for text in items:
            out.append(PermissionRule(value=parse_rule(text), behavior=behavior, source=source))  # type: ignore[arg-type]
    return out


def make_ctx(ws: str, *, mode: str = "default", rules: dict[str, list[str]] | None = None, source: str = "session",
             add_dirs: list[str] | None = None, **kw: Any) -> ToolUseContext:
    pc = PermissionContext(ws, mode=mode, rules=rules_of(rules, source), additional_dirs=add_dirs or [])
    return ToolUseContext(cwd=ws, permission_context=pc, tools=list(TOOLS.values()), **kw)


def make_workspace(root: str) -> dict[str, str]:
    """root/ws (cwd) with src/, app.ts, .git/config, .env, link_out -> root/out; root/out with secret and
    link_in -> ws/src; a home dir (HOME is already isolated by the top-level conftest)."""
    ws = os.path.join(root, "ws")
    out = os.path.join(root, "out")
    for d in (ws, out, os.path.join(ws, "src"), os.path.join(ws, "sub"), os.path.join(ws, ".git")):
        os.makedirs(d, exist_ok=True)
    for f, text in ((os.path.join(ws, "app.ts"), "export const value = 1"), (os.path.join(ws, ".env"), "K=1"),
                    (os.path.join(ws, ".git", "config"), "[core]"), (os.path.join(out, "secret"), "s")):
        with open(f, "w") as fh:
            fh.write(text)
    os.symlink(out, os.path.join(ws, "link_out"))
    os.symlink(os.path.join(ws, "src"), os.path.join(out, "link_in"))
    return {"ws": ws, "out": out, "home": os.path.expanduser("~"), "root": root}
