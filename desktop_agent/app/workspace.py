"""The session's place on disk: which transcript it writes (new, ``--resume <id>``, ``--continue``), what a resume
restores (the files read in full, the permission mode and session grants, a model picked during the session) and
the permission state recorded in the transcript whenever it changes.

The working directories themselves are the permission context's (``PermissionContext.working_dirs``: the folder
plus ``--add-dir`` / ``additionalDirectories`` / session grants); this module only persists and restores them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from desktop_agent.core.context import FileStateEntry, ReadFileState, expand_path
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.session.resume import ResumedConversation, load_conversation_for_resume
from desktop_agent.session.store import TranscriptStore, find_session, latest_session, read_transcript

log = logging.getLogger(__name__)

_WRITING_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
# What a new session's file holds as its permission state until something differs from it.
DEFAULT_PERMISSION_STATE: dict[str, Any] = {"mode": "default", "context": {
    "mode": "default", "session_rules": [], "session_dirs": []}}


class SessionError(Exception):
    """A session could not be created or resumed (unknown id, id in use, nothing to continue)."""


@dataclass
class Transcript:
    """The transcript a session writes, and what a resume read from it (None for a new session)."""

    store: TranscriptStore
    session_id: str
    resumed: ResumedConversation | None = None


def open_transcript(cwd: str, *, resume: str | None, continue_latest: bool, session_id: str | None) -> Transcript:
    """The session ``resume`` names, else the folder's latest (``continue_latest``), else a new one."""
    path: Path | None = None
    if resume:
        path = find_session(resume, cwd)
        if path is None:
            raise SessionError(f"No conversation found with session ID: {resume}")
        found_id = resume
    elif continue_latest:
        info = latest_session(cwd)
        if info is None:
            raise SessionError("No conversation found to continue")
        path = Path(info.path)
        found_id = info.session_id
    if path is None:
        try:
            store = TranscriptStore.create(cwd, session_id)
        except FileExistsError as exc:
            raise SessionError(str(exc)) from exc
        return Transcript(store=store, session_id=store.session_id)
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise SessionError(f"cannot read the transcript of session {found_id}: {exc}") from exc
    entries = read_transcript(path, full=True)  # parsed once: the resume's chain stops at a compact boundary itself
    resumed = load_conversation_for_resume(entries)
    store = TranscriptStore.open_existing(path, found_id, cwd, entries=entries)
    store.set_chain_tip(resumed.chain_tip)
    return Transcript(store=store, session_id=found_id, resumed=resumed)


# ------------------------------------------------------------------------------------- permission state


def permission_state(pc: PermissionContext, chosen_model: str | None) -> dict[str, Any]:
    """What the transcript records: the mode, a model picked during the session, the session's grants."""
    state: dict[str, Any] = {"mode": str(pc.mode)}
    if chosen_model:
        state["model"] = chosen_model
    state["context"] = pc.to_json()
    return state


def persist_permission_state(store: TranscriptStore, state: dict[str, Any]) -> None:
    """Record ``state`` when it differs from the last one recorded."""
    try:
        store.record_permission_state(state)
    except OSError as exc:  # pragma: no cover - disk trouble is reported at the next record
        log.warning("could not record the permission state: %s", exc)


def restore_permission_state(pc: PermissionContext, state: dict[str, Any], *, keep_mode: bool) -> None:
    """A resume's grants and mode back into ``pc``; ``keep_mode``: an explicit launch mode wins."""
    explicit_mode = str(pc.mode)
    context = state.get("context")
    try:
        if isinstance(context, dict):
            pc.restore(context)
        if keep_mode:
            pc.set_mode(explicit_mode)
        elif state.get("mode"):
            pc.set_mode(str(state["mode"]))
    except Exception as exc:
        log.warning("could not restore the session's permission state: %s", exc)


# ------------------------------------------------------------------------------------------ read state


def _iso_to_ms(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def restore_read_state(messages: list[dict[str, Any]], cwd: str, read_file_state: ReadFileState) -> None:
    """After a resume, the files the model read in full (and did not change since) count as read.

    Each restored entry carries the time its result was recorded, so a file changed on disk after that
    is stale for Edit/Write exactly as in the original session (and a full read's content comparison
    still forgives a mere touch). Partial reads and files later written by Edit/Write are not restored:
    the model reads them again.
    """
    calls: dict[str, dict[str, Any]] = {}
    restored: dict[str, FileStateEntry] = {}
    for m in messages:
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
            if call is None or not isinstance(inp, dict) or not isinstance(inp.get("file_path"), str):
                continue
            path = expand_path(inp["file_path"], cwd)
            if call.get("name") in _WRITING_TOOLS:
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
        read_file_state.set(path, entry)
