"""Rewind in the window: a checkpoint marker under each user message once its turn ends, "Rewind…" opening the dry
run in ``RewindDialog`` (one dialog at a time, focus-safe), the restore of the files, the conversation (a fork of
the session from just before that message, opened in its place; the original stays) or both, and the
"Undo restore" banner that stays offered until the next turn; the changes panel's per-change Revert and Redo go
through the same restore (``_revert_change``: the panel's ``reverter``).

``WindowRewind`` is a part of ``MainWindow`` (``window.rewind``): it holds its own state (the dialog open, the task
in flight, the prompts the markers go under) and reaches the window only through ``window``, typed as
``host_protocol.WindowHost``. The session is reached only through the client (``client.Rewindable``), every store
operation off the Qt thread.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication

from desktop_agent.client import Rewindable

if TYPE_CHECKING:
    from desktop_agent.ui.dialogs.rewind import RewindDialog
    from desktop_agent.ui.window.host_protocol import WindowHost
    from desktop_agent.ui.window.live import LiveSession

log = logging.getLogger(__name__)
translate = QCoreApplication.translate
UNDO_PREFIX = "undo-restore:"
RESTORE_BANNER = "restore"


class WindowRewind:
    """The window's rewind: one per window, for every live session in it."""

    def __init__(self, window: WindowHost) -> None:
        self.window = window
        self.dialog: RewindDialog | None = None  # the dry run on screen (one at a time)
        self.task: asyncio.Task[Any] | None = None  # the rewind in flight
        self.prompts: dict[str, Any] = {}  # user message id → its user block (the marker goes under it)

    def wire(self, live: LiveSession) -> None:
        """One live session's markers (under its own conversation's prompts), its "Rewind to here", and its changes
        panel's Revert/Redo through the same restore."""
        live.controller.turn_finished.connect(lambda _e: self._turn_marker_soon(live))
        live.controller.user_prompt.connect(lambda _p: live.conversation.remove_banner(RESTORE_BANNER))
        live.conversation.rewind_requested.connect(self.rewind_to_soon)
        live.diff_panel.reverter = lambda action, tool_use_id, path, restore_id: self._revert_change(
            action, tool_use_id, path, restore_id, live)

    async def _revert_change(self, action: str, tool_use_id: str, path: str, restore_id: str | None,
                             live: LiveSession | None = None) -> dict[str, Any]:
        """The changes panel's Revert ("revert") or Redo ("redo") through the session's checkpoint restore; {} when
        there is no session to ask (the panel writes the file itself then)."""
        raw = (live.controller if live is not None else self.window.controller).session
        if raw is None or not raw.state.alive or getattr(raw, "claude", False):  # Claude Code keeps no checkpoints
            return {}
        session = Rewindable(raw)
        if action == "revert":
            return await session.revert_change(tool_use_id, [path])
        return await session.redo_change(str(restore_id))

    def _rewindable(self) -> Rewindable | None:
        session = self.window.controller.session
        return Rewindable(session) if session is not None and session.state.alive else None

    # ----- markers
    def _turn_marker_soon(self, live: LiveSession) -> None:
        raw = live.controller.session
        if raw is None or not raw.state.alive:
            return
        asyncio.ensure_future(self._show_marker(Rewindable(raw), live.conversation.last_user_block,
                                                live.conversation))

    async def _show_marker(self, session: Rewindable, block: Any, conversation: Any) -> None:
        try:
            marker = await session.checkpoint_marker()  # the last prompt's: the turn that just ended
        except Exception as exc:  # a failing store (or an executor without checkpoints) costs the marker only
            log.info("checkpoint marker: %s", exc)
            return
        if marker is None:
            return
        mid = str(marker["messageId"])
        self.prompts[mid] = block
        conversation.add_checkpoint_marker(mid, marker["files"], marker["insertions"], marker["deletions"],
                                           under=block)

    # ----- rewinding
    def rewind_to_soon(self, message_id: str) -> asyncio.Task[Any] | None:
        if self.dialog is not None or (self.task is not None and not self.task.done()):
            return None  # one at a time
        self.task = asyncio.ensure_future(self.rewind_to(message_id))
        return self.task

    async def rewind_to(self, message_id: str) -> str | None:
        """The dry run, the person's choice, then the restore; returns the choice (None: cancelled or failed)."""
        from desktop_agent.ui.dialogs.rewind import RewindDialog

        session = self._rewindable()
        if session is None:
            return None
        if self.window.controller.busy:
            self.window.conversation.add_banner(
                "notice", translate("Rewind", "Stop the running turn before rewinding."), key=RESTORE_BANNER)
            return None
        try:
            plan = await session.rewind_plan(message_id)
        except Exception as exc:
            self.window.conversation.add_banner("error", translate("Rewind", "Cannot rewind: {0}").format(exc),
                                                key=RESTORE_BANNER)
            return None
        block = self.prompts.get(message_id)
        prompt = str(getattr(block, "prompt", "") or "")
        dialog = self.dialog = RewindDialog(plan, prompt, parent=self.window)
        try:
            choice = await dialog.ask()
        finally:
            self.dialog = None
        if choice is None:
            return None
        try:
            done = await session.rewind(message_id, files=choice in ("files", "both"),
                                        conversation=choice in ("conversation", "both"))
        except Exception as exc:
            self.window.conversation.add_banner("error", translate("Rewind", "The restore failed: {0}").format(exc),
                                                key=RESTORE_BANNER)
            return None
        self._restored_banner(done)
        fork = done.get("forkSessionId")
        if fork and self.window.folder:
            self.window.folders.open_folder_soon(self.window.folder, resume=fork)
        return choice

    def _restored_banner(self, done: dict[str, Any]) -> None:
        rid = done.get("restoreId")
        if not rid:
            return
        files, conflicts, skipped = len(done.get("files") or []), done.get("conflicts") or [], \
            int(done.get("skippedLinks") or 0)
        text = translate("Rewind", "Restored {0} files (+{1} \u2212{2}).").format(
            files, f"{int(done.get('insertions') or 0):,}", f"{int(done.get('deletions') or 0):,}")
        if conflicts:
            text += " " + translate("Rewind", "Left as you changed them: {0}.").format(", ".join(conflicts[:10]))
        if skipped:
            text += " " + translate("Rewind", "{0} paths behind links were not touched.").format(skipped)
        self.window.conversation.add_banner("notice", text, [(translate("Rewind", "Undo restore"), UNDO_PREFIX + rid)],
                                            key=RESTORE_BANNER)

    def undo_restore_soon(self, restore_id: str) -> asyncio.Task[Any] | None:
        session = self._rewindable()
        if session is None:
            return None
        return asyncio.ensure_future(self._undo(session, restore_id))

    async def _undo(self, session: Rewindable, restore_id: str) -> None:
        try:
            done = await session.undo_restore(restore_id)
        except Exception as exc:
            self.window.conversation.add_banner("error", translate("Rewind", "Undo failed: {0}").format(exc),
                                                key=RESTORE_BANNER)
            return
        self.window.conversation.add_banner("notice", translate("Rewind", "Restore undone: {0} files put back.").format(
            len(done.get("files") or [])), key=RESTORE_BANNER)


__all__ = ["UNDO_PREFIX", "WindowRewind"]
