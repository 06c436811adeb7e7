"""The one contract between a front end and the engine: ``EngineClient.open(folder, options) -> SessionHandle``.

A ``SessionHandle`` (``client.session.ProtocolSession``, the one implementation, over a memory, Unix-socket or pipe
transport) runs turns (``submit(prompt)`` yields ``AgentEvent``s ending in one ``TurnFinished``) and takes
``interrupt()``, ``set_permission_mode()``, ``set_model()``, ``request()`` (the rest, as protocol requests),
``restart()`` and ``end()``. Permission questions live in the host's inbox; they reach the front end through the
``PermissionPrompter`` it installs in ``SessionOptions.prompter`` (the window's controller is one: ``ask(request)``
opens the dialog and awaits the reply), or it answers by id (``answer()``); the first answer from any client wins.
When the host withdraws a question (``control_cancel_request``: an interrupt, another client answered, the executor
died) the ``ask`` call is cancelled: the front end closes its dialog in its ``finally``.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Generator, Literal, Protocol, Sequence

from desktop_agent.client.local import ProviderModels, SessionSummary
from desktop_agent.core.events import AgentEvent
from desktop_agent.core.permission import PermissionMode, PermissionPrompter, PermissionReply

if TYPE_CHECKING:  # an annotation only: the window imports this module before its first paint, the protocol after
    from desktop_agent.protocol import WireModel

ExecutorKind = Literal["inprocess", "process", "claude", "host"]  # host: the background host (not a setting yet)
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
    on_exit: Callable[[str], None] | None = None  # the engine's process ended between turns (its description)
    # our host's Review (its notification, issue 26): (session_id, request_id) → whether the window shows it
    on_review: Callable[[str, str], bool] | None = None


@dataclass(frozen=True)
class HandleState:
    """What a handle knows about its session besides the id, model and mode: the folder, the transcript, where the
    engine runs (and its pid), whether it is reachable, and the MCP servers as the host last said
    (``manages_mcp``: this handle sees and restarts them — our host; an executor keeps its own)."""

    cwd: str
    transcript_path: str = ""
    executor: ExecutorKind = "inprocess"
    alive: bool = True
    pid: int | None = None
    manages_mcp: bool = False
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)


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
    """One session, wherever it runs (``client.session.ProtocolSession`` over every transport): twelve members.
    Properties reflect the latest the host said."""

    @property
    def session_id(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def permission_mode(self) -> str: ...
    @property
    def state(self) -> HandleState: ...

    def submit(self, prompt: str | list[dict[str, Any]]) -> AsyncIterator[AgentEvent]: ...
    def interrupt(self) -> None: ...
    def set_permission_mode(self, mode: str) -> Ack: ...
    def set_model(self, model: str | None) -> Ack: ...
    def answer(self, request_id: str, reply: PermissionReply) -> bool:
        """Answer a pending question by id (without a prompter); False when it is not pending."""
        ...
    async def request(self, request: WireModel) -> dict[str, Any]:
        """A control request about the session (``protocol.control``): history, record, retry now, MCP status and
        reconnect, …; ``ClientError`` with the refusal."""
        ...
    async def restart(self) -> None: ...
    async def end(self, reason: str | None = "other", *, discard_if_empty: bool = False) -> bool:
        """SessionEnd hooks with ``reason`` (None: just close), then the session is closed."""
        ...


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
    async def session_names(self) -> Any: ...
    async def rename_session(self, session_id: str, name: str) -> None: ...
    async def archive_session(self, session_id: str, archived: bool) -> None: ...
    async def delete_session(self, folder: str | os.PathLike[str], session_id: str) -> str: ...

