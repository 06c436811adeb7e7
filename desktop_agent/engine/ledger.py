"""The turn's transcript as the loop writes it: one tool_result per tool_use, and the interruption entries.

``Ledger`` owns the conversation of one ``query()`` (the history it was given plus every new entry) and the
current round: the tool_use blocks of the reply written last and the ids already answered. Every new entry
goes to ``on_message`` as soon as it exists, in transcript order (the session layer persists it):
- one assistant entry per model reply (``write_assistant``), then one user entry per tool_result in delivery
  order (``deliver``); a result that arrives before its reply's entry is held until that entry is written;
- ``fill_missing``: an error result for every tool_use of the round still unanswered (``yieldMissingToolResult
  Blocks``), so every path — abort, model error, a bug of ours — leaves a valid transcript;
- a call a PreToolUse hook deferred (``engine.defer``) gets no tool_result: its ``hook_deferred_tool`` record is
  written instead and ``deferred`` is set (the loop ends the turn ``tool_deferred``);
- ``write_interruption``: ``[Request interrupted by user]`` / ``... for tool use``; ``write_meta``: the
  meta user entries the loop adds itself (output-limit recovery, Stop-hook feedback).
"""

from __future__ import annotations

import json
from typing import Any, Callable

from desktop_agent.core.events import AgentEvent, AssistantMessage, ErrorEvent, UserMessage
from desktop_agent.core.messages import (
    _now_iso, assistant_entry, new_uuid, text_of, tool_result_block, tool_use_blocks, user_entry,
)
from desktop_agent.engine.execution import ToolUseOutcome
from desktop_agent.engine.scheduler import finished_event
from desktop_agent.session.resume import deferred_record

INTERRUPT_MESSAGE = "[Request interrupted by user]"
INTERRUPT_MESSAGE_FOR_TOOL_USE = "[Request interrupted by user for tool use]"
# Entry types a tool's ``new_messages`` may add to the transcript.
_EXTRA_ENTRY_TYPES = ("user", "assistant", "system", "attachment")


class Ledger:
    """The conversation of one query and its current round of tool calls."""

    def __init__(self, messages: list[dict[str, Any]], put: Callable[[AgentEvent], None],
                 on_message: Callable[[dict[str, Any]], None] | None):
        self.messages: list[dict[str, Any]] = list(messages)
        self._put = put
        self._on_message = on_message
        self._persist_failed = False
        # The current round: tool_use blocks written to the transcript and the ids answered.
        self.round_tool_uses: list[dict[str, Any]] = []
        self.answered: set[str] = set()
        self.assistant_uuid: str | None = None
        self.held: list[ToolUseOutcome] = []  # results that arrived before their assistant entry
        self.stop_reason_hook: str | None = None  # a PostToolUse hook asked to stop the loop
        self.last_text = ""
        self.last_stop_reason: str | None = None
        self.deferred: dict[str, Any] | None = None  # the round's deferred call ({"id", "name", "input", "mode"})
        self.results: dict[str, Any] = {}  # the round's tool_result contents by tool_use_id (PostToolBatch)

    def persist(self, entry: dict[str, Any]) -> None:
        self.messages.append(entry)
        if self._on_message is not None:
            try:
                self._on_message(entry)
            except Exception as exc:  # the transcript store failed: tell the user once, keep going
                if not self._persist_failed:
                    self._persist_failed = True
                    self._put(ErrorEvent(message=f"Could not save the transcript: {exc}", kind="internal"))

    def start_round(self) -> None:
        self.round_tool_uses = []
        self.answered = set()
        self.assistant_uuid = None
        self.held = []
        self.deferred = None
        self.results = {}

    def write_assistant(self, content: list[dict[str, Any]], message: dict[str, Any],
                        show: Callable[[dict[str, Any], dict[str, Any]], object]) -> dict[str, Any] | None:
        """The reply's entry (``show`` sends the blocks that did not stream first), then any held results."""
        self.last_stop_reason = message.get("stop_reason")
        if not content:
            return None
        for block in content:  # blocks that did not stream (non-streaming fallback, cut text) go out now
            show(block, message)
        extra = {k: message[k] for k in ("id", "model", "stop_reason", "usage") if message.get(k) is not None}
        entry = assistant_entry(content, **extra)
        self.assistant_uuid = entry["uuid"]
        self.round_tool_uses = tool_use_blocks(entry)
        self.persist(entry)
        self._put(AssistantMessage(message=entry))
        text = text_of(entry)
        if text:
            self.last_text = text
        held, self.held = self.held, []
        for outcome in held:
            self._write_result(outcome)
        return entry

    def deliver(self, outcome: ToolUseOutcome) -> None:
        """A tool result arrived: the UI hears now; the transcript after its assistant entry."""
        self._put(finished_event(outcome))
        if outcome.stop_reason and not self.stop_reason_hook:
            self.stop_reason_hook = outcome.stop_reason
        if self.assistant_uuid is None:
            self.held.append(outcome)
        else:
            self._write_result(outcome)

    def _write_result(self, outcome: ToolUseOutcome) -> None:
        tool_use_id: str = outcome.block.get("tool_use_id") or ""
        if tool_use_id in self.answered:
            return  # exactly one result per tool_use
        self.answered.add(tool_use_id)
        if outcome.stage == "deferred" and outcome.deferred is not None:
            d = outcome.deferred
            self.deferred = d
            self.persist(deferred_record(tool_use_id, str(d.get("name")), dict(d.get("input") or {}),
                                         str(d.get("mode") or "default")))
            return
        self.results[tool_use_id] = outcome.block.get("content")
        extra: dict[str, Any] = {"sourceToolAssistantUUID": self.assistant_uuid}
        if outcome.data is not None:
            try:
                json.dumps(outcome.data)
                extra["toolUseResult"] = outcome.data
            except (TypeError, ValueError):
                pass
        entry = user_entry([outcome.block], **extra)
        self.persist(entry)
        self._put(UserMessage(message=entry))
        for message in outcome.extra_messages:
            if isinstance(message, dict) and message.get("type") in _EXTRA_ENTRY_TYPES:
                self.persist(message)

    def undefer(self) -> None:
        """The deferred call will not stay pending (the turn was interrupted): it is answered like the others."""
        if self.deferred is not None:
            self.answered.discard(str(self.deferred.get("id")))
            self.deferred = None

    def fill_missing(self, content: str) -> None:
        """``yieldMissingToolResultBlocks``: an error result for every unanswered tool_use of the round."""
        for block in self.round_tool_uses:
            tool_use_id = block.get("id")
            if tool_use_id in self.answered:
                continue
            outcome = ToolUseOutcome(block=tool_result_block(str(tool_use_id), content, is_error=True),
                                     tool_name=str(block.get("name")), stage="aborted")
            self.deliver(outcome)

    def write_interruption(self, text: str) -> None:
        entry = user_entry([{"type": "text", "text": text}], isInterrupt=True)
        self.persist(entry)
        self._put(UserMessage(message=entry))

    def write_meta(self, text: str) -> None:
        """A meta user entry the loop adds itself (the model reads it, the user did not type it)."""
        entry = user_entry([{"type": "text", "text": text}], isMeta=True)
        self.persist(entry)
        self._put(UserMessage(message=entry))

    def write_max_turns_reached(self, max_turns: int, turn_count: int) -> None:
        self.persist({
            "type": "attachment", "uuid": new_uuid(), "timestamp": _now_iso(),
            "attachment": {"type": "max_turns_reached", "maxTurns": max_turns, "turnCount": turn_count},
        })
