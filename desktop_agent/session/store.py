"""The session transcript: one append-only JSONL file per session (SPEC §5.1, §5.2).

Location: ``<data dir>/projects/<sanitized cwd>/<session id>.jsonl`` (non-alphanumerics of the
absolute working directory become ``-``, as Claude Code names its project folders).

A new session starts with two lines, ``file-history-snapshot`` and ``session-meta``. Message
entries (``user``/``assistant``/``system``) are appended as they happen, one line each, flushed at
every line; ``record`` skips UUIDs already in the file (re-recording is harmless) and links each new
entry to the last chain participant through ``parentUuid`` (a compact boundary keeps ``null``).
``progress`` entries and entries marked ``isEphemeral`` (post-compact file attachments) are never
written. ``permission-state`` lines (our own type) carry the session's permission mode and grants,
so a resumed session gets them back; ``change-revert`` lines (our own type, ``record_change``, read by
``session.changes``) record a revert or redo made in the changes panel. Neither is a chain participant, and
the reference's loader skips both (SPEC §5.3). Appending is serialised by a lock: the panel records from a
worker thread while a turn may be writing.

Reading never crashes on a bad line: a corrupt or half-written line is skipped with a warning. A large file is
parsed with the cyclic garbage collector paused, and what it made is frozen out of later collections
(``_quiet_gc``): a 50 MB transcript is millions of small objects, and every full collection over them held the GIL
— the window's Qt thread too — for up to a quarter of a second.
"""

from __future__ import annotations

import gc
import hashlib
import io
import json
import logging
import os
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from desktop_agent import __version__
from desktop_agent.util.dirs import projects_dir
from desktop_agent.util.input_guard import clip_depth
from desktop_agent.core.messages import CHANGE_RECORD, CHANGE_RECORDS_TOLD, _now_iso, new_uuid, text_of

log = logging.getLogger(__name__)

MESSAGE_TYPES = ("user", "assistant", "attachment", "system")
NEVER_LOGGED = ("progress",)
MAX_SANITIZED_LENGTH = 200
LARGE_TRANSCRIPT_BYTES = 5 * 1024 * 1024
PERMISSION_STATE = "permission-state"


def sanitize_path(path: str) -> str:
    """``/home/a/my proj`` → ``-home-a-my-proj`` (long names are cut and given a hash suffix)."""
    name = re.sub(r"[^a-zA-Z0-9]", "-", path)
    if len(name) <= MAX_SANITIZED_LENGTH:
        return name
    digest = hashlib.sha256(path.encode("utf-8")).hexdigest()[:12]
    return f"{name[:MAX_SANITIZED_LENGTH]}-{digest}"


def project_dir(cwd: str) -> Path:
    return projects_dir() / sanitize_path(os.path.abspath(cwd))


def transcript_path_for(cwd: str, session_id: str) -> Path:
    return project_dir(cwd) / f"{session_id}.jsonl"


def is_compact_boundary(entry: dict[str, Any]) -> bool:
    return entry.get("type") == "system" and entry.get("subtype") == "compact_boundary"


def count_transcript_messages(entries: Iterable[dict[str, Any]]) -> int:
    """Entries with a ``message.role`` of user/assistant/system that are not ``isMeta`` (SPEC §5.2)."""
    n = 0
    for e in entries:
        role = (e.get("message") or {}).get("role") if isinstance(e.get("message"), dict) else None
        if role in ("user", "assistant", "system") and not e.get("isMeta"):
            n += 1
    return n


QUIET_GC_BYTES = 1024 * 1024
_gc_lock = threading.Lock()
_gc_holders = 0
_gc_was_enabled = True


@contextmanager
def _quiet_gc(size: int) -> Iterator[None]:
    """For ``size`` bytes of JSON and more: no cyclic collection while parsing, then ``gc.freeze()`` — the parsed
    entries (acyclic: JSON makes no cycles) are never scanned again; refcounting still frees them. Nested and
    concurrent readers share one pause (the last one out freezes and re-enables)."""
    global _gc_holders, _gc_was_enabled
    if size < QUIET_GC_BYTES:
        yield
        return
    with _gc_lock:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0:
                gc.freeze()
                if _gc_was_enabled:
                    gc.enable()


def _parse_lines(data: bytes, path: Path, start: int = 0) -> list[dict[str, Any]]:
    with _quiet_gc(len(data) - start):
        return _parse(data, path, start)


def _parse(data: bytes, path: Path, start: int = 0) -> list[dict[str, Any]]:
    """The JSON objects of ``data``'s lines from byte ``start``. Line by line, never one ``split`` of the whole:
    a 50 MB split is one C call holding the GIL for ~85 ms, and the window's thread waits for it."""
    entries: list[dict[str, Any]] = []
    buf = io.BytesIO(data)  # shares ``data``'s buffer: no copy
    buf.seek(start)
    end = len(data)
    for i, raw in enumerate(buf):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: a line nested ~1,000 deep
            where = "last line (half-written?)" if buf.tell() >= end else f"line {i + 1}"
            log.warning("skipping corrupt %s of transcript %s", where, path)
            continue
        if isinstance(obj, dict):
            entries.append(obj)
        else:
            log.warning("skipping non-object line %d of transcript %s", i + 1, path)
    return entries


def read_transcript(path: Path | str, *, full: bool = False) -> list[dict[str, Any]]:
    """All parseable entries of a transcript in file order (bad lines skipped with a warning).

    For files above 5 MB (unless ``full``) the bytes before the last compact boundary are skipped,
    except the latest ``permission-state`` line and the change records with the entries that told the model
    about them (``session.changes``), which are kept.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError:
        return []
    with open(path, "rb") as fh:
        data = fh.read()
    if full or size <= LARGE_TRANSCRIPT_BYTES:
        return _parse_lines(data, path)
    cut = max(data.rfind(b'"subtype":"compact_boundary"'), data.rfind(b'"subtype": "compact_boundary"'))
    if cut < 0:
        return _parse_lines(data, path)
    start = data.rfind(b"\n", 0, cut) + 1
    head: list[dict[str, Any]] = []
    state_at = data.rfind(b'"type":"' + PERMISSION_STATE.encode() + b'"', 0, start)
    if state_at >= 0:
        line_start = data.rfind(b"\n", 0, state_at) + 1
        line_end = data.find(b"\n", state_at)
        head = _parse_lines(data[line_start:line_end if line_end >= 0 else len(data)], path)
    head += _parse_lines(b"\n".join(_lines_with(data, start, (b'"type":"' + CHANGE_RECORD.encode() + b'"',
                                                               b'"' + CHANGE_RECORDS_TOLD.encode() + b'":'))), path)
    return head + _parse_lines(data, path, start)


def _lines_with(data: bytes, stop: int, markers: tuple[bytes, ...]) -> list[bytes]:
    """The lines of ``data`` before byte ``stop`` holding one of ``markers`` (a byte search, not line by line)."""
    out: list[tuple[int, bytes]] = []
    for marker in markers:
        at = data.find(marker, 0, stop)
        while at >= 0:
            line_start = data.rfind(b"\n", 0, at) + 1
            line_end = data.find(b"\n", at, stop)
            line_end = stop if line_end < 0 else line_end
            out.append((line_start, data[line_start:line_end]))
            at = data.find(marker, line_end, stop)
    return [line for _, line in sorted(dict(out).items())]


def latest_permission_state(entries: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    state = None
    for e in entries:
        if e.get("type") == PERMISSION_STATE:
            state = e
    return state


def _chain_participant(entry: dict[str, Any]) -> bool:
    return entry.get("type") in MESSAGE_TYPES and bool(entry.get("uuid")) and not entry.get("isSidechain")


class TranscriptStore:
    """Appends entries to one session's JSONL file. Not thread-safe; one writer per session."""

    def __init__(self, path: Path | str, session_id: str, cwd: str):
        self.path = Path(path)
        self.session_id = session_id
        self.cwd = os.path.abspath(cwd)
        self._uuids: set[str] = set()
        self._last_uuid: str | None = None
        self._fh: Any = None
        self._last_permission_state: str | None = None
        self._lock = threading.Lock()  # one line at a time, whatever thread appends it

    # -------------------------------------------------------------------------------------- opening

    @classmethod
    def create(cls, cwd: str, session_id: str | None = None, *, path: Path | None = None) -> TranscriptStore:
        """A new session: the file with its snapshot and session-meta lines.

        A placeholder file of the same id (no messages) is cleared first; one with messages is an error.
        """
        session_id = session_id or new_uuid()
        path = path or transcript_path_for(cwd, session_id)
        if path.exists():
            if count_transcript_messages(read_transcript(path, full=True)) > 0:
                raise FileExistsError(f"Session ID {session_id} is already in use.")
            path.unlink()  # clearSessionTranscript
        store = cls(path, session_id, cwd)
        store._append_raw({
            "type": "file-history-snapshot", "messageId": new_uuid(),
            "snapshot": {"messageId": None, "trackedFileBackups": {}, "timestamp": _now_iso()},
            "isSnapshotUpdate": False,
        })
        store._append_raw({"type": "session-meta", "isMeta": True, "workDir": store.cwd, "sessionId": session_id,
                           "timestamp": _now_iso(), "version": __version__})
        return store

    @classmethod
    def open_existing(cls, path: Path | str, session_id: str, cwd: str,
                      entries: list[dict[str, Any]] | None = None) -> TranscriptStore:
        """Continue appending to an existing transcript (resume). ``entries`` avoids a second read."""
        store = cls(path, session_id, cwd)
        if entries is None:
            entries = read_transcript(store.path, full=True)
        for e in entries:
            if e.get("uuid"):
                store._uuids.add(e["uuid"])
        return store

    def set_chain_tip(self, uuid: str | None) -> None:
        """The entry the next new message attaches to (the last restored chain participant)."""
        self._last_uuid = uuid

    @property
    def chain_tip(self) -> str | None:
        return self._last_uuid

    # ------------------------------------------------------------------------------------- writing

    def _open(self) -> Any:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # A half-written last line must not swallow the next record.
            needs_newline = False
            try:
                with open(self.path, "rb") as fh:
                    fh.seek(0, os.SEEK_END)
                    if fh.tell() > 0:
                        fh.seek(-1, os.SEEK_END)
                        needs_newline = fh.read(1) != b"\n"
            except FileNotFoundError:
                pass
            self._fh = open(self.path, "ab")
            if needs_newline:
                self._fh.write(b"\n")
        return self._fh

    def _append_raw(self, obj: dict[str, Any]) -> None:
        with self._lock:
            self._append_locked(obj)

    def _append_locked(self, obj: dict[str, Any]) -> None:
        fh = self._open()
        try:
            text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        except RecursionError:  # a hostile value nested ~1,000 deep: the line keeps its shallow part
            text = json.dumps(clip_depth(obj, 200), ensure_ascii=False, separators=(",", ":"))
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: the escaped form is still valid JSON
            data = json.dumps(clip_depth(obj, 200), separators=(",", ":")).encode("ascii")
        fh.write(data + b"\n")
        fh.flush()

    def contains(self, uuid: str) -> bool:
        return uuid in self._uuids

    def record(self, entry: dict[str, Any]) -> bool:
        """Append one message entry (in place: ``parentUuid`` and session fields are set on it).

        Returns False when it was skipped (not loggable, ephemeral, or its UUID is already written).
        """
        kind = entry.get("type")
        if kind in NEVER_LOGGED or kind not in MESSAGE_TYPES or entry.get("isEphemeral"):
            return False
        if not entry.get("uuid"):
            entry["uuid"] = new_uuid()
        uuid = entry["uuid"]
        if uuid in self._uuids:
            return False
        if is_compact_boundary(entry):
            entry["parentUuid"] = None
            entry.setdefault("logicalParentUuid", self._last_uuid)
        else:
            entry["parentUuid"] = self._last_uuid
        entry.setdefault("isSidechain", False)
        entry.setdefault("sessionId", self.session_id)
        entry.setdefault("cwd", self.cwd)
        entry.setdefault("version", __version__)
        entry.setdefault("timestamp", _now_iso())
        self._append_raw(entry)
        self._uuids.add(uuid)
        if _chain_participant(entry):
            self._last_uuid = uuid
        return True

    def record_all(self, entries: Iterable[dict[str, Any]]) -> int:
        return sum(1 for e in entries if self.record(e))

    def record_permission_state(self, state: dict[str, Any]) -> bool:
        """Append a ``permission-state`` line when the state differs from the last one written."""
        key = json.dumps(state, sort_keys=True, default=str)
        if key == self._last_permission_state:
            return False
        self._last_permission_state = key
        self._append_raw({"type": PERMISSION_STATE, "sessionId": self.session_id, "timestamp": _now_iso(), **state})
        return True

    def record_change(self, entry: dict[str, Any]) -> None:
        """Append a ``change-revert`` line (a revert or redo of the changes panel); any thread."""
        if entry.get("type") != CHANGE_RECORD:
            raise ValueError(f"not a {CHANGE_RECORD} entry")
        entry.setdefault("sessionId", self.session_id)
        entry.setdefault("timestamp", _now_iso())
        self._append_raw(entry)

    def note_permission_state(self, state: dict[str, Any]) -> None:
        """Remember a restored state so an unchanged one is not written again."""
        self._last_permission_state = json.dumps(state, sort_keys=True, default=str)

    def sync(self) -> None:
        """fsync the file (at turn end: lines are flushed as they are written)."""
        if self._fh is not None:
            try:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            except OSError:
                pass

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self.sync()
                self._fh.close()
                self._fh = None


# ------------------------------------------------------------------------------------ session lists


@dataclass
class SessionInfo:
    session_id: str
    path: str
    first_prompt: str
    mtime: float
    message_count: int
    cwd: str


def _first_prompt(entries: list[dict[str, Any]]) -> str:
    for e in entries:
        if e.get("type") != "user" or e.get("isMeta") or e.get("isCompactSummary"):
            continue
        content = (e.get("message") or {}).get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            continue
        text = text_of(e).strip()
        if text:
            return " ".join(text.split())[:200]
    return ""


_INFO_CACHE: dict[str, tuple[tuple[int, int], tuple[str, int]]] = {}
_QUICK_SCAN_BYTES = 256 * 1024


def _summary(p: Path, st: os.stat_result) -> tuple[str, int]:
    """(first prompt, message count) of one transcript; cached by (mtime, size)."""
    key = (st.st_mtime_ns, st.st_size)
    cached = _INFO_CACHE.get(str(p))
    if cached is not None and cached[0] == key:
        return cached[1]
    if st.st_size <= _QUICK_SCAN_BYTES:
        entries = read_transcript(p)
        result = (_first_prompt(entries), count_transcript_messages(entries))
    else:
        # Large file: the first prompt from the head; messages counted by a byte scan of our own compact lines.
        with open(p, "rb") as fh:
            head = fh.read(_QUICK_SCAN_BYTES)
            fh.seek(0)
            count = 0
            for line in fh:
                if (b'"role":"user"' in line or b'"role":"assistant"' in line or b'"role":"system"' in line) \
                        and b'"isMeta":true' not in line:
                    count += 1
        cut = head.rfind(b"\n")
        result = (_first_prompt(_parse_lines(head[:cut] if cut > 0 else head, p)), count)
    _INFO_CACHE[str(p)] = (key, result)
    return result


def list_sessions(cwd: str) -> list[SessionInfo]:
    """The sessions of a working directory, newest first (for the UI's list and ``--continue``)."""
    folder = project_dir(cwd)
    out: list[SessionInfo] = []
    try:
        files = [p for p in folder.iterdir() if p.suffix == ".jsonl" and p.is_file()]
    except OSError:
        return []
    for p in files:
        try:
            st = p.stat()
            first, count = _summary(p, st)
        except OSError:
            continue
        out.append(SessionInfo(session_id=p.stem, path=str(p), first_prompt=first, mtime=st.st_mtime,
                               message_count=count, cwd=os.path.abspath(cwd)))
    out.sort(key=lambda s: s.mtime, reverse=True)
    return out


def latest_session(cwd: str, *, with_messages: bool = True) -> SessionInfo | None:
    for info in list_sessions(cwd):
        if not with_messages or info.message_count > 0:
            return info
    return None


def find_session(session_id: str, cwd: str) -> Path | None:
    """The transcript of ``session_id``: in the cwd's project folder, else in any project folder."""
    path = transcript_path_for(cwd, session_id)
    if path.exists():
        return path
    try:
        for folder in projects_dir().iterdir():
            candidate = folder / f"{session_id}.jsonl"
            if candidate.exists():
                return candidate
    except OSError:
        pass
    return None
