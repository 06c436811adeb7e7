"""What a front end asks this machine before, beside or after a session, without opening one: the sessions of a
folder and their transcripts (``session/``), whether a folder is trusted (``permissions.trust``), whether its
settings can be read (``permissions.settings``: a file that cannot keeps the folder from opening), whether the
shell sandbox can start (``permissions.sandbox``), the suggested model names, and warming the engine's imports.

Every question that reads the disk or starts a process is ``async``: its work runs on a worker thread
(``util.threads.in_thread``), so a front end on the Qt thread never waits for it.

``LocalStore`` is the part of ``EngineClient`` every client shares (``hosts.HostClient``, ``hosts.SocketClient`` and
``SubprocessClient`` inherit it): our executor process writes the same JSONL store and honours the same trust store. For Claude Code
(``--executor claude``) the subprocess client answers ``list_sessions`` and ``history`` from Claude Code's own
``projects/`` folder instead (``client.claude_code``).
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

from desktop_agent.util.threads import in_thread

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionSummary:
    """One earlier session of a folder, for a sessions list."""

    session_id: str
    first_prompt: str
    message_count: int
    mtime: float


class LocalStore:
    """The folder-level questions of ``EngineClient``, answered from this machine's stores."""

    async def list_sessions(self, folder: str | os.PathLike[str]) -> list[SessionSummary]:
        """The folder's sessions in the store (any order; empty launches included)."""
        return await in_thread(lambda: store_sessions(folder))

    async def history(self, folder: str | os.PathLike[str], session_id: str) -> list[dict[str, Any]] | None:
        """A session's transcript for display, read without building the session (no model client); None when
        there is no such session or it cannot be read."""
        return await in_thread(lambda: store_history(folder, session_id))

    async def session_names(self) -> Any:
        """The names given to sessions and which are archived (``session.names.SessionNames``)."""
        from desktop_agent.session import names

        return await in_thread(names.load)

    async def rename_session(self, session_id: str, name: str) -> None:
        from desktop_agent.session import names

        await in_thread(lambda: names.rename(session_id, name))

    async def archive_session(self, session_id: str, archived: bool) -> None:
        from desktop_agent.session import names

        await in_thread(lambda: names.set_archived(session_id, archived))

    async def delete_session(self, folder: str | os.PathLike[str], session_id: str) -> str:
        """Delete a session: its transcript moved to the data directory's trash (``session.names.trash``); returns
        where it is now. ``FileNotFoundError`` when this store has no transcript of it."""
        from desktop_agent.session import names
        from desktop_agent.session.store import find_session

        def work() -> str:
            path = find_session(session_id, os.fspath(folder))
            if path is None:
                raise FileNotFoundError(f"no transcript for session {session_id}")
            return str(names.trash(path))

        return await in_thread(work)

    async def needs_trust(self, folder: str | os.PathLike[str]) -> bool:
        """The folder's settings grant rules, run hooks or start servers and it is not trusted yet."""
        from desktop_agent.permissions import trust

        return bool(await in_thread(lambda: trust.needs_trust_prompt(os.fspath(folder))))

    async def trust_details(self, folder: str | os.PathLike[str]) -> Any:
        """What trusting the folder would let run (``permissions.trust.TrustDetails``): the files that ask for it,
        their hook and MCP server commands, apiKeyHelper and grants."""
        from desktop_agent.permissions import trust

        return await in_thread(lambda: trust.trust_details(os.fspath(folder)))

    async def trust(self, folder: str | os.PathLike[str]) -> None:
        """Remember that the user trusts the folder."""
        from desktop_agent.permissions import trust

        await in_thread(lambda: trust.set_trusted(os.fspath(folder), True))

    async def settings_check(self, folder: str | os.PathLike[str]) -> tuple[str | None, list[str]]:
        """Can the folder's settings be read (managed, user, project, local)? ``(error, problems)``: the error that
        keeps the folder from opening — the file, line and column — or None, and the invalid entries of readable
        files (skipped; the others stay in force)."""
        return await in_thread(lambda: _settings_check(os.fspath(folder)))

    async def provider_models(self) -> ProviderModels:
        """The model names for the configured provider (an OpenAI-compatible server is asked for its list)."""
        return await in_thread(provider_models)

    async def sandbox_warning(self) -> str | None:
        """The sentence to show when the shell sandbox cannot start (None when it runs or is off on purpose);
        the first call probes bubblewrap (a process); the sandbox module is imported there too, off the Qt thread."""
        return await in_thread(_sandbox_warning)


def _sandbox_warning() -> str | None:
    from desktop_agent.permissions.sandbox import sandbox_warning

    return sandbox_warning()


def store_sessions(folder: str | os.PathLike[str]) -> list[SessionSummary]:
    """``LocalStore.list_sessions`` on this thread (reads every transcript's head)."""
    from desktop_agent.session.store import list_sessions

    return [SessionSummary(i.session_id, i.first_prompt, i.message_count, i.mtime)
            for i in list_sessions(os.fspath(folder))]


def store_history(folder: str | os.PathLike[str], session_id: str) -> list[dict[str, Any]] | None:
    """``LocalStore.history`` on this thread (reads the whole transcript)."""
    try:
        from desktop_agent.session.resume import history_for_display
        from desktop_agent.session.store import find_session, read_transcript

        path = find_session(session_id, os.fspath(folder))
        return history_for_display(read_transcript(path, full=True)) if path is not None else None
    except Exception:
        log.exception("could not read the transcript of %s", session_id)
        return None


def _settings_check(folder: str) -> tuple[str | None, list[str]]:
    from desktop_agent.permissions.settings import SettingsError, load_settings

    try:  # trusted: every entry is checked (nothing loaded here is used)
        loaded = load_settings(folder, trusted=True)
    except SettingsError as exc:
        return str(exc), []
    return None, list(loaded.problems)


def transcript_usage(entries: list[dict[str, Any]]) -> tuple[int, float]:
    """Tokens and cost of a transcript's model replies (each reply counted once, by message id)."""
    from desktop_agent.model.pricing import CostTracker

    tracker = CostTracker()
    seen: set[str] = set()
    for e in entries:
        if e.get("type") != "assistant":
            continue
        msg = e.get("message") or {}
        usage = msg.get("usage")
        mid = str(msg.get("id") or e.get("uuid") or id(e))
        if not isinstance(usage, dict) or mid in seen:
            continue
        seen.add(mid)
        tracker.add(str(msg.get("model") or ""), usage)
    return tracker.total_tokens, tracker.cost_usd


@dataclass(frozen=True)
class ProviderModels:
    """The models a model box offers for the configured provider: Claude's names for Anthropic; for an
    OpenAI-compatible server what its ``GET /v1/models`` lists (``error`` says why the listing failed: the box then
    offers none, and a name can still be typed)."""

    provider: str
    models: list[str]
    error: str | None = None


def provider_models() -> ProviderModels:
    """``LocalStore.provider_models`` on this thread (an OpenAI-compatible server: one HTTP request, 5 s at most)."""
    from desktop_agent.config import AppSettings, find_openai_key, resolve_provider

    try:
        settings = AppSettings.load()
    except Exception:
        settings = None
    provider = resolve_provider(None, settings)
    if provider != "openai":
        return ProviderModels(provider, suggested_models())
    from desktop_agent.model.openai_wire import list_models

    key, _source = find_openai_key()
    base = os.environ.get("OPENAI_BASE_URL") or (settings.openai_base_url if settings else None) or None
    try:
        return ProviderModels(provider, list_models(base, key))
    except Exception as exc:
        return ProviderModels(provider, [], f"{type(exc).__name__}: {exc}")


def suggested_models() -> list[str]:
    """The model names a model box offers."""
    from desktop_agent.model.client import SUGGESTED_MODELS

    return list(SUGGESTED_MODELS)


def prewarm() -> None:
    """``host.server.warm_imports`` on a worker thread (the host imported there too), so opening a folder does not
    wait."""
    def run() -> None:
        from desktop_agent.host.server import warm_imports

        warm_imports()

    threading.Thread(target=run, name="prewarm-engine", daemon=True).start()


def discard_empty_transcript(path: str, close: Any = None) -> bool:
    """``host.server.discard_empty_transcript`` (the window's close, with no loop left), imported when called: the
    host (engine, tools, MCP, hooks) is not imported at the window's first paint for it."""
    from desktop_agent.host.server import discard_empty_transcript as discard

    return discard(path, close)

