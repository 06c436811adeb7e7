"""Fixtures of the client contract suite: the fake Anthropic API in the environment (so the in-process engine and
an executor child both reach it), a workspace with app.ts, a scripted prompter, and ``open_handle`` for either
client."""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from desktop_agent.client import SessionOptions, make_client
from desktop_agent.core.permission import PermissionReply, PermissionRequest
from tests.fakes.anthropic_server import FakeAnthropic

HOLD = "hold"  # a prompter answer: never answer (the test kills or interrupts)


@dataclass
class ScriptedPrompter:
    """Answers each ask with the next entry: a reply, a function of the request, or ``HOLD``."""

    answers: list[Any] = field(default_factory=list)
    waits: bool = True
    asked: list[PermissionRequest] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    asked_event: asyncio.Event = field(default_factory=asyncio.Event)

    async def ask(self, request: PermissionRequest) -> PermissionReply:
        self.asked.append(request)
        self.asked_event.set()
        answer: Any = self.answers.pop(0) if self.answers else PermissionReply(behavior="allow")
        try:
            if answer == HOLD:
                await asyncio.Event().wait()
            if callable(answer):
                answer = answer(request)
            await asyncio.sleep(0.01)
            return answer
        except asyncio.CancelledError:
            self.cancelled.append(request.request_id)
            raise


@pytest.fixture
def fake(monkeypatch):
    with FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-contract")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        yield server


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    (d / "app.ts").write_text("export const value = 1\n")
    return d


@pytest.fixture
def open_handle(ws) -> Callable[..., Any]:
    handles: list[Any] = []

    async def _open(kind: str, prompter: Any = None, **kw: Any) -> Any:
        options = SessionOptions(prompter=prompter, **kw)
        handle = await make_client(kind).open(str(ws), options)  # type: ignore[arg-type]
        handles.append(handle)
        return handle

    yield _open
    # Tests close their handles; an executor a failing test left behind is killed here (its loop is gone).
    for h in handles:
        pid = getattr(h, "pid", None)
        if pid and getattr(h, "alive", False):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

async def run_turn(handle: Any, prompt: str, on_event: Callable[[Any], None] | None = None,
                   timeout: float = 60) -> list[Any]:
    events: list[Any] = []

    async def go() -> None:
        async for event in handle.submit(prompt):
            events.append(event)
            if on_event is not None:
                on_event(event)

    await asyncio.wait_for(go(), timeout)
    return events
