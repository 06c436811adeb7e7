"""Typed stream-json data lines (SPEC §1.4, App. C): what a CLI writes on stdout and reads on stdin.

``system`` (``init``, ``status``, ``compact_boundary`` and any other subtype), ``assistant`` (one line per
finished content block), ``user`` (prompts going in; tool results and notices coming out, with
``tool_use_result``), ``stream_event`` (raw Messages API events with ``--include-partial-messages``) and
``result`` (one per turn). ``encode(line)`` gives the JSON line (``\\n``-terminated); ``decode(text)`` parses any
stdout line, control messages included (``desktop_agent.protocol.control``), into its model. Unknown types
come back as ``UnknownLine`` so a newer executor never breaks a host.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal, Union

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from desktop_agent.core.events import AgentEvent
from desktop_agent.protocol import control
from desktop_agent.protocol._wire import ProtocolError, WireModel, loads_object

# What our CLI writes; Claude Code adds more (error_max_budget_usd, …), so decoding keeps any string.
RESULT_SUBTYPES: tuple[str, ...] = ("success", "error_max_turns", "error_during_execution")


class SystemInit(WireModel):
    type: Literal["system"] = "system"
    subtype: Literal["init"] = "init"
    cwd: str = ""
    session_id: str = ""
    tools: list[str] = Field(default_factory=list)
    mcp_servers: list[Any] = Field(default_factory=list)
    model: str = ""
    permissionMode: str = "default"
    slash_commands: list[str] | None = None
    apiKeySource: str | None = None
    output_style: str | None = None
    agents: list[Any] | None = None
    skills: list[Any] | None = None
    plugins: list[Any] | None = None
    claude_code_version: str | None = None
    uuid: str | None = None


class SystemStatus(WireModel):
    """The ``status`` line our CLI writes after ``set_permission_mode``, its keys in the order it always wrote
    them (``status`` is ``null``). A host decodes any ``status`` line as a ``SystemLine`` (``permission_mode``)."""

    _keep_null: ClassVar[frozenset[str]] = frozenset({"status"})
    type: Literal["system"] = "system"
    subtype: Literal["status"] = "status"
    status: str | None = None
    permissionMode: str | None = None
    session_id: str | None = None
    uuid: str | None = None


class SystemLine(WireModel):
    """Any other ``system`` line: ``status`` (with ``permissionMode``), ``compact_boundary``, hook notices…"""

    type: Literal["system"] = "system"
    subtype: str
    session_id: str | None = None
    uuid: str | None = None

    @property
    def permission_mode(self) -> str | None:
        value = (self.model_extra or {}).get("permissionMode")
        return value if isinstance(value, str) else None

    @property
    def compact_pre_tokens(self) -> int | None:
        meta = (self.model_extra or {}).get("compact_metadata")
        value = meta.get("pre_tokens") if isinstance(meta, dict) else None
        return int(value) if isinstance(value, (int, float)) else None


class AssistantLine(WireModel):
    """An API message holding (in the reference's output) one finished content block."""

    _keep_null: ClassVar[frozenset[str]] = frozenset({"parent_tool_use_id"})
    type: Literal["assistant"] = "assistant"
    message: dict[str, Any]
    parent_tool_use_id: str | None = None
    session_id: str = ""
    uuid: str | None = None

    @property
    def blocks(self) -> list[dict[str, Any]]:
        content = self.message.get("content")
        return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


class UserLine(WireModel):
    """A user turn going in (``session_id`` empty or ``"default"``), or tool results / notices coming out."""

    _keep_null: ClassVar[frozenset[str]] = frozenset({"parent_tool_use_id"})
    type: Literal["user"] = "user"
    message: dict[str, Any]
    parent_tool_use_id: str | None = None
    session_id: str = ""
    uuid: str | None = None
    tool_use_result: Any = None

    @classmethod
    def prompt(cls, content: str | list[dict[str, Any]], session_id: str = "") -> UserLine:
        return cls(message={"role": "user", "content": content}, session_id=session_id)

    @property
    def blocks(self) -> list[dict[str, Any]]:
        content = self.message.get("content")
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


class StreamEventLine(WireModel):
    _keep_null: ClassVar[frozenset[str]] = frozenset({"parent_tool_use_id"})
    type: Literal["stream_event"] = "stream_event"
    event: dict[str, Any]
    session_id: str = ""
    parent_tool_use_id: str | None = None
    uuid: str | None = None


class PermissionDenial(WireModel):
    tool_name: str
    tool_use_id: str
    tool_input: dict[str, Any] = Field(default_factory=dict)


class ResultLine(WireModel):
    _keep_null: ClassVar[frozenset[str]] = frozenset({"stop_reason"})
    type: Literal["result"] = "result"
    subtype: str
    is_error: bool = False
    duration_ms: int | float = 0
    duration_api_ms: int | float = 0
    num_turns: int = 0
    result: str = ""
    stop_reason: str | None = None
    session_id: str = ""
    terminal_reason: str | None = None
    total_cost_usd: float = 0.0
    usage: dict[str, Any] = Field(default_factory=dict)
    modelUsage: dict[str, Any] | None = None
    permission_denials: list[PermissionDenial] = Field(default_factory=list)
    uuid: str | None = None
    errors: list[str] | None = None
    # A run that ended ``tool_deferred`` (SPEC D.6): the pending call, ``{"id", "name", "input"}``.
    deferred_tool_use: dict[str, Any] | None = None


class UnknownLine(WireModel):
    """A line of a type this host does not know (kept whole in ``raw``)."""

    type: str = ""
    raw: dict[str, Any] = Field(default_factory=dict)


_set = object.__setattr__


class AgentEventLine(WireModel):
    """Ours (SPEC App. D.1): one ``AgentEvent`` exactly, for the clients that asked for them in ``initialize``
    (or opened their session with ``desktop_agent_open``). ``event`` holds the typed event; on the wire it is the
    event's own JSON. ``of(event)`` wraps one, ``agent_event()`` gives it back (parsed when it came as JSON)."""

    type: Literal["agent_event"] = "agent_event"
    event: Any

    @classmethod
    def of(cls, event: AgentEvent) -> AgentEventLine:
        # What ``model_construct(type="agent_event", event=event)`` makes, set directly: it runs twice for every event
        # over a socket or a pipe (made by the host, made again by the client's decode), and pydantic's generic
        # construct costs several microseconds a call (tests/protocol pins that the two agree).
        line = object.__new__(cls)
        _set(line, "__dict__", {"type": "agent_event", "event": event})
        _set(line, "__pydantic_fields_set__", {"type", "event"})
        _set(line, "__pydantic_extra__", {})
        _set(line, "__pydantic_private__", None)
        return line

    def agent_event(self) -> AgentEvent:
        if isinstance(self.event, dict):
            return _event_adapter().validate_python(self.event)
        return self.event

    def to_wire(self) -> dict[str, Any]:
        event = self.event
        return {"type": "agent_event", "event": event if isinstance(event, dict) else event.model_dump(mode="json")}


_EVENT_ADAPTER: TypeAdapter[Any] | None = None


def _event_adapter() -> TypeAdapter[Any]:
    global _EVENT_ADAPTER
    if _EVENT_ADAPTER is None:
        _EVENT_ADAPTER = TypeAdapter(AgentEvent)
    return _EVENT_ADAPTER


DataLine = Union[SystemInit, SystemLine, AssistantLine, UserLine, StreamEventLine, ResultLine, AgentEventLine]


# How ``encode`` starts an ``agent_event`` line; ``decode_agent_event`` knows a line by it.
AGENT_EVENT_PREFIX = '{"type": "agent_event", "event": '


def encode(line: WireModel) -> str:
    """One JSON line, ``\\n``-terminated, as the reference writes it (non-ASCII kept). An ``agent_event`` line (many a
    turn, to our own clients) is the event's JSON from pydantic's serializer inside ``AGENT_EVENT_PREFIX``: the same
    object ``to_wire`` gives, about five times quicker than ``json.dumps`` over the dumped dict."""
    if type(line) is AgentEventLine and isinstance(line.event, BaseModel):
        return f"{AGENT_EVENT_PREFIX}{line.event.model_dump_json()}}}\n"
    return json.dumps(line.to_wire(), ensure_ascii=False) + "\n"


def decode_agent_event(text: str) -> AgentEventLine | None:
    """The quick way in for a line as ``encode`` writes an ``agent_event`` (stripped): the event parsed and validated
    in one pass (``validate_json``). None for any other line, and for one that does not validate (a line that starts
    so but holds more keys, bad JSON, a bad event): the caller decodes it the general way, which names the problem.
    What it accepts is exactly ``{"type": "agent_event", "event": E}`` with E a valid event."""
    if not (text.startswith(AGENT_EVENT_PREFIX) and text.endswith("}")):
        return None
    try:
        return AgentEventLine.of(_event_adapter().validate_json(text[len(AGENT_EVENT_PREFIX):-1]))
    except (ValidationError, ValueError):
        return None


def decode_data(obj: dict[str, Any]) -> DataLine | UnknownLine:
    kind = obj.get("type")
    try:
        if kind == "system":
            return SystemInit.model_validate(obj) if obj.get("subtype") == "init" else SystemLine.model_validate(obj)
        if kind == "assistant":
            return AssistantLine.model_validate(obj)
        if kind == "user":
            return UserLine.model_validate(obj)
        if kind == "stream_event":
            return StreamEventLine.model_validate(obj)
        if kind == "result":
            return ResultLine.model_validate(obj)
        if kind == "agent_event":
            event = obj.get("event")
            if not isinstance(event, dict):
                raise ProtocolError("agent_event without an event object")
            return AgentEventLine.of(_event_adapter().validate_python(event))
    except ValidationError as exc:
        raise ProtocolError(f"bad {kind} line: {exc.errors()[0].get('msg')}") from exc
    return UnknownLine(type=str(kind or ""), raw=obj)


def decode(text: str | bytes | dict[str, Any]) -> Any:
    """Any stdout/stdin line → its model (data line, control message or ``UnknownLine``); ``ProtocolError``
    when it is not a JSON object or a known type does not validate."""
    obj = loads_object(text)
    if str(obj.get("type", "")).startswith("control_"):
        return control.decode_control(obj)
    return decode_data(obj)
