"""``PromptQueue``: the window's questions, one dialog at a time (after qutebrowser's ``PromptQueue``).

A question is an ``AwaitableDialog`` waiting to be shown, keyed by ``(session_id, request_id)``. ``ask()``
queues it and returns its answer: exactly one dialog is visible, the oldest; the others wait and the visible
one says how many (``set_waiting(n)``, "1 more waiting"). Answering it shows the next. A question whose
``ask()`` is cancelled (the engine withdrew it: an interrupt, an answer from a hook or a host, the turn
ended) leaves the queue; when it is the one showing, its dialog closes silently and the next is shown.
``stop_all()`` (Stop) answers every queued question that has a ``stop_value`` with it (a permission
question: deny) and closes the dialog, so no question is left unanswered and the engine never hangs.

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

    def __len__(self) -> int:
        return len(self._questions)

    def keys(self) -> list[Key]:
        return list(self._questions)

    @property
    def dialog(self) -> AwaitableDialog[Any] | None:
        """The dialog showing now (None between two questions and when none waits)."""
        return self._current.dialog if self._current is not None else None

    async def ask(self, key: Key, make: Callable[[], AwaitableDialog[Any]], *, stop_value: Any = None) -> Any:
        """Queue the question ``make()`` builds and return its answer. Cancelling this withdraws it."""
        if key in self._questions:
            raise ValueError(f"question {key!r} is already queued")
        question = _Question(key, make, asyncio.get_running_loop().create_future(), stop_value)
        self._questions[key] = question
        try:
            if self._current is None and not self._next_scheduled:
                self._show(question)  # at once: the dialog is open when ask() first waits
            self._counts()
            return await question.future
        finally:
            self._drop(question)

    def stop_all(self) -> None:
        """Stop: every question with a ``stop_value`` is answered with it; the dialog closes."""
        for question in [q for q in self._questions.values() if q.stop_value is not None]:
            if not question.future.done():
                question.future.set_result(question.stop_value)
            self._drop(question)

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
        if self._current is None and self._questions:
            self._show(next(iter(self._questions.values())))
            self._counts()

    def _counts(self) -> None:
        dialog = self.dialog
        setter = getattr(dialog, "set_waiting", None)
        if setter is not None:
            setter(len(self._questions) - 1)
        self.changed.emit(len(self._questions))


__all__ = ["Key", "PromptQueue"]
