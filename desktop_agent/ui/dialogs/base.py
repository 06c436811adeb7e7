"""What every modal dialog of the window shares: ``AwaitableDialog[T]`` — the modal *is* the awaitable,
with a typed answer — and the focus-safe delay (``SafetyDelay``, ``GuardButton``) of the dialogs that
approve something (the permission dialog, the revert confirmation).

``AwaitableDialog[T]`` (after Textual's ``ModalScreen`` / ``dismiss``): opened window-modal with
``open()`` — never a nested ``exec()`` loop — it answers exactly once, with a ``T``:

- ``await dialog.ask()`` opens it and returns the answer; ``dialog.answer()`` is the Future of the
  answer for a caller that opens it itself (the controller keeps it among its pending questions);
- ``decided`` (a signal) carries the same answer, once, for Qt-side listeners;
- closing it — Escape, the title bar's close button, ``reject()`` — answers ``closed_value()``, the
  dialog's documented "no" (the permission dialog: deny; the revert confirmation: False; trust:
  cancel; settings: None);
- it never answers on a timeout; ``close_silently()`` closes it without an answer (the question was
  withdrawn: the turn was interrupted, or the answer came from elsewhere) and cancels the Future.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Generic, TypeVar

from PySide6.QtCore import QEvent, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QDialog, QPushButton, QWidget

T = TypeVar("T")


class AwaitableDialog(QDialog, Generic[T]):
    """A window-modal dialog whose answer is a ``T``, given exactly once (see the module docstring)."""

    decided = Signal(object)  # the answer (a T), exactly once

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._answered = False
        self._answer: T | None = None
        self._future: asyncio.Future[T] | None = None
        self.setModal(True)
        self.setWindowModality(Qt.WindowModality.WindowModal if parent is not None
                               else Qt.WindowModality.ApplicationModal)

    # ----- the answer ---------------------------------------------------------------------------
    def closed_value(self) -> T:
        """The answer when the dialog is closed without one: its "no"."""
        raise NotImplementedError

    @property
    def answered(self) -> bool:
        return self._answered

    def answer(self) -> asyncio.Future[T]:
        """The Future of the answer (on the running loop; already done when the dialog has answered)."""
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
            if self._answered and not self._silent_close:
                self._future.set_result(self._answer)  # type: ignore[arg-type]
            elif self._answered:
                self._future.cancel()
        return self._future

    async def ask(self) -> T:
        """Open the dialog (window-modal) and wait for its answer."""
        future = self.answer()
        self.open()
        return await future

    def _resolve(self, value: T, accepted: bool = False) -> bool:
        """Answer ``value`` (the first answer wins; a later one is ignored) and close."""
        if self._answered:
            return False
        self._answered = True
        self._answer = value
        if self._future is not None and not self._future.done():
            self._future.set_result(value)
        self.decided.emit(value)
        self.done(QDialog.DialogCode.Accepted if accepted else QDialog.DialogCode.Rejected)
        return True

    _silent_close = False

    def close_silently(self) -> None:
        """Close without answering (the question was withdrawn, or its answer is already in)."""
        self._silent_close = True
        self._answered = True
        if self._future is not None and not self._future.done():
            self._future.cancel()
        if self.isVisible():
            self.done(QDialog.DialogCode.Rejected)

    def reject(self) -> None:  # Escape, the title bar's close button, a Cancel button
        if self._answered:
            super().reject()
            return
        self._resolve(self.closed_value(), False)


class GuardButton(QPushButton):
    """A dialog button that is inert until the dialog is ready (clicks and its mnemonic do nothing),
    shows the remaining safety delay as a fill (``progress`` 0…1), and, with ``no_space``, is never
    pressed by Space."""

    def __init__(self, text: str, ready: Callable[[], bool], no_space: bool = False):
        super().__init__(text)
        self._ready = ready
        self.no_space = no_space
        self.progress: float | None = None
        self.setAutoDefault(False)
        self.setDefault(False)

    def event(self, e: Any) -> bool:
        if e.type() in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease) and self.no_space \
                and e.key() == Qt.Key.Key_Space:
            e.accept()
            return True
        if e.type() == QEvent.Type.Shortcut and not self._ready():
            return True
        return super().event(e)

    def mouseReleaseEvent(self, e: Any) -> None:  # noqa: N802 - a click before ready does not click
        if not self._ready():
            self.setDown(False)
            e.accept()
            return
        super().mouseReleaseEvent(e)

    def paintEvent(self, e: Any) -> None:  # noqa: N802
        super().paintEvent(e)
        if self.progress is not None and self.isEnabled():
            painter = QPainter(self)
            color = QColor(self.palette().highlight().color())
            color.setAlpha(70)
            painter.fillRect(QRectF(0, 0, self.width() * self.progress, self.height()), color)
            color.setAlpha(220)
            painter.fillRect(QRectF(0, self.height() - 3, self.width() * self.progress, 3), color)
            painter.end()


SAFETY_DELAY_MS = 700  # the buttons' inert time after an approving dialog appears or is activated again


class SafetyDelay:
    """The focus-safe delay the permission dialog and the revert confirmation share: after the dialog
    appears, and each time it is activated again, ``is_ready()`` is False for ``delay_ms()`` while a fill
    runs across ``fill_button()``. Mixed in before the dialog class (``class D(SafetyDelay,
    AwaitableDialog[T])``); ``_init_delay()`` in ``__init__``."""

    _TICK_MS = 30
    arm_count = 0  # how often the delay (re)started (tests)

    def _init_delay(self) -> None:
        self._ready_at = float("inf")  # not before it is shown
        self._tick = QTimer(self)  # type: ignore[call-overload]
        self._tick.setInterval(self._TICK_MS)
        self._tick.timeout.connect(self._on_tick)

    def delay_ms(self) -> int:
        raise NotImplementedError

    def fill_button(self) -> GuardButton:
        raise NotImplementedError

    def is_ready(self) -> bool:
        """True once the safety delay since the dialog appeared or was last activated has passed."""
        return self.isVisible() and time.monotonic() >= self._ready_at  # type: ignore[attr-defined]

    def _arm(self) -> None:
        """(Re)start the delay: the buttons are inert, a fill runs across the answering button."""
        self.arm_count += 1
        self._ready_at = time.monotonic() + self.delay_ms() / 1000
        if self.delay_ms() > 0:
            self._tick.start()
        self._on_tick()

    def _on_tick(self) -> None:
        left = self._ready_at - time.monotonic()
        button = self.fill_button()
        if left <= 0 or self.delay_ms() <= 0:
            self._tick.stop()
            button.progress = None
        else:
            button.progress = max(0.0, 1.0 - left / (self.delay_ms() / 1000))
        button.update()

    def _guarded(self, action: Callable[[], Any]) -> None:
        if self.is_ready():
            action()

    def showEvent(self, event: Any) -> None:  # noqa: N802
        super().showEvent(event)  # type: ignore[misc]
        self._arm()

    def event(self, e: Any) -> bool:
        if e.type() == QEvent.Type.WindowActivate:
            self._arm()
        return super().event(e)  # type: ignore[misc]


__all__ = ["AwaitableDialog", "GuardButton", "SafetyDelay", "SAFETY_DELAY_MS"]
