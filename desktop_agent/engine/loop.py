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
4. Checkpoint: abort → ``aborted_tools``; a call a PreToolUse hook deferred (``engine.defer``) →
   ``tool_deferred``; a hook stop → ``hook_stopped``; then the PostToolBatch hooks (once per round: a block or
   ``continue: false`` → ``hook_stopped``, their context a meta entry); ``max_turns``.

``settle_pending(params, block, assistant_uuid)`` runs one saved call (a deferred one, on resume) as a round of
its own through the same pipeline and checkpoint, and ends with ``completed`` (the caller goes on with the next
prompt, or asks the model), ``tool_deferred`` (deferred again), ``aborted_tools`` or ``hook_stopped``.

The unhappy ends of a request are this module's too (``aborted_while_streaming``, ``model_failed``,
``stream_broken``: they drive the run's own pieces). Modules: ``params.py`` what a query is given,
``request.py`` the model call, ``ledger.py`` the transcript, ``shown.py`` the protocol order,
``scheduler.py``/``sink.py`` the tool rounds.

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
- otherwise nothing has happened yet: the partial reply is discarded (its scheduler too) and
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
import os
import time
from typing import Any, AsyncIterator, Callable, Literal, Protocol, runtime_checkable

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import INTERRUPTED_MESSAGE
from desktop_agent.core.events import (
    AgentEvent, ErrorEvent, RequestStarted, StreamFallback, TextDelta, ThinkingDelta, TurnFinished, TurnFinishReason,
    TurnStarted,
)
from desktop_agent.engine.ledger import INTERRUPT_MESSAGE, INTERRUPT_MESSAGE_FOR_TOOL_USE, Ledger
from desktop_agent.engine.params import QueryParams
from desktop_agent.engine.request import Aborted, ModelCall
from desktop_agent.engine.scheduler import Mode, Scheduler, TrackedTool
from desktop_agent.engine.shown import ShownBlocks
from desktop_agent.engine.sink import EventSink
from desktop_agent.model.client import ModelError, ModelRequest, StreamBroken
from desktop_agent.model.stream import MessageAccumulator

MAX_OUTPUT_TOKENS_MESSAGE = (
    "Output token limit hit. Resume directly — no apology, no recap of what you were doing. Pick up "
    "mid-thought if that is where the cut happened. Break remaining work into smaller pieces."
)
MAX_OUTPUT_TOKENS_RECOVERIES = 3
# What one model round ends with: ``ok`` (go on) or the turn's terminal reason.
RoundStatus = Literal["ok", "aborted_streaming", "model_error"]



def fallback_enabled_from_env() -> bool:
    value = os.environ.get("CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK", "")
    return value.strip().lower() in ("", "0", "false", "no", "off")


class StopHookOutcome(Protocol):
    stop: bool
    block: bool
    reason: str | None


@runtime_checkable
class StopHooks(Protocol):
    """What the loop needs of ``ctx.hooks`` at the end of a turn (``HookRunner`` has it)."""

    async def stop(self, ctx: ToolUseContext, stop_hook_active: bool = False) -> StopHookOutcome: ...


class QueryRun:
    """One ``query()`` call: the iteration and the driver; the pieces are the ledger (transcript), the model
    call (requests, cost), the shown blocks (protocol order) and one scheduler per round."""

    def __init__(self, params: QueryParams, put: Callable[[AgentEvent], None]):
        self.p = params
        self.put = put
        self.ctx = params.ctx
        self.ledger = Ledger(params.messages, put, params.on_message)
        self.shown = ShownBlocks(put, params.model)
        self.model = ModelCall(params, put, self.ledger, self.shown)
        self.turn = 1
        self.t0 = time.perf_counter()
        self.fallback_enabled = params.fallback_enabled if params.fallback_enabled is not None \
            else fallback_enabled_from_env()
        self.schedulers: list[Scheduler] = []
        self.model_error: str | None = None
        self._stop_hook_active = False
        self._max_tokens_recoveries = 0

    # ------------------------------------------------------------------ tool rounds
    def new_scheduler(self, mode: Mode) -> Scheduler:
        """The round's scheduler; its calls' events leave through the round's ``EventSink``, in order."""
        scheduler = Scheduler(self.ctx, EventSink(self.put), mode=mode)
        self.schedulers.append(scheduler)
        return scheduler

    def drain(self, items: list[Any]) -> None:
        """Deliver what the scheduler has ready: results to the ledger (events only when it kept some)."""
        for item in items:
            match item:
                case TrackedTool():
                    assert item.outcome is not None, "a delivered call has its result"
                    self.ledger.deliver(item.outcome)
                case _:
                    self.put(item)

    async def deliver_remaining(self, scheduler: Scheduler) -> None:
        async for item in scheduler.get_remaining_results():
            self.drain([item])
        self.ctx = scheduler.ctx

    async def run_tools(self, scheduler: Scheduler | None, shown: bool = False) -> RoundStatus:
        if not self.ledger.round_tool_uses:
            return "ok"
        if scheduler is None:  # batch: every block at once, once every call was shown
            if not shown:
                await self.shown.shown(self.ledger.round_tool_uses)
            scheduler = self.new_scheduler("batch")
            scheduler.round_size.set(len(self.ledger.round_tool_uses))
            for block in self.ledger.round_tool_uses:
                scheduler.add_tool(block, self.ledger.assistant_uuid)
        scheduler.round_size.set(len(self.ledger.round_tool_uses))  # the reply is complete: defer may decide
        await self.deliver_remaining(scheduler)
        self.ledger.fill_missing(INTERRUPTED_MESSAGE)  # defensive: never leave a tool_use unanswered
        return "ok"

    # ------------------------------------------------------------------ one model round
    async def model_round(self) -> RoundStatus:
        """One model request and its tool calls. Returns ``ok`` or a terminal reason."""
        request = self.model.build_request(self.ctx.tools)
        scheduler = self.new_scheduler("streaming") if self.p.streaming_tool_execution else None
        acc = MessageAccumulator()
        self.shown.new_reply()
        self.put(RequestStarted(turn=self.turn, model=self.p.model))
        try:
            await self.model.abortable(
                self.model.read_stream(request, acc, self.ctx.abort, scheduler, self.drain), self.ctx.abort)
        except Aborted:
            return await aborted_while_streaming(self, acc, scheduler)
        except StreamBroken as exc:
            return await stream_broken(self, exc, request, acc, scheduler)
        except ModelError as exc:
            return await model_failed(self, exc, acc, scheduler)
        message = acc.final_message()
        self.ledger.write_assistant(message["content"], message, self.shown.show)
        self.model.account(message)
        return await self.run_tools(scheduler)

    # ------------------------------------------------------------------ the iteration
    def _next_turn_allowed(self) -> bool:
        return self.p.max_turns is None or self.turn + 1 <= self.p.max_turns

    async def loop(self) -> TurnFinishReason:
        if self.ctx.abort.aborted:
            return "aborted_streaming"
        while True:
            self.put(TurnStarted(turn=self.turn))
            self.ledger.start_round()
            status = await self.model_round()
            if status != "ok":
                return status
            tool_uses = self.ledger.round_tool_uses
            if not tool_uses and self.ledger.last_stop_reason == "max_tokens":
                # The reply was cut by the output limit (§6.6): ask it to go on, a few times at most.
                if self._max_tokens_recoveries >= MAX_OUTPUT_TOKENS_RECOVERIES:
                    self.put(ErrorEvent(kind="model", message=(
                        f"The model hit the output token limit ({self.p.max_tokens}) "
                        f"{MAX_OUTPUT_TOKENS_RECOVERIES + 1} times in a row; the reply is incomplete.")))
                    return "completed"
                self._max_tokens_recoveries += 1
                self.ledger.write_meta(MAX_OUTPUT_TOKENS_MESSAGE)
                if not self._next_turn_allowed():
                    return "max_turns"
                self.turn += 1
                continue
            if not tool_uses:
                verdict = await self.stop_hooks()
                if verdict != "continue":
                    return verdict
                # A Stop hook blocked the stop: its feedback is in the transcript; ask the model again.
                if not self._next_turn_allowed():
                    return "max_turns"
                self.turn += 1
                continue
            ended = await self.after_tools()
            if ended is not None:
                return ended
            if self.p.max_turns is not None and not self._next_turn_allowed():
                self.ledger.write_max_turns_reached(self.p.max_turns, self.turn + 1)
                return "max_turns"
            self.turn += 1

    async def after_tools(self) -> TurnFinishReason | None:
        """The checkpoint after a round's calls: a terminal reason, or None to go on."""
        if self.ctx.abort.aborted:
            self.ledger.undefer()
            self.ledger.fill_missing(INTERRUPTED_MESSAGE)
            self.ledger.write_interruption(INTERRUPT_MESSAGE_FOR_TOOL_USE)
            return "aborted_tools"
        if self.ledger.deferred is not None:
            return "tool_deferred"
        if self.ledger.stop_reason_hook:
            return "hook_stopped"
        return await self.post_tool_batch()

    async def post_tool_batch(self) -> TurnFinishReason | None:
        """PostToolBatch hooks once the round's calls all have results, before the next request."""
        hooks = self.ctx.hooks
        runner = getattr(hooks, "post_tool_batch", None)
        if hooks is None or runner is None or not hooks.has_hooks("PostToolBatch"):
            return None
        calls: list[dict[str, Any]] = [{"tool_name": b.get("name"), "tool_input": b.get("input") if isinstance(b.get("input"), dict) else {},
                  "tool_use_id": b.get("id"), "tool_response": self.ledger.results.get(str(b.get("id")))}
                 for b in self.ledger.round_tool_uses]
        try:
            outcome = await runner(calls, self.ctx)
        except Exception as exc:  # a broken hook must not end the turn
            self.put(ErrorEvent(message=f"PostToolBatch hook failed: {exc}", kind="hook"))
            return None
        if outcome.additional_context:
            self.ledger.write_meta(f"PostToolBatch hook additional context: {outcome.additional_context}")
        if outcome.stop:
            self.ledger.stop_reason_hook = outcome.stop_reason or "Execution stopped by PostToolBatch hook"
            self.put(ErrorEvent(message=self.ledger.stop_reason_hook, kind="hook"))
            return "hook_stopped"
        return None

    async def settle(self, block: dict[str, Any], assistant_uuid: str) -> TurnFinishReason:
        """Run one saved call (``settle_pending``) and the checkpoint after it."""
        if self.ctx.abort.aborted:
            return "aborted_streaming"
        self.ledger.start_round()
        self.ledger.round_tool_uses = [block]
        self.ledger.assistant_uuid = assistant_uuid
        self.turn = 0
        await self.run_tools(None, shown=True)  # it was shown (and saved) by the run that deferred it
        return await self.after_tools() or "completed"

    async def stop_hooks(self) -> Literal["completed", "stop_hook_prevented", "continue"]:
        """Stop hooks (§2.4): ``completed``, ``stop_hook_prevented``, or ``continue`` after feedback."""
        hooks = self.ctx.hooks
        if not isinstance(hooks, StopHooks):
            return "completed"
        try:
            outcome = await hooks.stop(self.ctx, stop_hook_active=self._stop_hook_active)
        except Exception as exc:  # a broken hook must not turn a finished turn into a failure
            self.put(ErrorEvent(message=f"Stop hook failed: {exc}", kind="hook"))
            return "completed"
        if outcome.stop:
            return "stop_hook_prevented"
        if outcome.block:
            self._stop_hook_active = True
            reason = outcome.reason or "Stop hook blocked the stop"
            self.ledger.write_meta(f"Stop hook feedback:\n{reason}")
            return "continue"
        return "completed"

    # ------------------------------------------------------------------ driver
    async def run(self) -> None:
        original_emit = self.ctx.emit
        # A call's own events go through its slot of the round's EventSink; anything else emitted on the
        # turn's context comes out of the same stream.
        self.ctx.emit = self.put
        error: str | None = None
        reason: TurnFinishReason
        try:
            reason = await (self.settle(*self.p.pending_call) if self.p.pending_call else self.loop())
        except asyncio.CancelledError:
            for scheduler in self.schedulers:  # the consumer went away: stop our tasks
                scheduler.cancel_all()
            raise
        except Aborted:
            self.ledger.fill_missing(INTERRUPTED_MESSAGE)
            reason = "aborted_streaming"
        except Exception as exc:  # a bug of ours: still a valid transcript and one TurnFinished
            self.model.error_event(exc)
            error = f"{type(exc).__name__}: {exc}"
            self.ledger.fill_missing(f"Error: {error}")
            reason = "model_error"
        finally:
            self.ctx.emit = original_emit
            if self.ctx is not self.p.ctx:
                self.p.ctx.emit = original_emit
                self.p.ctx = self.ctx  # context modifiers' changes carry over to the caller
        if reason == "model_error" and error is None:
            error = self.model_error
        self.put(TurnFinished(
            reason=reason, num_turns=self.turn, result_text=self.ledger.last_text,
            duration_ms=(time.perf_counter() - self.t0) * 1000, duration_api_ms=self.model.api_ms,
            cost_usd=self.model.query_cost, usage=dict(self.model.query_usage), error=error,
        ))


# ---------------------------------------------------------------- the unhappy ends of a request (SPEC §6.3–6.5)
async def finish_started(run: QueryRun, scheduler: Scheduler | None, fill: str) -> None:
    """Deliver the real results of calls already running; unstarted ones get ``fill``."""
    if scheduler is not None:
        scheduler.close(fill)
        await run.deliver_remaining(scheduler)
    run.ledger.fill_missing(fill)


def _failed(run: QueryRun, exc: BaseException) -> RoundStatus:
    run.model.error_event(exc)
    run.model_error = str(exc)
    return "model_error"


def _keep_partial(run: QueryRun, acc: MessageAccumulator, completed_only: bool) -> None:
    content = acc.completed_content() if completed_only else acc.partial_content()
    run.ledger.write_assistant(content, acc.message, run.shown.show)
    if acc.started:
        run.model.account(acc.message)


async def aborted_while_streaming(run: QueryRun, acc: MessageAccumulator,
                                  scheduler: Scheduler | None) -> RoundStatus:
    _keep_partial(run, acc, completed_only=False)
    if scheduler is not None:
        # Started calls finish (or are cancelled); queued ones see the abort and get REJECT_MESSAGE.
        await run.deliver_remaining(scheduler)
    run.ledger.fill_missing(INTERRUPTED_MESSAGE)
    run.ledger.write_interruption(INTERRUPT_MESSAGE)
    return "aborted_streaming"


async def model_failed(run: QueryRun, exc: ModelError, acc: MessageAccumulator,
                       scheduler: Scheduler | None) -> RoundStatus:
    _keep_partial(run, acc, completed_only=True)
    await finish_started(run, scheduler, str(exc))
    return _failed(run, exc)


async def stream_broken(run: QueryRun, exc: StreamBroken, request: ModelRequest, acc: MessageAccumulator,
                        scheduler: Scheduler | None) -> RoundStatus:
    if scheduler is not None and scheduler.any_started():
        # Side effects may exist: keep the finished blocks and answer every completed call.
        run.put(StreamFallback(action="completed_tools_kept", detail=(
            f"The stream broke ({exc}). Tool calls that had already completed were kept and run; "
            "the rest of the reply was dropped.")))
        _keep_partial(run, acc, completed_only=True)
        if not run.fallback_enabled:
            await finish_started(run, scheduler, str(exc))
            return _failed(run, exc)
        return await run.run_tools(scheduler)

    if scheduler is not None:
        scheduler.discard()
    run.ledger.held = []  # e.g. "No such tool" results of the discarded reply
    if not run.fallback_enabled:
        return _failed(run, exc)
    shown = bool(acc.completed or acc.blocks)
    run.put(StreamFallback(
        action="discarded_partial" if shown else "non_streaming_retry",
        detail=f"The stream broke ({exc}); {'the partial reply was discarded and ' if shown else ''}"
               "the same request is being retried without streaming."))
    run.put(RequestStarted(turn=run.turn, model=run.p.model))
    try:
        message = await run.model.abortable(run.model.create(request), run.ctx.abort)
    except Aborted:
        run.ledger.write_interruption(INTERRUPT_MESSAGE)
        return "aborted_streaming"
    except ModelError as exc2:
        return _failed(run, exc2)
    content = [dict(b) for b in message.get("content") or []]
    for index, block in enumerate(content):
        if block.get("type") == "text" and block.get("text"):
            run.put(TextDelta(index=index, text=block["text"]))
        elif block.get("type") == "thinking" and block.get("thinking"):
            run.put(ThinkingDelta(index=index, text=block["thinking"]))
    run.ledger.write_assistant(content, message, run.shown.show)
    run.model.account(message)
    retry: Scheduler | None = None
    if run.p.streaming_tool_execution and run.ledger.round_tool_uses:
        retry = run.new_scheduler("streaming")
        for block in run.ledger.round_tool_uses:
            retry.add_tool(block, run.ledger.assistant_uuid, gate=run.shown.gate(str(block.get("id"))))
    return await run.run_tools(retry)


def settle_pending(params: QueryParams, block: dict[str, Any], assistant_uuid: str) -> AsyncIterator[AgentEvent]:
    """Run a saved call (a deferred one, on resume) before the next turn: its events, then one ``TurnFinished``
    (``completed``: settled, go on)."""
    params.pending_call = (block, assistant_uuid)
    return query(params)


async def query(params: QueryParams) -> AsyncIterator[AgentEvent]:
    """Run one user message to a terminal reason, yielding ``AgentEvent``s (last: ``TurnFinished``)."""
    queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
    run = QueryRun(params, queue.put_nowait)

    async def drive() -> None:
        try:
            await run.run()
        finally:
            queue.put_nowait(None)  # the end

    task = asyncio.ensure_future(drive())
    try:
        while True:
            event = await queue.get()
            if event is None:
                break
            yield event
            run.shown.taken(event)
        await task  # surfaces a crash of the driver itself (should not happen: run() catches)
    finally:
        run.shown.release()
        if not task.done():
            task.cancel()
            try:
                await task
            except BaseException:
                pass
