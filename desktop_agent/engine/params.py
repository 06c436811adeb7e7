"""What one ``query()`` is given: ``QueryParams`` and the ``BeforeRequest`` hook type.

Below ``loop`` (the iteration) and ``request`` (the model call), which both read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from desktop_agent.core.context import ToolUseContext
from desktop_agent.model.client import ModelClient
from desktop_agent.model.pricing import CostTracker

# ``QueryParams.before_request``: awaited before every model request of the loop (the streamed one and the
# non-streaming retry) with the API messages about to be sent, after that request's ``RequestStarted`` and
# inside the abortable part of the request (an abort cancels it); a list it returns replaces those messages
# for that request (auto-compaction), None sends them as they are.
BeforeRequest = Callable[[list[dict[str, Any]]], Awaitable[list[dict[str, Any]] | None]]


@dataclass
class QueryParams:
    messages: list[dict[str, Any]]  # transcript entries: history + the new user entry
    ctx: ToolUseContext  # tools, cwd, permission ctx, prompter, abort signal, hooks
    client: ModelClient
    model: str
    system_prompt: list[dict[str, Any]]  # system text blocks; the client adds cache breakpoints
    max_turns: int | None = None
    max_tokens: int = 32_000
    thinking: dict[str, Any] | None = None
    streaming_tool_execution: bool = True
    # Each NEW transcript entry (assistant reply, tool-result user entry, interruption, attachment)
    # as soon as it exists, in transcript order — the session layer persists it.
    on_message: Callable[[dict[str, Any]], None] | None = None
    # None: on unless CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK is set.
    fallback_enabled: bool | None = None
    # Session totals carried across queries (a new tracker per query when None).
    cost_tracker: CostTracker | None = None
    # Raw stream events as StreamEvent (for --include-partial-messages).
    include_stream_events: bool = False
    # Extra request metadata passed to the client.
    metadata: dict[str, Any] = field(default_factory=dict)
    # Awaited before each model request; may return replacement messages (see ``BeforeRequest``).
    before_request: BeforeRequest | None = None
    # ``loop.settle_pending``: run this saved (tool_use block, assistant entry uuid) instead of asking the model.
    pending_call: tuple[dict[str, Any], str] | None = None
