"""Desktop notifications for waiting questions, with safe actions (issue 26; DESIGN.md §1 "The inbox").

A client of the host's ``Inbox`` like the window and the phone page. When a question is asked while the window is
not active (``window_active``, a callable the window sets), a notification goes out through the freedesktop
Notifications interface on the session bus (``org.freedesktop.Notifications``, spoken with ``dbus-fast``): the
title names the session and the tool, the body the command or the file and its +/−. The window drives the rest of
the rule like ``host.away`` does for the background host: when it (with its own dialogs) stops being active, it calls
``remind()`` — every pending question gets its notification; when it becomes active again, ``dismiss()`` — they are
closed and the questions stay pending for its dialogs (``ui.window.away``).

Actions, only where the daemon has the ``actions`` capability (``GetCapabilities``; otherwise a plain notification):
- **Review** (and the notification's default action, a click on it): ``review(question)`` — the window raises
  itself on that question;
- **Deny**: ``Inbox.answer(deny)`` bound to the input's sha256;
- **Allow once**: only where the whole input is in the notification (``whole_input_text``: a short command, a read;
  never an edit's or a write's patch, never anything that does not fit) — also bound to the sha256 of the input
  that was shown. Never "always".

An action for a question no longer pending does nothing (``Inbox.answer`` refuses it). When a question is resolved
elsewhere or withdrawn, its notification is closed (``CloseNotification``). A body is escaped when the daemon
interprets markup (``body-markup``), so a command cannot pose as something else.
"""

from __future__ import annotations

import asyncio
import html
import logging
import os
from dataclasses import dataclass
from typing import Any, Callable

from dbus_fast import Message, MessageType, Variant
from dbus_fast.aio import MessageBus

from desktop_agent.core.permission import PermissionReply, PermissionRequest
from desktop_agent.host.inbox import Inbox, InboxEvent, PendingQuestion
from desktop_agent.util.invisible import has_invisible, reveal

log = logging.getLogger(__name__)

BUS_NAME = "org.freedesktop.Notifications"
OBJECT_PATH = "/org/freedesktop/Notifications"
INTERFACE = "org.freedesktop.Notifications"
SOURCE = "notification"
USER_DENIED = "User denied via UI"  # SPEC: the desktop's deny (a notification is the desktop)

ACTION_REVIEW, ACTION_DENY, ACTION_ALLOW, ACTION_DEFAULT = "review", "deny", "allow-once", "default"
# Whole-input limits: what a notification shows in full on every daemon we know (dunst, GNOME, KDE wrap ~4 lines).
MAX_WHOLE_CHARS = 200
MAX_WHOLE_LINES = 3
READ_TOOLS = ("Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch")
PATCH_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")


def _plus_minus(request: PermissionRequest) -> tuple[int, int]:
    adds = dels = 0
    for hunk in request.structured_patch or []:
        for line in hunk.get("lines", []):
            if line.startswith("+"):
                adds += 1
            elif line.startswith("-"):
                dels += 1
    return adds, dels


def whole_input_text(request: PermissionRequest) -> str | None:
    """The text that shows every field of the input, when it fits in a notification and the tool's effect is all in
    its input (a command, a read); None otherwise — then "Allow once" is not offered."""
    if request.tool_name in PATCH_TOOLS or request.structured_patch is not None:
        return None
    if request.tool_name != "Bash" and request.tool_name not in READ_TOOLS:
        return None
    inp = request.input
    lines: list[str] = []
    if request.tool_name == "Bash":
        command = inp.get("command")
        if not isinstance(command, str) or not command.strip():
            return None
        lines.append(command)
        for key, value in sorted(inp.items()):
            if key == "command":
                continue
            if key == "description" and isinstance(value, str):
                continue  # the model's own words about the command: shown, but they decide nothing
            lines.append(f"{key}: {value}")
    else:
        for key, value in sorted(inp.items()):
            lines.append(f"{key}: {value}")
    text = "\n".join(lines)
    if len(text) > MAX_WHOLE_CHARS or text.count("\n") + 1 > MAX_WHOLE_LINES:
        return None
    if has_invisible(text):  # bidi, zero-width or control characters: not shown as they run
        return None
    return text


def notification_text(question: PendingQuestion) -> tuple[str, str]:
    """(title, body) of a question's notification."""
    req = question.request
    title = reveal(f"{question.title or question.session_id} — {req.tool_name}")
    whole = whole_input_text(req)
    if whole is not None:
        return title, whole
    path = req.file_path or req.input.get("file_path") or req.input.get("notebook_path")
    if isinstance(path, str) and path:
        rel = os.path.relpath(path, question.folder) if question.folder and path.startswith(question.folder) \
            else path
        adds, dels = _plus_minus(req)
        return title, reveal(f"{rel}  +{adds} \u2212{dels}")
    command = req.input.get("command")
    if isinstance(command, str):
        first = command.splitlines()[0] if command else ""
        shown = (first[:MAX_WHOLE_CHARS] + " …") if len(first) > MAX_WHOLE_CHARS or "\n" in command else first
        return title, reveal(shown)
    return title, reveal(req.message or req.tool_name)


@dataclass
class Sent:
    question: PendingQuestion
    notification_id: int
    actions: tuple[str, ...]
    input_sha256: str  # the input that was shown
    daemon: str  # the unique bus name of the daemon that took it: only its signals count


class Notifier:
    """Notifications for the questions of ``inbox``. ``await start()`` connects to the session bus (or
    ``bus_address``); ``await stop()`` closes every notification it sent and disconnects."""

    def __init__(self, inbox: Inbox, *, review: Callable[[PendingQuestion], None],
                 window_active: Callable[[], bool] = lambda: False, bus_address: str | None = None,
                 app_name: str = "Desktop Agent") -> None:
        self.inbox = inbox
        self.review = review
        self.window_active = window_active
        self.bus_address = bus_address
        self.app_name = app_name
        self.capabilities: set[str] = set()
        self._bus: MessageBus | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._by_key: dict[tuple[str, str], Sent] = {}
        self._by_id: dict[int, Sent] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        # Keys whose question ended while its Notify call was still on the wire: closed as soon as the id comes.
        self._ended: set[tuple[str, str]] = set()
        self._sending: set[tuple[str, str]] = set()  # Notify on the wire

    @property
    def has_actions(self) -> bool:
        return "actions" in self.capabilities

    async def start(self) -> None:
        bus = MessageBus(bus_address=self.bus_address) if self.bus_address else MessageBus()
        self._bus = await bus.connect()
        self._bus.add_message_handler(self._on_message)
        for member in ("ActionInvoked", "NotificationClosed"):
            await self._call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch",
                             "s", [f"type='signal',interface='{INTERFACE}',member='{member}'"])
        try:
            reply = await self._call(BUS_NAME, OBJECT_PATH, INTERFACE, "GetCapabilities", "", [])
            self.capabilities = set(reply.body[0]) if reply.message_type == MessageType.METHOD_RETURN else set()
        except Exception:  # no daemon: notifications will fail to send, quietly
            self.capabilities = set()
        self._unsubscribe = self.inbox.subscribe(self._on_event)

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for task in list(self._tasks):
            task.cancel()
        for sent in list(self._by_id.values()):
            await self._close(sent.notification_id)
        self._by_id.clear()
        self._by_key.clear()
        if self._bus is not None:
            self._bus.disconnect()
            self._bus = None

    def wants(self, question: PendingQuestion) -> bool:
        """Whether ``question`` should have a notification now: the window is not active (``host.away`` asks
        instead whether any client is attached to its session)."""
        try:
            return not self.window_active()
        except Exception:
            return True

    async def remind(self, session_id: str | None = None) -> int:
        """The window stopped being active (or a session's last client went): a notification for every pending
        question (of ``session_id``) that has none yet and ``wants`` one; how many were sent."""
        waiting = [q for q in self.inbox.pending(session_id) if q.key not in self._by_key
                   and q.key not in self._sending and self.wants(q)]
        for question in waiting:
            await self._notify(question)
        return len(waiting)

    async def dismiss(self, session_id: str | None = None) -> int:
        """Close the notifications of ``session_id``'s questions (every session's with None: the window became
        active again) — a window took them back; they stay pending."""
        def ours(key: tuple[str, str]) -> bool:
            return session_id is None or key[0] == session_id

        # what is on the wire now, before any await: a notification sent after this (a later remind) stays
        self._ended.update(key for key in self._sending if ours(key))
        gone = [sent for key, sent in list(self._by_key.items()) if ours(key)]
        for sent in gone:
            self._by_key.pop(sent.question.key, None)
            self._by_id.pop(sent.notification_id, None)
        for sent in gone:
            await self._close(sent.notification_id)
        return len(gone)

    def sent_for(self, session_id: str, request_id: str) -> Sent | None:
        return self._by_key.get((session_id, request_id))

    # -- the inbox's side -------------------------------------------------------------------------------------
    def _on_event(self, event: InboxEvent) -> None:
        key = event.question.key
        if event.kind == "asked":
            if self.wants(event.question):
                self._spawn(self._notify(event.question))
            return
        sent = self._by_key.pop(key, None)
        if sent is None:
            if key in self._sending:  # closed as soon as its id comes back
                self._ended.add(key)
            return
        self._by_id.pop(sent.notification_id, None)
        self._spawn(self._close(sent.notification_id))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _notify(self, question: PendingQuestion) -> None:
        if self._bus is None or question.key in self._sending or question.key in self._by_key:
            return
        self._sending.add(question.key)
        try:
            await self._send(question)
        finally:
            self._sending.discard(question.key)

    async def _send(self, question: PendingQuestion) -> None:
        assert self._bus is not None
        title, body = notification_text(question)
        if "body-markup" in self.capabilities:
            body = html.escape(body, quote=False)
        actions: list[str] = []
        if self.has_actions:
            actions = [ACTION_DEFAULT, "Review", ACTION_REVIEW, "Review", ACTION_DENY, "Deny"]
            if whole_input_text(question.request) is not None:
                actions += [ACTION_ALLOW, "Allow once"]
        hints = {"urgency": Variant("y", 2), "category": Variant("s", "im.received"),
                 "desktop-entry": Variant("s", "desktop-agent")}
        try:
            reply = await self._call(BUS_NAME, OBJECT_PATH, INTERFACE, "Notify", "susssasa{sv}i",
                                     [self.app_name, 0, "dialog-question", title, body, actions, hints, 0])
        except Exception:
            log.warning("notification not sent: no notification daemon")
            return
        if reply.message_type != MessageType.METHOD_RETURN:
            log.warning("notification not sent: %s", reply.error_name)
            return
        notification_id = int(reply.body[0])
        sent = Sent(question, notification_id, tuple(actions[0::2]), question.input_sha256, reply.sender or "")
        if question.key in self._ended or self.inbox.get(*question.key) is None:
            self._ended.discard(question.key)
            await self._close(notification_id)
            return
        self._by_key[question.key] = sent
        self._by_id[notification_id] = sent

    async def _close(self, notification_id: int) -> None:
        if self._bus is None:
            return
        try:
            await self._call(BUS_NAME, OBJECT_PATH, INTERFACE, "CloseNotification", "u", [notification_id])
        except Exception:
            pass

    # -- the daemon's side ------------------------------------------------------------------------------------
    def _on_message(self, msg: Message) -> bool:
        if msg.message_type != MessageType.SIGNAL or msg.interface != INTERFACE:
            return False
        if not msg.body:
            return False
        sent = self._by_id.get(int(msg.body[0]))
        if sent is None or msg.sender != sent.daemon:
            return False  # not ours, or a signal forged by another client of the bus
        if msg.member == "ActionInvoked" and len(msg.body) == 2:
            self.invoke(int(msg.body[0]), str(msg.body[1]))
        elif msg.member == "NotificationClosed":
            self._by_id.pop(sent.notification_id, None)
            self._by_key.pop(sent.question.key, None)
        return False

    def invoke(self, notification_id: int, action: str) -> str:
        """Carry out ``action`` of one of our notifications; the inbox's outcome (or ``"ignored"``)."""
        sent = self._by_id.get(notification_id)
        if sent is None or action not in sent.actions:
            return "ignored"  # not ours, or an action we never offered (a forged signal)
        question = sent.question
        if action in (ACTION_REVIEW, ACTION_DEFAULT):
            if self.inbox.get(*question.key) is None:
                return "ignored"
            try:
                self.review(question)
            except Exception:
                log.exception("review callback failed")
            return "ok"
        if action == ACTION_DENY:
            reply = PermissionReply(behavior="deny", message=USER_DENIED)
        elif action == ACTION_ALLOW:
            reply = PermissionReply(behavior="allow")
        else:
            return "ignored"
        return self.inbox.answer(question.session_id, question.request_id, reply, source=SOURCE,
                                 input_sha256=sent.input_sha256)

    async def _call(self, destination: str, path: str, interface: str, member: str, signature: str,
                    body: list[Any]) -> Message:
        assert self._bus is not None
        reply = await asyncio.wait_for(self._bus.call(Message(destination=destination, path=path,
                                                              interface=interface, member=member,
                                                              signature=signature, body=body)), 5)
        assert reply is not None
        return reply


__all__ = ["Notifier", "notification_text", "whole_input_text"]
