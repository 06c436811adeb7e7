"""The session's hooks outside the loop (App. B §B.5): SessionStart once per session object (``startup`` or
``resume``) and UserPromptSubmit before each prompt, an ``idle_prompt`` Notification when the session sits idle
``AgentSession.idle_notification_s`` after a turn, SessionEnd once when the session ends.

SessionStart's additional context goes with the first prompt actually sent (a prompt a UserPromptSubmit hook
blocks carries nothing); UserPromptSubmit's goes with its prompt. The session writes both as ``isMeta`` messages.
What it reads of the session is ``HookedSession`` (``AgentSession`` has it), so this module does not import it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.hooks import IDLE_PROMPT_MESSAGE, HookRunner

log = logging.getLogger(__name__)


class HookedSession(Protocol):
    """What the hooks outside turns read of their session (``app.session.AgentSession``)."""

    @property
    def hooks(self) -> HookRunner | None: ...
    @property
    def ctx(self) -> ToolUseContext: ...
    @property
    def resumed(self) -> bool: ...
    @property
    def running(self) -> bool: ...
    @property
    def idle_notification_s(self) -> float | None: ...


class SessionHooks:
    """One session's hooks outside turns."""

    def __init__(self, session: HookedSession) -> None:
        self._session = session
        self.started = False  # SessionStart ran (so SessionEnd will)
        self.ended = False
        self._start_context: list[str] = []
        self._idle_timer: asyncio.TimerHandle | None = None

    async def before_prompt(self, prompt: str | list[dict[str, Any]], contexts: list[str]) -> str | None:
        """SessionStart once per session object, then UserPromptSubmit. Returns a block reason, or None; the hooks'
        additional context is appended to ``contexts``."""
        s = self._session
        hooks = s.hooks
        if hooks is None:
            return None
        if not self.started:
            self.started = True
            if hooks.has_hooks("SessionStart"):
                out = await hooks.session_start("resume" if s.resumed else "startup", s.ctx)
                if out.additional_context:
                    self._start_context.append(f"SessionStart hook additional context: {out.additional_context}")
        if hooks.has_hooks("UserPromptSubmit"):
            text = prompt if isinstance(prompt, str) else "".join(
                b.get("text", "") for b in prompt if isinstance(b, dict) and b.get("type") == "text")
            out = await hooks.user_prompt_submit(text, s.ctx)
            if out.block or out.stop:
                return out.reason or out.stop_reason or "blocked"
            if out.additional_context:
                contexts.append(f"UserPromptSubmit hook additional context: {out.additional_context}")
        contexts[:0] = self._start_context  # SessionStart's context goes with the first prompt actually sent
        self._start_context = []
        return None

    # ------------------------------------------------------------------------------ idle_prompt

    def start_idle_timer(self) -> None:
        """After a turn: an ``idle_prompt`` Notification if no prompt comes within ``idle_notification_s``."""
        self.cancel_idle_timer()
        delay = self._session.idle_notification_s
        if delay is None or self.ended:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._idle_timer = loop.call_later(delay, self._idle_fired)

    def cancel_idle_timer(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _idle_fired(self) -> None:
        self._idle_timer = None
        s = self._session
        hooks = s.hooks
        if hooks is not None and not s.running and not self.ended:
            hooks.notify_soon(IDLE_PROMPT_MESSAGE, s.ctx, "idle_prompt")

    # ------------------------------------------------------------------------------ SessionEnd

    async def end(self, reason: str) -> None:
        """SessionEnd (once, for a session whose SessionStart ran) after the background Notification hooks."""
        s = self._session
        hooks = s.hooks
        first, self.ended = not self.ended, True
        self.cancel_idle_timer()
        if not first or hooks is None:
            return
        try:
            await hooks.drain()
            if self.started and hooks.has_hooks("SessionEnd", reason):
                await hooks.session_end(reason, s.ctx)
        except Exception:  # pragma: no cover - a hook must not keep the session open
            log.exception("SessionEnd hooks failed")
