"""Fault: model/API faults at random points over 200 turns, through the real ``AnthropicClient`` (its default
wire transport, real HTTP/SSE) against the fake server.

The fake model is adaptive: it answers from the request itself (a new prompt → a reply with Read and Bash
calls, tool results → a closing text), so whatever the loop does (retry, non-streaming fallback, keeping
completed tools) the conversation goes on. On about a third of the streamed requests it injects one fault:
429 / 529 / 500 (retried), 401 (not retried), a dropped stream, malformed SSE, an SSE error event, slow
chunks, or a stream that stalls (the client's watchdog is set to 0.3 s). Retry delays are shortened through
the client's constructor.

After every turn: exactly one ``TurnFinished``; it is ``completed`` or an ``ErrorEvent`` was emitted; the
user's message is in the next request the server receives; every tool call that finished has its result in
the transcript; the transcript normalises to a valid API sequence. The fake server validates every request
the way the real API does and must have rejected none. Prints the fault counts and terminal reasons.
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import threading
import time

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.events import ErrorEvent, RetryWaiting, StreamFallback, ToolCallFinished
from desktop_agent.core.messages import user_entry
from desktop_agent.model.anthropic_client import AnthropicClient
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.tools.registry import all_builtin_tools
from tests.fakes.anthropic_server import FakeAnthropic, RecordedRequest, http_error, reply, text, tool_use

from .util import QueryRun, api_pairing_problems

TURNS = 200
FAULTS = ["429", "529", "500", "401", "dropped", "malformed", "error_event", "slow", "stall"]


class AdaptiveFake(FakeAnthropic):
    """Answers from the request, injecting a random fault on some streamed requests."""

    def __init__(self, ws: str, seed: int, fault_rate: float = 0.35):
        super().__init__(chunk_size=5)
        self.ws = ws
        self.rng = random.Random(seed)
        self.fault_rate = fault_rate
        self.injected: collections.Counter = collections.Counter()
        self.n = 0
        self._rng_lock = threading.Lock()

    def next_step(self, record: RecordedRequest):
        with self._lock:
            self.requests.append(record)
            self.n += 1
            n = self.n
        with self._rng_lock:
            return self._step(record, n)

    def _step(self, record: RecordedRequest, n: int):
        last = record.messages[-1]
        blocks = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
        after_tools = blocks and blocks[-1].get("type") == "tool_result"
        if after_tools:
            base = [text(f"Done with request {n}.")]
        else:
            base = [text("Let me look."),
                    tool_use("Read", {"file_path": os.path.join(self.ws, "notes.txt")}, id=f"toolu_{n}_read"),
                    tool_use("Bash", {"command": f"echo request {n}"}, id=f"toolu_{n}_bash")]
        if not record.streaming or self.rng.random() >= self.fault_rate:
            return reply(*base)
        fault = self.rng.choice(FAULTS)
        self.injected[fault] += 1
        events = 3 + 4 * len(base) * 2  # roughly how many SSE events the reply has
        at = self.rng.randint(1, events)
        if fault in ("429", "529", "500", "401"):
            headers = {"retry-after": "0"} if fault == "429" else None
            return http_error(int(fault), f"injected {fault}", headers=headers)
        if fault == "dropped":
            return reply(*base, break_after=at)
        if fault == "malformed":
            return reply(*base, malformed_after=at)
        if fault == "error_event":
            return reply(*base, error_event_after=at)
        if fault == "slow":
            return reply(*base, delay=0.004)
        return reply(*base, stall_after=at)


def _results(entries):
    out = {}
    for e in entries:
        if e.get("type") == "user" and isinstance(e["message"]["content"], list):
            for b in e["message"]["content"]:
                if b.get("type") == "tool_result":
                    out[b["tool_use_id"]] = b
    return out


def _prompt_seen(fake: FakeAnthropic, prompt: str, since: int) -> bool:
    for rec in fake.requests[since:]:
        for m in rec.messages:
            content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
            if any(b.get("type") == "text" and b.get("text") == prompt for b in content):
                return True
    return False


def test_model_faults_200_turns_nothing_lost(tmp_path):
    ws = str(tmp_path)
    with open(os.path.join(ws, "notes.txt"), "w") as fh:
        fh.write("some notes\n")
    tools = [t for t in all_builtin_tools() if t.name in ("Read", "Bash")]
    reasons: collections.Counter = collections.Counter()
    fallbacks: collections.Counter = collections.Counter()
    retries = 0
    error_kinds: collections.Counter = collections.Counter()
    t0 = time.perf_counter()
    with AdaptiveFake(ws, seed=8) as fake:
        client = AnthropicClient("sk-test-key", fake.base_url, max_retries=3, base_delay_s=0.005, max_delay_s=0.02,
                                 idle_timeout_s=0.3)
        history: list[dict] = []

        async def main():
            nonlocal retries
            for turn in range(TURNS):
                ctx = ToolUseContext(cwd=ws, permission_context=PermissionContext(ws, mode="bypassPermissions"),
                                     tools=tools)
                prompt = f"Turn {turn}: check the notes"
                since = len(fake.requests)
                run = QueryRun(client, ctx, prompt=prompt, history=history)
                finished = await asyncio.wait_for(run.go(), 30)
                errors = run.of(ErrorEvent)
                assert finished.reason == "completed" or errors, (turn, finished.reason)
                if finished.reason != "completed":
                    assert finished.reason == "model_error", (turn, finished.reason)
                assert _prompt_seen(fake, prompt, since), (turn, "the user's message was sent")
                results = _results(run.entries)
                for ev in run.of(ToolCallFinished):
                    assert ev.tool_use_id in results, (turn, "finished tool result lost", ev.tool_use_id)
                    assert results[ev.tool_use_id]["content"] == ev.content
                problems = api_pairing_problems(run.entries)
                assert not problems, (turn, problems)
                reasons[finished.reason] += 1
                for e in errors:
                    error_kinds[e.kind] += 1
                for f in run.of(StreamFallback):
                    fallbacks[f.action] += 1
                retries += len(run.of(RetryWaiting))
                history[:] = run.entries
            await client.aclose()

        asyncio.run(main())
        elapsed = time.perf_counter() - t0
        server_errors = list(fake.errors)
        injected = dict(fake.injected)
        requests = len(fake.requests)
    print(f"{TURNS} turns, {requests} requests in {elapsed:.1f} s; faults injected {injected}; "
          f"reasons {dict(reasons)}; errors shown {dict(error_kinds)}; fallbacks {dict(fallbacks)}; "
          f"retries {retries}; requests the API would reject: {len(server_errors)}")
    assert not server_errors, server_errors[:3]
    assert sum(reasons.values()) == TURNS
    assert sum(injected.values()) >= 50 and set(injected) == set(FAULTS)
    # The final transcript is still a valid conversation for the API.
    assert api_pairing_problems(history) == []
