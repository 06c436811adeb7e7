"""One model request of the loop: building it, the ``before_request`` hook, the stream, cost.

``ModelCall`` builds each request from the ledger (entries after the last compact boundary, normalised for the
API, with an incremental cache) and the turn's tools; awaits ``QueryParams.before_request`` (which may replace
the messages: auto-compaction); reads the stream — deltas out as ``TextDelta``/``ThinkingDelta`` (and raw
``StreamEvent``s when asked), each finished block shown (``ShownBlocks``), each finished tool_use handed to
the round's scheduler — or makes the non-streaming request of the fallback; and accounts usage and cost.
Waiting on the model is abortable: the user's Stop cancels it and ``Aborted`` is raised.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncGenerator
from typing import Any, Awaitable, Callable, TypeVar

from desktop_agent.core.abort import cancel_and_wait, until_aborted
from desktop_agent.core.context import AbortSignal, OfferedTool
from desktop_agent.core.events import (
    AgentEvent, ErrorEvent, RetryWaiting, StreamEvent, TextDelta, ThinkingDelta, Usage,
)
from desktop_agent.core.messages import normalize_for_api
from desktop_agent.engine.ledger import Ledger
from desktop_agent.engine.params import QueryParams
from desktop_agent.engine.scheduler import Scheduler
from desktop_agent.engine.shown import ShownBlocks
from desktop_agent.model.client import ModelError, ModelRequest, StreamBroken
from desktop_agent.model.pricing import CostTracker
from desktop_agent.model.stream import MessageAccumulator

T = TypeVar("T")


class Aborted(Exception):
    """The user aborted while we awaited the model."""


class ModelCall:
    """The model side of one query: requests, streams, the API time, usage and cost."""

    def __init__(self, params: QueryParams, put: Callable[[AgentEvent], None], ledger: Ledger,
                 shown: ShownBlocks):
        self.p = params
        self._put = put
        self._ledger = ledger
        self._shown = shown
        self.tracker = params.cost_tracker or CostTracker()
        self.query_cost = 0.0
        self.query_usage: dict[str, int] = {}
        self.api_ms = 0.0
        self._tools_cache: tuple[tuple[int, ...], list[dict[str, Any]]] | None = None
        self._api_cache: tuple[int, int, list[dict[str, Any]]] | None = None

    # ------------------------------------------------------------------ the request
    def tools_for_api(self, tools: list[OfferedTool]) -> list[dict[str, Any]]:
        key = tuple(map(id, tools))
        if self._tools_cache is None or self._tools_cache[0] != key:
            self._tools_cache = (key, [t.to_api_schema() for t in tools])
        return self._tools_cache[1]

    def messages_for_query(self) -> list[dict[str, Any]]:
        """Entries from the last compact boundary on, normalised for the API (§5.4).

        The history only grows during a query, so the normalised prefix is kept and only new
        entries are normalised (a whole re-normalisation per request is O(n²) over a long turn).
        Cached message dicts are never mutated: a boundary merge builds a new dict.
        """
        messages = self._ledger.messages
        start = 0
        for i in range(len(messages) - 1, -1, -1):
            m = messages[i]
            if m.get("type") == "system" and m.get("subtype") == "compact_boundary":
                start = i
                break
        cache = self._api_cache
        if cache is None or cache[0] != start or cache[1] > len(messages):
            out = normalize_for_api(messages[start:])
        else:
            out = list(cache[2])
            new = normalize_for_api(messages[cache[1]:])
            if new and out and out[-1]["role"] == new[0]["role"]:
                content = out[-1]["content"] + new[0]["content"]
                if new[0]["role"] == "user":
                    content = [b for b in content if b.get("type") == "tool_result"] + \
                              [b for b in content if b.get("type") != "tool_result"]
                out[-1] = {"role": new[0]["role"], "content": content}
                new = new[1:]
            out.extend(new)
        self._api_cache = (start, len(messages), out)
        return list(out)

    def build_request(self, tools: list[OfferedTool]) -> ModelRequest:
        return ModelRequest(
            model=self.p.model, messages=self.messages_for_query(), system=list(self.p.system_prompt),
            tools=self.tools_for_api(tools), max_tokens=self.p.max_tokens, thinking=self.p.thinking,
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
        self._put(RetryWaiting(attempt=attempt, max_attempts=max_attempts, delay_s=delay, error=error))

    # ------------------------------------------------------------------ waiting on the model
    async def abortable(self, work: Awaitable[T], abort: AbortSignal) -> T:
        """Await ``work`` unless the user aborts (then it is cancelled and ``Aborted`` raised); the time spent
        counts as API time."""
        t_api = time.perf_counter()
        try:
            if abort.aborted:
                if asyncio.iscoroutine(work):
                    work.close()
                raise Aborted()
            task = asyncio.ensure_future(work)
            if not await until_aborted(task, abort):
                await cancel_and_wait(task)
                raise Aborted()
            return task.result()
        finally:
            self.api_ms += (time.perf_counter() - t_api) * 1000

    async def read_stream(self, request: ModelRequest, acc: MessageAccumulator, abort: AbortSignal,
                          scheduler: Scheduler | None, drain: Callable[[list[Any]], None]) -> None:
        """Read the stream to its end: deltas out, finished blocks shown, finished tool_use blocks to the
        scheduler (whose ready results ``drain`` delivers as the stream goes on)."""
        request = await self.prepared(request)
        stream = self.p.client.stream(request, on_retry=self.on_retry)
        put = self._put
        include_raw = self.p.include_stream_events
        try:
            async for event in stream:
                if abort.aborted:  # do not rely on cancellation alone: a client may swallow it
                    raise Aborted()
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
                    gate = self._shown.show(block, acc.message)
                    if scheduler is not None and block.get("type") == "tool_use" and not abort.aborted:
                        scheduler.add_tool(block, gate=gate)
                if scheduler is not None and scheduler.tools and not abort.aborted:
                    drain(scheduler.get_completed_results())
        finally:
            if isinstance(stream, AsyncGenerator):  # close it now, not when it is collected
                await stream.aclose()
        if not acc.stopped:
            raise StreamBroken("the stream ended before message_stop")

    async def create(self, request: ModelRequest) -> dict[str, Any]:
        """The non-streaming request of the fallback."""
        return await self.p.client.create(await self.prepared(request), on_retry=self.on_retry)

    # ------------------------------------------------------------------ accounting
    def account(self, message: dict[str, Any]) -> None:
        usage = message.get("usage") or {}
        model = message.get("model") or self.p.model
        cost = self.tracker.add(model, usage)
        self.query_cost += cost
        for key, value in usage.items():
            if isinstance(value, int):
                self.query_usage[key] = self.query_usage.get(key, 0) + value
        self._put(Usage(
            input_tokens=int(usage.get("input_tokens") or 0), output_tokens=int(usage.get("output_tokens") or 0),
            cache_read_input_tokens=int(usage.get("cache_read_input_tokens") or 0),
            cache_creation_input_tokens=int(usage.get("cache_creation_input_tokens") or 0),
            cost_usd=cost, session_cost_usd=self.tracker.cost_usd, session_tokens=self.tracker.total_tokens,
        ))

    def error_event(self, exc: BaseException) -> None:
        if isinstance(exc, ModelError):
            self._put(ErrorEvent(message=str(exc), kind=exc.kind, retryable=exc.retryable))
        else:
            self._put(ErrorEvent(message=f"Internal error: {type(exc).__name__}: {exc}", kind="internal"))
