"""``AgentEvent``: the first seam. Everything the engine tells a front end is one of these.

A pydantic discriminated union on ``type``, so the GUI controller, the CLI's stream-json writer and
the tests consume the same objects (``pydantic.TypeAdapter(AgentEvent)`` parses one back).
Progress events are UI-only: they never reach the model or the transcript.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from desktop_agent.core.permission import PermissionReply, PermissionRequest


class _Event(BaseModel):
    # Validators are built on first use: the window imports these before its first paint (~10 ms otherwise).
    # A float that is not finite goes out as json.dumps writes it (NaN, Infinity), not as null: an event's line
    # (protocol.stream_json.encode, pydantic's serializer) decodes back to the same event.
    model_config = ConfigDict(defer_build=True, ser_json_inf_nan="constants")


class TurnStarted(_Event):
    type: Literal["turn_started"] = "turn_started"
    turn: int  # turnCount: 1 for the first model request of a user message


class RequestStarted(_Event):
    """A model request is about to be sent (one user message may cause several)."""

    type: Literal["request_started"] = "request_started"
    turn: int
    model: str = ""


class TextDelta(_Event):
    type: Literal["text_delta"] = "text_delta"
    index: int
    text: str


class ThinkingDelta(_Event):
    type: Literal["thinking_delta"] = "thinking_delta"
    index: int
    text: str


class StreamEvent(_Event):
    """A raw Messages API stream event (for ``--include-partial-messages``)."""

    type: Literal["stream_event"] = "stream_event"
    event: dict[str, Any]


class AssistantMessage(_Event):
    """A finished assistant message: the reply's transcript entry (its blocks went out as ``AssistantBlock``)."""

    type: Literal["assistant"] = "assistant"
    message: dict[str, Any]  # transcript entry: {"type":"assistant","uuid":...,"message":{...}}


class AssistantBlock(_Event):
    """One content block of the reply, as soon as it finished streaming (text, thinking, each tool_use).

    The stream-json writer turns each into its own ``assistant`` line, as the reference does. The loop starts a
    tool_use's call only after the consumer has taken this event, so a front end always sees a call before any
    request about it (hook callback, permission)."""

    type: Literal["assistant_block"] = "assistant_block"
    message: dict[str, Any]  # API message shape: {"id", "model", "role", "content": [block], "usage", ...}


class UserMessage(_Event):
    """A user-role message the engine produced (tool results, interruption notices)."""

    type: Literal["user"] = "user"
    message: dict[str, Any]


class ToolCallStarted(_Event):
    type: Literal["tool_started"] = "tool_started"
    tool_use_id: str
    name: str
    input: dict[str, Any]
    summary: str = ""


class ToolCallProgress(_Event):
    type: Literal["tool_progress"] = "tool_progress"
    tool_use_id: str
    data: Any = None


class ToolCallFinished(_Event):
    type: Literal["tool_finished"] = "tool_finished"
    tool_use_id: str
    name: str
    content: Any  # the tool_result content sent to the model
    is_error: bool = False
    # The tool's structured output, e.g. Edit's {filePath, structuredPatch, originalFile, userModified}.
    data: dict[str, Any] | None = None
    duration_ms: float = 0.0
    # The call was refused by the permission step (a rule, the mode, the user, a PermissionRequest hook).
    denied: bool = False


class PermissionRequested(_Event):
    type: Literal["permission_requested"] = "permission_requested"
    request: PermissionRequest


class PermissionResolved(_Event):
    type: Literal["permission_resolved"] = "permission_resolved"
    request_id: str
    tool_use_id: str
    reply: PermissionReply
    decided_by: Literal["user", "hook", "cancel"] = "user"


class RetryWaiting(_Event):
    """The model request failed and will be retried after ``delay_s`` (shown, cancellable)."""

    type: Literal["retry_waiting"] = "retry_waiting"
    attempt: int
    max_attempts: int
    delay_s: float
    error: str


class StreamFallback(_Event):
    """The stream broke; what the engine did about the partial reply (the user sees which)."""

    type: Literal["stream_fallback"] = "stream_fallback"
    action: Literal["non_streaming_retry", "discarded_partial", "completed_tools_kept"]
    detail: str = ""


class Usage(_Event):
    type: Literal["usage"] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cost_usd: float = 0.0
    session_cost_usd: float = 0.0
    session_tokens: int = 0


class Compacted(_Event):
    type: Literal["compacted"] = "compacted"
    pre_tokens: int
    summary: str = ""


class ErrorEvent(_Event):
    """Something the user must see (API down, bad key, disk full). The transcript stays valid."""

    type: Literal["error"] = "error"
    message: str
    kind: str = "error"  # auth, rate_limit, overloaded, server, connection, context_too_long, model, internal
    retryable: bool = False


TurnFinishReason = Literal[
    "completed", "max_turns", "aborted_streaming", "aborted_tools", "model_error",
    "stop_hook_prevented", "hook_stopped", "prompt_blocked", "tool_deferred",
]


class TurnFinished(_Event):
    type: Literal["turn_finished"] = "turn_finished"
    reason: TurnFinishReason
    num_turns: int = 0
    result_text: str = ""
    duration_ms: float = 0.0
    duration_api_ms: float = 0.0
    cost_usd: float = 0.0
    usage: dict[str, int] = Field(default_factory=dict)
    error: str | None = None


AgentEvent = Annotated[
    Union[
        TurnStarted, RequestStarted, TextDelta, ThinkingDelta, StreamEvent, AssistantMessage, AssistantBlock,
        UserMessage, ToolCallStarted, ToolCallProgress, ToolCallFinished, PermissionRequested, PermissionResolved,
        RetryWaiting, StreamFallback, Usage, Compacted, ErrorEvent, TurnFinished,
    ],
    Field(discriminator="type"),
]
