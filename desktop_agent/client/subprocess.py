"""``SubprocessClient``: a session in an executor process — our CLI (isolation) or Claude Code — behind the
same ``SessionHandle`` as the in-process engine.

The executor is started with ``-p --input-format stream-json --output-format stream-json --verbose
--include-partial-messages --permission-prompt-tool stdio`` (plus the mode, ``--session-id``/``--resume``, the
model and the rules) and spoken to with ``desktop_agent.protocol``. Its stdout lines become ``AgentEvent``s
(``lines.LineTranslator``); each ``can_use_tool`` becomes a ``Question`` for the front end's prompter and its
reply a ``control_response`` (allow with the input to run and the session permission updates, deny with the
message); a ``control_cancel_request`` withdraws the question (the front end's ask is cancelled, its dialog
closes). When Claude Code sends no patch, it is computed here from the input and the file on disk with the
Edit tool's own code and marked ``computed_here``. Claude Code only (``client.claude_code``): PostToolUse hook
callbacks registered in ``initialize`` tell its model the rejected hunks; "Allow for session" is narrowed to
this call's rule; the model from Settings is passed; its sessions are listed from its ``projects/`` folder.

Isolation: stdout EOF means the executor is gone. The running turn then gets an ``ErrorEvent`` naming the
process and its exit status and a ``TurnFinished``; a pending question is withdrawn and resolved as a deny.
``restart()`` starts a new executor with ``--resume <session_id>``. ``interrupt()`` sends the control
``interrupt``: the executor stops its tools, the host is untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
from typing import Any, AsyncIterator, Literal, Sequence

from desktop_agent.client.base import (
    Ack, ClientError, ExecutorDied, ExecutorKind, Question, QuestionBoard, SessionOptions, describe_exit,
)
from desktop_agent.client import claude_code
from desktop_agent.client.local import LocalStore, SessionSummary, discard_empty_transcript
from desktop_agent.client.lines import LineTranslator, reply_body, request_from_wire, with_computed_patch
from desktop_agent.client.in_process import in_thread
from desktop_agent.core.events import (
    Compacted, ErrorEvent, PermissionRequested, PermissionResolved, ToolCallFinished, TurnFinished,
)
from desktop_agent.core.permission import PERMISSION_MODES, PermissionReply
from desktop_agent.protocol import ProtocolError, stream_json
from desktop_agent.protocol.control import (
    CanUseToolRequest, ControlCancelRequest, ControlRequest, ControlResponse, HookCallbackRequest, InitializeRequest,
    InterruptRequest, SetModelRequest, SetPermissionModeRequest,
)
from desktop_agent.protocol.stream_json import ResultLine, UserLine

Flavor = Literal["ours", "claude"]
STDERR_TAIL = 8192
LINE_LIMIT = 256 * 1024 * 1024  # one stdout line may carry a whole file (original_file)


def our_cli() -> list[str]:
    """Desktop Agent's own CLI, with this interpreter."""
    return [sys.executable, "-m", "desktop_agent"]


def find_claude() -> str | None:
    """Claude Code's ``claude`` on PATH, when installed."""
    return shutil.which("claude")


def executor_argv(flavor: Flavor, options: SessionOptions, *, session_id: str | None, resume: str | None) -> list[str]:
    """The flags after the executable (the same set for both executors; ``--trust`` is ours only)."""
    argv = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
            "--include-partial-messages", "--permission-prompt-tool", "stdio"]
    mode = options.permission_mode or "default"
    argv += ["--dangerously-skip-permissions"] if mode == "bypassPermissions" else ["--permission-mode", mode]
    if resume:
        argv += ["--resume", resume]
    elif session_id:
        argv += ["--session-id", session_id]
    if options.model:
        argv += ["--model", options.model]
    if options.max_turns:
        argv += ["--max-turns", str(options.max_turns)]
    argv += [f"--allowedTools={r}" for r in options.allowed_tools]
    argv += [f"--disallowedTools={r}" for r in options.disallowed_tools]
    argv += [f"--add-dir={d}" for d in options.add_dirs]
    if options.system_prompt is not None:
        argv += ["--system-prompt", options.system_prompt]
    if options.append_system_prompt is not None:
        argv += ["--append-system-prompt", options.append_system_prompt]
    if flavor == "ours" and options.trusted:
        argv.append("--trust")
    return argv


class SubprocessClient(LocalStore):
    """Opens sessions in executor processes. ``executable``: the command (default: our CLI, or ``claude`` on
    PATH for ``flavor="claude"``)."""

    def __init__(self, executable: str | Sequence[str] | None = None, *, flavor: Flavor = "ours",
                 startup_timeout_s: float = 60.0):
        self.flavor: Flavor = flavor
        self.kind: ExecutorKind = "process" if flavor == "ours" else "claude"
        if executable is None:
            if flavor == "ours":
                executable = our_cli()
            else:
                found = find_claude()
                if found is None:
                    raise ClientError("Claude Code (claude) is not on PATH")
                executable = found
        self.command: list[str] = [executable] if isinstance(executable, str) else list(executable)
        self.startup_timeout_s = startup_timeout_s

    @property
    def name(self) -> str:
        return "desktop-agent" if self.flavor == "ours" else os.path.basename(self.command[0])

    async def open(self, folder: str | os.PathLike[str], options: SessionOptions) -> SubprocessSession:
        if options.script is not None:
            raise ClientError(f"the scripted {options.script} runs in process only")
        if self.flavor == "claude" and not options.model:  # Claude Code does not read our Settings: say it
            options.model = await in_thread(claude_code.settings_model)
        session = SubprocessSession(self, os.path.abspath(os.fspath(folder)), options)
        await session.start(resume=options.resume)
        return session

    async def list_sessions(self, folder: str | os.PathLike[str]) -> list[SessionSummary]:
        """Our store's sessions of the folder, or Claude Code's own (its ``projects/`` folder)."""
        if self.flavor == "claude":
            return await in_thread(lambda: claude_code.list_sessions(folder))
        return await super().list_sessions(folder)

    async def history(self, folder: str | os.PathLike[str], session_id: str) -> list[dict[str, Any]] | None:
        if self.flavor == "claude":
            return await in_thread(lambda: claude_code.history(folder, session_id))
        return await super().history(folder, session_id)


class _Turn:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.finished = asyncio.Event()
        self.abandoned = False


class SubprocessSession:
    """A ``SessionHandle`` over one executor process (a new one after ``restart()``)."""

    def __init__(self, client: SubprocessClient, cwd: str, options: SessionOptions):
        import uuid

        self.client = client
        self.executor: ExecutorKind = client.kind
        self._cwd = cwd
        self.options = options
        self.board = QuestionBoard(options.prompter)
        self._session_id = options.session_id or (options.resume or str(uuid.uuid4()))
        self._model = options.model or ""
        self._mode: str = options.permission_mode or "default"
        self.proc: asyncio.subprocess.Process | None = None
        self.pid: int | None = None
        self.returncode: int | None = None
        self.exit_message = ""
        self.init_info: dict[str, Any] = {}
        self._alive = False
        self._closing = False
        self._stderr = bytearray()
        self._tasks: list[asyncio.Task[Any]] = []
        self._controls: dict[str, asyncio.Future[Any]] = {}
        self._asks: dict[str, asyncio.Task[Any]] = {}
        self._resolved: set[str] = set()
        self._turn: _Turn | None = None
        self._translator = LineTranslator(cwd)
        self._rejections = claude_code.Rejections()  # Claude Code: told through our PostToolUse hook
        self._interrupted = False
        self._started_once = False
        self.on_exit: Any = None  # called with exit_message when the executor dies with no turn running

    # ----- state
    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def cwd(self) -> str:
        return self._cwd

    @property
    def model(self) -> str:
        return self._model

    @property
    def permission_mode(self) -> str:
        return self._mode

    @property
    def transcript_path(self) -> str:
        if self.client.flavor != "ours":
            return ""
        from desktop_agent.session.store import find_session

        path = find_session(self._session_id, self._cwd)
        return str(path) if path else ""

    @property
    def alive(self) -> bool:
        return self._alive

    @property
    def pending_questions(self) -> list[Question]:
        return list(self.board.pending.values())

    def history(self) -> list[dict[str, Any]]:
        """The transcript for display: our executor's JSONL, or Claude Code's own
        (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, ``projects/<slug>/<session_id>.jsonl``: the same entry shapes)."""
        if self.client.flavor == "claude":
            return claude_code.history(self._cwd, self._session_id) or []
        path = self.transcript_path
        if not path:
            return []
        from desktop_agent.session.resume import history_for_display
        from desktop_agent.session.store import read_transcript

        try:
            return history_for_display(read_transcript(path, full=True))
        except Exception:  # a format this version cannot read: no history on screen, the session still resumes
            return []

    # ----- process
    async def start(self, resume: str | None = None) -> None:
        """Spawn the executor and wait for its ``initialize`` reply (or its exit: ``ExecutorDied``)."""
        argv = executor_argv(self.client.flavor, self.options, session_id=None if resume else self._session_id,
                             resume=resume)
        env = dict(os.environ)
        env.update(self.options.env or {})
        self._stderr.clear()
        self.returncode, self.exit_message = None, ""
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.client.command, *argv, cwd=self._cwd, env=env, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, limit=LINE_LIMIT,
                start_new_session=True)
        except OSError as exc:
            raise ClientError(f"could not start {self.client.name}: {exc}") from exc
        self.pid = self.proc.pid
        self._alive = True
        self._translator = LineTranslator(self._cwd)
        self._tasks = [asyncio.ensure_future(self._read_stdout(self.proc)),
                       asyncio.ensure_future(self._read_stderr(self.proc))]
        try:
            hooks = claude_code.POST_EDIT_HOOKS if self.client.flavor == "claude" else None
            response = await asyncio.wait_for(self._control(InitializeRequest(hooks=hooks)),
                                              self.client.startup_timeout_s)
        except asyncio.TimeoutError:
            await self._kill()
            raise ClientError(f"{self.client.name} did not answer initialize within "
                              f"{self.client.startup_timeout_s:.0f} s") from None
        except ExecutorDied:
            await self._wait_reader()
            raise ExecutorDied(self.client.name, self.pid, self.returncode, self._stderr_text()) from None
        self.init_info = response or {}
        self._started_once = True

    async def restart(self) -> None:
        """A new executor on the same session: ``--resume <session_id>`` (a session that never wrote its
        transcript starts again under its id)."""
        if self._alive:
            self._closing = True  # an exit we asked for: no ErrorEvent, no on_exit
            try:
                await self._stop_process()
            finally:
                self._closing = False
        self._turn = None
        try:
            await self.start(resume=self._session_id)
        except ExecutorDied:
            if self.client.flavor != "ours" or self.transcript_path:
                raise
            await self.start(resume=None)

    async def end(self, reason: str) -> None:
        """Close: SessionEnd runs in the executor as it exits."""
        await self.close()

    async def close(self) -> None:
        self._closing = True
        self._withdraw_all()
        await self._stop_process()

    # ----- what only the in-process engine offers: an executor keeps its MCP servers and retries to itself
    @property
    def manages_mcp(self) -> bool:
        return False

    def mcp_status(self) -> list[dict[str, Any]]:
        return []

    async def restart_mcp_server(self, name: str) -> None:
        raise ClientError(f"the executor manages its own MCP servers (cannot restart {name} from here)")

    def retry_now(self) -> bool:
        return False

    def record(self, entry: dict[str, Any]) -> None:
        raise ClientError("the executor writes its own transcript")

    def discard_if_empty(self) -> bool:
        """Remove our executor's transcript when it holds no message (Claude Code's is left alone)."""
        return discard_empty_transcript(self.transcript_path)

    async def _stop_process(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(Exception):
                assert proc.stdin is not None
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except asyncio.TimeoutError:
                await self._kill()
        await self._wait_reader()
        self._alive = False

    async def _kill(self) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 3)
        except asyncio.TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    async def _wait_reader(self) -> None:
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(task), 5)

    def _stderr_text(self) -> str:
        return bytes(self._stderr).decode("utf-8", errors="replace")

    async def _read_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while True:
            chunk = await proc.stderr.read(4096)
            if not chunk:
                return
            self._stderr += chunk
            del self._stderr[:-STDERR_TAIL]

    async def _read_stdout(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        try:
            while True:
                try:
                    raw = await proc.stdout.readline()
                except (ValueError, asyncio.LimitOverrunError):  # a line over the limit: skip it
                    continue
                if not raw:
                    break
                if raw.strip():
                    self._on_line(raw)
        except asyncio.CancelledError:  # the host is shutting down: the process is close()'s business
            raise
        returncode = await proc.wait()
        if proc is self.proc:
            self._on_exit(returncode)

    # ----- writing
    def _write(self, message: Any) -> None:
        proc = self.proc
        if not self._alive or proc is None or proc.stdin is None or proc.stdin.is_closing():
            raise ExecutorDied(self.client.name, self.pid, self.returncode, self._stderr_text())
        try:
            proc.stdin.write(stream_json.encode(message).encode("utf-8"))
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
            raise ExecutorDied(self.client.name, self.pid, self.returncode, str(exc)) from exc

    def _control(self, request: Any) -> asyncio.Future[Any]:
        message = ControlRequest(request=request)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._controls[message.request_id] = future
        future.add_done_callback(lambda f: f.cancelled() or f.exception())  # nobody may await it (interrupt)
        try:
            self._write(message)
        except ExecutorDied as exc:
            self._controls.pop(message.request_id, None)
            future.set_exception(exc)
        return future

    # ----- reading
    def _emit(self, event: Any) -> None:
        if self._turn is not None:
            self._turn.queue.put_nowait(event)

    def _on_line(self, raw: bytes) -> None:
        try:
            line = stream_json.decode(raw)
        except ProtocolError as exc:
            self._emit(ErrorEvent(message=f"{self.client.name} wrote a line this window cannot read: {exc}",
                                  kind="protocol"))
            return
        if isinstance(line, ControlResponse):
            future = self._controls.pop(line.request_id, None)
            if future is not None and not future.done():
                body = line.response
                if body.subtype == "error":
                    future.set_exception(ClientError(body.error or "control request failed"))
                else:
                    future.set_result(body.response)
            return
        if isinstance(line, ControlRequest):
            self._on_control_request(line)
            return
        if isinstance(line, ControlCancelRequest):
            task = self._asks.get(line.request_id)
            if task is not None:  # withdrawn now, resolved as a deny before any later line is read
                task.cancel()
                question = self.board.withdraw(line.request_id)
                self._resolve_cancelled(line.request_id, question.request.tool_use_id if question else "")
            return
        if isinstance(line, stream_json.SystemInit):
            self._session_id = line.session_id or self._session_id
            self._model = line.model or self._model
            self._mode = line.permissionMode or self._mode
        elif isinstance(line, stream_json.SystemLine) and line.permission_mode:
            self._mode = line.permission_mode
        finished = isinstance(line, ResultLine)
        for event in self._translator.translate(line, interrupted=self._interrupted):
            if isinstance(event, ToolCallFinished):
                fields = self._rejections.result_fields(event.tool_use_id, event.is_error)
                if fields:  # what our own Edit/Write put in their data: the changes panel marks those hunks ✗
                    event = event.model_copy(update={"data": {**(event.data or {}), **fields}})
            self._emit(event)
        if finished and self._turn is not None:
            self._turn.finished.set()
            self._turn = None

    def _on_control_request(self, message: ControlRequest) -> None:
        request = message.request
        if isinstance(request, CanUseToolRequest):
            self._asks[message.request_id] = asyncio.ensure_future(self._ask(message.request_id, request))
            return
        if isinstance(request, HookCallbackRequest):
            try:
                output = self._rejections.hook_output(request.callback_id, request.input, request.tool_use_id)
            except KeyError:
                output = None
            if output is not None:
                with contextlib.suppress(ExecutorDied):
                    self._write(ControlResponse.success(message.request_id, output))
                return
        # an unknown hook callback and anything else: an error reply, never a hang
        with contextlib.suppress(ExecutorDied):
            self._write(ControlResponse.failure(message.request_id, f"unsupported control request: "
                                                                    f"{request.subtype}"))

    async def _ask(self, request_id: str, wire: CanUseToolRequest) -> None:
        request = request_from_wire(request_id, wire, self._cwd)
        if self.client.flavor == "claude":  # "Allow for session" adds the rule for this call, not a mode
            request = claude_code.narrow_suggestions(request)
        try:
            if request.structured_patch is None:
                request = await in_thread(lambda: with_computed_patch(request))
            self._emit(PermissionRequested(request=request))
            question = self.board.raise_question(request)
            reply = await self.board.wait(question)
        except asyncio.CancelledError:  # withdrawn by the executor (or it died): a deny
            self.board.withdraw(request_id)
            self._resolve_cancelled(request_id, wire.tool_use_id)
            return
        finally:
            self._asks.pop(request_id, None)
        if request_id in self._resolved:  # already resolved (the executor died meanwhile)
            return
        self._resolved.add(request_id)
        if reply.behavior == "deny":
            self._translator.denied.add(wire.tool_use_id)
        else:
            self._rejections.record(wire.tool_use_id, reply.rejected_hunks, reply.total_hunks)
            for update in reply.updated_permissions:  # the person picked the mode switch itself
                if update.type == "setMode" and update.mode and update.destination == "session":
                    self._mode = update.mode
        try:
            self._write(ControlResponse.success(request_id, reply_body(reply, request.input).to_wire()))
        except ExecutorDied:
            return
        self._emit(PermissionResolved(request_id=request_id, tool_use_id=wire.tool_use_id, reply=reply,
                                      decided_by="user"))

    def _resolve_cancelled(self, request_id: str, tool_use_id: str) -> None:
        if request_id in self._resolved:
            return
        self._resolved.add(request_id)
        self._emit(PermissionResolved(request_id=request_id, tool_use_id=tool_use_id, decided_by="cancel",
                                      reply=PermissionReply(behavior="deny", message="User denied via UI")))

    def _withdraw_all(self) -> None:
        for request_id, task in list(self._asks.items()):
            task.cancel()
            question = self.board.pending.get(request_id)
            self._resolve_cancelled(request_id, question.request.tool_use_id if question else "")
        self.board.withdraw_all()

    def _on_exit(self, returncode: int) -> None:
        self._alive = False
        self.returncode = returncode
        self.exit_message = describe_exit(self.client.name, self.pid, returncode, self._stderr_text())
        self._withdraw_all()
        died = ExecutorDied(self.client.name, self.pid, returncode, self._stderr_text())
        for future in self._controls.values():
            if not future.done():
                future.set_exception(died)
        self._controls.clear()
        turn = self._turn
        if turn is None and not self._closing and self._started_once and self.on_exit is not None:
            try:
                self.on_exit(self.exit_message)
            except Exception:  # a front end's callback must not break the reader
                pass
        if turn is not None:
            if not self._closing:
                turn.queue.put_nowait(ErrorEvent(message=self.exit_message, kind="executor", retryable=True))
            turn.queue.put_nowait(TurnFinished(reason="model_error", error=self.exit_message))
            turn.finished.set()
            self._turn = None

    # ----- turns
    async def submit(self, prompt: str | list[dict[str, Any]]) -> AsyncIterator[Any]:
        """Send one user turn and yield its events up to and including its ``TurnFinished``."""
        previous = self._turn
        if previous is not None:
            if not previous.abandoned:
                raise RuntimeError("a turn is already running")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(previous.finished.wait(), 10)
        turn = _Turn()
        self._turn = turn
        self._interrupted = False
        try:
            self._write(UserLine.prompt(prompt))
        except ExecutorDied as exc:
            self._turn = None
            yield ErrorEvent(message=self.exit_message or exc.describe(), kind="executor", retryable=True)
            yield TurnFinished(reason="model_error", error=self.exit_message or exc.describe())
            return
        finished = False
        try:
            while True:
                event = await turn.queue.get()
                yield event
                if isinstance(event, TurnFinished):
                    finished = True
                    return
        finally:
            if not finished:  # the consumer left early: stop the turn, drop its remaining events
                turn.abandoned = True
                if self._turn is turn and self._alive:
                    self.interrupt()

    def interrupt(self) -> None:
        """Stop the running turn in the executor (its tools get the rejection result); the host stays."""
        if not self._alive:
            return
        self._interrupted = True
        self._control(InterruptRequest())

    def set_permission_mode(self, mode: str) -> Ack:
        if mode == "manual":
            mode = "default"
        if mode not in PERMISSION_MODES:
            raise ValueError(f"unknown permission mode: {mode}")
        self._mode = mode
        self.options.permission_mode = mode  # a restart keeps it
        return Ack(self._control(SetPermissionModeRequest(mode=mode)) if self._alive else None)

    def set_model(self, model: str | None) -> Ack:
        self._model = (model or "").strip() or self._model
        self.options.model = self._model or None
        return Ack(self._control(SetModelRequest(model=model)) if self._alive else None)

    def answer(self, request_id: str, reply: PermissionReply) -> bool:
        return self.board.answer(request_id, reply)

    async def compact(self, instructions: str | None = None) -> Compacted:
        prompt = "/compact" + (f" {instructions}" if instructions else "")
        compacted: Compacted | None = None
        error = ""
        async for event in self.submit(prompt):
            if isinstance(event, Compacted):
                compacted = event
            elif isinstance(event, ErrorEvent):
                error = event.message
            elif isinstance(event, TurnFinished) and event.error:
                error = error or event.error
        if compacted is None:
            raise ClientError(error or "the executor did not compact the session")
        return compacted
