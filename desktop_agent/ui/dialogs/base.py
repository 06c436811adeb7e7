"""What every modal dialog of the window shares: ``AwaitableDialog[T]`` — the modal *is* the awaitable,
with a typed answer, and it never takes the focus from another application — and the focus-safe delay
(``SafetyDelay``, ``GuardButton``) of the dialogs that approve something (the permission dialog, the
revert and Bypass confirmations).

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

Focus (X11, verified under Openbox and IceWM by tests/ui/x11): Qt asks the window manager to activate
every *modal* window it maps (``QXcbWindow::show``: ``modalWindow() == window()`` →
``requestActivateWindow()``, a ``_NET_ACTIVE_WINDOW`` request that also overwrites the
``_NET_WM_USER_TIME`` 0 of ``WA_ShowWithoutActivating``), and window managers grant it. So when its
window is not the active one — another application has the focus — ``open()`` maps the dialog
*without* Qt modality and without activation (``_NET_WM_USER_TIME`` 0: "do not focus on map"), still
transient for the window, and blocks the window itself (``_ParentBlock``: no key, shortcut or click
reaches it; activating it activates the dialog instead, as Qt's ``relayFocusToModalWindow`` does). The
caller calls the person (taskbar urgency, a notification). When the window is active, ``open()`` is
QDialog's: window-modal, activated.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

from PySide6.QtCore import QEvent, QObject, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QDialog, QPushButton, QWidget

T = TypeVar("T")

_INPUT = (QEvent.Type.KeyPress, QEvent.Type.KeyRelease, QEvent.Type.ShortcutOverride, QEvent.Type.MouseButtonPress,
          QEvent.Type.MouseButtonRelease, QEvent.Type.MouseButtonDblClick, QEvent.Type.Wheel, QEvent.Type.ContextMenu,
          QEvent.Type.TouchBegin, QEvent.Type.TabletPress)


class _ParentBlock(QObject):
    """While a dialog opened without activation is shown, its window takes no input and passes its activation
    on to the dialog — what Qt's window modality does, without the activation request Qt makes when it maps a
    modal window. The filter sits on the window's ``QWindow``, which every key, shortcut override (so no
    shortcut of the window fires), click and wheel from the window system passes before it reaches a widget,
    and on the window itself for its activation; no application-wide filter."""

    def __init__(self, dialog: QDialog, window: QWidget):
        super().__init__(dialog)
        self.dialog = dialog
        self.window = window
        self.handle = window.windowHandle()
        for target in (self.handle, window):
            if target is not None:
                target.installEventFilter(self)

    def remove(self) -> None:
        for target in (self.handle, self.window):
            if target is not None:
                target.removeEventFilter(self)

    def eventFilter(self, obj: QObject, e: QEvent) -> bool:  # noqa: N802
        t = e.type()
        if t in _INPUT and obj is self.handle:
            e.accept()  # a ShortcutOverride accepted here keeps the window's shortcuts from firing
            return True
        if t == QEvent.Type.WindowActivate and obj is self.window and self.dialog.isVisible():
            QTimer.singleShot(0, self, self._relay)  # the person came back to the window: the question is there
        return False

    def _relay(self) -> None:
        if self.dialog.isVisible():
            self.dialog.raise_()
            self.dialog.activateWindow()


class AwaitableDialog(QDialog, Generic[T]):
    """A window-modal dialog whose answer is a ``T``, given exactly once (see the module docstring)."""

    decided = Signal(object)  # the answer (a T), exactly once

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._answered = False
        self._answer: T | None = None
        self._future: asyncio.Future[T] | None = None
        self._block: _ParentBlock | None = None
        self.setModal(True)
        self.setWindowModality(Qt.WindowModality.WindowModal if parent is not None
                               else Qt.WindowModality.ApplicationModal)

    # ----- opening ------------------------------------------------------------------------------
    def open(self) -> None:  # noqa: A003 - QDialog's
        """Show it: window-modal and active when its window is the active one; else without taking the
        focus (see the module docstring)."""
        parent = self.parentWidget()
        window = parent.window() if parent is not None else None
        if window is None or window.isActiveWindow():
            self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, False)
            super().open()
            return
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
        self.setWindowModality(Qt.WindowModality.NonModal)  # Qt activates a modal window when it maps it
        if self._block is None:
            self._block = _ParentBlock(self, window)
        self.setResult(0)
        self.show()

    @property
    def opened_inactive(self) -> bool:
        """Opened while another window (or application) had the focus: shown without activation, its
        window blocked by ``_ParentBlock``."""
        return self._block is not None

    def hideEvent(self, event: Any) -> None:  # noqa: N802
        if self._block is not None and not event.spontaneous():  # closed (not minimised with its window)
            self._block.remove()
            self._block = None
            self.setWindowModality(Qt.WindowModality.WindowModal)
        super().hideEvent(event)

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
                # answered: _answer holds the T given (T may itself allow None, so None cannot mark "no answer")
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
    pressed by Space. ``ready`` answers for the input being handled (``SafetyDelay.input_ready``)."""

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

    def mouseReleaseEvent(self, e: Any) -> None:  # noqa: N802 - a click not pressed when ready does not click
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


SAFETY_DELAY_MS = 700  # the quiet, active time an approving dialog needs before it can answer

_KEYS = (QEvent.Type.KeyPress, QEvent.Type.KeyRelease, QEvent.Type.ShortcutOverride)
_PRESSES = (QEvent.Type.MouseButtonPress, QEvent.Type.MouseButtonDblClick)


class _InputWatch(QObject):
    """The event filter on the dialog and every widget in it (``SafetyDelay``)."""

    def __init__(self, dialog: "SafetyDelay"):
        super().__init__(dialog)
        self.dialog = dialog

    def eventFilter(self, obj: QObject, e: QEvent) -> bool:  # noqa: N802
        return self.dialog._on_input(e)


if TYPE_CHECKING:
    _DialogMixin = QDialog
else:  # deriving it from QDialog too (a diamond over QDialog) crashed Shiboken in the dialog tests: a plain mixin
    _DialogMixin = object


class SafetyDelay(_DialogMixin):
    """The second line behind "never takes the focus": an approving dialog can answer only after it has
    been the **active window, visible, for ``delay_ms()`` in which it received no key and no click**.

    - Every key press or release and every mouse press on the dialog (any widget in it) restarts the
      wait; deactivating it resets it (the wait runs only while it is the active window); a fill runs
      across ``fill_button()`` meanwhile.
    - Keys typed before the dialog has first been ready (since it was last activated) go nowhere; after
      that they reach its widgets (the feedback box, the hunk keys) but still restart the wait, so a
      person typing straight through never approves, and Enter answers only after a quiet pause.
    - ``input_ready()`` is the answer for the input being handled — whether the dialog was ready just
      *before* this key or click (each restarts the wait itself) — and is what the buttons and the
      key handlers ask; ``is_ready()`` is the state now.

    Mixed in before the dialog class (``class D(SafetyDelay, AwaitableDialog[T])``; typed as a ``QDialog``, which
    it is only ever mixed into); ``_init_delay()`` in ``__init__``. A delay of 0 (the UI tests) is ready whenever
    it is visible."""

    _TICK_MS = 30
    arm_count = 0  # how often the wait (re)started (tests)

    def _init_delay(self) -> None:
        self._ready_at = float("inf")  # not before it is shown and active
        self._engaged = False  # has been ready since it was last activated: keys reach its widgets
        self._input_key: tuple[Any, ...] | None = None  # the input event being handled (its identity)
        self._input_ok = False  # ...and whether the dialog was ready just before it
        self._watch = _InputWatch(self)
        self._tick = QTimer(self)
        self._tick.setInterval(self._TICK_MS)
        self._tick.timeout.connect(self._on_tick)

    def delay_ms(self) -> int:
        raise NotImplementedError

    def fill_button(self) -> GuardButton:
        raise NotImplementedError

    # ----- the state ---------------------------------------------------------------------------
    def is_ready(self) -> bool:
        """True when the dialog is visible, active, and has had no key or click for the delay."""
        if not self.isVisible():
            return False
        if self.delay_ms() <= 0:
            return True
        return self.isActiveWindow() and time.monotonic() >= self._ready_at

    def input_ready(self) -> bool:
        """Whether the key or click being handled may answer: the dialog was ready just before it (for a
        click: before its press). Without input (a programmatic click) the state now."""
        return self._input_ok or self.is_ready()

    def _restart(self) -> None:
        """(Re)start the wait; it runs only while the dialog is the active window."""
        self.arm_count += 1
        active = self.isActiveWindow()
        self._ready_at = time.monotonic() + self.delay_ms() / 1000 if active or self.delay_ms() <= 0 \
            else float("inf")
        if self.delay_ms() > 0:
            self._tick.start()
        self._on_tick()

    def _reset(self) -> None:
        """Deactivated or hidden: not ready, keys go nowhere until it has been ready again."""
        self._engaged = False
        self._input_ok = False
        self._input_key = None
        self._ready_at = float("inf")
        self._on_tick()

    def _on_tick(self) -> None:
        button = self.fill_button()
        if self.delay_ms() <= 0:
            self._tick.stop()
            button.progress = None
        elif self._ready_at == float("inf"):
            self._tick.stop()
            button.progress = 0.0  # inactive: the wait has not started
        else:
            left = self._ready_at - time.monotonic()
            if left <= 0:
                self._tick.stop()
                button.progress = None
            else:
                button.progress = max(0.0, 1.0 - left / (self.delay_ms() / 1000))
        button.update()

    def _guarded(self, action: Callable[[], Any]) -> None:
        if self.input_ready():
            action()

    # ----- input -------------------------------------------------------------------------------
    def _watch_children(self) -> None:
        for w in [self, *self.findChildren(QWidget)]:
            w.installEventFilter(self._watch)  # installing again moves it to the front: never twice

    def _on_input(self, e: QEvent) -> bool:
        """Every key and mouse press on the dialog or a widget in it: decide once per input event (the
        same event reaches several widgets as it propagates) and restart the wait. True: drop it."""
        t = e.type()
        ev: Any = e  # a QKeyEvent or a QMouseEvent, by its type
        if t in _KEYS:
            ident: tuple[Any, ...] = ("release" if t == QEvent.Type.KeyRelease else "press", ev.key(),
                                      ev.modifiers(), ev.timestamp(), ev.isAutoRepeat())
        elif t in _PRESSES:
            ident = ("mouse", ev.button(), ev.globalPosition().toPoint(), ev.timestamp())
        elif t == QEvent.Type.InputMethod:  # text from an input method (pinyin…): typed, like a key
            ident = ("im", self.arm_count)  # delivered to one widget only: always a new input
        else:
            return False
        if ident != self._input_key:
            self._input_key = ident
            self._input_ok = self.is_ready()
            if self._input_ok:
                self._engaged = True
            self._restart()
        if (t in _KEYS or t == QEvent.Type.InputMethod) and not self._engaged and not getattr(self, "_answered", False):
            e.accept()
            return True  # typed before it was ready: goes nowhere
        return False

    # ----- Qt ----------------------------------------------------------------------------------
    def showEvent(self, event: Any) -> None:  # noqa: N802
        super().showEvent(event)
        self._watch_children()
        self._restart()

    def hideEvent(self, event: Any) -> None:  # noqa: N802
        self._reset()
        super().hideEvent(event)

    def event(self, e: Any) -> bool:
        if e.type() == QEvent.Type.WindowActivate:
            self._engaged = False
            self._input_ok = False
            self._restart()
        elif e.type() == QEvent.Type.WindowDeactivate:
            self._reset()
        return super().event(e)


__all__ = ["AwaitableDialog", "GuardButton", "SafetyDelay", "SAFETY_DELAY_MS"]
