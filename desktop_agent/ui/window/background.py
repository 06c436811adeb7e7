"""The window's side of the background host (Settings ▸ "Keep sessions running when the window closes").

With the setting on (and no ``--executor`` given; never for the tour) the window's sessions run in the background
host, ``desktop-agent host``, started on demand (``client.host_link``): opening a folder where the host already
runs a session attaches to it — its transcript is shown and every pending question is asked again — instead of
starting another; closing the window (or losing it: kill -9) leaves the session running, and the window says so
in a desktop notification. While the window is open but not active, the host notifies its sessions' questions
itself (``host.away``): ``watch_activation`` tells the host each time the window — itself or one of its dialogs —
gains or loses the focus (``is_active``: a permission dialog having the focus is the window being active), and
``review_in_window`` is the host's Review of such a notification — this window raised on that question's dialog
(never a second window process). Everything here is awaited on the Qt loop; the socket and the host's start run
on worker threads (``client.host_link``).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Callable, Iterable

from PySide6.QtCore import QCoreApplication, QObject, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QWidget

from desktop_agent.client.base import SessionHandle

log = logging.getLogger(__name__)
translate = QCoreApplication.translate


def keep_sessions_running() -> bool:
    """Settings' "Keep sessions running when the window closes" (False when the settings cannot be read)."""
    try:
        from desktop_agent.config import AppSettings

        return bool(AppSettings.load().keep_sessions_running)
    except Exception:
        log.exception("could not read the keep-sessions-running setting")
        return False


def pick_running(status: dict[str, Any] | None, folder: str, resume: str | None = None) -> str | None:
    """The session of ``folder`` the host runs that the window should attach to: ``resume`` when the host runs it;
    else (no ``resume``) the one with pending questions, else a busy one, else the most recent: None when the host
    runs none there (or ``resume`` names a session it does not run)."""
    if not status:
        return None
    folder = os.path.abspath(folder)
    sessions = [s for s in status.get("sessions") or [] if os.path.abspath(str(s.get("cwd") or "")) == folder]
    if resume:
        return resume if any(s.get("session_id") == resume for s in sessions) else None
    if not sessions:
        return None
    ranked = sorted(enumerate(sessions), key=lambda pair: (int(pair[1].get("pending") or 0) > 0,
                                                           bool(pair[1].get("busy")), pair[0]))
    return str(ranked[-1][1]["session_id"])


async def running_session(folder: str, resume: str | None = None) -> str | None:
    """``pick_running`` over the running host's status (None when no host runs: nothing is started for this)."""
    from desktop_agent.client.host_link import host_status

    try:
        status = await host_status()
    except Exception:
        log.exception("could not ask the background host for its sessions")
        return None
    return pick_running(status, folder, resume)


def in_background(session: SessionHandle | None) -> bool:
    """``session`` runs in the background host (closing the window leaves it running)."""
    return session is not None and session.state.executor == "host"


def left_running_text(title: str) -> str:
    return translate("MainWindow", "Your session in {0} keeps running in the background host. Open the folder again "
                                   "to see it; desktop-agent host --status lists what runs.").format(title)


def is_active(window: QWidget) -> bool:
    """``window`` or one of its own windows (a dialog) has the focus (``isActiveWindow`` is False while its
    permission dialog has it)."""
    active: QWidget | None = QApplication.activeWindow()
    while active is not None:
        if active is window:
            return True
        active = active.parentWidget()
    return False


SETTLE_MS = 150


class ActivationWatch(QObject):
    """The window's one watch of its activation (a child of the window: it goes with it). Each focus change tells
    the window's background-host sessions at once whether it is active (the host withdraws its notifications as
    soon as the window is back). ``listeners`` (``ui.window.away``: the in-process host's notifier) are called
    with the state once the focus has settled (``SETTLE_MS``), and only when it changed: focus moving from the
    window to its own dialog passes through "no focus window" on X11 (the focus-out comes before the focus-in), and
    a dialog opening must not read as the person leaving."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self.window = window
        self.active = is_active(window)
        self.listeners: list[Callable[[bool], None]] = []
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SETTLE_MS)
        self._timer.timeout.connect(self.settle)
        app = QGuiApplication.instance()
        if isinstance(app, QGuiApplication):
            app.focusWindowChanged.connect(self.changed)

    def changed(self, _focus: object = None) -> None:
        tell_active(getattr(self.window, "lives", ()), is_active(self.window))
        self._timer.start()  # (re)started: the listeners hear once the focus has settled

    def settle(self) -> None:
        active = is_active(self.window)
        if active != self.active:
            self.active = active
            for listener in list(self.listeners):
                listener(active)


def watch_activation(window: Any, live: Any = None) -> ActivationWatch:
    """The window's activation watched from now on (once per window); ``live`` (a session just opened or attached
    in ``window``) told at once whether the window is active."""
    watch = getattr(window, "_activation_watch", None)
    if watch is None:
        watch = window._activation_watch = ActivationWatch(window)
    if live is not None:
        tell_active([live], is_active(window))
    return watch


def tell_active(lives: Iterable[Any], active: bool) -> None:
    """Each background-host session of a window (``lives``) told whether the window is active
    (``ProtocolSession.set_client_active``; in order, on the Qt loop)."""
    try:
        loop = asyncio.get_event_loop()
    except RuntimeError:
        return
    for live in lives:
        session = live.controller.session
        if in_background(session) and hasattr(session, "set_client_active"):
            loop.create_task(session.set_client_active(active))


def review_in_window(window: Any, live: Any, request_id: str) -> bool:
    """The host's Review of ``live``'s question ``request_id``: the window holding ``live`` comes forward with that
    question's dialog (``answer_from_inbox``, focus-safe as every dialog). False when no window shows it."""
    holder = window._window_of(live)
    if holder is None or not live.session_id:
        return False
    holder.showNormal()
    holder.raise_()
    holder.activateWindow()
    return bool(window.answer_from_inbox((live.session_id, request_id), live))
