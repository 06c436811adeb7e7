"""The one contract between a front end and the engine: ``EngineClient.open(folder, options) -> SessionHandle``.

A ``SessionHandle`` runs turns (``submit(prompt)`` yields ``AgentEvent``s ending in one ``TurnFinished``) and
takes ``interrupt()``, ``set_permission_mode()``, ``set_model()``, ``compact()``, ``close()``, whether the engine
runs on this loop (``client.in_process``) or in an executor process (``client.subprocess``: our CLI or Claude
Code). Permission questions reach the front end through the ``PermissionPrompter`` it installs in
``SessionOptions.prompter`` (the window's controller already is one: ``ask(request)`` opens the dialog and
awaits the reply). Each pending ask is also a ``Question`` (the request plus the Future of its reply) on the
handle, so a front end may answer by id instead (``answer()``); the first answer wins, a second is ignored.
When the engine withdraws a question (``control_cancel_request``, interrupt, executor death) the ``ask`` call
is cancelled: the front end closes its dialog in its ``finally``.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Generator, Literal, Protocol, Sequence, runtime_checkable

from desktop_agent.client.local import ProviderModels, SessionSummary
from desktop_agent.core.events import AgentEvent, Compacted
from desktop_agent.core.permission import PermissionMode, PermissionPrompter, PermissionReply, PermissionRequest

ExecutorKind = Literal["inprocess", "process", "claude"]
EXECUTOR_KINDS: tuple[ExecutorKind, ...] = ("inprocess", "process", "claude")


class ClientError(Exception):
    """A session could not be opened or driven (the executor failed to start, it is gone, bad options)."""


class ExecutorDied(ClientError):
    """The executor process ended while the session needed it; ``describe()`` says which and how."""

    def __init__(self, name: str, pid: int | None, returncode: int | None, stderr_tail: str = ""):
        self.name, self.pid, self.returncode, self.stderr_tail = name, pid, returncode, stderr_tail
        super().__init__(self.describe())

    def describe(self) -> str:
        return describe_exit(self.name, self.pid, self.returncode, self.stderr_tail)


def describe_exit(name: str, pid: int | None, returncode: int | None, stderr_tail: str = "") -> str:
    """"The session process (desktop-agent, pid 123) was killed by signal 9 (SIGKILL)." and the like."""
    who = f"The session process ({name}, pid {pid})" if pid else f"The session process ({name})"
    if returncode is None:
        what = "stopped answering"
    elif returncode < 0:
        import signal

        try:
            sig = signal.Signals(-returncode).name
        except ValueError:
            sig = "unknown"
        what = f"was killed by signal {-returncode} ({sig})"
    else:
        what = f"exited with status {returncode}"
    text = f"{who} {what}."
    tail = stderr_tail.strip()
    if tail:
        text += f" Its last output: {tail[-600:]}"
    return text


@dataclass
class SessionOptions:
    """How to open a session. Every executor honours these; ``engine_kwargs`` go to the in-process
    ``AgentSession.create`` only (a model client for the tour and tests, settings objects…)."""

    prompter: PermissionPrompter | None = None
    permission_mode: PermissionMode | None = None
    model: str | None = None
    resume: str | None = None
    session_id: str | None = None
    trusted: bool | None = None
    allowed_tools: Sequence[str] = ()
    disallowed_tools: Sequence[str] = ()
    add_dirs: Sequence[str] = ()
    max_turns: int | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    env: dict[str, str] | None = None  # executor processes: added to this process's environment
    script: Literal["tour"] | None = None  # in process only: the offline tour's scripted model (client.tour)
    idle_notification: bool = False  # in process: idle_prompt Notification hooks after a quiet minute
    engine_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Question:
    """One pending permission question: the request, the Future of its reply, and who raised it."""

    request: PermissionRequest
    future: asyncio.Future[PermissionReply]
    task: asyncio.Task[Any] | None = None  # the prompter's ask, when a prompter is installed

    @property
    def request_id(self) -> str:
        return self.request.request_id

    def answer(self, reply: PermissionReply) -> bool:
        """Set the reply; False when it was already answered or withdrawn (a duplicate is ignored)."""
        if self.future.done():
            return False
        self.future.set_result(reply)
        return True

    def withdraw(self) -> None:
        """The engine no longer waits: cancel the front end's ask (its dialog closes) and the Future."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if not self.future.done():
            self.future.cancel()


class QuestionBoard:
    """The pending questions of one handle and the ``answered`` ids (so a second answer is ignored)."""

    def __init__(self, prompter: PermissionPrompter | None):
        self.prompter = prompter
        self.pending: dict[str, Question] = {}
        self.answered: set[str] = set()

    def raise_question(self, request: PermissionRequest) -> Question:
        loop = asyncio.get_running_loop()
        question = Question(request=request, future=loop.create_future())
        self.pending[request.request_id] = question
        if self.prompter is not None:
            question.task = asyncio.ensure_future(self._ask(question))
        return question

    async def _ask(self, question: Question) -> None:
        assert self.prompter is not None
        try:
            reply = await self.prompter.ask(question.request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a front end bug must not allow: deny, saying why
            question.answer(PermissionReply(behavior="deny", message=f"Permission request failed: {exc}"))
            return
        question.answer(reply)

    async def wait(self, question: Question) -> PermissionReply:
        """The reply; ``CancelledError`` when the question was withdrawn."""
        try:
            reply = await asyncio.shield(question.future)
        finally:
            self.pending.pop(question.request_id, None)
        self.answered.add(question.request_id)
        if question.task is not None and not question.task.done():  # answered by id: the dialog closes
            question.task.cancel()
        return reply

    def answer(self, request_id: str, reply: PermissionReply) -> bool:
        question = self.pending.get(request_id)
        if question is None or request_id in self.answered:
            return False
        return question.answer(reply)

    def withdraw(self, request_id: str) -> Question | None:
        question = self.pending.pop(request_id, None)
        if question is not None:
            question.withdraw()
        return question

    def withdraw_all(self) -> list[Question]:
        questions = list(self.pending.values())
        self.pending.clear()
        for q in questions:
            q.withdraw()
        return questions


class Ack:
    """What ``set_permission_mode``/``set_model`` return: already applied locally; await it (optional) to know
    the engine took it (an executor's ``control_response``). Awaiting never raises for a dead executor."""

    def __init__(self, future: asyncio.Future[Any] | None = None):
        self._future = future

    def __await__(self) -> Generator[Any, None, bool]:
        if self._future is None:
            return True
        try:
            yield from asyncio.shield(self._future).__await__()
        except (ClientError, ConnectionError, RuntimeError, asyncio.CancelledError):
            return False
        return True


class SessionHandle(Protocol):
    """One session, wherever it runs. Properties reflect the latest the engine said."""

    @property
    def session_id(self) -> str: ...
    @property
    def cwd(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def permission_mode(self) -> str: ...
    @property
    def transcript_path(self) -> str: ...
    @property
    def executor(self) -> ExecutorKind: ...
    @property
    def alive(self) -> bool: ...
    @property
    def pending_questions(self) -> list[Question]: ...

    @property
    def manages_mcp(self) -> bool:
        """This handle sees and restarts the session's MCP servers (in process; an executor keeps its own)."""
        ...

    def submit(self, prompt: str | list[dict[str, Any]]) -> AsyncIterator[AgentEvent]: ...
    def interrupt(self) -> None: ...
    def set_permission_mode(self, mode: str) -> Ack: ...
    def set_model(self, model: str | None) -> Ack: ...
    def answer(self, request_id: str, reply: PermissionReply) -> bool: ...
    def history(self) -> list[dict[str, Any]]: ...
    def mcp_status(self) -> list[dict[str, Any]]: ...
    async def restart_mcp_server(self, name: str) -> None: ...
    def retry_now(self) -> bool: ...
    def discard_if_empty(self) -> bool: ...
    def record(self, entry: dict[str, Any]) -> None:
        """Append a front end's entry to the transcript — a ``change-revert`` record of the changes panel, which the
        model is then told about with the next prompt (``session.changes``); callable from a worker thread.
        ``ClientError`` where the executor owns the transcript."""
        ...
    async def compact(self, instructions: str | None = None) -> Compacted: ...
    async def restart(self) -> None: ...
    async def end(self, reason: str) -> None: ...
    async def close(self) -> None: ...


@runtime_checkable
class Rewindable(Protocol):
    """A session whose folder has checkpoints (``app.rewind``): "Rewind to here" on a user message. Plain data
    crosses: a dry run is ``{"files": [{"path", "action", "insertions", "deletions"}], "conflicts", "insertions",
    "deletions"}``; a restore ``{"restoreId", "files", "conflicts", "insertions", "deletions", "skippedLinks"}``
    (plus ``"forkSessionId"`` when the conversation was rewound too: a new session, the original kept)."""

    @property
    def checkpoints_enabled(self) -> bool: ...
    @property
    def last_prompt_id(self) -> str | None: ...
    async def rewind_plan(self, message_id: str) -> dict[str, Any]: ...
    async def rewind(self, message_id: str, files: bool, conversation: bool) -> dict[str, Any]: ...
    async def undo_restore(self, restore_id: str) -> dict[str, Any]: ...
    async def checkpoint_marker(self, message_id: str) -> dict[str, Any] | None: ...


class EngineClient(Protocol):
    """Opens sessions, and answers what a front end asks about a folder without one (``client.local``); each of
    those questions is a coroutine whose disk and process work runs on a worker thread (never the Qt thread)."""

    kind: ExecutorKind

    async def open(self, folder: str | os.PathLike[str], options: SessionOptions) -> SessionHandle: ...
    async def list_sessions(self, folder: str | os.PathLike[str]) -> list[SessionSummary]: ...
    async def history(self, folder: str | os.PathLike[str], session_id: str) -> list[dict[str, Any]] | None: ...
    async def needs_trust(self, folder: str | os.PathLike[str]) -> bool: ...
    async def trust_details(self, folder: str | os.PathLike[str]) -> Any: ...
    async def trust(self, folder: str | os.PathLike[str]) -> None: ...
    async def settings_check(self, folder: str | os.PathLike[str]) -> tuple[str | None, list[str]]: ...
    async def sandbox_warning(self) -> str | None: ...
    async def provider_models(self) -> ProviderModels: ...

