"""The one pending-question map of the host (DESIGN.md §1, "The inbox"; SPEC Appendix D.2).

A question is bound to ``(session_id, request_id)`` and lives here and nowhere else. ``ask()`` publishes it and
returns the Future of its reply; every client of the host (the window, a notification action, the phone page, a
client on the socket) answers through ``answer()``; the first answer wins and every subscriber is told that the
question is resolved, so every other place closes it. An answer is refused — and changes nothing — when the
question is unknown, already answered or withdrawn, or when it carries an ``input_sha256`` that is not the
sha256 of the canonical JSON of the input that was asked (keys sorted, no spaces, UTF-8). ``withdraw()`` is the
engine's side: an interrupt, a cancelled request or a dead executor takes the question back.

Loop-bound: call it on the host's event loop (``answer_threadsafe`` for a D-Bus or other thread).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from desktop_agent.core.permission import PermissionReply, PermissionRequest

AnswerOutcome = Literal["ok", "unknown", "answered", "withdrawn", "mismatch"]
Source = str  # "window", "notification", "phone:<device>", "socket:<pid>", "stdio", "hook"…

OUTCOME_ERRORS: dict[AnswerOutcome, str] = {
    "ok": "",
    "unknown": "No pending permission request with this id in this session",
    "answered": "This permission request was already answered",
    "withdrawn": "This permission request was withdrawn",
    "mismatch": "The answer is for a different tool input than the one pending",
}


def input_sha256(tool_input: Any) -> str:
    """The sha256 (hex) of the canonical JSON of a tool input: keys sorted, no spaces, UTF-8 (SPEC D.2)."""
    text = json.dumps(tool_input, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class PendingQuestion:
    """One question as every client sees it."""

    session_id: str
    request: PermissionRequest
    folder: str = ""  # the session's working folder (a worktree for a worktree session)
    title: str = ""  # the session's name, for lists and notifications
    asked_at: float = field(default_factory=time.time)
    input_sha256: str = ""
    future: asyncio.Future[PermissionReply] | None = field(default=None, repr=False)

    @property
    def request_id(self) -> str:
        return self.request.request_id

    @property
    def key(self) -> tuple[str, str]:
        return (self.session_id, self.request.request_id)


@dataclass(frozen=True)
class InboxEvent:
    """What subscribers hear: a question was asked, resolved (with the winning reply and its source) or
    withdrawn."""

    kind: Literal["asked", "resolved", "withdrawn"]
    question: PendingQuestion
    reply: PermissionReply | None = None
    source: Source = ""


class Inbox:
    """The pending map. ``subscribe(fn)`` gets every ``InboxEvent`` (synchronously, on the loop)."""

    def __init__(self, *, remember: int = 4096) -> None:
        self._pending: dict[tuple[str, str], PendingQuestion] = {}
        self._closed: dict[tuple[str, str], Literal["answered", "withdrawn"]] = {}
        self._remember = remember
        self._subscribers: list[Callable[[InboxEvent], None]] = []

    # -- the engine's side ------------------------------------------------------------------------------------
    def ask(self, session_id: str, request: PermissionRequest, *, folder: str = "", title: str = "") -> PendingQuestion:
        """Publish a question; ``await question.future`` for the reply (cancelled when withdrawn)."""
        key = (session_id, request.request_id)
        if key in self._pending or key in self._closed:
            raise ValueError(f"duplicate permission request id {request.request_id!r} in session {session_id!r}")
        question = PendingQuestion(
            session_id=session_id, request=request, folder=folder or request.cwd, title=title,
            input_sha256=input_sha256(request.input), future=asyncio.get_running_loop().create_future(),
        )
        self._pending[key] = question
        self._emit(InboxEvent("asked", question))
        return question

    async def wait(self, question: PendingQuestion) -> PermissionReply:
        """The reply; ``CancelledError`` when withdrawn. Cancelling the waiter withdraws the question."""
        assert question.future is not None
        try:
            return await asyncio.shield(question.future)
        except asyncio.CancelledError:
            self.withdraw(question.session_id, question.request_id)
            raise

    def withdraw(self, session_id: str, request_id: str) -> PendingQuestion | None:
        question = self._pending.pop((session_id, request_id), None)
        if question is None:
            return None
        self._close(question.key, "withdrawn")
        if question.future is not None and not question.future.done():
            question.future.cancel()
        self._emit(InboxEvent("withdrawn", question))
        return question

    def withdraw_session(self, session_id: str) -> list[PendingQuestion]:
        return [q for q in [self.withdraw(*key) for key in list(self._pending) if key[0] == session_id] if q]

    # -- every client's side ----------------------------------------------------------------------------------
    def answer(
        self, session_id: str, request_id: str, reply: PermissionReply, *, source: Source = "",
        input_sha256: str | None = None,
    ) -> AnswerOutcome:
        key = (session_id, request_id)
        question = self._pending.get(key)
        if question is None:
            return self._closed.get(key, "unknown")
        if input_sha256 is not None and input_sha256 != question.input_sha256:
            return "mismatch"
        del self._pending[key]
        self._close(key, "answered")
        if question.future is not None and not question.future.done():
            question.future.set_result(reply)
        self._emit(InboxEvent("resolved", question, reply=reply, source=source))
        return "ok"

    def answer_threadsafe(
        self, loop: asyncio.AbstractEventLoop, session_id: str, request_id: str, reply: PermissionReply, *,
        source: Source = "", input_sha256: str | None = None,
    ) -> "asyncio.Future[AnswerOutcome]":
        """``answer`` from another thread; the returned concurrent Future holds the outcome."""
        async def run() -> AnswerOutcome:
            return self.answer(session_id, request_id, reply, source=source, input_sha256=input_sha256)

        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), loop))

    def get(self, session_id: str, request_id: str) -> PendingQuestion | None:
        return self._pending.get((session_id, request_id))

    def pending(self, session_id: str | None = None) -> list[PendingQuestion]:
        """Pending questions, oldest first (optionally of one session)."""
        items = [q for q in self._pending.values() if session_id is None or q.session_id == session_id]
        return sorted(items, key=lambda q: q.asked_at)

    def subscribe(self, callback: Callable[[InboxEvent], None]) -> Callable[[], None]:
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    # -- internals --------------------------------------------------------------------------------------------
    def _close(self, key: tuple[str, str], how: Literal["answered", "withdrawn"]) -> None:
        self._closed[key] = how
        while len(self._closed) > self._remember:
            self._closed.pop(next(iter(self._closed)))

    def _emit(self, event: InboxEvent) -> None:
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:  # one client's bug must not stop the others from hearing it
                import logging

                logging.getLogger(__name__).exception("inbox subscriber failed")
