"""The session's compaction policy (SPEC §5.5): when to compact, what a compaction appends, which events say so.

``Compaction.compact`` is the one compaction: the summary request through the session's client (PreCompact and
SessionStart(compact) hooks around it, ``session.compact.compact_conversation``), the boundary and the summary
appended to the conversation and the transcript, the file attachments kept in memory only, a ``Compacted`` event.
Three callers, one function:

- ``/compact`` (``AgentSession.compact``): ``trigger="manual"``;
- before a turn (``AgentSession.submit``): ``auto`` with the new prompt's size, when over the threshold;
- between the requests of a turn: ``before_request``, the loop's ``QueryParams.before_request`` hook. The first
  request of a turn was checked before the prompt was recorded; from the second on, ``auto(continuation=True)``
  runs, and once the turn has compacted, every request is built from the session's messages after the boundary
  (the loop's own copy still holds the rest). A mid-turn ``Compacted`` waits in ``pending`` for the session to
  yield it before the loop's next event.

``state`` counts failures: after 3 auto-compactions in a row fail, the session stops trying. What it reads of
the session is ``CompactingSession`` (``AgentSession`` has it), so this module does not import the session's.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.events import Compacted
from desktop_agent.core.messages import normalize_for_api
from desktop_agent.model.client import ModelClient
from desktop_agent.permissions.hooks import HookRunner
from desktop_agent.session import compact as compact_mod

log = logging.getLogger(__name__)


class CompactingSession(Protocol):
    """What a compaction reads and appends to of its session (``app.session.AgentSession``)."""

    @property
    def client(self) -> ModelClient: ...
    @property
    def model(self) -> str: ...
    @property
    def messages(self) -> list[dict[str, Any]]: ...
    @property
    def transcript_path(self) -> str: ...
    @property
    def ctx(self) -> ToolUseContext: ...
    @property
    def hooks(self) -> HookRunner | None: ...
    @property
    def auto_compact(self) -> bool: ...

    def tool_schemas(self) -> list[dict[str, Any]]: ...
    def record(self, entry: dict[str, Any]) -> None: ...


class Compaction:
    """One session's compaction: the shared function, the auto policy and the loop's ``before_request`` hook."""

    def __init__(self, session: CompactingSession) -> None:
        self._session = session
        self.state = compact_mod.AutoCompactState()
        self.pending: list[Compacted] = []  # mid-turn events, for the session to yield in stream order
        self._requests = 0
        self._compacted_this_turn = False

    async def compact(self, trigger: str, custom_instructions: str | None = None, *,
                      continuation: bool = False) -> Compacted:
        """Summarise the conversation; boundary + summary recorded, attachments in memory only (§5.5)."""
        s = self._session
        result = await compact_mod.compact_conversation(
            s.client, s.model, s.messages, transcript_path=s.transcript_path,
            read_file_state=s.ctx.read_file_state, tools=s.tool_schemas(), trigger=trigger,
            custom_instructions=custom_instructions, continuation=continuation, hooks=s.hooks, ctx=s.ctx)
        for entry in (result.boundary, result.summary):
            s.messages.append(entry)
            s.record(entry)
        s.messages.extend(result.attachments)
        return Compacted(pre_tokens=result.pre_tokens, summary=result.summary_text)

    def due(self, extra_tokens: int = 0) -> bool:
        """Whether the conversation (plus ``extra_tokens`` about to join it) is over the auto-compact threshold."""
        s = self._session
        return compact_mod.should_auto_compact(s.messages, s.model, self.state, s.auto_compact,
                                               extra_tokens=extra_tokens)

    async def auto(self, *, extra_tokens: int = 0, continuation: bool = False) -> Compacted | None:
        """Auto-compaction when ``due``: the event, or None (not due). A failure is counted and re-raised."""
        if not self.due(extra_tokens):
            return None
        self.state.attempts += 1
        try:
            event = await self.compact("auto", continuation=continuation)
        except Exception as exc:
            self.state.consecutive_failures += 1
            self.state.last_error = str(exc)
            log.warning("auto-compaction failed (%d in a row): %s", self.state.consecutive_failures, exc)
            raise
        self.state.consecutive_failures = 0
        return event

    # ------------------------------------------------------------------------------ the loop's hook

    def start_turn(self) -> None:
        self._requests = 0
        self._compacted_this_turn = False
        self.pending.clear()

    async def before_request(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """``QueryParams.before_request``: auto-compaction before each request of a turn but its first; after a
        compaction, the request's messages start at the boundary. A failure is logged (and counted), not raised:
        the request goes out as it was."""
        self._requests += 1
        if self._requests > 1:
            try:
                event = await self.auto(continuation=True)
            except Exception:
                event = None
            if event is not None:
                self._compacted_this_turn = True
                self.pending.append(event)
        if not self._compacted_this_turn:
            return None
        return normalize_for_api(compact_mod.messages_after_boundary(self._session.messages))
