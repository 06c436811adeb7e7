"""The unhappy ends of a model request (SPEC §6.3–6.5): abort while streaming, a model error, a broken stream.

Every path answers every tool_use of the round exactly once:
- abort while streaming → the finished blocks are kept, started calls finish (or are cancelled), queued ones
  see the abort, the rest get ``INTERRUPTED_MESSAGE``, then a ``[Request interrupted by user]`` entry;
  terminal ``aborted_streaming``;
- a model error → running calls report their real result, the others get the error text, an ``ErrorEvent``;
  terminal ``model_error``;
- a broken stream (decided deliberately; the user sees which through ``StreamFallback``): if a completed
  tool_use already **started**, its side effects may exist, so the partial reply is kept with its finished
  blocks, every completed call is run and answered and the loop goes on (``completed_tools_kept``); otherwise
  nothing has happened yet: the partial reply is discarded (its scheduler too) and the same messages are
  re-requested without streaming (``discarded_partial`` when something had been shown, else
  ``non_streaming_retry``). With the fallback disabled there is no second request: ``model_error``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from desktop_agent.core.errors import INTERRUPTED_MESSAGE
from desktop_agent.core.events import RequestStarted, StreamFallback, TextDelta, ThinkingDelta
from desktop_agent.engine.ledger import INTERRUPT_MESSAGE
from desktop_agent.engine.request import Aborted
from desktop_agent.engine.scheduler import Scheduler
from desktop_agent.model.client import ModelError, ModelRequest, StreamBroken
from desktop_agent.model.stream import MessageAccumulator

if TYPE_CHECKING:
    from desktop_agent.engine.loop import QueryRun, RoundStatus


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
