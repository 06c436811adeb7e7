"""The query loop (SPEC §2, §6): one user message → model requests and tool rounds → a terminal reason.

``query(params)`` is an async generator of ``AgentEvent``s that ends with exactly one
``TurnFinished(reason=...)``. Inside, a driver task does the work and puts every event on one queue
— model events, tool events, retry waits and the permission events tools emit through ``ctx.emit``
— so a front end sees them in the order they happened. Closing the generator cancels the driver.

Per iteration (``turn`` starts at 1, §2.3):
1. ``messages_for_query``: entries after the last compact boundary, normalised for the API.
2. One model request (streamed). Follow-up is decided by the *content*: any ``tool_use`` block means
   tools run and another request follows; ``stop_reason`` is not trusted.
3. Tools: one ``Scheduler`` per round; with ``streaming_tool_execution`` each tool_use is handed to it as
   soon as its block completes, otherwise every block of the reply at once after the reply. A round's tool
   events leave through its ``EventSink`` (a call's started → asked → answered → progress, then finished).
4. Checkpoint: abort → ``aborted_tools``; a hook stop → ``hook_stopped``; ``max_turns``.

Transcript (``on_message``): one assistant entry per model reply (written when the reply ends, or
with its finished blocks when it is cut short), then one user entry per tool_result, in delivery
order. Every tool_use gets exactly one result on every path:
- abort while streaming → started tools finish (or are cancelled), the rest get results, then a
  ``[Request interrupted by user]`` entry; terminal ``aborted_streaming``;
- abort during tools → ``[Request interrupted by user for tool use]``; terminal ``aborted_tools``;
- a model error → running tools report their real result, the others get the error text, an
  ``ErrorEvent`` is emitted; terminal ``model_error``.

A broken stream (§6.5, decided deliberately; the user sees which through ``StreamFallback``):
- if a completed tool_use already **started** (streaming execution), its side effects may exist, so
  the partial reply is kept with its finished blocks, every completed call is run and answered,
  and the loop continues with the next request (``completed_tools_kept``);
- otherwise nothing has happened yet: the partial reply is discarded (the old executor too) and
  the same messages are re-requested without streaming (``discarded_partial`` when something had
  been shown, else ``non_streaming_retry``).
With ``CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK`` set there is no second request: an
``ErrorEvent`` and ``model_error`` (completed, started calls are still answered).

``AssistantMessage`` is emitted once per reply, together with its transcript entry. While
streaming, text arrives as ``TextDelta``/``ThinkingDelta``, and each content block, when it finishes, as
an ``AssistantBlock`` (blocks that never streamed — the non-streaming fallback — go out just before the
reply's ``AssistantMessage``). A tool_use's call starts only after the consumer of ``query()`` has taken
its ``AssistantBlock`` (it asked for the next event), on the streaming and the batch path alike, so a
front end is always shown a call before any hook callback or permission request about it; with
streaming execution a call's ``ToolCallStarted`` may precede its reply's ``AssistantMessage``.
``StreamEvent`` (raw events) is only emitted with ``include_stream_events`` (``--include-partial-messages``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Awaitable, Callable, Literal

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import INTERRUPTED_MESSAGE
from desktop_agent.core.events import (
    AssistantBlock, AssistantMessage, ErrorEvent, PermissionRequested, PermissionResolved, RequestStarted, RetryWaiting,
    StreamEvent, StreamFallback, TextDelta, ThinkingDelta, ToolCallFinished, ToolCallStarted, TurnFinished,
    TurnFinishReason, TurnStarted, Usage, UserMessage,
)
from desktop_agent.engine.execution import ToolUseOutcome
from desktop_agent.core.messages import (
    assistant_entry, new_uuid, normalize_for_api, text_of, tool_result_block, tool_use_blocks, user_entry, _now_iso,
)
from desktop_agent.engine.scheduler import Scheduler, TrackedTool, finished_event
from desktop_agent.engine.sink import EventSink
from desktop_agent.model.client import ModelClient, ModelError, ModelRequest, StreamBroken
from desktop_agent.model.pricing import CostTracker
from desktop_agent.model.stream import MessageAccumulator

INTERRUPT_MESSAGE = "[Request interrupted by user]"
INTERRUPT_MESSAGE_FOR_TOOL_USE = "[Request interrupted by user for tool use]"
MAX_OUTPUT_TOKENS_MESSAGE = (
    "Output token limit hit. Resume directly — no apology, no recap of what you were doing. Pick up "
    "mid-thought if that is where the cut happened. Break remaining work into smaller pieces."
)
MAX_OUTPUT_TOKENS_RECOVERIES = 3
# What one model round ends with: ``ok`` (go on) or the turn's terminal reason.
RoundStatus = Literal["ok", "aborted_streaming", "model_error"]
# ``QueryParams.before_request``: awaited before every model request of the loop (the streamed one and the
# non-streaming retry) with the API messages about to be sent, after that request's ``RequestStarted`` and
# inside the abortable part of the request (an abort cancels it); a list it returns replaces those messages
# for that request (auto-compaction), None sends them as they are.
BeforeRequest = Callable[[list[dict[str, Any]]], Awaitable[list[dict[str, Any]] | None]]


def fallback_enabled_from_env() -> bool:
    value = os.environ.get("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "")
    return value.strip().lower() in ("", "0", "false", "no", "off")


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


class _Aborted(Exception):
    """The user aborted while we awaited the model."""


class _Run:
    """One ``query()`` call: the loop state and the driver."""

    def __init__(self, params: QueryParams, put: Callable[[Any], None]):
        self.p = params
        self._put = put
        self.ctx = params.ctx
        self.messages: list[dict[str, Any]] = list(params.messages)
        self.tracker = params.cost_tracker or CostTracker()
        self.query_cost = 0.0
        self.query_usage: dict[str, int] = {}
        self.turn = 1
        self.t0 = time.perf_counter()
        self.api_ms = 0.0
        self.fallback_enabled = params.fallback_enabled if params.fallback_enabled is not None \
            else fallback_enabled_from_env()
        # The current round: tool_use blocks written to the transcript and the ids answered.
        self.round_tool_uses: list[dict[str, Any]] = []
        self.answered: set[str] = set()
        self.assistant_uuid: str | None = None
        self.held: list[dict[str, Any]] = []  # results that arrived before their assistant entry
        self.stop_reason_hook: str | None = None
        self.last_text = ""
        self._current: asyncio.Future[Any] | None = None
        self._tools_cache: tuple[tuple[int, ...], list[dict[str, Any]]] | None = None
        self._api_cache: tuple[int, int, list[dict[str, Any]]] | None = None
        self._persist_failed = False
        self.executors: list[Scheduler] = []
        # Protocol order: each finished block goes out as an AssistantBlock; a tool_use's call starts only once
        # the consumer took that event (its gate, keyed by tool_use id, is done). Blocks shown this reply:
        self._shown_blocks: list[dict[str, Any]] = []
        self._tool_gates: dict[str, asyncio.Future[None]] = {}
        self._event_gates: dict[int, asyncio.Future[None]] = {}
        self.ctx.abort.on_abort(self._on_abort)

    # ------------------------------------------------------------------ helpers
    def put(self, event: Any) -> None:
        self._put(event)

    def new_scheduler(self, mode: Literal["streaming", "batch"]) -> Scheduler:
        """The round's scheduler; its calls' events leave through the round's ``EventSink``, in order."""
        scheduler = Scheduler(self.ctx, EventSink(self.put), mode=mode)
        self.executors.append(scheduler)
        return scheduler

    def show_block(self, block: dict[str, Any], message: dict[str, Any]) -> asyncio.Future[None] | None:
        """Emit one finished content block (``AssistantBlock``); for a tool_use, return the gate its call
        awaits: done when the consumer has taken the event (``taken``)."""
        if any(b is block for b in self._shown_blocks):
            return self._tool_gates.get(str(block.get("id"))) if block.get("type") == "tool_use" else None
        self._shown_blocks.append(block)
        msg: dict[str, Any] = {"id": message.get("id") or f"msg_{new_uuid()}", "type": "message",
                               "role": "assistant", "model": message.get("model") or self.p.model,
                               "content": [block], "stop_reason": None, "stop_sequence": None,
                               "usage": dict(message.get("usage") or {})}
        event = AssistantBlock(message=msg)
        gate: asyncio.Future[None] | None = None
        if block.get("type") == "tool_use":
            gate = asyncio.get_running_loop().create_future()
            self._tool_gates[str(block.get("id"))] = gate
            self._event_gates[id(event)] = gate
        self.put(event)
        return gate

    def taken(self, event: Any) -> None:
        """The consumer has handled ``event`` (it asked for the next one): open the gate of its call."""
        gate = self._event_gates.pop(id(event), None)
        if gate is not None and not gate.done():
            gate.set_result(None)

    def release_gates(self) -> None:
        for gate in [*self._event_gates.values(), *self._tool_gates.values()]:
            if not gate.done():
                gate.set_result(None)
        self._event_gates.clear()

    async def shown(self, blocks: list[dict[str, Any]]) -> None:
        """Wait until the consumer has taken the AssistantBlock of every tool_use in ``blocks``."""
        gates = [self._tool_gates[str(b.get("id"))] for b in blocks if str(b.get("id")) in self._tool_gates]
        pending = [g for g in gates if not g.done()]
        if pending:
            await asyncio.wait([asyncio.shield(g) for g in pending])

    def _on_abort(self) -> None:
        if self._current is not None and not self._current.done():
            self._current.cancel()

    async def _abortable(self, coro: Any) -> Any:
        """Await ``coro`` as a task the abort signal cancels; raises ``_Aborted`` on abort."""
        if self.ctx.abort.aborted:
            coro.close()
            raise _Aborted()
        task = asyncio.ensure_future(coro)
        self._current = task
        try:
            await asyncio.wait({task})
        finally:
            if not task.done():  # we ourselves were cancelled
                task.cancel()
            self._current = None
        if task.cancelled():
            if self.ctx.abort.aborted:
                raise _Aborted()
            raise asyncio.CancelledError()
        return task.result()

    def persist(self, entry: dict[str, Any]) -> None:
        self.messages.append(entry)
        if self.p.on_message is not None:
            try:
                self.p.on_message(entry)
            except Exception as exc:  # the transcript store failed: tell the user once, keep going
                if not self._persist_failed:
                    self._persist_failed = True
                    self.put(ErrorEvent(message=f"Could not save the transcript: {exc}", kind="internal"))

    def tools_for_api(self) -> list[dict[str, Any]]:
        key = tuple(map(id, self.ctx.tools))
        if self._tools_cache is None or self._tools_cache[0] != key:
            self._tools_cache = (key, [t.to_api_schema() for t in self.ctx.tools])
        return self._tools_cache[1]

    def messages_for_query(self) -> list[dict[str, Any]]:
        """Entries from the last compact boundary on, normalised for the API (§5.4).

        The history only grows during a query, so the normalised prefix is kept and only new
        entries are normalised (a whole re-normalisation per request is O(n²) over a long turn).
        Cached message dicts are never mutated: a boundary merge builds a new dict.
        """
        start = 0
        for i in range(len(self.messages) - 1, -1, -1):
            m = self.messages[i]
            if m.get("type") == "system" and m.get("subtype") == "compact_boundary":
                start = i
                break
        cache = self._api_cache
        if cache is None or cache[0] != start or cache[1] > len(self.messages):
            out = normalize_for_api(self.messages[start:])
        else:
            out = list(cache[2])
            new = normalize_for_api(self.messages[cache[1]:])
            if new and out and out[-1]["role"] == new[0]["role"]:
                content = out[-1]["content"] + new[0]["content"]
                if new[0]["role"] == "user":
                    content = [b for b in content if b.get("type") == "tool_result"] + \
                              [b for b in content if b.get("type") != "tool_result"]
                out[-1] = {"role": new[0]["role"], "content": content}
                new = new[1:]
            out.extend(new)
        self._api_cache = (start, len(self.messages), out)
        return list(out)

    def build_request(self) -> ModelRequest:
        return ModelRequest(
            model=self.p.model, messages=self.messages_for_query(), system=list(self.p.system_prompt),
            tools=self.tools_for_api(), max_tokens=self.p.max_tokens, thinking=self.p.thinking,
            metadata=dict(self.p.metadata),
        )

    async def prepared(self, request: ModelRequest) -> ModelRequest:
        """``request`` after the ``before_request`` hook (its messages replaced when the hook returns some)."""
        hook = self.p.before_request
        if hook is None:
            return request
        replacement = await hook(request.messages)
        if replacement is None:
            return request
        return dataclasses.replace(request, messages=replacement)

    def on_retry(self, attempt: int, max_attempts: int, delay: float, error: str) -> None:
        self.put(RetryWaiting(attempt=attempt, max_attempts=max_attempts, delay_s=delay, error=error))

    # ------------------------------------------------------------------ transcript pieces
    def start_round(self) -> None:
        self.round_tool_uses = []
        self.answered = set()
        self.assistant_uuid = None
        self.held = []

    def write_assistant(self, content: list[dict[str, Any]], message: dict[str, Any]) -> dict[str, Any] | None:
        self.last_stop_reason = message.get("stop_reason")
        if not content:
            return None
        for block in content:  # blocks that did not stream (non-streaming fallback, cut text) go out now
            self.show_block(block, message)
        extra = {k: message[k] for k in ("id", "model", "stop_reason", "usage") if message.get(k) is not None}
        entry = assistant_entry(content, **extra)
        self.assistant_uuid = entry["uuid"]
        self.round_tool_uses = tool_use_blocks(entry)
        self.persist(entry)
        self.put(AssistantMessage(message=entry))
        text = text_of(entry)
        if text:
            self.last_text = text
        held, self.held = self.held, []
        for result in held:
            self._write_result(result)
        return entry

    def deliver(self, outcome: ToolUseOutcome, finished: ToolCallFinished | None = None) -> None:
        """A tool result arrived: the UI hears now; the transcript after its assistant entry."""
        self.put(finished or finished_event(outcome))
        if outcome.stop_reason and not self.stop_reason_hook:
            self.stop_reason_hook = outcome.stop_reason
        item = {"outcome": outcome}
        if self.assistant_uuid is None:
            self.held.append(item)
        else:
            self._write_result(item)

    def _write_result(self, item: dict[str, Any]) -> None:
        outcome: ToolUseOutcome = item["outcome"]
        tool_use_id: str = outcome.block.get("tool_use_id") or ""
        if tool_use_id in self.answered:
            return  # exactly one result per tool_use
        self.answered.add(tool_use_id)
        extra: dict[str, Any] = {"sourceToolAssistantUUID": self.assistant_uuid}
        if outcome.data is not None:
            try:
                json.dumps(outcome.data)
                extra["toolUseResult"] = outcome.data
            except (TypeError, ValueError):
                pass
        entry = user_entry([outcome.block], **extra)
        self.persist(entry)
        self.put(UserMessage(message=entry))
        for message in outcome.extra_messages:
            if isinstance(message, dict) and message.get("type") in ("user", "assistant", "system", "attachment"):
                self.persist(message)

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
        self.put(UserMessage(message=entry))

    def account(self, message: dict[str, Any]) -> None:
        usage = message.get("usage") or {}
        model = message.get("model") or self.p.model
        cost = self.tracker.add(model, usage)
        self.query_cost += cost
        for key, value in usage.items():
            if isinstance(value, int):
                self.query_usage[key] = self.query_usage.get(key, 0) + value
        self.put(Usage(
            input_tokens=int(usage.get("input_tokens") or 0), output_tokens=int(usage.get("output_tokens") or 0),
            cache_read_input_tokens=int(usage.get("cache_read_input_tokens") or 0),
            cache_creation_input_tokens=int(usage.get("cache_creation_input_tokens") or 0),
            cost_usd=cost, session_cost_usd=self.tracker.cost_usd, session_tokens=self.tracker.total_tokens,
        ))

    def error_event(self, exc: BaseException) -> None:
        if isinstance(exc, ModelError):
            self.put(ErrorEvent(message=str(exc), kind=exc.kind, retryable=exc.retryable))
        else:
            self.put(ErrorEvent(message=f"Internal error: {type(exc).__name__}: {exc}", kind="internal"))

    # ------------------------------------------------------------------ driver
    async def run(self) -> None:
        original_emit = self.ctx.emit
        # A call's own events go through its slot of the round's EventSink; anything else emitted on the
        # turn's context comes out of the same stream.
        self.ctx.emit = self.put
        error: str | None = None
        try:
            reason = await self.loop()
        except asyncio.CancelledError:
            for executor in self.executors:  # the consumer went away: stop our tasks
                executor.cancel_all()
            raise
        except _Aborted:
            self.fill_missing(INTERRUPTED_MESSAGE)
            reason = "aborted_streaming"
        except Exception as exc:  # a bug of ours: still a valid transcript and one TurnFinished
            self.error_event(exc)
            error = f"{type(exc).__name__}: {exc}"
            self.fill_missing(f"Error: {error}")
            reason = "model_error"
        finally:
            self.ctx.emit = original_emit
            if self.ctx is not self.p.ctx:
                self.p.ctx.emit = original_emit
                self.ctx.emit = original_emit
                self.p.ctx = self.ctx  # context modifiers' changes carry over to the caller
        if reason == "model_error" and error is None:
            error = self._model_error
        self.put(TurnFinished(
            reason=reason, num_turns=self.turn, result_text=self.last_text,
            duration_ms=(time.perf_counter() - self.t0) * 1000, duration_api_ms=self.api_ms,
            cost_usd=self.query_cost, usage=dict(self.query_usage), error=error,
        ))

    _model_error: str | None = None

    async def loop(self) -> TurnFinishReason:
        if self.ctx.abort.aborted:
            return "aborted_streaming"
        while True:
            self.put(TurnStarted(turn=self.turn))
            self.start_round()
            status = await self.model_round()
            if status != "ok":
                return status
            tool_uses = self.round_tool_uses
            if not tool_uses and self.last_stop_reason == "max_tokens":
                # The reply was cut by the output limit (§6.6): ask it to go on, a few times at most.
                if self._max_tokens_recoveries >= MAX_OUTPUT_TOKENS_RECOVERIES:
                    self.put(ErrorEvent(kind="model", message=(
                        f"The model hit the output token limit ({self.p.max_tokens}) "
                        f"{MAX_OUTPUT_TOKENS_RECOVERIES + 1} times in a row; the reply is incomplete.")))
                    return "completed"
                self._max_tokens_recoveries += 1
                entry = user_entry([{"type": "text", "text": MAX_OUTPUT_TOKENS_MESSAGE}], isMeta=True)
                self.persist(entry)
                self.put(UserMessage(message=entry))
                if self.p.max_turns is not None and self.turn + 1 > self.p.max_turns:
                    return "max_turns"
                self.turn += 1
                continue
            if not tool_uses:
                verdict = await self.stop_hooks()
                if verdict != "continue":
                    return verdict
                # A Stop hook blocked the stop: its feedback is in the transcript; ask the model again.
                if self.p.max_turns is not None and self.turn + 1 > self.p.max_turns:
                    return "max_turns"
                self.turn += 1
                continue
            if self.ctx.abort.aborted:
                self.fill_missing(INTERRUPTED_MESSAGE)
                self.write_interruption(INTERRUPT_MESSAGE_FOR_TOOL_USE)
                return "aborted_tools"
            if self.stop_reason_hook:
                return "hook_stopped"
            next_turn = self.turn + 1
            if self.p.max_turns is not None and next_turn > self.p.max_turns:
                self.persist({
                    "type": "attachment", "uuid": new_uuid(), "timestamp": _now_iso(),
                    "attachment": {"type": "max_turns_reached", "maxTurns": self.p.max_turns, "turnCount": next_turn},
                })
                return "max_turns"
            self.turn = next_turn

    async def stop_hooks(self) -> Literal["completed", "stop_hook_prevented", "continue"]:
        """Stop hooks (§2.4): ``completed``, ``stop_hook_prevented``, or ``continue`` after feedback."""
        stop = getattr(self.ctx.hooks, "stop", None) if self.ctx.hooks is not None else None
        if stop is None:
            return "completed"
        try:
            outcome = await stop(self.ctx, stop_hook_active=self._stop_hook_active)
        except Exception as exc:  # a broken hook must not turn a finished turn into a failure
            self.put(ErrorEvent(message=f"Stop hook failed: {exc}", kind="hook"))
            return "completed"
        if getattr(outcome, "stop", False):
            return "stop_hook_prevented"
        if getattr(outcome, "block", False):
            self._stop_hook_active = True
            reason = getattr(outcome, "reason", None) or "Stop hook blocked the stop"
            entry = user_entry([{"type": "text", "text": f"Stop hook feedback:\n{reason}"}], isMeta=True)
            self.persist(entry)
            self.put(UserMessage(message=entry))
            return "continue"
        return "completed"

    _stop_hook_active = False
    _max_tokens_recoveries = 0
    last_stop_reason: str | None = None

    async def model_round(self) -> RoundStatus:
        """One model request and its tool calls. Returns ``ok`` or a terminal reason."""
        request = self.build_request()
        executor = self.new_scheduler("streaming") if self.p.streaming_tool_execution else None
        acc = MessageAccumulator()
        self._shown_blocks = []
        self.put(RequestStarted(turn=self.turn, model=self.p.model))
        t_api = time.perf_counter()
        try:
            await self._abortable(self.consume(request, acc, executor))
        except _Aborted:
            self.api_ms += (time.perf_counter() - t_api) * 1000
            return await self.aborted_while_streaming(acc, executor)
        except StreamBroken as exc:
            self.api_ms += (time.perf_counter() - t_api) * 1000
            return await self.stream_broken(exc, request, acc, executor)
        except ModelError as exc:
            self.api_ms += (time.perf_counter() - t_api) * 1000
            return await self.model_failed(exc, acc, executor)
        self.api_ms += (time.perf_counter() - t_api) * 1000

        message = acc.final_message()
        self.write_assistant(message["content"], message)
        self.account(message)
        return await self.run_tools(executor)

    async def consume(self, request: ModelRequest, acc: MessageAccumulator,
                      executor: Scheduler | None) -> None:
        """Read the stream to its end: deltas out, finished tool_use blocks to the executor."""
        request = await self.prepared(request)
        stream = self.p.client.stream(request, on_retry=self.on_retry)
        put = self.put
        include_raw = self.p.include_stream_events
        abort = self.ctx.abort
        try:
            async for event in stream:
                if abort.aborted:  # do not rely on cancellation alone: a client may swallow it
                    raise _Aborted()
                block = acc.feed(event)
                if include_raw:
                    put(StreamEvent(event=event))
                if block is None:
                    if event.get("type") == "content_block_delta":
                        delta = event["delta"]
                        dtype = delta.get("type")
                        if dtype == "text_delta":
                            put(TextDelta(index=event["index"], text=delta.get("text", "")))
                        elif dtype == "thinking_delta":
                            put(ThinkingDelta(index=event["index"], text=delta.get("thinking", "")))
                else:
                    gate = self.show_block(block, acc.message)
                    if executor is not None and block.get("type") == "tool_use" and not abort.aborted:
                        executor.add_tool(block, gate=gate)
                if executor is not None and executor.tools and not abort.aborted:
                    self.drain(executor.get_completed_results())
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        if not acc.stopped:
            raise StreamBroken("the stream ended before message_stop")

    def drain(self, items: list[Any]) -> None:
        for item in items:
            if isinstance(item, TrackedTool):
                assert item.outcome is not None
                self.deliver(item.outcome)
            else:
                self.put(item)

    async def run_tools(self, executor: Scheduler | None) -> RoundStatus:
        if not self.round_tool_uses:
            return "ok"
        if executor is None:  # batch: every block at once, once every call was shown
            await self.shown(self.round_tool_uses)
            executor = self.new_scheduler("batch")
            for block in self.round_tool_uses:
                executor.add_tool(block, self.assistant_uuid)
        async for item in executor.get_remaining_results():
            self.drain([item])
        self.ctx = executor.ctx
        self.fill_missing(INTERRUPTED_MESSAGE)  # defensive: never leave a tool_use unanswered
        return "ok"

    # ------------------------------------------------------------------ the unhappy paths
    async def finish_started(self, executor: Scheduler | None, fill: str) -> None:
        """Deliver the real results of tools already running; unstarted ones get ``fill``."""
        if executor is not None:
            executor.close(fill)
            async for item in executor.get_remaining_results():
                self.drain([item])
            self.ctx = executor.ctx
        self.fill_missing(fill)

    async def aborted_while_streaming(self, acc: MessageAccumulator,
                                      executor: Scheduler | None) -> RoundStatus:
        self.write_assistant(acc.partial_content(), acc.message)
        if acc.started:
            self.account(acc.message)
        if executor is not None:
            # Started tools finish (or are cancelled); queued ones see the abort and get REJECT_MESSAGE.
            async for item in executor.get_remaining_results():
                self.drain([item])
            self.ctx = executor.ctx
        self.fill_missing(INTERRUPTED_MESSAGE)
        self.write_interruption(INTERRUPT_MESSAGE)
        return "aborted_streaming"

    async def model_failed(self, exc: ModelError, acc: MessageAccumulator,
                           executor: Scheduler | None) -> RoundStatus:
        self.write_assistant(acc.completed_content(), acc.message)
        if acc.started:
            self.account(acc.message)
        await self.finish_started(executor, str(exc))
        self.error_event(exc)
        self._model_error = str(exc)
        return "model_error"

    async def stream_broken(self, exc: StreamBroken, request: ModelRequest, acc: MessageAccumulator,
                            executor: Scheduler | None) -> RoundStatus:
        started = executor is not None and executor.any_started()
        if started:
            # Side effects may exist: keep the finished blocks and answer every completed call.
            self.put(StreamFallback(action="completed_tools_kept", detail=(
                f"The stream broke ({exc}). Tool calls that had already completed were kept and run; "
                "the rest of the reply was dropped.")))
            self.write_assistant(acc.completed_content(), acc.message)
            if acc.started:
                self.account(acc.message)
            if not self.fallback_enabled:
                await self.finish_started(executor, str(exc))
                self.error_event(exc)
                self._model_error = str(exc)
                return "model_error"
            return await self.run_tools(executor)

        if executor is not None:
            executor.discard()
        self.held = []  # e.g. "No such tool" results of the discarded reply
        if not self.fallback_enabled:
            self.error_event(exc)
            self._model_error = str(exc)
            return "model_error"
        shown = bool(acc.completed or acc.blocks)
        self.put(StreamFallback(
            action="discarded_partial" if shown else "non_streaming_retry",
            detail=f"The stream broke ({exc}); {'the partial reply was discarded and ' if shown else ''}"
                   "the same request is being retried without streaming."))
        self.put(RequestStarted(turn=self.turn, model=self.p.model))
        t_api = time.perf_counter()
        try:
            message = await self._abortable(self._create(request))
        except _Aborted:
            self.api_ms += (time.perf_counter() - t_api) * 1000
            self.write_interruption(INTERRUPT_MESSAGE)
            return "aborted_streaming"
        except ModelError as exc2:
            self.api_ms += (time.perf_counter() - t_api) * 1000
            self.error_event(exc2)
            self._model_error = str(exc2)
            return "model_error"
        self.api_ms += (time.perf_counter() - t_api) * 1000
        content = [dict(b) for b in message.get("content") or []]
        for index, block in enumerate(content):
            if block.get("type") == "text" and block.get("text"):
                self.put(TextDelta(index=index, text=block["text"]))
            elif block.get("type") == "thinking" and block.get("thinking"):
                self.put(ThinkingDelta(index=index, text=block["thinking"]))
        self.write_assistant(content, message)
        self.account(message)
        new_executor = None
        if self.p.streaming_tool_execution and self.round_tool_uses:
            new_executor = self.new_scheduler("streaming")
            for block in self.round_tool_uses:
                new_executor.add_tool(block, self.assistant_uuid, gate=self._tool_gates.get(str(block.get("id"))))
        return await self.run_tools(new_executor)


    async def _create(self, request: ModelRequest) -> dict[str, Any]:
        return await self.p.client.create(await self.prepared(request), on_retry=self.on_retry)


async def query(params: QueryParams) -> AsyncIterator[Any]:
    """Run one user message to a terminal reason, yielding ``AgentEvent``s (last: ``TurnFinished``)."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    done = object()
    run = _Run(params, queue.put_nowait)

    async def drive() -> None:
        try:
            await run.run()
        finally:
            queue.put_nowait(done)

    task = asyncio.ensure_future(drive())
    try:
        while True:
            event = await queue.get()
            if event is done:
                break
            yield event
            run.taken(event)
        await task  # surfaces a crash of the driver itself (should not happen: run() catches)
    finally:
        run.release_gates()
        if not task.done():
            task.cancel()
            try:
                await task
            except BaseException:
                pass
