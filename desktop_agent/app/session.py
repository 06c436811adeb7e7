"""``AgentSession``: one conversation in one folder, the object the CLI and the desktop window share.

``AgentSession.create`` composes it (``app.build``: settings → permission context and its ``env`` → hooks →
model client; ``app.workspace``: a new transcript or a resumed one, what a resume restores → tools, MCP, context);
a part that cannot be built is a ``ConfigError`` or ``SessionError`` before any file is written.
``submit(prompt)`` runs one user turn and yields ``AgentEvent``s:

1. auto-compaction first, when the conversation is over the §5.5 threshold (``app.compaction``);
2. SessionStart (once) and UserPromptSubmit hooks: a blocked prompt ends the turn ``prompt_blocked``
   without a model call; hook context becomes an ``isMeta`` message after the prompt;
3. the user entry is written to the JSONL **before** the model is called, preceded by the note of the reverts and
   redos made in the changes panel since the last turn (``session.changes``: an ``isMeta`` ``<system-reminder>``
   entry, so the request's last user message starts with it; told once, and still told after a resume);
4. the query loop runs with a fresh ``AbortSignal`` (``interrupt()`` fires it), and every new entry
   it produces is appended to ``messages`` and the transcript through ``on_message``; its
   ``before_request`` hook is the compaction policy, so auto-compaction also happens between the requests
   of a long turn;
5. the permission state (mode + session grants) is written when it changed, so a resume restores it;
6. a call a PreToolUse hook deferred (SPEC D.6; ``engine.defer``) — left by a run that ended ``tool_deferred``, in
   this process or a resumed transcript — is run first, before compaction and the prompt
   (``engine.loop.settle_pending``: its hooks and permission check again, a person if asked); deferred again, or
   interrupted, the turn ends there and the prompt is not sent. An empty prompt after it sends nothing new: the
   model is asked with the call's result. ``defer_allowed`` (the CLI sets it) lets a hook defer at all;
7. a prompt naming a slash command (``app.commands``: ``.claude/commands/*.md``) is expanded after its
   UserPromptExpansion hooks (a block ends the turn ``prompt_blocked``);
8. hooks outside turns (``app.lifecycle``): an ``idle_prompt`` Notification when ``idle_notification_s`` passes
   after a turn with no new prompt, SessionEnd at ``end(reason)``; PreCompact/SessionStart(compact) around
   compaction (``app.compaction``).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Protocol, Sequence, TypeVar, runtime_checkable

from desktop_agent.app import build, commands, workspace
from desktop_agent.app.build import ConfigError
from desktop_agent.app.compaction import Compaction
from desktop_agent.app.lifecycle import SessionHooks
from desktop_agent.app.rewind import SessionCheckpoints, checkpointing_enabled
from desktop_agent.app.system_prompt import build_system_prompt
from desktop_agent.app.workspace import SessionError
from desktop_agent.config import AppSettings, resolve_model
from desktop_agent.core.abort import cancel_and_wait, until_aborted
from desktop_agent.core.context import AbortSignal, ToolUseContext
from desktop_agent.core.events import AgentEvent, Compacted, ErrorEvent, TurnFinished, UserMessage
from desktop_agent.core.messages import CHANGE_RECORD, CHANGE_RECORDS_TOLD, new_uuid, text_of, tool_result_ids, \
    user_entry
from desktop_agent.core.permission import PERMISSION_MODES, PermissionPrompter
from desktop_agent.core.tool import Tool
from desktop_agent.engine.defer import DEFER_ALLOWED
from desktop_agent.engine.loop import query, settle_pending
from desktop_agent.engine.params import QueryParams
from desktop_agent.model.client import DEFAULT_MODEL, ModelClient
from desktop_agent.model.pricing import CostTracker
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.hooks import HookRunner
from desktop_agent.session import compact as compact_mod
from desktop_agent.session.changes import ChangeNotes
from desktop_agent.session.resume import DeferredCall, ResumedConversation, find_deferred, history_for_display
from desktop_agent.session.store import SessionInfo, TranscriptStore, list_sessions, read_transcript
from desktop_agent.tools.bash.background import kill_background_shells

if TYPE_CHECKING:
    from desktop_agent.mcp.client import McpManager

INTERRUPTED_FOR_TOOL_USE = "[Request interrupted by user for tool use]"
INTERRUPTED = "[Request interrupted by user]"
IDLE_NOTIFICATION_S = 60.0  # the window's idle_prompt Notification after a turn (the reference's threshold)

T = TypeVar("T")


def _usable_uuid(value: Any) -> bool:
    """A host's user message id that can name a checkpoint (letters, digits, ``-``, ``_``; at most 128)."""
    return isinstance(value, str) and 0 < len(value) <= 128 and all(c.isalnum() or c in "-_" for c in value) \
        and value.isascii()


class _Interrupted(Exception):
    """The user interrupted the turn before the model loop started."""


@runtime_checkable
class _Closable(Protocol):
    """A model client holding connections (the scripted one holds none)."""

    async def aclose(self) -> None: ...


class AgentSession:
    """One conversation in one working directory. Create with ``AgentSession.create``."""

    # set by create()
    client: ModelClient
    store: TranscriptStore
    ctx: ToolUseContext
    permission_context: PermissionContext

    def __init__(self) -> None:  # use create()
        self.session_id: str = ""
        self.cwd: str = ""
        self.settings: AppSettings = AppSettings()
        self.model: str = DEFAULT_MODEL
        self.messages: list[dict[str, Any]] = []
        self.tools: list[Tool] = []
        self._builtin_tools: list[Tool] = []
        self.mcp: McpManager | None = None  # when servers are configured
        # The system blocks, built at the first turn (git status is an async subprocess).
        self.system_prompt: list[dict[str, Any]] | None = None
        self.chosen_model: str | None = None  # picked during the session (set_model); kept on resume
        self._prompt_args: tuple[list[str], str | None, str | None] = ([], None, None)
        self.max_turns: int | None = None
        self.max_tokens: int = 32_000
        self.cost = CostTracker()
        self.api_duration_ms: float = 0.0
        self.compaction = Compaction(self)
        self.resumed: bool = False
        self.resume_info: ResumedConversation | None = None
        self.auto_compact: bool = True
        self.streaming_tool_execution: bool = True
        self.thinking: dict[str, Any] | None = None
        self.include_stream_events = False
        self.last_prompt_uuid: str | None = None
        self._running = False
        self._turn_abort: AbortSignal | None = None
        # Seconds the session may sit idle after a turn before an ``idle_prompt`` Notification (App. B §B.5);
        # None: never (the CLI). The window sets IDLE_NOTIFICATION_S.
        self.idle_notification_s: float | None = None
        self.lifecycle = SessionHooks(self)
        self.change_notes = ChangeNotes()  # reverts/redos the model is told about with the next prompt
        self.pending_deferred: DeferredCall | None = None  # a deferred call waiting to be run (SPEC D.6)
        self.checkpoints = SessionCheckpoints("", enabled=False)  # set by create()

    # ---------------------------------------------------------------------------------- creation

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str],
        *,
        settings: AppSettings | None = None,
        client: ModelClient | None = None,
        prompter: PermissionPrompter | None = None,
        session_id: str | None = None,
        resume: str | None = None,
        continue_latest: bool = False,
        permission_mode: str | None = None,
        allowed_tools: Sequence[str] = (),
        disallowed_tools: Sequence[str] = (),
        tools: Sequence[str] | None = None,
        add_dirs: Sequence[str] = (),
        max_turns: int | None = None,
        system_prompt: str | None = None,
        append_system_prompt: str | None = None,
        trusted: bool | None = None,
        settings_arg: str | None = None,
        model: str | None = None,
        hooks: HookRunner | None = None,
        mcp_config: Sequence[str] = (),
        provider: str | None = None,
        checkpoint_default: bool = False,
    ) -> AgentSession:
        self = cls()
        self.settings = settings or AppSettings.load()
        self.cwd = os.path.abspath(os.fspath(cwd))
        if not os.path.isdir(self.cwd):
            raise SessionError(f"working directory does not exist: {self.cwd}")
        self.model = resolve_model(model, self.settings) or DEFAULT_MODEL
        self.max_turns = max_turns
        self.max_tokens = self.settings.max_tokens
        self.auto_compact = self.settings.auto_compact
        self.streaming_tool_execution = self.settings.streaming_tool_execution

        # 0. permission rules and settings (a bad --settings fails here, before any file is written); the
        # settings' ``env`` (a project's only in a trusted folder) applies to this process, as the reference's
        # does, before the model client reads ANTHROPIC_* from it
        pc = self.permission_context = build.load_permission_context(
            self.cwd, allowed=allowed_tools, disallowed=disallowed_tools, settings_arg=settings_arg,
            mode=permission_mode, add_dirs=add_dirs, trusted=trusted)
        os.environ.update(pc.env)
        # the hooks the settings allow; a configuration that cannot be loaded stops here, before any file
        hooks = hooks if hooks is not None else build.make_hooks(pc)
        # 0b. the model client: a missing key must not leave a session file behind
        self.client = client if client is not None else build.make_client(self.settings, provider)

        # 1. which transcript
        transcript = workspace.open_transcript(self.cwd, resume=resume, continue_latest=continue_latest,
                                               session_id=session_id)
        self.store, self.session_id = transcript.store, transcript.session_id
        resumed = self.resume_info = transcript.resumed
        self.resumed = resumed is not None
        if resumed is not None:
            self.messages = resumed.messages
            self.change_notes = ChangeNotes(resumed.pending_changes)
            self.pending_deferred = resumed.deferred
            # 2. permissions (mode and session grants restored on resume; an explicit mode wins), and
            # a model picked during the session (an explicit --model wins)
            state = resumed.permission_state
            if state:
                if model is None and isinstance(state.get("model"), str) and state["model"]:
                    self.model = self.chosen_model = state["model"]
                workspace.restore_permission_state(pc, state, keep_mode=permission_mode is not None)
                self.store.note_permission_state(self._permission_state())

        # 3. tools, and the MCP servers (they start before the first request)
        self.tools = build.offered_tools(pc, tools)
        self._builtin_tools = list(self.tools)
        self.mcp = build.make_mcp(self.cwd, pc, mcp_config)

        # 4. context
        self.ctx = build.make_context(self.cwd, pc, prompter=prompter, hooks=hooks, session_id=self.session_id,
                                      transcript_path=str(self.store.path), tools=self.tools)
        if resumed is not None:
            workspace.restore_read_state(self.messages, self.cwd, self.ctx.read_file_state)
        # checkpoints (app.rewind): before each turn and, through the context's seam, after each tool that writes
        self.checkpoints = SessionCheckpoints(
            self.cwd, enabled=checkpointing_enabled(self.settings.file_checkpointing, checkpoint_default),
            include=tuple(self.settings.checkpoint_include))
        if self.checkpoints.enabled:
            self.ctx.checkpoints = self.checkpoints
            self.checkpoints.recorder = self.record  # a restore is a transcript fact, told after a resume too

        # 5. model
        self._prompt_args = (list(pc.working_dirs), system_prompt, append_system_prompt)

        if resumed is None:
            # a new session's file holds only its two header lines until something differs from the default
            # (a launch mode other than default is written with the first message)
            self.store.note_permission_state(workspace.DEFAULT_PERMISSION_STATE)
            return self
        # the clean-up messages of a resume (continuation, synthetic reply) go to the file now
        for entry in resumed.added:
            self.store.record(entry)
        self._persist_permission_state()
        return self

    # ---------------------------------------------------------------------------------- properties

    @property
    def transcript_path(self) -> str:
        return str(self.store.path)

    @property
    def permission_mode(self) -> str:
        return str(self.permission_context.mode)

    @property
    def defer_allowed(self) -> bool:
        """Whether a PreToolUse hook's ``defer`` may end a turn (non-interactive sessions: the CLI)."""
        return bool(self.ctx.extras.get(DEFER_ALLOWED))

    @defer_allowed.setter
    def defer_allowed(self, value: bool) -> None:
        self.ctx.extras[DEFER_ALLOWED] = bool(value)

    @property
    def total_cost_usd(self) -> float:
        return self.cost.cost_usd

    @property
    def running(self) -> bool:
        return self._running

    def history(self) -> list[dict[str, Any]]:
        """The whole transcript for display (file order, pre-compaction messages kept)."""
        return history_for_display(read_transcript(self.transcript_path, full=True))

    @staticmethod
    def list_sessions(cwd: str | os.PathLike[str]) -> list[SessionInfo]:
        return list_sessions(os.fspath(cwd))

    # ---------------------------------------------------------------------------------- permissions

    def set_permission_mode(self, mode: str) -> None:
        """Switch the mode mid-session (the UI's selector, the SDK's ``set_permission_mode``)."""
        if mode == "manual":
            mode = "default"
        if mode not in PERMISSION_MODES:
            raise ValueError(f"unknown permission mode: {mode}")
        self.permission_context.set_mode(mode)
        self._persist_permission_state()

    def _permission_state(self) -> dict[str, Any]:
        return workspace.permission_state(self.permission_context, self.chosen_model)

    def _persist_permission_state(self) -> None:
        workspace.persist_permission_state(self.store, self._permission_state())

    # ---------------------------------------------------------------------------------- turns

    def interrupt(self) -> None:
        """Abort the running turn (stream, permission wait, cancellable tools)."""
        if self._turn_abort is not None:
            self._turn_abort.abort("user_interrupted")

    def record(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` to the transcript. A front end's ``change-revert`` record (any thread) is also told to
        the model with the next prompt, even if writing it failed (the error is raised after)."""
        if entry.get("type") == CHANGE_RECORD:
            self.change_notes.add(entry)
            self.store.record_change(entry)
            return
        self.store.record(entry)

    def _meta_note(self, text: str, **extra: Any) -> dict[str, Any]:
        """A ``<system-reminder>`` note for the model as an ``isMeta`` user entry, in the conversation and the file."""
        meta = user_entry([{"type": "text", "text": f"<system-reminder>\n{text}\n</system-reminder>"}], isMeta=True,
                          **extra)
        self.messages.append(meta)
        try:
            self.record(meta)
        except OSError:
            pass
        return meta

    def _on_message(self, entry: dict[str, Any]) -> None:
        """The loop's persistence hook: every new entry, in order, as it appears."""
        uid = entry.get("uuid")
        if uid and self.store.contains(uid):
            return
        if not any(m is entry for m in self.messages[-4:]):
            self.messages.append(entry)
        self.record(entry)
        if entry.get("type") == "user" and tool_result_ids(entry):
            self._persist_permission_state()

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The offered tools' API schemas (the summary request carries them, as the turn's requests do)."""
        out = []
        for t in self.tools:
            try:
                out.append(t.to_api_schema())
            except Exception:
                pass
        return out

    async def compact(self, custom_instructions: str | None = None) -> Compacted:
        """Manual compaction (the ``/compact`` command)."""
        if self._running:
            raise RuntimeError("a turn is running")
        self._running = True
        try:
            return await self.compaction.compact("manual", custom_instructions)
        finally:
            self._running = False

    def set_model(self, model: str | None) -> None:
        """Switch the model from the next request on (the window's model box, the SDK's ``set_model``);
        the system prompt, which names the model, is rebuilt for it, and a resume keeps the choice
        (recorded with the permission state)."""
        self.model = self.chosen_model = (model or "").strip() or DEFAULT_MODEL
        self.system_prompt = None
        self._persist_permission_state()

    def set_system_prompt(self, custom: str | None = None, append: str | None = None) -> None:
        """Replace the custom system prompt and/or its appended text (None keeps that part); the system blocks are
        rebuilt for the next request (the SDK's ``initialize`` carries them)."""
        working_dirs, old_custom, old_append = self._prompt_args
        self._prompt_args = (working_dirs, old_custom if custom is None else custom,
                             old_append if append is None else append)
        self.system_prompt = None

    async def system_prompt_blocks(self) -> list[dict[str, Any]]:
        if self.system_prompt is None:
            working_dirs, custom, append = self._prompt_args
            self.system_prompt = await build_system_prompt(self.cwd, model=self.model, custom_prompt=custom,
                                                           append_prompt=append, additional_dirs=working_dirs[1:])
        return list(self.system_prompt)

    def messages_for_query(self) -> list[dict[str, Any]]:
        return compact_mod.messages_after_boundary(self.messages)

    async def submit(self, prompt: str | list[dict[str, Any]], **entry_extra: Any) -> AsyncIterator[AgentEvent]:
        """Run one user turn; yields AgentEvents ending with one TurnFinished."""
        if self._running:
            raise RuntimeError("a turn is already running")
        self._running = True
        self.lifecycle.cancel_idle_timer()
        abort = AbortSignal()
        self._turn_abort = abort
        self.ctx.abort = abort
        self.ctx.extras["prompt_id"] = new_uuid()  # hook inputs carry it (App. B §B.5): a new id per user prompt
        t0 = time.perf_counter()
        try:
            await self._until_aborted(self.start_mcp(), abort)
            # 0. a deferred call first: its result must follow its tool_use
            settled_now = self.pending_deferred is not None
            if self.pending_deferred is not None:
                settled: TurnFinished | None = None
                async for event in self._settle_deferred(self.pending_deferred):
                    if isinstance(event, TurnFinished):
                        settled = event
                    else:
                        yield event
                if settled is None or settled.reason != "completed":
                    yield settled or TurnFinished(reason="model_error", error="the deferred call was not run")
                    return
            if settled_now and self._empty(prompt):
                async for event in self._run_query(t0):
                    yield event
                return
            # 1. auto-compaction before the new input joins the conversation
            extra = compact_mod.rough_tokens(prompt)
            if self.compaction.due(extra):
                try:
                    compacted = await self._until_aborted(self.compaction.auto(extra_tokens=extra), abort)
                    if compacted is not None:
                        yield compacted
                except _Interrupted:
                    yield TurnFinished(reason="aborted_streaming", error="Interrupted during compaction",
                                       duration_ms=(time.perf_counter() - t0) * 1000)
                    return
                except Exception as exc:
                    yield ErrorEvent(message=f"Auto-compaction failed: {exc}", kind="compact")

            # 2. a slash command's expansion (UserPromptExpansion hooks may block it), then SessionStart (first
            # turn) and UserPromptSubmit hooks; a blocked prompt is never sent
            contexts: list[str] = []
            expansion = await commands.expand(prompt, contexts, cwd=self.cwd, hooks=self.hooks, ctx=self.ctx,
                                              trusted=bool(self.permission_context.trusted))
            if expansion.blocked is not None:
                yield ErrorEvent(message=expansion.blocked, kind="hook")
                yield TurnFinished(reason="prompt_blocked", error=expansion.blocked,
                                   duration_ms=(time.perf_counter() - t0) * 1000)
                return
            blocked = await self.lifecycle.before_prompt(prompt, contexts)
            if blocked is not None:
                yield ErrorEvent(message=f"UserPromptSubmit operation blocked by hook:\n{blocked}", kind="hook")
                yield TurnFinished(reason="prompt_blocked", error=blocked,
                                   duration_ms=(time.perf_counter() - t0) * 1000)
                return

            # 3. the user's input is on disk before the model is called, after the note of the panel's reverts
            told = self.change_notes.take(self.cwd)
            if told is not None:
                self._meta_note(told[0], **{CHANGE_RECORDS_TOLD: told[1]})
            restored = self.checkpoints.take_note()
            if restored is not None:
                self._meta_note(restored)
            if not _usable_uuid(entry_extra.get("uuid")) or self.store.contains(str(entry_extra["uuid"])):
                entry_extra.pop("uuid", None)  # a host's id is kept only when it can name a checkpoint
            entry = user_entry(expansion.shown if expansion.shown is not None else prompt, **entry_extra)
            self.last_prompt_uuid = entry["uuid"]
            # the folder as it is before this message is answered: what "Rewind to here" goes back to; taken beside
            # the first model request (the engine waits for it before any tool runs, and the turn's end for it)
            await self.checkpoints.before_turn(entry["uuid"], wait=False)
            self.messages.append(entry)
            try:
                self.record(entry)
            except OSError as exc:  # disk full, permissions: the user sees it; the turn still runs
                yield ErrorEvent(message=f"Could not save the transcript: {exc}", kind="internal")
            if expansion.body is not None:  # the command's text, for the model (the reference's meta message)
                body = user_entry(expansion.body, isMeta=True)
                self.messages.append(body)
                self.record(body)
            for text in contexts:  # hook context rides along as a meta message after the prompt
                self._meta_note(text)
            self._persist_permission_state()

            # 4. the loop; mid-turn compaction happens in its before_request hook
            async for event in self._run_query(t0):
                yield event
        finally:
            await self.checkpoints.settle()  # the turn's first snapshot is whole before the next can start
            self._running = False
            self._turn_abort = None
            self._persist_permission_state()
            self.store.sync()
            self.lifecycle.start_idle_timer()

    @staticmethod
    def _empty(prompt: str | list[dict[str, Any]]) -> bool:
        """No prompt (after a settled deferred call the model is asked with the call's result only)."""
        return (isinstance(prompt, str) and not prompt.strip()) or (isinstance(prompt, list) and not prompt)

    def _query_params(self, system_prompt: list[dict[str, Any]]) -> QueryParams:
        return QueryParams(
            messages=self.messages_for_query(), ctx=self.ctx, client=self.client, model=self.model,
            system_prompt=system_prompt, max_turns=self.max_turns, max_tokens=self.max_tokens,
            thinking=self.thinking, streaming_tool_execution=self.streaming_tool_execution,
            on_message=self._on_message, cost_tracker=self.cost,
            include_stream_events=self.include_stream_events, before_request=self.compaction.before_request,
        )

    async def _settle_deferred(self, call: DeferredCall) -> AsyncIterator[AgentEvent]:
        """Run the deferred call (``engine.loop.settle_pending``); it stays pending when deferred again."""
        params = self._query_params([])
        try:
            async for event in settle_pending(params, call.block, call.assistant_uuid):
                yield event
        finally:
            if params.ctx is not self.ctx:
                self.ctx = params.ctx
            self.pending_deferred = find_deferred(self.messages)

    async def _run_query(self, t0: float) -> AsyncIterator[AgentEvent]:
        """Step 4: the loop over the conversation as it is now."""
        params = self._query_params(await self.system_prompt_blocks())
        finished: TurnFinished | None = None
        pending = self.compaction.pending
        self.compaction.start_turn()
        try:
            async for event in query(params):
                while pending:
                    yield pending.pop(0)
                if isinstance(event, TurnFinished):
                    finished = event
                    self.api_duration_ms += event.duration_api_ms
                    if event.reason in ("aborted_streaming", "aborted_tools"):
                        for extra_event in self._interrupt_notice(event.reason):
                            yield extra_event
                yield event
        finally:
            self.compaction.start_turn()
            # context modifiers may have replaced the context during the turn
            if params.ctx is not self.ctx:
                self.ctx = params.ctx
        if finished is None:  # pragma: no cover - the loop always ends with one
            yield TurnFinished(reason="completed", duration_ms=(time.perf_counter() - t0) * 1000)
        elif finished.reason == "tool_deferred":
            self.pending_deferred = find_deferred(self.messages)

    # ---------------------------------------------------------------------------------- hooks outside turns

    @property
    def hooks(self) -> HookRunner | None:
        """The session's hook runner (settings hooks and a front end's callbacks), or None."""
        hooks = self.ctx.hooks
        return hooks if isinstance(hooks, HookRunner) else None

    def has_hooks(self, event: str) -> bool:
        """Whether any hook (settings or a front end's callbacks) is registered for ``event``."""
        hooks = self.hooks
        return hooks is not None and hooks.has_hooks(event)

    def set_prompter(self, prompter: PermissionPrompter | None) -> None:
        """The front end's answerer of asks; None leaves them to PermissionRequest hooks, else an ask is denied."""
        self.ctx.prompter = prompter

    def hook_runner(self) -> HookRunner:
        """The session's ``HookRunner``, made empty when it has none, so a front end can register callbacks."""
        hooks = self.hooks
        if hooks is None:
            hooks = self.ctx.hooks = HookRunner()
        return hooks

    async def end(self, reason: str = "other") -> None:
        """The session closes: SessionEnd hooks (``reason``: ``clear``, ``logout``, ``prompt_input_exit`` or
        ``other``) once, for a session whose SessionStart ran, after the background Notification hooks; then
        ``aclose``. A second call only closes."""
        await self.lifecycle.end(reason)
        await self.aclose()

    def _interrupt_notice(self, reason: str) -> list[UserMessage]:
        """After an abort: the ``[Request interrupted by user…]`` user message, unless the loop added one."""
        for m in reversed(self.messages[-3:]):
            if m.get("type") == "user" and text_of(m).startswith("[Request interrupted by user"):
                return []
        text = INTERRUPTED_FOR_TOOL_USE if reason == "aborted_tools" or (
            self.messages and tool_result_ids(self.messages[-1])) else INTERRUPTED
        entry = user_entry([{"type": "text", "text": text}])
        self.messages.append(entry)
        self.record(entry)
        return [UserMessage(message=entry)]

    @staticmethod
    async def _until_aborted(coro: Awaitable[T], abort: AbortSignal) -> T:
        """Await ``coro`` unless the turn is interrupted first (then it is cancelled: ``_Interrupted``)."""
        task = asyncio.ensure_future(coro)
        if await until_aborted(task, abort):
            return task.result()
        await cancel_and_wait(task)
        raise _Interrupted()

    async def start_mcp(self) -> None:
        """Start the MCP servers (once) and offer the tools of those that are up; whole-tool deny rules
        (``mcp__server``, ``mcp__server__tool``) remove them from the request as they do built-in tools."""
        if self.mcp is None:
            return
        await self.mcp.start()
        pc = self.permission_context
        extra: list[Tool] = [t for t in self.mcp.tools() if pc.whole_tool_rule("deny", t.name) is None]
        self.tools = self._builtin_tools + extra
        self.ctx.tools = list(self.tools)

    def mcp_status(self) -> list[dict[str, Any]]:
        """Each MCP server's state for the Servers view and ``system/init``: name, status, tools, error."""
        return self.mcp.status() if self.mcp is not None else []

    async def run(self, prompt: str) -> list[AgentEvent]:
        """Convenience for tests and scripts: run a turn and return all its events."""
        return [ev async for ev in self.submit(prompt)]

    def close(self) -> None:
        """Flush and close the transcript (the session can still be resumed later)."""
        self.store.close()

    async def aclose(self) -> None:
        """``close()`` plus background shells, the sandbox's egress proxy and network namespace (in a worker
        thread: it joins the proxy's thread) and the model client's connections. Safe to call twice."""
        try:
            await kill_background_shells(self.ctx)
        except Exception:  # pragma: no cover - best effort at shutdown
            pass
        close_sandbox = getattr(self.ctx.sandbox, "close", None)
        if callable(close_sandbox):
            try:
                await asyncio.to_thread(close_sandbox)
            except Exception:  # pragma: no cover - best effort at shutdown
                pass
        try:
            await self.checkpoints.aclose()  # the folder watch's inotify instance
        except Exception:  # pragma: no cover - best effort at shutdown
            pass
        self.close()
        if self.mcp is not None:
            try:
                await self.mcp.aclose()
            except Exception:  # pragma: no cover - best effort at shutdown
                pass
        if isinstance(self.client, _Closable):
            try:
                await self.client.aclose()
            except Exception:  # pragma: no cover - closing is best effort
                pass


__all__ = ["AgentSession", "SessionError", "ConfigError", "IDLE_NOTIFICATION_S"]
