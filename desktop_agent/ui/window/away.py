"""The in-process host's desktop notifications follow the window's activation (issue 26).

When the window runs its sessions in its own process, its ``host.notify.Notifier`` is a client of that host's inbox
whose rule is "the window is not active" — the window itself or one of its own windows (a permission dialog: its
having the focus is the person looking at the question) — ``background.is_active``, not ``isActiveWindow``, which
is False while the window's dialog has the focus. ``watch_away`` applies the rule as ``host.away.AwayNotifier``
does for the background host, on the window's one activation watch (``background.ActivationWatch``, which reads the
focus once it has settled): when the window, with all its dialogs, stops being active, every pending question is
notified (``Notifier.remind``); when it becomes active again, those notifications are withdrawn
(``Notifier.dismiss``) and the questions stay pending for the window's dialogs.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from desktop_agent.ui.window.background import ActivationWatch, is_active, watch_activation

log = logging.getLogger(__name__)


def watch_away(window: Any, notifier: Any) -> ActivationWatch:
    """``notifier``'s rule is ``window`` not being active (its dialogs count as it), and it follows the window's
    activation from now on: pending questions notified when it goes inactive, withdrawn when it comes back."""
    notifier.window_active = lambda: is_active(window)
    tasks: set[asyncio.Task[Any]] = set()

    def done(task: asyncio.Task[Any]) -> None:
        tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("desktop notifications did not follow the window: %s", task.exception())

    def follow(active: bool) -> None:
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return
        task = loop.create_task(notifier.dismiss() if active else notifier.remind())
        tasks.add(task)
        task.add_done_callback(done)

    watch = watch_activation(window)
    watch.listeners.append(follow)
    return watch


__all__ = ["watch_away"]
