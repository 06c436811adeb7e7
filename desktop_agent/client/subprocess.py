"""``SubprocessClient``: a session in an executor process — our CLI (isolation) or Claude Code — as a
``ProtocolSession`` over the pipe transport (``client.transports.PipeTransport``).

The executor is started with ``-p --input-format stream-json --output-format stream-json --verbose
--include-partial-messages --permission-prompt-tool stdio`` (plus the mode, ``--session-id``/``--resume``, the
model and the rules) and spoken to with ``desktop_agent.protocol``: our CLI sends its ``AgentEvent``s losslessly
(``agent_event`` lines), Claude Code's stdout lines are translated (``lines.LineTranslator``); each
``can_use_tool`` is asked of the front end's prompter and its reply is a ``control_response`` (allow with the input to run and the session permission updates, deny with the
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

import contextlib
import os
import shutil
import sys
import uuid
from typing import Any, Literal, Sequence

from desktop_agent.client import claude_code
from desktop_agent.client.base import ClientError, ExecutorKind, SessionOptions
from desktop_agent.client.local import LocalStore, SessionSummary
from desktop_agent.client.session import ProtocolSession
from desktop_agent.client.transports import PipeTransport, Transport
from desktop_agent.util.threads import in_thread

Flavor = Literal["ours", "claude"]


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

    async def open(self, folder: str | os.PathLike[str], options: SessionOptions) -> ProtocolSession:
        if options.script is not None:
            raise ClientError(f"the scripted {options.script} runs in process only")
        if self.flavor == "claude" and not options.model:  # Claude Code does not read our Settings: say it
            options.model = await in_thread(claude_code.settings_model)
        cwd = os.path.abspath(os.fspath(folder))
        session_id = options.session_id or options.resume or str(uuid.uuid4())
        options.session_id = session_id

        async def connect(resume: str | None) -> Transport:
            argv = executor_argv(self.flavor, options, session_id=None if resume else session_id, resume=resume)
            env = dict(os.environ)
            env.update(options.env or {})
            return await PipeTransport.spawn(self.command, argv, cwd=cwd, env=env, name=self.name)

        session = ProtocolSession(await connect(options.resume), cwd, options, speaks="executor",
                                  executor=self.kind, connect=connect, claude=self.flavor == "claude",
                                  startup_timeout_s=self.startup_timeout_s)
        try:
            await session.start()
        except ClientError:
            with contextlib.suppress(Exception):
                await session.transport.close()
            raise
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
