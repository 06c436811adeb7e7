"""``InProcessClient``: the engine on this event loop (``desktop_agent.app.session.AgentSession``), behind the same
``SessionHandle`` as an executor process.

The session is built on a worker thread (the first build imports the API client and reads settings; a window
keeps painting). Its prompter is the handle's ``QuestionBoard``, which forwards each ask to the front end's
prompter and lets ``answer()`` reply by id; when the engine stops waiting (interrupt, a hook answered first),
the front end's ask is cancelled.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, AsyncIterator

from desktop_agent.util.threads import in_thread  # noqa: F401 - re-exported for client.subprocess
from desktop_agent.client.base import Ack, ExecutorKind, Question, QuestionBoard, SessionOptions
from desktop_agent.client.local import LocalStore, discard_empty_transcript, warm_imports
from desktop_agent.core.events import Compacted
from desktop_agent.core.permission import PermissionReply, PermissionRequest
from desktop_agent.model.client import ModelClient


class _BoardPrompter:
    """The engine's ``PermissionPrompter``: a ``Question`` on the board, answered by the front end."""

    waits = True  # the front end's answer

    def __init__(self, board: QuestionBoard):
        self.board = board

    async def ask(self, request: PermissionRequest) -> PermissionReply:
        question = self.board.raise_question(request)
        try:
            return await self.board.wait(question)
        except asyncio.CancelledError:
            self.board.withdraw(request.request_id)
            raise


class InProcessSession:
    """A ``SessionHandle`` over one ``AgentSession``."""

    executor: ExecutorKind = "inprocess"

    def __init__(self, session: Any, board: QuestionBoard):
        self.session = session
        self.board = board

    # ----- state
    @property
    def session_id(self) -> str:
        return str(self.session.session_id)

    @property
    def cwd(self) -> str:
        return str(self.session.cwd)

    @property
    def model(self) -> str:
        return str(self.session.model)

    @property
    def permission_mode(self) -> str:
        return str(self.session.permission_mode)

    @property
    def transcript_path(self) -> str:
        return str(self.session.transcript_path)

    @property
    def alive(self) -> bool:
        return True

    @property
    def pending_questions(self) -> list[Question]:
        return list(self.board.pending.values())

    @property
    def manages_mcp(self) -> bool:
        return self.session.mcp is not None

    def history(self) -> list[dict[str, Any]]:
        return list(self.session.history())

    def mcp_status(self) -> list[dict[str, Any]]:
        return list(self.session.mcp_status())

    async def restart_mcp_server(self, name: str) -> None:
        await self.session.mcp.restart(name)

    def retry_now(self) -> bool:
        """End the model client's current backoff wait early (the retry card's Retry now)."""
        client: ModelClient = self.session.client
        event = client.retry_now
        if event is not None and not event.is_set():
            event.set()
            return True
        return False

    def record(self, entry: dict[str, Any]) -> None:
        self.session.record(entry)

    def discard_if_empty(self) -> bool:
        """Remove the transcript of a session that never got a message (a session exists from its first prompt)."""
        return discard_empty_transcript(self.transcript_path, close=self.session.close)

    # ----- rewind (client.base.Rewindable; app.rewind does the work off the loop)
    @property
    def checkpoints_enabled(self) -> bool:
        return self.session.checkpoints.enabled

    @property
    def last_prompt_id(self) -> str | None:
        return self.session.last_prompt_uuid

    async def rewind_plan(self, message_id: str) -> dict[str, Any]:
        from desktop_agent.app.rewind import plan_view

        return plan_view(await self.session.checkpoints.plan(message_id))

    async def rewind(self, message_id: str, files: bool, conversation: bool) -> dict[str, Any]:
        from desktop_agent.app.rewind import fork_before, result_view
        from desktop_agent.util.threads import in_thread

        out: dict[str, Any] = {}
        if files:
            out = result_view(await self.session.checkpoints.restore(message_id))
        if conversation:
            session = self.session
            out["forkSessionId"] = await in_thread(
                lambda: fork_before(session.transcript_path, session.cwd, message_id))
        return out

    async def undo_restore(self, restore_id: str) -> dict[str, Any]:
        from desktop_agent.app.rewind import result_view

        return result_view(await self.session.checkpoints.undo(restore_id))

    async def checkpoint_marker(self, message_id: str) -> dict[str, Any] | None:
        from desktop_agent.util.threads import in_thread

        checkpoints = self.session.checkpoints
        if not checkpoints.enabled:
            return None
        markers = await in_thread(lambda: checkpoints.markers([message_id]))
        if not markers:
            return None
        m = markers[0]
        return {"messageId": m.message_id, "files": m.files, "insertions": m.insertions, "deletions": m.deletions}

    # ----- turns
    async def submit(self, prompt: str | list[dict[str, Any]]) -> AsyncIterator[Any]:
        stream = self.session.submit(prompt)
        try:
            async for event in stream:
                yield event
        finally:
            await stream.aclose()

    def interrupt(self) -> None:
        self.session.interrupt()
        self.board.withdraw_all()

    def set_permission_mode(self, mode: str) -> Ack:
        self.session.set_permission_mode(mode)
        return Ack()

    def set_model(self, model: str | None) -> Ack:
        self.session.set_model(model)
        return Ack()

    def answer(self, request_id: str, reply: PermissionReply) -> bool:
        return self.board.answer(request_id, reply)

    async def compact(self, instructions: str | None = None) -> Compacted:
        result: Compacted = await self.session.compact(instructions)
        return result

    async def restart(self) -> None:
        """Nothing to restart: the engine is this process."""

    async def end(self, reason: str) -> None:
        """SessionEnd hooks (``clear``, ``prompt_input_exit``…), then close."""
        self.board.withdraw_all()
        await self.session.end(reason)

    async def close(self) -> None:
        self.board.withdraw_all()
        await self.session.aclose()


class InProcessClient(LocalStore):
    kind: ExecutorKind = "inprocess"

    async def open(self, folder: str | os.PathLike[str], options: SessionOptions) -> InProcessSession:
        board = QuestionBoard(options.prompter)
        kwargs: dict[str, Any] = dict(
            prompter=_BoardPrompter(board), permission_mode=options.permission_mode, model=options.model,
            resume=options.resume, session_id=options.session_id, trusted=options.trusted,
            allowed_tools=list(options.allowed_tools), disallowed_tools=list(options.disallowed_tools),
            add_dirs=list(options.add_dirs), max_turns=options.max_turns, system_prompt=options.system_prompt,
            append_system_prompt=options.append_system_prompt,
        )
        kwargs.setdefault("checkpoint_default", True)  # the window checkpoints unless the settings say no
        kwargs.update(options.engine_kwargs)
        cwd = os.fspath(folder)
        if options.script == "tour":
            from desktop_agent.client.tour import tour_client

            kwargs["client"] = tour_client(cwd)

        def build() -> Any:
            warm_imports()  # here, not on the loop at the first turn
            from desktop_agent.app.session import IDLE_NOTIFICATION_S, AgentSession

            session = AgentSession.create(cwd, **kwargs)
            if options.idle_notification:  # idle_prompt Notification hooks after 60 s (App. B §B.5)
                session.idle_notification_s = IDLE_NOTIFICATION_S
            return session

        session = await in_thread(build)
        return InProcessSession(session, board)
