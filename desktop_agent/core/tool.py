"""The tool contract (SPEC §3.2) and ``build_tool``, which supplies the documented defaults.

A tool answers the same questions in the same order: input model (pydantic, ``extra="forbid"``),
description (``prompts/<name>.md`` beside it), ``validate_input``, ``permission_target`` (what the call
touches, declared: ``permissions.decide`` rules on it without calling the tool back), ``call``,
``map_result_to_block``, and the scheduling flags. Defaults are the cautious ones: not
concurrency-safe, not read-only, a target of kind ``generic`` (the policy knows nothing of it, so it asks unless
a rule or the mode allows; a tool opts in to ``none``, "touches nothing the policy guards"), interrupt behaviour
``block``. ``tool_facts`` is what the
permission layer knows of the tool itself for one call.

Input no input model should ever see — nested more than ``MAX_INPUT_DEPTH`` levels, a NUL in a path
parameter, a path longer than any path — is refused by ``hostile_input_error`` (``util.input_guard``,
re-exported here), which ``run_tool_use`` runs before the schema check.
"""

from __future__ import annotations

import contextvars
import copy
import math
import weakref
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Callable, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from desktop_agent.core.context import ToolUseContext
from desktop_agent.util.input_guard import MAX_INPUT_DEPTH, hostile_input_error  # noqa: F401 - re-exported
from desktop_agent.core.permission import PermissionDecision, PermissionTarget, ToolFacts


class ToolInput(BaseModel):
    """Base for tool input models: unknown keys and wrong JSON types are errors the model is told about
    (strict: `"yes"` is not a boolean, as in the reference agent's zod schemas)."""

    model_config = ConfigDict(extra="forbid", strict=True)


@dataclass
class ValidationResult:
    """``validate_input``'s answer: ok, or a message the model can act on (wrapped in <tool_use_error>)."""

    result: bool
    message: str = ""
    error_code: int | None = None
    meta: dict[str, Any] | None = None

    @classmethod
    def ok(cls, meta: dict[str, Any] | None = None) -> ValidationResult:
        return cls(True, meta=meta)

    @classmethod
    def fail(cls, message: str, error_code: int | None = None) -> ValidationResult:
        return cls(False, message, error_code)


ContextModifier = Callable[[ToolUseContext], ToolUseContext]


@dataclass
class ToolResult:
    """What ``call`` returns: the data for ``map_result_to_block``, and optionally a context change."""

    data: Any
    context_modifier: ContextModifier | None = None
    new_messages: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class CallInfo:
    """What a running ``call`` may need to know about its own invocation (contextvar, per task)."""

    tool_use_id: str
    user_modified: bool = False
    decision: PermissionDecision | None = None


_current_call: contextvars.ContextVar[CallInfo | None] = contextvars.ContextVar("current_call", default=None)


def current_call() -> CallInfo | None:
    return _current_call.get()


def set_current_call(info: CallInfo) -> contextvars.Token[CallInfo | None]:
    """Set by ``run_tool_use`` around ``call``; reset with ``token.var.reset(token)``."""
    return _current_call.set(info)


@cache
def load_prompt(name: str) -> str:
    """The model-facing description of a tool, from ``desktop_agent/tools/prompts/<name>.md``."""
    return resources.files("desktop_agent.tools").joinpath("prompts", f"{name}.md").read_text("utf-8").strip()


_SCHEMAS: weakref.WeakKeyDictionary[type[BaseModel], dict[str, Any]] = weakref.WeakKeyDictionary()


def tool_input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A clean JSON Schema for the API: ``$ref`` inlined, the ``title`` keyword dropped.

    A *field* named ``title`` survives (only the keyword is dropped); recursive models keep ``$defs``.
    Built once per model class (pydantic's generation costs milliseconds a tool, on every request);
    each caller gets its own copy.
    """
    cached = _SCHEMAS.get(model)
    if cached is None:
        cached = _SCHEMAS[model] = _build_input_schema(model)
    return copy.deepcopy(cached)


def _build_input_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def walk(node: Any, in_properties: bool = False, seen: tuple[str, ...] = ()) -> Any:
        if isinstance(node, list):
            return [walk(x, seen=seen) for x in node]
        if not isinstance(node, dict):
            return node
        if in_properties:  # keys are field names here, not keywords
            return {k: walk(v, seen=seen) for k, v in node.items()}
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name in seen:
                raise ValueError(f"recursive schema {name} cannot be inlined")
            return walk(defs[name], seen=seen + (name,))
        return {
            k: walk(v, in_properties=(k == "properties"), seen=seen)
            for k, v in node.items()
            if k != "title"
        }

    out = walk(schema)
    # Optional fields (``X | None = None``) are advertised as the reference agent's ``field?: X``:
    # no ``null`` branch, no ``default: null`` (the model simply omits them).
    for name, prop in list(out.get("properties", {}).items()):
        out["properties"][name] = _drop_null_branch(prop)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    out["additionalProperties"] = False
    out["$schema"] = "http://json-schema.org/draft-07/schema#"
    return out


def _drop_null_branch(prop: dict[str, Any]) -> dict[str, Any]:
    branches = prop.get("anyOf")
    if not isinstance(branches, list):
        return prop
    non_null = [b for b in branches if b != {"type": "null"}]
    if len(non_null) != 1 or len(non_null) == len(branches):
        return prop
    merged = {k: v for k, v in prop.items() if k != "anyOf" and not (k == "default" and v is None)}
    return {**non_null[0], **merged}


class Tool:
    """Base class with the ``build_tool`` defaults. Subclasses override what they need."""

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    # Aliases that still resolve even when the tool was not sent this turn (SPEC §3.3).
    deprecated_aliases: ClassVar[tuple[str, ...]] = ()
    input_model: ClassVar[type[BaseModel]] = ToolInput
    max_result_size_chars: ClassVar[float] = 100_000
    strict: ClassVar[bool] = False
    is_mcp: ClassVar[bool] = False

    # ---- description and schema (step 1) ----
    def description(self) -> str:
        return load_prompt(self.name)

    def input_schema(self) -> dict[str, Any]:
        return tool_input_schema(self.input_model)

    def to_api_schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description(), "input_schema": self.input_schema()}

    # ---- scheduling ----
    def is_concurrency_safe(self, input: Any) -> bool:
        return False

    def is_read_only(self, input: Any) -> bool:
        return False

    def interrupt_behavior(self) -> Literal["cancel", "block"]:
        return "block"

    def requires_user_interaction(self) -> bool:
        return False

    # ---- the call path ----
    async def validate_input(self, input: Any, ctx: ToolUseContext) -> ValidationResult:
        return ValidationResult.ok()

    def permission_target(self, input: Any, ctx: ToolUseContext) -> PermissionTarget:
        """What this call touches (synchronous, no I/O beyond resolving the path): read/write a path, run a
        command, an action the policy knows nothing about (``generic``, the default: it asks), or nothing it guards
        (``none``, which a tool must declare)."""
        return PermissionTarget(kind="generic", summary=_safe_summary(self, input))

    async def call(self, input: Any, ctx: ToolUseContext) -> ToolResult:  # pragma: no cover - abstract
        raise NotImplementedError(f"{self.name}.call")

    def map_result_to_block(self, data: Any, tool_use_id: str) -> dict[str, Any]:
        content = data if isinstance(data, (str, list)) else str(data)
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}

    # ---- for front ends ----
    def summary(self, input: dict[str, Any]) -> str:
        """The key argument shown on a tool card (a path, a command, a pattern)."""
        for key in ("file_path", "command", "pattern", "path", "url"):
            value = input.get(key) if isinstance(input, dict) else None
            if isinstance(value, str) and value:
                return value
        return ""

    def permission_extras(self, input: Any, ctx: ToolUseContext) -> dict[str, Any]:
        """Extra fields for a PermissionRequest (the structured patch of an Edit, Bash sub-commands).

        Called on a worker thread (``asyncio.to_thread``), so it may read files and diff them; it must
        not touch the event loop or mutate ``ctx``."""
        return {}

    def matches_name(self, name: str) -> bool:
        return name == self.name or name in self.aliases

    def __repr__(self) -> str:
        return f"<Tool {self.name}>"


def _dump(input: Any) -> dict[str, Any]:
    if isinstance(input, BaseModel):
        return input.model_dump(exclude_unset=True)
    return dict(input) if isinstance(input, dict) else {}


def _safe_summary(tool: Tool, input: Any) -> str:
    try:
        return tool.summary(_dump(input))
    except Exception:
        return ""


def tool_facts(tool: Tool, input: Any) -> ToolFacts:
    """The tool's own answers for one call; an answer that raises is the cautious one (not read-only, not
    interactive)."""
    try:
        read_only = bool(tool.is_read_only(input))
    except Exception:
        read_only = False
    try:
        interactive = bool(tool.requires_user_interaction())
    except Exception:
        interactive = False
    return ToolFacts(name=tool.name, is_read_only=read_only, requires_user_interaction=interactive,
                     is_mcp=bool(tool.is_mcp))


_OVERRIDABLE = {
    "description", "is_concurrency_safe", "is_read_only", "interrupt_behavior", "requires_user_interaction",
    "validate_input", "permission_target", "call", "map_result_to_block", "summary", "permission_extras",
}


def build_tool(
    name: str,
    input_model: type[BaseModel] = ToolInput,
    *,
    aliases: tuple[str, ...] = (),
    deprecated_aliases: tuple[str, ...] = (),
    max_result_size_chars: float = 100_000,
    **methods: Any,
) -> Tool:
    """Make a tool from a name, an input model and the methods it overrides; the rest are defaults.

    Plain functions are bound as methods: ``call=lambda self, input, ctx: ...`` (sync or async for
    validate_input / call; a sync function's result is awaited transparently; ``permission_target`` is sync).
    A ``description`` given as a string is used as is.
    """
    unknown = set(methods) - _OVERRIDABLE
    if unknown:
        raise TypeError(f"build_tool: unknown members {sorted(unknown)}")
    attrs: dict[str, Any] = {
        "name": name,
        "aliases": tuple(aliases),
        "deprecated_aliases": tuple(deprecated_aliases),
        "input_model": input_model,
        "max_result_size_chars": max_result_size_chars,
    }
    for key, fn in methods.items():
        if key == "description" and isinstance(fn, str):
            text = fn
            attrs[key] = lambda self, _t=text: _t
        elif key in ("validate_input", "call"):
            attrs[key] = _as_async(fn)
        else:
            attrs[key] = fn
    cls = type(f"{name}Tool", (Tool,), attrs)
    return cls()


def _as_async(fn: Callable[..., Any]) -> Callable[..., Any]:
    import inspect

    if inspect.iscoroutinefunction(fn):
        return fn

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    return wrapper


INFINITY = math.inf
