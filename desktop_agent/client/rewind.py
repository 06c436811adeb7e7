"""Rewind for a front end (issue 25), over any transport: ``Rewindable(handle)`` speaks ``desktop_agent_rewind``
(``protocol.control.RewindRequest``) to the session's host — in this process, the background host or our CLI as an
executor — which answers from the session's checkpoints (``app.rewind``). Plain data crosses: a dry run is
``{"files": [{"path", "action", "insertions", "deletions"}], "conflicts", "insertions", "deletions"}``; a restore
``{"restoreId", "files", "conflicts", "insertions", "deletions", "skippedLinks"}`` (plus ``"forkSessionId"`` when
the conversation was rewound too: a new session, the original kept). A refusal is ``ClientError``."""

from __future__ import annotations

from typing import Any

from desktop_agent.client.base import SessionHandle


class Rewindable:
    """The checkpoint questions of one session handle."""

    def __init__(self, handle: SessionHandle):
        self.handle = handle

    async def _ask(self, **fields: Any) -> Any:
        from desktop_agent.protocol.control import RewindRequest  # the window's first paint goes without the models

        return await self.handle.request(RewindRequest(**fields))

    async def checkpoint_marker(self, message_id: str | None = None) -> dict[str, Any] | None:
        """The marker of ``message_id`` (None: the last prompt), or None when it has no checkpoint."""
        marker = await self._ask(action="marker", message_id=message_id)
        return marker or None

    async def rewind_plan(self, message_id: str) -> dict[str, Any]:
        return await self._ask(action="plan", message_id=message_id)

    async def rewind(self, message_id: str, files: bool, conversation: bool) -> dict[str, Any]:
        return await self._ask(action="restore", message_id=message_id, files=files, conversation=conversation)

    async def undo_restore(self, restore_id: str) -> dict[str, Any]:
        return await self._ask(action="undo", restore_id=restore_id)

    async def revert_change(self, tool_use_id: str, paths: list[str]) -> dict[str, Any]:
        """The changes panel's Revert through the restore: the result (``restoreId``, ``files``, ``conflicts``,
        ``skippedLinks``), or ``{}`` when the session's store holds no snapshot of that call."""
        return await self._ask(action="revert_change", tool_use_id=tool_use_id, paths=list(paths))

    async def redo_change(self, restore_id: str) -> dict[str, Any]:
        return await self._ask(action="redo_change", restore_id=restore_id)
