"""One path from the session's event stream to the conversation: the controller emits each AgentEvent once on
``agent_event`` — the stream's and the ones it makes itself on cancel, crash or executor death — and the window's
``ConversationView.handle_event`` hands it to the presenter, which renders it (the window has no copy of its own)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from desktop_agent.client import HandleState
from desktop_agent.core import events as ev
from desktop_agent.core.permission import PermissionReply, PermissionRequest
from desktop_agent.ui.conversation.presenter import BannerItem, TextItem, UserItem
from desktop_agent.ui.window.main_window import MainWindow


class FakeSession:
    """A session handle whose turn is a scripted list of events (or a crash, or a wait that never ends)."""

    cwd = "/w"
    model = "m"
    session_id = "s1"
    alive = True

    def __init__(self, events: list[Any] | None = None, crash: bool = False, hang: bool = False):
        self.events, self.crash, self.hang = list(events or []), crash, hang

    async def submit(self, prompt: str):
        for event in self.events:
            yield event
        if self.crash:
            raise RuntimeError("engine bug")
        if self.hang:
            await asyncio.sleep(3600)

    def interrupt(self) -> None:
        pass

    @property
    def state(self) -> HandleState:
        return HandleState(cwd=self.cwd, alive=self.alive)


@pytest.fixture
def win(qtbot, tmp_path):
    w = MainWindow(settings=QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    applied: list[Any] = []
    apply = w.conversation.presenter.apply
    w.conversation.presenter.apply = lambda e: (applied.append(e), apply(e))[1]  # type: ignore[method-assign]
    w.applied = applied  # type: ignore[attr-defined]
    return w


def run(win, qloop, session: FakeSession) -> None:
    win.controller.set_session(session, "/w")
    task = win.controller.submit("go")
    qloop.run_until_complete(task)


def banners(win) -> list[BannerItem]:
    """The turn's banners (the window's own "the sandbox could not start", on a machine without it, is not one)."""
    return [i for i in win.conversation.presenter.items if isinstance(i, BannerItem) and i.key != "sandbox"]


def test_every_streamed_event_reaches_the_presenter_once(win, qloop):
    request = PermissionRequest(tool_name="Write", tool_use_id="w", cwd="/w", file_path="/w/a.py",
                                input={"file_path": "/w/a.py", "content": "x"})
    events = [
        ev.TurnStarted(turn=1), ev.RequestStarted(turn=1),
        ev.StreamFallback(action="non_streaming_retry", detail="retrying without streaming"),
        ev.AssistantMessage(message={"message": {"content": [{"type": "text", "text": "Whole reply."}]}}),
        ev.Compacted(pre_tokens=1234),
        ev.ToolCallStarted(tool_use_id="w", name="Write", input=request.input),
        ev.PermissionRequested(request=request),
        ev.PermissionResolved(request_id="r", tool_use_id="w",
                              reply=PermissionReply(behavior="deny", message="no", feedback="Use a helper")),
        ev.ToolCallFinished(tool_use_id="w", name="Write", content="denied", is_error=True),
        ev.ErrorEvent(message="Bad key", kind="auth"),
        ev.TurnFinished(reason="model_error", error="Bad key"),
    ]
    run(win, qloop, FakeSession(events))
    assert win.applied == events  # each once, in order: no second copy from the window
    items = win.conversation.presenter.items
    assert [i.text for i in items if isinstance(i, TextItem)] == ["Whole reply."]  # the non-streamed reply, once
    assert [(i.label, i.text) for i in items if isinstance(i, UserItem) and i.label] == [
        ("You denied Write and told the agent:", "Use a helper")]
    assert [(b.text, [h for h, _ in b.actions]) for b in banners(win)] == [
        ("The stream broke; retrying without streaming", []), ("Conversation compacted (1234 tokens before)", []),
        ("Bad key", ["retry", "settings"])]
    assert win.conversation.cards["w"].state == "denied" and win.controller.status == "error"


def test_a_crash_is_an_internal_error_event_then_the_turn_ends(win, qloop):
    run(win, qloop, FakeSession([ev.TurnStarted(turn=1)], crash=True))
    kinds = [type(e).__name__ for e in win.applied]
    assert kinds == ["TurnStarted", "ErrorEvent", "TurnFinished"]
    assert win.applied[1].kind == "internal" and win.applied[2].reason == "completed"
    assert [b.text for b in banners(win)] == ["RuntimeError: engine bug"]


def test_a_cancelled_turn_ends_as_aborted(win, qloop):
    win.controller.set_session(FakeSession([ev.TurnStarted(turn=1)], hang=True), "/w")
    task = win.controller.submit("go")

    async def cancel_soon() -> None:
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    qloop.run_until_complete(cancel_soon())
    assert [type(e).__name__ for e in win.applied] == ["TurnStarted", "TurnFinished"]
    assert win.applied[-1].reason == "aborted_tools"
    assert banners(win)[-1].kind == "interrupted"


def test_an_executor_dying_between_turns_offers_a_restart(win):
    win.controller.set_session(FakeSession(), "/w")
    win.controller._executor_exited("The executor exited.")
    (event,) = win.applied
    assert isinstance(event, ev.ErrorEvent) and event.kind == "executor"
    banner = win.conversation.presenter.banners["error:executor"]
    assert [h for h, _ in banner.actions] == ["restart"] and banner.text.startswith("The executor exited.")
