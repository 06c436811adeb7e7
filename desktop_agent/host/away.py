"""Questions asked while nobody is there: the background host's own desktop notifications (issue 26).

A session in the background host (``desktop-agent host``, Settings → "keep sessions running") outlives its window.
When one of its questions waits and no client is attached to that session — it was asked after the window closed,
or the session's last client detached with it pending — or every attached client's window is inactive (another
app has the focus: the window says so with ``desktop_agent_client_active``), nobody would see it. ``AwayNotifier``
is then the host's own client of its inbox: a ``host.notify.Notifier`` whose rule is "no active client attached to
the question's session" (not "this process's window is not active"), with the same safe actions:

- **Review** (or a click on the notification): with a client attached (an inactive window), that client is sent
  ``desktop_agent_review {session_id, request_id}`` and its window raises itself on that question's dialog; with
  none (or when it refuses), a window for that session — ``desktop-agent <folder> --resume <session id>``, started
  detached; in background mode that window attaches to the running session and gets the question again (its
  dialog). ``DESKTOP_AGENT_WINDOW_COMMAND`` (a shell-quoted command) replaces ``desktop-agent`` (a packaging hook;
  the tests record the call with it).
- **Deny**, and **Allow once** only for a whole-input request (``notify.whole_input_text``); never "always".

When an active client attaches to the session (a window came back), or an attached one becomes active, its
notifications are closed — the question stays pending and the window asks it; when the session's last active
client goes (or becomes inactive), every pending question of it is notified.
Without a session bus (``DBUS_SESSION_BUS_ADDRESS``) or a notification daemon nothing is sent.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import subprocess
import sys
from typing import TYPE_CHECKING, Callable

from desktop_agent.host.inbox import PendingQuestion
from desktop_agent.host.notify import Notifier
from desktop_agent.protocol.control import ReviewRequest

if TYPE_CHECKING:
    from desktop_agent.host.server import Host
    from desktop_agent.host.session import Client, HostedSession

log = logging.getLogger(__name__)

WINDOW_COMMAND_ENV = "DESKTOP_AGENT_WINDOW_COMMAND"
REVIEW_TIMEOUT_S = 5.0  # an attached window that does not answer Review in this time: a window is started


def window_command() -> list[str]:
    """How this program starts a window (``desktop-agent``; the frozen bundle is the command itself)."""
    override = os.environ.get(WINDOW_COMMAND_ENV, "").strip()
    if override:
        return shlex.split(override)
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "desktop_agent"]


def open_window(question: PendingQuestion) -> None:
    """Review: a window on the question's session, detached from the host (its own session, no stdio of ours)."""
    folder = question.folder or os.path.expanduser("~")
    args = [*window_command(), folder, "--resume", question.session_id]
    try:
        subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True, cwd=folder if os.path.isdir(folder) else None)
    except OSError as exc:
        log.warning("could not start a window for session %s: %s", question.session_id, exc)
        return
    log.info("started a window for session %s", question.session_id)


def _attached(hosted: HostedSession | None) -> list[Client]:
    return [c for c in hosted.clients if not c.channel.closed] if hosted is not None else []


class AwayNotifier(Notifier):
    """Notifications for the questions of ``host``'s sessions that no active client is attached to."""

    def __init__(self, host: Host, *, review: Callable[[PendingQuestion], None] = open_window,
                 bus_address: str | None = None) -> None:
        super().__init__(host.inbox, review=self._review, bus_address=bus_address)
        self.host = host
        self.open_window = review  # no window attached (or it refused): one is started
        self._listening = False

    def wants(self, question: PendingQuestion) -> bool:
        return not any(c.active for c in _attached(self.host.sessions.get(question.session_id)))

    def _review(self, question: PendingQuestion) -> None:
        """Review: the attached window raises itself on the question (``desktop_agent_review``); else a window."""
        clients = _attached(self.host.sessions.get(question.session_id))
        if not clients:
            self.open_window(question)
            return
        self._spawn(self._review_in(clients[-1], question))  # the last attached: the window opened most recently

    async def _review_in(self, client: Client, question: PendingQuestion) -> None:
        request = ReviewRequest(session_id=question.session_id, request_id=question.request_id)
        try:
            await asyncio.wait_for(client.channel.request(request), REVIEW_TIMEOUT_S)
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # refused (an older window, the session no longer shown), timed out, gone
            log.info("the attached window did not take Review of %s: %s", question.session_id, exc or "timed out")
        if self.inbox.get(*question.key) is not None:
            self.open_window(question)

    async def start(self) -> None:
        await super().start()
        self.host.client_listeners.append(self._clients_changed)
        self._listening = True
        await self.remind()  # questions of sessions nobody is attached to, asked before we started

    async def stop(self) -> None:
        if self._listening:
            self.host.client_listeners.remove(self._clients_changed)
            self._listening = False
        await super().stop()

    def _clients_changed(self, hosted: HostedSession) -> None:
        if any(c.active for c in _attached(hosted)):
            self._spawn(self.dismiss(hosted.session_id))
        else:
            self._spawn(self.remind(hosted.session_id))


async def start_away_notifier(host: Host, *, bus_address: str | None = None,
                              timeout: float = 5.0) -> AwayNotifier | None:
    """The host's notifier, started; None without a session bus or when the bus does not answer."""
    if not (bus_address or os.environ.get("DBUS_SESSION_BUS_ADDRESS")):
        log.info("no session bus: questions asked while no window is attached are not notified")
        return None
    notifier = AwayNotifier(host, bus_address=bus_address)
    try:
        await asyncio.wait_for(notifier.start(), timeout)
    except Exception as exc:
        log.info("desktop notifications are off: %s", exc)
        try:
            await notifier.stop()
        except Exception:
            pass
        return None
    log.info("desktop notifications on (%s)", "with actions" if notifier.has_actions else "without actions")
    return notifier


__all__ = ["AwayNotifier", "open_window", "start_away_notifier", "window_command"]
