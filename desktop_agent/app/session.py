"""``AgentSession``: the composition root the CLI and the desktop window share.

settings and permissions (rules, mode, hooks, trust, ``env``) → model client → session transcript → tools.
Composition fails loudly: the permission, hook, settings and prompt modules are imported directly, and a
hooks configuration that cannot be loaded is a ``ConfigError`` at start-up, never a session without hooks.
``AgentSession.create`` starts a new session or resumes one (``resume=<id>`` / ``continue_latest``);
``submit(prompt)`` runs one user turn and yields ``AgentEvent``s:

1. auto-compaction first, when the conversation is over the §5.5 threshold (boundary + summary
   appended to the transcript; file attachments kept in memory only);
2. SessionStart (once) and UserPromptSubmit hooks: a blocked prompt ends the turn ``prompt_blocked``
   without a model call; hook context becomes an ``isMeta`` message after the prompt;
3. the user entry is written to the JSONL **before** the model is called;
4. the query loop runs with a fresh ``AbortSignal`` (``interrupt()`` fires it), and every new entry
   it produces is appended to ``messages`` and the transcript through ``on_message``; its model
   client is wrapped so that auto-compaction also happens between the requests of a long turn;
5. the permission state (mode + session grants) is written when it changed, so a resume restores it;
6. hooks outside turns: PreCompact/SessionStart(compact) around compaction, an ``idle_prompt`` Notification when
   ``idle_notification_s`` passes after a turn with no new prompt, SessionEnd at ``end(reason)``.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Sequence

from desktop_agent.config import AppSettings, find_api_key, resolve_model, resolve_provider
from desktop_agent.core.context import AbortSignal, ToolUseContext
from desktop_agent.core.events import Compacted, ErrorEvent, TurnFinished
from desktop_agent.core.messages import new_uuid, tool_result_ids, user_entry
from desktop_agent.model.pricing import CostTracker
from desktop_agent.session import compact as compaction
from desktop_agent.session.resume import history_for_display, load_conversation_for_resume
from desktop_agent.session.store import (
    SessionInfo, TranscriptStore, find_session, latest_session, read_transcript,
)
from desktop_agent.model.client import DEFAULT_MODEL  # re-exported for the CLI
from desktop_agent.session.store import list_sessions as _list_sessions

log = logging.getLogger(__name__)

INTERRUPTED_FOR_TOOL_USE = "[Request interrupted by user for tool use]"
INTERRUPTED = "[Request interrupted by user]"
IDLE_NOTIFICATION_S = 60.0  # the window's idle_prompt Notification after a turn (the reference's threshold)


class SessionError(Exception):
    """A session could not be created or resumed (unknown id, id in use, nothing to continue)."""


class _Interrupted(Exception):
    """The user interrupted the turn before the model loop started."""


class ConfigError(Exception):
    """Missing API key or another configuration problem, with a one-line message for the user."""


# ------------------------------------------------------------------------------------------ adapters


def _make_client(settings: AppSettings, provider: str | None = None) -> Any:
    """The model client from env + settings: the Messages API, or an OpenAI-compatible provider
    (``--provider openai`` / ``DESKTOP_AGENT_PROVIDER`` / settings; ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``),
    both under the same retry/watchdog policy. Raises ConfigError without an Anthropic API key."""
    provider = resolve_provider(provider, settings)
    if provider not in ("anthropic", "openai"):
        raise ConfigError(f"unknown provider {provider!r}: use anthropic or openai")
    if provider == "openai":
        from desktop_agent.config import find_openai_key
        from desktop_agent.model.anthropic_client import AnthropicClient

        okey, _ = find_openai_key()
        base = os.environ.get("OPENAI_BASE_URL") or settings.openai_base_url or None
        kw: dict[str, Any] = {"transport": "openai"}
        if not os.environ.get("DESKTOP_AGENT_STREAM_IDLE_TIMEOUT_S") and settings.stream_idle_timeout_s > 0:
            kw["idle_timeout_s"] = settings.stream_idle_timeout_s
        return AnthropicClient(okey or "", base, **kw)
    key, _source = find_api_key()
    if not key and not os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        raise ConfigError("no API key found: set ANTHROPIC_API_KEY (or save a key in the app's settings)")
    from desktop_agent.model.anthropic_client import AnthropicClient

    kwargs: dict[str, Any] = {"api_key": key or ""}  # else from_env sends ANTHROPIC_AUTH_TOKEN as a bearer token
    base_url = os.environ.get("ANTHROPIC_BASE_URL") or settings.base_url
    if base_url:
        kwargs["base_url"] = base_url
    if not os.environ.get("DESKTOP_AGENT_STREAM_IDLE_TIMEOUT_S") and settings.stream_idle_timeout_s > 0:
        kwargs["idle_timeout_s"] = settings.stream_idle_timeout_s
    return AnthropicClient.from_env(**kwargs)


def _load_permission_context(cwd: str, *, allowed: Sequence[str], disallowed: Sequence[str], settings_arg: str | None,
                             mode: str | None, add_dirs: Sequence[str], trusted: bool | None) -> Any:
    from desktop_agent.permissions.context import PermissionContext

    return PermissionContext.load(cwd, cli_allowed=list(allowed), cli_disallowed=list(disallowed),
                                  settings_arg=settings_arg, mode=mode, add_dirs=list(add_dirs), trusted=trusted)


def _make_hooks(permission_context: Any) -> Any:
    """The session's HookRunner over the hooks the settings allow (a trusted folder's project hooks included).

    Fails loudly: an error here is a start-up error (``ConfigError``), never a session without its hooks."""
    from desktop_agent.permissions.hooks import HookRunner

    try:
        return HookRunner.from_permission_context(permission_context)
    except Exception as exc:
        raise ConfigError(f"could not load the hooks from the settings: {type(exc).__name__}: {exc}") from exc


async def _build_system_prompt(cwd: str, model: str, working_dirs: list[str], system_prompt: str | None,
                              append: str | None) -> list[dict[str, Any]]:
    """The session's system blocks (identity, environment with git status, memory files)."""
    from desktop_agent.app.system_prompt import build_system_prompt

    return await build_system_prompt(cwd, model=model, custom_prompt=system_prompt, append_prompt=append,
                                     additional_dirs=working_dirs[1:])


def _tool_names_denied(permission_context: Any) -> set[str]:
    """Whole-tool deny rules remove the tool from the request (App. A)."""
    from desktop_agent.tools.registry import all_builtin_tools

    names = set(permission_context.disabled_tools)
    for tool in all_builtin_tools():
        if permission_context.whole_tool_rule("deny", tool.name) is not None:
            names.add(tool.name)
    return names


def _make_file_history(session_id: str) -> Any:
    """Backups before each write (``session.history``), under the app's data dir."""
    from desktop_agent.config import data_dir
    from desktop_agent.session.history import FileHistory

    try:
        return FileHistory(data_dir(), session_id)
    except Exception as exc:  # pragma: no cover - backups are a safety net, not a precondition
        log.warning("file history disabled: %s", exc)
        return None


def _iso_to_ms(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    from datetime import datetime

    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


class _CompactingClient:
    """The session's model client as the query loop sees it: before each request of a turn, auto-compaction
    (SPEC §5.5) runs when the conversation is over the threshold, and once a turn has compacted, its requests
    are built from the session's messages after the boundary (the loop's own copy still holds the rest).

    The session's ``messages`` mirror the loop's (every new entry arrives through ``on_message``), so
    ``normalize_for_api(messages_after_boundary(session.messages))`` is the loop's conversation minus what the
    summary replaced. Everything else (``aclose``, counters) passes through to the real client.
    """

    def __init__(self, session: AgentSession, inner: Any):
        self._session = session
        self._inner = inner
        self._requests = 0

    async def _prepare(self, request: Any) -> Any:
        s = self._session
        self._requests += 1
        # the first request of a turn was checked before the prompt was recorded (``submit``)
        compacted = self._requests > 1 and await s.compact_before_request(s.messages) is not None
        if compacted or s._compacted_this_turn:
            import dataclasses

            from desktop_agent.core.messages import normalize_for_api

            request = dataclasses.replace(
                request, messages=normalize_for_api(compaction.messages_after_boundary(s.messages)))
        return request

    async def stream(self, request: Any, on_retry: Any = None) -> AsyncIterator[dict[str, Any]]:
        request = await self._prepare(request)
        stream = self._inner.stream(request, on_retry=on_retry)
        try:
            async for event in stream:
                yield event
        finally:
            closer = getattr(stream, "aclose", None)
            if closer is not None:
                await closer()

    async def create(self, request: Any, on_retry: Any = None) -> dict[str, Any]:
        request = await self._prepare(request)
        return await self._inner.create(request, on_retry=on_retry)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


# -------------------------------------------------------------------------------------------- session


class AgentSession:
    """One conversation in one working directory. Create with ``AgentSession.create``."""

    def __init__(self) -> None:  # use create()
        self.session_id: str = ""
        self.cwd: str = ""
        self.settings: AppSettings = AppSettings()
        self.client: Any = None
        self.model: str = DEFAULT_MODEL
        self.store: TranscriptStore | None = None
        self.messages: list[dict[str, Any]] = []
        self.ctx: ToolUseContext | None = None
        self.permission_context: Any = None
        self.tools: list[Any] = []
        self._builtin_tools: list[Any] = []
        self.mcp: Any = None  # McpManager when servers are configured
        # The system blocks, built at the first turn (git status is an async subprocess).
        self.system_prompt: list[dict[str, Any]] | None = None
        self.chosen_model: str | None = None  # picked during the session (set_model); kept on resume
        self._prompt_args: tuple[Any, ...] = ([], None, None)
        self.max_turns: int | None = None
        self.max_tokens: int = 32_000
        self.cost = CostTracker()
        self.api_duration_ms: float = 0.0
        self.compact_state = compaction.AutoCompactState()
        self.resumed: bool = False
        self.resume_info: Any = None
        self.auto_compact: bool = True
        self.streaming_tool_execution: bool = True
        self.thinking: dict[str, Any] | None = None
        self.include_stream_events = False
        self.last_prompt_uuid: str | None = None
        self._session_started = False
        self._compacted_this_turn = False
        self._side_events: list[Any] = []  # events produced outside the loop's stream (mid-turn compaction)
        self._start_context: list[str] = []
        self._running = False
        self._turn_abort: AbortSignal | None = None
        self._listeners: list[Callable[[dict[str, Any]], None]] = []
        # Seconds the session may sit idle after a turn before an ``idle_prompt`` Notification (App. B §B.5);
        # None: never (the CLI). The window sets IDLE_NOTIFICATION_S.
        self.idle_notification_s: float | None = None
        self._idle_timer: Any = None
        self._ended = False

    # ---------------------------------------------------------------------------------- creation

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str],
        *,
        settings: AppSettings | None = None,
        client: Any = None,
        prompter: Any = None,
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
        hooks: Any = None,
        mcp_config: Sequence[str] = (),
        provider: str | None = None,
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
        self.permission_context = _load_permission_context(
            self.cwd, allowed=allowed_tools, disallowed=disallowed_tools, settings_arg=settings_arg,
            mode=permission_mode, add_dirs=add_dirs, trusted=trusted)
        os.environ.update(self.permission_context.env)
        # the hooks the settings allow; a configuration that cannot be loaded stops here, before any file
        hooks = hooks if hooks is not None else _make_hooks(self.permission_context)

        # 0b. the model client: a missing key must not leave a session file behind
        self.client = client if client is not None else _make_client(self.settings, provider)

        # 1. which transcript
        entries: list[dict[str, Any]] | None = None
        path: Path | None = None
        if resume:
            path = find_session(resume, self.cwd)
            if path is None:
                raise SessionError(f"No conversation found with session ID: {resume}")
            self.session_id = resume
        elif continue_latest:
            info = latest_session(self.cwd)
            if info is None:
                raise SessionError("No conversation found to continue")
            path = Path(info.path)
            self.session_id = info.session_id
        if path is not None:
            try:
                with open(path, "rb"):
                    pass
            except OSError as exc:
                raise SessionError(f"cannot read the transcript of session {self.session_id}: {exc}") from exc
            entries = read_transcript(path)
            resumed = load_conversation_for_resume(entries)
            self.resume_info = resumed
            self.resumed = True
            self.store = TranscriptStore.open_existing(path, self.session_id, self.cwd,
                                                       entries=read_transcript(path, full=True))
            self.store.set_chain_tip(resumed.chain_tip)
            self.messages = resumed.messages
        else:
            try:
                self.store = TranscriptStore.create(self.cwd, session_id)
            except FileExistsError as exc:
                raise SessionError(str(exc)) from exc
            self.session_id = self.store.session_id

        # 2. permissions (mode and session grants restored on resume; an explicit mode wins), and
        # a model picked during the session (an explicit --model wins)
        if self.resumed and self.resume_info.permission_state:
            state = self.resume_info.permission_state
            if model is None and isinstance(state.get("model"), str) and state["model"]:
                self.model = self.chosen_model = state["model"]
            self._restore_permission_state(state, keep_mode=permission_mode is not None)

        # 3. tools
        from desktop_agent.tools.registry import default_tools

        offered = default_tools(list(tools) if tools is not None else None)
        denied = _tool_names_denied(self.permission_context)
        self.tools = [t for t in offered if t.name not in denied]
        self._builtin_tools = list(self.tools)
        # MCP servers (a project's .mcp.json only in a trusted folder); they start before the first request
        from desktop_agent.mcp.config import load_server_configs

        try:
            mcp_configs = load_server_configs(self.cwd, trusted=bool(self.permission_context.trusted),
                                              cli_values=list(mcp_config), warnings=self.permission_context.warnings)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        if mcp_configs:
            from desktop_agent.mcp.client import McpManager

            self.mcp = McpManager(mcp_configs)

        # 4. context
        working_dirs = list(self.permission_context.working_dirs)
        self.ctx = ToolUseContext(
            cwd=self.cwd, working_dirs=working_dirs, permission_context=self.permission_context,
            prompter=prompter, hooks=hooks,
            session_id=self.session_id, transcript_path=str(self.store.path), tools=list(self.tools),
        )
        self.ctx.file_history = _make_file_history(self.session_id)
        self._restore_read_state()

        # 5. model
        self._prompt_args = (working_dirs, system_prompt, append_system_prompt)

        # the clean-up messages of a resume (continuation, synthetic reply) go to the file now
        if self.resumed:
            for entry in self.resume_info.added:
                self.store.record(entry)
        else:
            # a new session's file holds only its two header lines until something differs from the default
            # (a launch mode other than default is written with the first message)
            self.store.note_permission_state({"mode": "default", "context": {
                "mode": "default", "session_rules": [], "session_dirs": []}})
            return self
        self._persist_permission_state()
        return self

    # ---------------------------------------------------------------------------------- properties

    @property
    def transcript_path(self) -> str:
        return str(self.store.path) if self.store else ""

    @property
    def permission_mode(self) -> str:
        return str(self.permission_context.mode)

    @property
    def total_cost_usd(self) -> float:
        return self.cost.cost_usd

    @property
    def total_usage(self) -> dict[str, int]:
        return dict(self.cost.usage)

    @property
    def running(self) -> bool:
        return self._running

    def history(self) -> list[dict[str, Any]]:
        """The whole transcript for display (file order, pre-compaction messages kept)."""
        return history_for_display(read_transcript(self.transcript_path, full=True))

    @staticmethod
    def list_sessions(cwd: str | os.PathLike[str]) -> list[SessionInfo]:
        return _list_sessions(os.fspath(cwd))

    def add_message_listener(self, fn: Callable[[dict[str, Any]], None]) -> None:
        """Called with each entry as it is recorded (the UI may mirror the transcript)."""
        self._listeners.append(fn)

    # ---------------------------------------------------------------------------------- permissions

    def set_permission_mode(self, mode: str) -> None:
        """Switch the mode mid-session (the UI's selector, the SDK's ``set_permission_mode``)."""
        from desktop_agent.core.permission import PERMISSION_MODES

        if mode == "manual":
            mode = "default"
        if mode not in PERMISSION_MODES:
            raise ValueError(f"unknown permission mode: {mode}")
        self._set_mode_raw(mode)
        self._persist_permission_state()

    def _permission_state(self) -> dict[str, Any]:
        pc = self.permission_context
        state: dict[str, Any] = {"mode": self.permission_mode}
        if self.chosen_model:
            state["model"] = self.chosen_model
        state["context"] = pc.to_json()
        return state

    def _persist_permission_state(self) -> None:
        if self.store is not None:
            try:
                self.store.record_permission_state(self._permission_state())
            except OSError as exc:  # pragma: no cover - disk trouble is reported at the next record
                log.warning("could not record the permission state: %s", exc)

    def _restore_permission_state(self, state: dict[str, Any], keep_mode: bool) -> None:
        pc = self.permission_context
        explicit_mode = self.permission_mode
        context = state.get("context")
        try:
            if isinstance(context, dict):
                pc.restore(context)
            if keep_mode:
                self._set_mode_raw(explicit_mode)
            elif state.get("mode"):
                self._set_mode_raw(str(state["mode"]))
        except Exception as exc:
            log.warning("could not restore the session's permission state: %s", exc)
        if self.store is not None:
            self.store.note_permission_state(self._permission_state())

    def _set_mode_raw(self, mode: str) -> None:
        self.permission_context.set_mode(mode)

    def _restore_read_state(self) -> None:
        """After a resume, the files the model read in full (and did not change since) count as read.

        Each restored entry carries the time its result was recorded, so a file changed on disk after that
        is stale for Edit/Write exactly as in the original session (and a full read's content comparison
        still forgives a mere touch). Partial reads and files later written by Edit/Write are not restored:
        the model reads them again.
        """
        if not self.resumed or self.ctx is None:
            return
        from desktop_agent.core.context import FileStateEntry, expand_path

        calls: dict[str, dict[str, Any]] = {}
        restored: dict[str, FileStateEntry] = {}
        for m in self.messages:
            content = (m.get("message") or {}).get("content")
            if not isinstance(content, list):
                continue
            if m.get("type") == "assistant":
                for b in content:
                    if isinstance(b, dict) and b.get("type") == "tool_use":
                        calls[str(b.get("id"))] = b
                continue
            for b in content:
                if not (isinstance(b, dict) and b.get("type") == "tool_result") or b.get("is_error"):
                    continue
                call = calls.get(str(b.get("tool_use_id")))
                inp = call.get("input") if call else None
                if not isinstance(inp, dict) or not isinstance(inp.get("file_path"), str):
                    continue
                path = expand_path(inp["file_path"], self.cwd)
                if call.get("name") in ("Edit", "Write", "MultiEdit", "NotebookEdit"):
                    restored.pop(path, None)
                    continue
                result = m.get("toolUseResult")
                if call.get("name") != "Read" or not isinstance(result, dict) or result.get("type") != "text":
                    continue
                if inp.get("limit") is not None or (inp.get("offset") or 1) > 1:
                    continue
                text = (result.get("file") or {}).get("content")
                stamp = _iso_to_ms(m.get("timestamp"))
                if isinstance(text, str) and stamp:
                    restored[path] = FileStateEntry(content=text, timestamp=stamp, offset=1, limit=None)
        for path, entry in restored.items():
            self.ctx.read_file_state.set(path, entry)

    # ---------------------------------------------------------------------------------- turns

    def interrupt(self) -> None:
        """Abort the running turn (stream, permission wait, cancellable tools)."""
        if self._turn_abort is not None:
            self._turn_abort.abort("user_interrupted")

    def _record(self, entry: dict[str, Any]) -> None:
        if self.store is not None:
            self.store.record(entry)
        for fn in list(self._listeners):
            try:
                fn(entry)
            except Exception:  # pragma: no cover - a listener must not break persistence
                log.exception("message listener failed")

    def _on_message(self, entry: dict[str, Any]) -> None:
        """The loop's persistence hook: every new entry, in order, as it appears."""
        uid = entry.get("uuid")
        if uid and self.store is not None and self.store.contains(uid):
            return
        if not any(m is entry for m in self.messages[-4:]):
            self.messages.append(entry)
        self._record(entry)
        if entry.get("type") == "user" and tool_result_ids(entry):
            self._persist_permission_state()

    def _tool_schemas(self) -> list[dict[str, Any]]:
        out = []
        for t in self.tools:
            try:
                out.append(t.to_api_schema())
            except Exception:
                pass
        return out

    async def _compact(self, trigger: str, custom_instructions: str | None = None) -> Compacted:
        result = await compaction.compact_conversation(
            self.client, self.model, self.messages, transcript_path=self.transcript_path,
            read_file_state=self.ctx.read_file_state if self.ctx else None, tools=self._tool_schemas(),
            trigger=trigger, custom_instructions=custom_instructions, hooks=self._hooks(), ctx=self.ctx)
        for entry in (result.boundary, result.summary):
            self.messages.append(entry)
            self._record(entry)
        self.messages.extend(result.attachments)  # in memory only (§5.5)
        return Compacted(pre_tokens=result.pre_tokens, summary=result.summary_text)

    async def compact_before_request(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """Mid-turn auto-compaction for the query loop (SPEC §5.5), to be called before each model request.

        ``messages`` are the loop's entries. When they are over the threshold, the conversation is summarised
        (boundary + summary recorded, attachments in memory) and the new entries are returned for the loop to
        append — the next request then starts at the boundary. None: nothing to do (or compaction failed;
        after 3 failures in a row the session stops trying). The loop does not call this yet.
        """
        if not compaction.should_auto_compact(messages, self.model, self.compact_state, self.auto_compact):
            return None
        self.compact_state.attempts += 1
        try:
            result = await compaction.compact_conversation(
                self.client, self.model, messages, transcript_path=self.transcript_path,
                read_file_state=self.ctx.read_file_state if self.ctx else None, tools=self._tool_schemas(),
                trigger="auto", continuation=True, hooks=self._hooks(), ctx=self.ctx)
        except Exception as exc:
            self.compact_state.consecutive_failures += 1
            self.compact_state.last_error = str(exc)
            log.warning("auto-compaction failed (%d in a row): %s", self.compact_state.consecutive_failures, exc)
            return None
        self.compact_state.consecutive_failures = 0
        for entry in (result.boundary, result.summary):
            self.messages.append(entry)
            self._record(entry)
        self.messages.extend(result.attachments)
        self._compacted_this_turn = True
        self._side_events.append(Compacted(pre_tokens=result.pre_tokens, summary=result.summary_text))
        return result.messages

    async def compact(self, custom_instructions: str | None = None) -> Compacted:
        """Manual compaction (the ``/compact`` command)."""
        if self._running:
            raise RuntimeError("a turn is running")
        self._running = True
        try:
            return await self._compact("manual", custom_instructions)
        finally:
            self._running = False

    def set_model(self, model: str | None) -> None:
        """Switch the model from the next request on (the window's model box, the SDK's ``set_model``);
        the system prompt, which names the model, is rebuilt for it, and a resume keeps the choice
        (recorded with the permission state)."""
        self.model = self.chosen_model = (model or "").strip() or DEFAULT_MODEL
        self.system_prompt = None
        self._persist_permission_state()

    async def system_prompt_blocks(self) -> list[dict[str, Any]]:
        if self.system_prompt is None:
            working_dirs, custom, append = self._prompt_args
            self.system_prompt = await _build_system_prompt(self.cwd, self.model, working_dirs, custom, append)
        return list(self.system_prompt)

    def messages_for_query(self) -> list[dict[str, Any]]:
        return compaction.messages_after_boundary(self.messages)

    async def submit(self, prompt: str | list[dict[str, Any]], **entry_extra: Any) -> AsyncIterator[Any]:
        """Run one user turn; yields AgentEvents ending with one TurnFinished."""
        if self._running:
            raise RuntimeError("a turn is already running")
        self._running = True
        self._cancel_idle_timer()
        abort = AbortSignal()
        self._turn_abort = abort
        assert self.ctx is not None
        self.ctx.abort = abort
        self.ctx.extras["prompt_id"] = new_uuid()  # hook inputs carry it (App. B §B.5): a new id per user prompt
        t0 = time.perf_counter()
        try:
            await self._until_aborted(self.start_mcp(), abort)
            # 1. auto-compaction before the new input joins the conversation
            extra = compaction.rough_tokens(prompt)
            if compaction.should_auto_compact(self.messages, self.model, self.compact_state, self.auto_compact,
                                              extra_tokens=extra):
                self.compact_state.attempts += 1
                try:
                    event = await self._until_aborted(self._compact("auto"), abort)
                    self.compact_state.consecutive_failures = 0
                    yield event
                except _Interrupted:
                    yield TurnFinished(reason="aborted_streaming", error="Interrupted during compaction",
                                       duration_ms=(time.perf_counter() - t0) * 1000)
                    return
                except Exception as exc:
                    self.compact_state.consecutive_failures += 1
                    self.compact_state.last_error = str(exc)
                    log.warning("auto-compaction failed (%d in a row): %s", self.compact_state.consecutive_failures,
                                exc)
                    yield ErrorEvent(message=f"Auto-compaction failed: {exc}", kind="compact")

            # 2. SessionStart (first turn) and UserPromptSubmit hooks; a blocked prompt is never sent
            contexts: list[str] = []
            blocked = await self._prompt_hooks(prompt, contexts)
            if blocked is not None:
                yield ErrorEvent(message=f"UserPromptSubmit operation blocked by hook:\n{blocked}", kind="hook")
                yield TurnFinished(reason="prompt_blocked", error=blocked,
                                   duration_ms=(time.perf_counter() - t0) * 1000)
                return

            # 3. the user's input is on disk before the model is called
            entry = user_entry(prompt, **entry_extra)
            self.last_prompt_uuid = entry["uuid"]
            self.messages.append(entry)
            try:
                self._record(entry)
            except OSError as exc:  # disk full, permissions: the user sees it; the turn still runs
                yield ErrorEvent(message=f"Could not save the transcript: {exc}", kind="internal")
            for text in contexts:  # hook context rides along as a meta message after the prompt
                meta = user_entry([{"type": "text", "text": f"<system-reminder>\n{text}\n</system-reminder>"}],
                                  isMeta=True)
                self.messages.append(meta)
                try:
                    self._record(meta)
                except OSError:
                    pass
            self._persist_permission_state()

            # 4. the loop
            from desktop_agent.engine.loop import QueryParams, query

            params = QueryParams(
                messages=self.messages_for_query(), ctx=self.ctx, client=_CompactingClient(self, self.client),
                model=self.model,
                system_prompt=await self.system_prompt_blocks(), max_turns=self.max_turns, max_tokens=self.max_tokens,
                thinking=self.thinking, streaming_tool_execution=self.streaming_tool_execution,
                on_message=self._on_message, cost_tracker=self.cost,
                include_stream_events=self.include_stream_events,
            )
            finished: TurnFinished | None = None
            self._compacted_this_turn = False
            try:
                async for event in query(params):
                    while self._side_events:
                        yield self._side_events.pop(0)
                    if isinstance(event, TurnFinished):
                        finished = event
                        self.api_duration_ms += event.duration_api_ms
                        if event.reason in ("aborted_streaming", "aborted_tools"):
                            for extra_event in self._interrupt_notice(event.reason):
                                yield extra_event
                    yield event
            finally:
                self._compacted_this_turn = False
                self._side_events.clear()
                # context modifiers may have replaced the context during the turn
                if params.ctx is not self.ctx:
                    self.ctx = params.ctx
            if finished is None:  # pragma: no cover - the loop always ends with one
                yield TurnFinished(reason="completed", duration_ms=(time.perf_counter() - t0) * 1000)
        finally:
            self._running = False
            self._turn_abort = None
            self._persist_permission_state()
            if self.store is not None:
                self.store.sync()
            self._start_idle_timer()

    # ---------------------------------------------------------------------------------- hooks outside turns

    def _hooks(self) -> Any:
        return self.ctx.hooks if self.ctx is not None else None

    def has_hooks(self, event: str) -> bool:
        """Whether any hook (settings or a front end's callbacks) is registered for ``event``."""
        has = getattr(self._hooks(), "has_hooks", None)
        return bool(callable(has) and has(event))

    def set_prompter(self, prompter: Any) -> None:
        """The front end's answerer of asks; None leaves them to PermissionRequest hooks, else an ask is denied."""
        self.ctx.prompter = prompter

    def hook_runner(self) -> Any:
        """The session's ``HookRunner``, made empty when it has none, so a front end can register callbacks."""
        from desktop_agent.permissions.hooks import HookRunner

        if not isinstance(self.ctx.hooks, HookRunner):
            self.ctx.hooks = HookRunner()
        return self.ctx.hooks

    def _start_idle_timer(self) -> None:
        """After a turn: an ``idle_prompt`` Notification if no prompt comes within ``idle_notification_s``."""
        self._cancel_idle_timer()
        if self.idle_notification_s is None or self._ended:
            return
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._idle_timer = loop.call_later(self.idle_notification_s, self._idle_fired)

    def _cancel_idle_timer(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _idle_fired(self) -> None:
        self._idle_timer = None
        hooks = self._hooks()
        if hooks is not None and hasattr(hooks, "notify_soon") and not self._running and not self._ended:
            from desktop_agent.permissions.hooks import IDLE_PROMPT_MESSAGE

            hooks.notify_soon(IDLE_PROMPT_MESSAGE, self.ctx, "idle_prompt")

    async def end(self, reason: str = "other") -> None:
        """The session closes: SessionEnd hooks (``reason``: ``clear``, ``logout``, ``prompt_input_exit`` or
        ``other``) once, for a session whose SessionStart ran, after the background Notification hooks; then
        ``aclose``. A second call only closes."""
        hooks = self._hooks()
        first, self._ended = not self._ended, True
        self._cancel_idle_timer()
        if first and hooks is not None:
            try:
                if hasattr(hooks, "drain"):
                    await hooks.drain()
                has = getattr(hooks, "has_hooks", lambda *a: True)
                if self._session_started and hasattr(hooks, "session_end") and has("SessionEnd", reason):
                    await hooks.session_end(reason, self.ctx)
            except Exception:  # pragma: no cover - a hook must not keep the session open
                log.exception("SessionEnd hooks failed")
        await self.aclose()

    def _interrupt_notice(self, reason: str) -> list[Any]:
        """After an abort: the ``[Request interrupted by user…]`` user message, unless the loop added one."""
        from desktop_agent.core.events import UserMessage
        from desktop_agent.core.messages import text_of

        for m in reversed(self.messages[-3:]):
            if m.get("type") == "user" and text_of(m).startswith("[Request interrupted by user"):
                return []
        text = INTERRUPTED_FOR_TOOL_USE if reason == "aborted_tools" or (
            self.messages and tool_result_ids(self.messages[-1])) else INTERRUPTED
        entry = user_entry([{"type": "text", "text": text}])
        self.messages.append(entry)
        self._record(entry)
        return [UserMessage(message=entry)]

    @staticmethod
    async def _until_aborted(coro: Any, abort: AbortSignal) -> Any:
        """Await ``coro`` unless the turn is interrupted first (then it is cancelled: ``_Interrupted``)."""
        import asyncio

        task = asyncio.ensure_future(coro)
        waiter = asyncio.ensure_future(abort.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if task.done():
            return task.result()
        task.cancel()
        try:
            await task
        except BaseException:
            pass
        raise _Interrupted()

    async def _prompt_hooks(self, prompt: Any, contexts: list[str]) -> str | None:
        """Runs SessionStart once per session object, then UserPromptSubmit. Returns a block reason, or None."""
        hooks = self.ctx.hooks if self.ctx is not None else None
        if hooks is None:
            return None

        def has(event: str) -> bool:
            check = getattr(hooks, "has_hooks", None)
            return bool(check(event)) if callable(check) else hasattr(hooks, "user_prompt_submit")

        if not self._session_started:
            self._session_started = True
            if hasattr(hooks, "session_start") and has("SessionStart"):
                out = await hooks.session_start("resume" if self.resumed else "startup", self.ctx)
                if getattr(out, "additional_context", None):
                    self._start_context.append(f"SessionStart hook additional context: {out.additional_context}")
        if hasattr(hooks, "user_prompt_submit") and has("UserPromptSubmit"):
            text = prompt if isinstance(prompt, str) else "".join(
                b.get("text", "") for b in prompt if isinstance(b, dict) and b.get("type") == "text")
            out = await hooks.user_prompt_submit(text, self.ctx)
            if getattr(out, "block", False) or getattr(out, "stop", False):
                return getattr(out, "reason", None) or getattr(out, "stop_reason", None) or "blocked"
            if getattr(out, "additional_context", None):
                contexts.append(f"UserPromptSubmit hook additional context: {out.additional_context}")
        contexts[:0] = self._start_context  # SessionStart's context goes with the first prompt actually sent
        self._start_context = []
        return None

    async def start_mcp(self) -> None:
        """Start the MCP servers (once) and offer the tools of those that are up; whole-tool deny rules
        (``mcp__server``, ``mcp__server__tool``) remove them from the request as they do built-in tools."""
        if self.mcp is None:
            return
        await self.mcp.start()
        pc = self.permission_context
        extra = [t for t in self.mcp.tools() if pc.whole_tool_rule("deny", t.name) is None]
        self.tools = self._builtin_tools + extra
        if self.ctx is not None:
            self.ctx.tools = list(self.tools)

    def mcp_status(self) -> list[dict[str, Any]]:
        """Each MCP server's state for the Servers view and ``system/init``: name, status, tools, error."""
        return self.mcp.status() if self.mcp is not None else []

    async def run(self, prompt: str) -> list[Any]:
        """Convenience for tests and scripts: run a turn and return all its events."""
        return [ev async for ev in self.submit(prompt)]

    def close(self) -> None:
        """Flush and close the transcript (the session can still be resumed later)."""
        if self.store is not None:
            self.store.close()

    async def aclose(self) -> None:
        """``close()`` plus background shells and the model client's connections."""
        try:
            from desktop_agent.tools.bash import kill_background_shells

            await kill_background_shells(self.ctx)
        except Exception:  # pragma: no cover - best effort at shutdown
            pass
        self.close()
        if self.mcp is not None:
            try:
                await self.mcp.aclose()
            except Exception:  # pragma: no cover - best effort at shutdown
                pass
        closer = getattr(self.client, "aclose", None)
        if closer is not None:
            try:
                await closer()
            except Exception:  # pragma: no cover - closing is best effort
                pass


__all__ = ["AgentSession", "SessionError", "ConfigError", "DEFAULT_MODEL"]
