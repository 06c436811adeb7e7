"""``PromptQueue``: the window's questions, one dialog at a time (after qutebrowser's ``PromptQueue``).

A question is an ``AwaitableDialog`` waiting to be shown, keyed by ``(session_id, request_id)``. ``ask()``
queues it and returns its answer: exactly one dialog is visible, the oldest; the others wait and the visible
one says how many (``set_waiting(n)``, "1 more waiting"). Answering it shows the next. A question whose
``ask()`` is cancelled (the engine withdrew it: an interrupt, an answer from a hook or a host, the turn
ended) leaves the queue; when it is the one showing, its dialog closes silently and the next is shown.
``stop_all()`` (Stop) answers every queued question that has a ``stop_value`` with it (a permission
question: deny) and closes the dialog, so no question is left unanswered and the engine never hangs.

Many sessions share a window's queue (issue 24): ``scope`` says which questions may open their dialog by themselves —
the window's own, those of the session in view — while the others wait in the inbox until ``front(key)`` (the person
picked one there, or jumped to its session) shows that one now; a dialog showing for another question is then put
back in the queue unanswered (closed silently; it is built again when its turn comes). ``stop_session(sid)`` is Stop
for one session: the others' questions stay. ``entries()`` lists them all for the inbox, oldest first.

The dialog of a question is built only when it is shown (a focus-safe dialog decides then whether the
window is active). The next one is shown after the answered dialog has closed — so two modal dialogs are never
open together — and once the focus has come back to a window of ours (0.3 s at most).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Callable

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QApplication

from desktop_agent.ui.dialogs.base import AwaitableDialog

Key = tuple[str, str]  # (session_id, request_id)
SETTLE_S = 0.3  # the longest wait for the focus to come back to a window after a dialog closed
SETTLE_POLL_MS = 10


@dataclass(eq=False)
class _Question:
    key: Key
    make: Callable[[], AwaitableDialog[Any]]
    future: asyncio.Future[Any]
    stop_value: Any = None  # what Stop answers (None: Stop leaves it alone)
    dialog: AwaitableDialog[Any] | None = None
    info: Any = None  # what the inbox shows of it (a PermissionRequest; None for the window's own questions)
    asked_at: float = 0.0


@dataclass(frozen=True)
class QueuedQuestion:
    """One question as the inbox lists it."""

    key: Key
    info: Any
    asked_at: float
    showing: bool


class PromptQueue(QObject):
    """The queued questions of a window, oldest first; ``dialog`` is the one showing."""

    shown = Signal(object)  # the dialog just opened
    changed = Signal(int)  # how many questions are queued (the showing one included)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._questions: dict[Key, _Question] = {}
        self._current: _Question | None = None
        self._next_scheduled = False
        self._settle_until = 0.0
        self.scope: Callable[[Key], bool] = lambda _key: True  # which questions open by themselves

    def __len__(self) -> int:
        return len(self._questions)

    def keys(self) -> list[Key]:
        return list(self._questions)

    @property
    def dialog(self) -> AwaitableDialog[Any] | None:
        """The dialog showing now (None between two questions and when none waits)."""
        return self._current.dialog if self._current is not None else None

    @property
    def current_key(self) -> Key | None:
        """The key of the question whose dialog shows now."""
        return self._current.key if self._current is not None else None

    def entries(self) -> list[QueuedQuestion]:
        """Every queued question, oldest first (the inbox)."""
        return [QueuedQuestion(q.key, q.info, q.asked_at, q is self._current) for q in self._questions.values()]

    async def ask(self, key: Key, make: Callable[[], AwaitableDialog[Any]], *, stop_value: Any = None,
                  info: Any = None) -> Any:
        """Queue the question ``make()`` builds and return its answer. Cancelling this withdraws it."""
        if key in self._questions:
            raise ValueError(f"question {key!r} is already queued")
        question = _Question(key, make, asyncio.get_running_loop().create_future(), stop_value, info=info,
                             asked_at=time.time())
        self._questions[key] = question
        try:
            if self._current is None and not self._next_scheduled and self.scope(key):
                self._show(question)  # at once: the dialog is open when ask() first waits
            self._counts()
            return await question.future
        finally:
            self._drop(question)

    def stop_all(self) -> None:
        """Stop: every question with a ``stop_value`` is answered with it; the dialog closes."""
        self._stop(lambda _key: True)

    def stop_session(self, session_id: str) -> None:
        """Stop for one session: its questions with a ``stop_value`` answered with it; the others stay."""
        self._stop(lambda key: key[0] == session_id)

    def _stop(self, which: Callable[[Key], bool]) -> None:
        for question in [q for q in self._questions.values() if q.stop_value is not None and which(q.key)]:
            if not question.future.done():
                question.future.set_result(question.stop_value)
            self._drop(question)

    def front(self, key: Key) -> bool:
        """Show the question ``key`` now (the inbox, a session brought into view): a dialog showing for another
        question goes back to the queue unanswered. False when ``key`` is not queued."""
        question = self._questions.get(key)
        if question is None:
            return False
        current = self._current
        if current is question:
            return True
        if current is not None:
            self._put_back(current)
        self._questions.pop(key)
        self._questions = {key: question, **self._questions}  # the oldest-first order now starts with it
        self._next_scheduled = False
        self._show(question)
        self._counts()
        return True

    def rescope(self) -> None:
        """``scope`` changed (another session in view): a showing dialog outside it goes back to the queue; the
        oldest question inside it shows."""
        current = self._current
        if current is not None and not self.scope(current.key):
            self._put_back(current)
        self._schedule_next()
        self._counts()

    def _put_back(self, question: _Question) -> None:
        """Close ``question``'s dialog without an answer and keep the question queued (built again when shown)."""
        self._current = None
        dialog, question.dialog = question.dialog, None
        if dialog is not None and not dialog.answered:
            try:
                dialog.decided.disconnect()
            except (RuntimeError, TypeError):
                pass
            dialog.close_silently()

    # ----- internals -----------------------------------------------------------------------------------
    def _show(self, question: _Question) -> None:
        try:
            dialog = question.make()
        except Exception as exc:  # a dialog that cannot be built answers with the error (the asker denies)
            question.future.set_exception(exc)
            self._drop(question)
            self._schedule_next()
            return
        question.dialog = dialog
        self._current = question
        dialog.decided.connect(lambda value, q=question: self._decided(q, value))
        dialog.open()
        self.shown.emit(dialog)

    def _decided(self, question: _Question, value: Any) -> None:
        if not question.future.done():
            question.future.set_result(value)
        self._drop(question)

    def _drop(self, question: _Question) -> None:
        """The question is answered or withdrawn: out of the queue; its dialog closed; the next one later."""
        if self._questions.get(question.key) is question:
            del self._questions[question.key]
        if not question.future.done():
            question.future.cancel()
        if self._current is question:
            self._current = None
            if question.dialog is not None and not question.dialog.answered:
                question.dialog.close_silently()  # withdrawn: closed without an answer
            self._schedule_next()
        self._counts()

    def _schedule_next(self) -> None:
        if self._questions and not self._next_scheduled:
            self._next_scheduled = True
            self._settle_until = time.monotonic() + SETTLE_S
            QTimer.singleShot(0, self._show_next)

    def _show_next(self) -> None:
        """Show the oldest question once the focus has settled: a window manager gives the focus back to the
        main window a few milliseconds after the answered dialog closes; built before that, the next dialog would
        take the window for inactive (no activation, a taskbar alert and a notification)."""
        active = QApplication.activeWindow()
        if (active is None or not active.isVisible()) and time.monotonic() < self._settle_until:
            QTimer.singleShot(SETTLE_POLL_MS, self._show_next)
            return
        self._next_scheduled = False
        if self._current is None:
            question = next((q for q in self._questions.values() if self.scope(q.key)), None)
            if question is not None:
                self._show(question)
            self._counts()

    def _counts(self) -> None:
        dialog = self.dialog
        setter = getattr(dialog, "set_waiting", None)
        if setter is not None and self._current is not None:
            setter(sum(1 for q in self._questions.values() if q is not self._current and self.scope(q.key)))
        self.changed.emit(len(self._questions))


__all__ = ["Key", "PromptQueue", "QueuedQuestion"]
