"""The one engine host (DESIGN.md §1): a registry of sessions, any number of clients attached to each, the inbox
for every question, and every control request answered here — over stdio (``cli.headless``: one session, the SDKs'
protocol byte for byte), the Unix socket (the background host: ``serve_connection``) or memory (the window's host
in its own process: ``client.transports.MemoryTransport``). Only the ``Connection`` differs (``host.connections``).

- ``Host``: ``sessions`` (session_id → ``HostedSession``), ``inbox`` (``host.inbox.Inbox``: the one pending map),
  ``open_session(folder, settings)``, ``serve(connection)`` (read and dispatch until the client goes) and
  ``dispatch(client, message)`` for one decoded message.
- ``HostedSession`` (``host.session``): one ``AgentSession`` and its attached ``Client``s; ``run_turn(content)``
  drives a turn and writes its lines: the Claude-Code-compatible ones (``system``, ``assistant``, ``user``, ``stream_event``,
  ``result``) to every client, and to the clients that asked for them (``initialize``'s ``desktopAgent:
  {"agentEvents": true}``, or ``desktop_agent_open``/``attach``) each ``AgentEvent`` exactly as one ``agent_event``
  line instead of the ``assistant``/``user``/``stream_event`` ones (SPEC App. D.1).
- ``HostPrompter``: a ``can_use_tool`` question goes into the inbox and to every attached client; the first
  ``control_response`` from any of them wins (``Inbox.answer``), the others get ``control_cancel_request`` for it;
  an answer for an unknown, answered or withdrawn id — or one whose ``input_sha256`` does not match — gets an error
  ``control_response`` and changes nothing (App. D.2). A client that attaches later gets every pending question.
- Control requests: ``initialize``, ``interrupt``, ``set_permission_mode``, ``set_model``, the App. D.5 requests
  (``host.controls``) and ours (``protocol.control``'s ``desktop_agent_*``: open, attach, list sessions, list
  pending questions, history, record, retry now, end, and ``desktop_agent_client_active``: whether the client's
  window is active, told to ``client_listeners``; ``desktop_agent_phone``: the phone page, ``host.remote.relay``);
  any other subtype gets ``Unsupported control request: …``, and so does a request only the host sends
  (``protocol.control.HOST_TO_CLIENT``: ``can_use_tool``, ``hook_callback``, Review, the pairing confirmation, the
  devices) when a client sends it.
- A hostile client on the socket (another program of this user) is refused, never acted on: a ``control_response``
  for nothing this host asked that connection gets an error (the inbox holds only the questions of the session the
  connection is attached to), a line that does not decode — not UTF-8, not JSON, nested too deep, not an object, a
  known message whose fields do not validate — gets an error ``control_response``, and a line over the socket's
  limit also closes the connection (``Malformed.fatal``); ``update_environment_variables`` (the SDKs' line for
  the CLI's own process) is refused on the socket, where the host's environment is every session's; the other
  clients are served on.
- ``serve_connection(host, reader, writer, peer=…)``: one socket client (the background host's entry point).
- ``client_listeners``: told each time a session's attached clients change, or one of them becomes active or
  inactive (``host.away`` notifies the questions of a session nobody active is attached to).

Every wire mapping is ``protocol``'s (``protocol.permission`` for the question and its reply).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any, Callable

from desktop_agent.host.connections import (
    Connection, ControlChannel, Malformed, MemoryEnd, StreamConnection, decode_line, memory_pair, register_sdk_hooks,
)
from desktop_agent.host.inbox import Inbox
from desktop_agent.host.session import (
    RESULT_SUBTYPES, TERMINAL_REASONS, Client, HostedSession, HostPrompter, ServeConfig, api_key_source,
)
from desktop_agent.protocol import WireModel
from desktop_agent.protocol.control import (
    HOST_TO_CLIENT, AttachSessionRequest, ClientActiveRequest, ControlCancelRequest, ControlRequest, ControlResponse,
    ListPendingRequest, ListSessionsRequest, OpenSessionRequest, PendingInfo, PhoneRequest, SessionSettings, unsupported,
)
from desktop_agent.protocol.stream_json import UnknownLine, UserLine

if TYPE_CHECKING:
    from desktop_agent.app.session import AgentSession

__all__ = ["RESULT_SUBTYPES", "TERMINAL_REASONS", "Client", "Connection", "ControlChannel", "Host", "HostPrompter",
           "HostedSession", "Malformed", "MemoryEnd", "ServeConfig", "StreamConnection", "build_session",
           "decode_line", "discard_empty_transcript", "memory_pair", "register_sdk_hooks", "serve_connection"]

log = logging.getLogger(__name__)

NOT_ASKED = "No request of this host is waiting for this answer on this connection"


# ----------------------------------------------------------------------------------------------- host


EngineFactory = Callable[[str, SessionSettings, dict[str, Any]], "AgentSession"]


def build_session(folder: str, settings: SessionSettings, engine_kwargs: dict[str, Any]) -> AgentSession:
    """The ``AgentSession`` for ``desktop_agent_open`` (on a worker thread: settings, the API client)."""
    from desktop_agent.app.session import IDLE_NOTIFICATION_S, AgentSession

    kwargs: dict[str, Any] = dict(
        permission_mode=settings.permission_mode, model=settings.model, resume=settings.resume,
        session_id=settings.session_id, trusted=settings.trusted, allowed_tools=list(settings.allowed_tools),
        disallowed_tools=list(settings.disallowed_tools), add_dirs=list(settings.add_dirs),
        max_turns=settings.max_turns, system_prompt=settings.system_prompt,
        append_system_prompt=settings.append_system_prompt,
        checkpoint_default=True,  # a window's session checkpoints unless the settings say no (app.rewind)
    )
    kwargs.update(engine_kwargs)
    session = AgentSession.create(folder, **kwargs)
    if settings.idle_notification:  # idle_prompt Notification hooks after 60 s (App. B §B.5)
        session.idle_notification_s = IDLE_NOTIFICATION_S
    return session


def discard_empty_transcript(path: str, close: Callable[[], Any] | None = None) -> bool:
    """Remove the transcript at ``path`` if it holds no message (a session opened, then left), closing the
    store first (``close``). True when it was removed."""
    if not path or not os.path.exists(path):
        return False
    try:
        from desktop_agent.session.store import count_transcript_messages, read_transcript

        if count_transcript_messages(read_transcript(path, full=True)) > 0:
            return False
        if close is not None:
            close()
        os.unlink(path)
        return True
    except Exception:
        log.exception("could not remove the empty session %s", path)
        return False


class Host:
    """Sessions, their clients, the inbox."""

    def __init__(self, *, engine_factory: EngineFactory | None = None):
        self.inbox = Inbox()
        self.sessions: dict[str, HostedSession] = {}
        self.engine_factory: EngineFactory = engine_factory or build_session
        self._clients = 0
        # told when a session's attached clients change (a client attached or went): ``host.away``
        self.client_listeners: list[Callable[[HostedSession], None]] = []
        self.phone: Any = None  # host.remote.relay.PhoneRelay: the phone page, once a window turned it on

    # ----- sessions
    def add(self, hosted: HostedSession) -> HostedSession:
        self.sessions[hosted.session_id] = hosted
        return hosted

    async def open_session(self, folder: str, settings: SessionSettings | None = None, *,
                           engine_kwargs: dict[str, Any] | None = None) -> HostedSession:
        """A new (or resumed) session on ``folder``, built on a worker thread, running queued turns."""
        from desktop_agent.util.threads import in_thread

        settings = settings or SessionSettings()
        folder = os.path.abspath(folder)

        def make() -> tuple[AgentSession, str]:
            return self.engine_factory(folder, settings, dict(engine_kwargs or {})), api_key_source()

        session, key_source = await in_thread(make)
        asyncio.get_running_loop().run_in_executor(None, warm_imports)  # beside the reply, not before it
        hosted = self.add(HostedSession(self, session, config=ServeConfig(out_format="stream-json", asks=True),
                                        title=os.path.basename(folder), key_source=key_source))
        hosted.start()
        return hosted

    async def end_session(self, session_id: str, reason: str | None = "other", *,
                          discard_if_empty: bool = False) -> bool:
        hosted = self.sessions.pop(session_id, None)
        if hosted is None:
            return False
        path = str(hosted.session.transcript_path or "")
        await hosted.close(reason)
        if discard_if_empty:
            from desktop_agent.util.threads import in_thread

            return bool(await in_thread(lambda: discard_empty_transcript(path)))
        return False

    async def close(self) -> None:
        if self.phone is not None:
            with contextlib.suppress(Exception):
                await self.phone.stop()
        for session_id in list(self.sessions):
            with contextlib.suppress(Exception):
                await self.end_session(session_id, None)

    def pending_info(self, session_id: str | None = None) -> list[PendingInfo]:
        return [PendingInfo(session_id=q.session_id, request_id=q.request_id, tool_name=q.request.tool_name,
                            tool_use_id=q.request.tool_use_id, folder=q.folder, title=q.title, asked_at=q.asked_at,
                            input_sha256=q.input_sha256) for q in self.inbox.pending(session_id)]

    # ----- clients
    def client(self, connection: Connection, *, verbose: bool = False,
               warn: Callable[[str], None] | None = None) -> Client:
        self._clients += 1
        return Client(connection, name=f"{connection.peer}#{self._clients}", verbose=verbose, warn=warn or log.info)

    async def serve(self, connection: Connection) -> None:
        """Read ``connection`` until it ends, dispatching each message; then detach it (its session runs on, its
        questions stay pending for the next client)."""
        client = self.client(connection)
        tasks: set[asyncio.Task[Any]] = set()
        try:
            while True:
                message = await connection.receive()
                if message is None:
                    break
                task = self.dispatch(client, message)
                if task is not None:
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                if isinstance(message, Malformed) and message.fatal:
                    break  # the stream is out of step: the error is sent, then the connection closes
        finally:
            if client.session is not None:
                hosted = client.session
                hosted.detach(client)
                self._clients_changed(hosted)
            connection.close()

    def dispatch(self, client: Client, message: WireModel | Malformed) -> asyncio.Task[Any] | None:
        """One decoded message from ``client``; a control request is answered in a task (returned)."""
        if isinstance(message, Malformed):
            if message.obj is not None and message.obj.get("type") == "control_request":
                client.line(ControlResponse.failure(str(message.obj.get("request_id") or ""), message.error))
            elif getattr(client.connection, "reports_malformed", False):  # a socket client: told, never ignored
                client.line(ControlResponse.failure("", f"Refused a line: {message.error}"))
            elif message.obj is None:
                client.warn(f"ignoring a stdin line that is not JSON: {message.text[:80]}")
            elif client.verbose:
                client.warn(f"ignoring a stdin line: {message.error}")
            return None
        hosted = client.session
        if isinstance(message, ControlResponse):
            if message.request_id in client.channel.pending:  # an answer to this host's request to this client
                client.channel.on_response(message)
            elif hosted is None:  # nothing asked this connection: it answers nobody's question
                client.line(ControlResponse.failure(message.request_id, NOT_ASKED))
            else:  # a question of its own session, or an error (the inbox knows only its session's questions)
                hosted.answer(client, message)
            return None
        if isinstance(message, ControlRequest):
            return asyncio.ensure_future(self._control(client, message))
        if isinstance(message, UserLine):
            if hosted is not None:
                hosted.queue.put_nowait(message)
            return None
        if isinstance(message, ControlCancelRequest):
            return None
        if isinstance(message, UnknownLine) and message.type in ("keep_alive", "update_environment_variables"):
            variables = message.raw.get("variables")
            if message.type == "update_environment_variables" and getattr(client.connection, "shared", False):
                # the background host's environment is every session's: one client must not change the others'
                client.line(ControlResponse.failure("", "Refused update_environment_variables: this host's "
                                                        "environment is shared by every session it runs"))
            elif message.type == "update_environment_variables" and isinstance(variables, dict):
                os.environ.update({str(k): str(v) for k, v in variables.items()})
            return None
        if client.verbose:
            client.warn(f"ignoring stdin message of type {message.type}")  # type: ignore[attr-defined]
        return None

    async def _control(self, client: Client, message: ControlRequest) -> None:
        request_id, request = message.request_id, message.request
        if isinstance(request, HOST_TO_CLIENT):
            client.line(ControlResponse.failure(request_id, f"{unsupported(request.subtype)} (a request the host "
                                                            f"sends to its clients, never one it answers)"))
            return
        try:
            if isinstance(request, OpenSessionRequest):
                engine_kwargs = getattr(request, "engine_kwargs", None) if client.connection.in_process else None
                hosted = await self.open_session(request.folder, request.settings, engine_kwargs=engine_kwargs)
                self._attach(client, hosted, request.agentEvents, request_id)
                return
            if isinstance(request, AttachSessionRequest):
                found = self.sessions.get(request.session_id)
                if found is None:
                    raise KeyError(f"No session {request.session_id} in this host")
                self._attach(client, found, request.agentEvents, request_id)
                return
            if isinstance(request, ListSessionsRequest):
                client.line(ControlResponse.success(request_id, {
                    "sessions": [h.info().to_wire() for h in self.sessions.values()]}))
                return
            if isinstance(request, ListPendingRequest):
                client.line(ControlResponse.success(request_id, {
                    "questions": [q.to_wire() for q in self.pending_info(request.session_id)]}))
                return
            if isinstance(request, PhoneRequest):
                if self.phone is None:
                    from desktop_agent.host.remote.relay import PhoneRelay

                    self.phone = PhoneRelay(self.inbox)
                client.line(ControlResponse.success(request_id, await self.phone.answer(client, request)))
                return
            if isinstance(request, ClientActiveRequest):
                changed = client.active != request.active
                client.active = request.active
                client.line(ControlResponse.success(request_id, {}))
                if changed and client.session is not None:
                    self._clients_changed(client.session)
                return
        except Exception as exc:
            from desktop_agent.host.controls import error_text

            client.line(ControlResponse.failure(request_id, error_text(exc)))
            return
        if client.session is None:
            client.line(ControlResponse.failure(request_id, "No session is attached to this connection"))
            return
        await client.session.control(client, message)

    def _attach(self, client: Client, hosted: HostedSession, agent_events: bool, request_id: str) -> None:
        if client.session is not None and client.session is not hosted:
            left = client.session
            left.detach(client)
            self._clients_changed(left)
        hosted.attach(client, agent_events=agent_events)
        client.line(ControlResponse.success(request_id, hosted.info().to_wire()))
        hosted.resend_pending(client)
        self._clients_changed(hosted)

    def _clients_changed(self, hosted: HostedSession) -> None:
        for listener in list(self.client_listeners):
            try:
                listener(hosted)
            except Exception:
                log.exception("a client listener failed")


def warm_imports() -> None:
    """Import what a session's first turn needs — the engine, the API client, the shell parser (``bashlex``, its parse
    tables from the cache or built: ~0.1 s) — on the calling thread, a worker's: never the loop's the first turn runs
    on."""
    try:
        from desktop_agent.shell.bashlex_tables import import_bashlex

        import_bashlex()

        import desktop_agent.app.session  # noqa: F401
        import desktop_agent.model.anthropic_client  # noqa: F401
        import desktop_agent.tools.registry  # noqa: F401
    except Exception:
        pass


async def serve_connection(host: Host, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                           peer: str) -> None:
    """One client of the background host on a stream (the Unix socket): the first request opens or attaches a
    session (``desktop_agent_open`` / ``desktop_agent_attach``; ``desktop_agent_sessions`` and
    ``desktop_agent_pending`` list what runs), then the connection speaks for that session until it closes."""
    await host.serve(StreamConnection(reader, writer, peer))
