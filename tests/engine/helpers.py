"""Small tools for engine tests, built with ``build_tool`` (no file system, fully instrumented)."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.events import TurnFinished
from desktop_agent.engine.loop import query
from desktop_agent.engine.params import QueryParams
from desktop_agent.core.permission import PermissionReply, PermissionRequest, PermissionTarget
from desktop_agent.core.tool import ToolInput, ToolResult, build_tool


class PathInput(ToolInput):
    file_path: str = Field(description="path")


class EditLikeInput(ToolInput):
    file_path: str
    old_string: str
    new_string: str
    replace_all: bool = False


class PatternInput(ToolInput):
    pattern: str
    path: str | None = None


class Tracker:
    def __init__(self) -> None:
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls: list[str] = []
        self.validated: list[str] = []
        self.permission_checked: list[str] = []


def make_tools(tracker: Tracker, delay: float = 0.01) -> list[Any]:
    async def slow_call(self, input, ctx):
        tracker.in_flight += 1
        tracker.max_in_flight = max(tracker.max_in_flight, tracker.in_flight)
        tracker.calls.append(f"{self.name}:{getattr(input, 'file_path', getattr(input, 'pattern', ''))}")
        try:
            await asyncio.sleep(delay)
        finally:
            tracker.in_flight -= 1
        return ToolResult(data=f"{self.name} ok")

    def validate(self, input, ctx):
        tracker.validated.append(self.name)
        from desktop_agent.core.tool import ValidationResult

        return ValidationResult.ok()

    def target(self, input, ctx):
        tracker.permission_checked.append(self.name)
        return PermissionTarget(kind="none", summary=input.file_path)

    read = build_tool("Read", PathInput, call=slow_call, validate_input=validate, permission_target=target,
                      is_concurrency_safe=lambda self, i: True, is_read_only=lambda self, i: True,
                      description="Read a file", max_result_size_chars=float("inf"))
    grep = build_tool("Grep", PatternInput, call=slow_call, permission_target=touches_nothing,
                      is_concurrency_safe=lambda self, i: True,
                      is_read_only=lambda self, i: True, description="Search", max_result_size_chars=20_000)
    edit = build_tool("Edit", EditLikeInput, call=slow_call, validate_input=validate, permission_target=target,
                      description="Edit a file", aliases=("str_replace",), deprecated_aliases=("EditFile",))
    return [read, grep, edit]


class FakePrompter:
    """Answers every ask with a fixed reply and records the requests."""

    waits = True  # core.permission.PermissionPrompter

    def __init__(self, reply: PermissionReply | None = None, delay: float = 0.0):
        self.reply = reply or PermissionReply(behavior="allow")
        self.requests: list[PermissionRequest] = []
        self.delay = delay

    async def ask(self, request: PermissionRequest) -> PermissionReply:
        self.requests.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        return self.reply


def ctx_with(tools: list[Any], tmp_path, **kw: Any) -> ToolUseContext:
    """A context for tool tests. Without a permission state the engine fails closed (default mode asks),
    so tests about a tool's own behaviour get an explicit bypassPermissions state unless they pass one."""
    if "permission_context" not in kw:
        from desktop_agent.permissions.context import PermissionContext

        kw["permission_context"] = PermissionContext(str(tmp_path), mode="bypassPermissions")
    return ToolUseContext(cwd=str(tmp_path), tools=tools, **kw)


def tool_use(name: str, input: Any, id: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


class TurnRun:
    """One ``query()`` turn whose events are kept. Subclasses set ``self.params`` and ``self.events``."""

    params: QueryParams
    events: list[Any]

    async def go(self, during: Any = None) -> TurnFinished:
        """Drive the turn to its end (``during`` sees each event); exactly one TurnFinished, last."""
        async for ev in query(self.params):
            self.events.append(ev)
            if during is not None:
                during(ev)
        finished = [e for e in self.events if isinstance(e, TurnFinished)]
        assert len(finished) == 1 and self.events[-1] is finished[0], "exactly one TurnFinished, last"
        return finished[0]

    def of(self, cls: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]


def touches_nothing(self: Any, input: Any, ctx: Any) -> PermissionTarget:
    """A test tool's declaration that it touches nothing the policy guards (the default, ``generic``, asks)."""
    return PermissionTarget(kind="none", summary="")
