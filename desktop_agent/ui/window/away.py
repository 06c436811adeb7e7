"""The in-process host's desktop notifications follow the window's activation (issue 26).

When the window runs its sessions in its own process, its ``host.notify.Notifier`` is a client of that host's inbox
whose rule is "the window is not active" — the window itself or one of its own windows (a permission dialog: its
having the focus is the person looking at the question) — ``background.is_active``, not ``isActiveWindow``, which
is False while the window's dialog has the focus. ``AwayWatch`` applies the rule as ``host.away.AwayNotifier`` does
for the background host: when the window, with all its dialogs, stops being active, every pending question is
notified (``Notifier.remind``); when it becomes active again, those notifications are withdrawn
(``Notifier.dismiss``) and the questions stay pending for the window's dialogs.

Focus moving from the window to its own dialog passes through "no focus window" on some platforms (X11 sends the
focus-out before the focus-in): the state is read once the focus has settled (``SETTLE_MS``), so that a dialog
opening does not flash a notification.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QGuiApplication

from desktop_agent.ui.window.background import is_active

log = logging.getLogger(__name__)

SETTLE_MS = 150


class AwayWatch(QObject):
    """``notifier`` told each time ``window`` (with its dialogs) stops or starts being active (a child of the
    window: it goes with it)."""

    def __init__(self, window: Any, notifier: Any) -> None:
        super().__init__(window)
        self.window = window
        self.notifier = notifier
        self.active = is_active(window)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SETTLE_MS)
        self._timer.timeout.connect(self.settle)
        self._tasks: set[asyncio.Task[Any]] = set()
        app = QGuiApplication.instance()
        if isinstance(app, QGuiApplication):
            app.focusWindowChanged.connect(self.changed)

    def changed(self, _focus: object = None) -> None:
        self._timer.start()  # (re)started: read once the focus has settled

    def settle(self) -> None:
        active = is_active(self.window)
        if active == self.active:
            return
        self.active = active
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return
        task = loop.create_task(self.notifier.dismiss() if active else self.notifier.remind())
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("desktop notifications did not follow the window: %s", task.exception())


def watch_away(window: Any, notifier: Any) -> AwayWatch:
    """``notifier``'s rule is ``window`` not being active (its dialogs count as it), and it follows the window's
    activation from now on: pending questions notified when it goes inactive, withdrawn when it comes back."""
    notifier.window_active = lambda: is_active(window)
    return AwayWatch(window, notifier)


__all__ = ["AwayWatch", "SETTLE_MS", "watch_away"]
