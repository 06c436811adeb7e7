"""What the person said about their sessions, beside the transcripts (issue 24): a name given with Rename, and which
sessions are archived (hidden from the sessions list until "Show archived"). One small JSON file in the data
directory (``session-names.json``: ``{"names": {sid: name}, "archived": [sid, …]}``), written atomically (a temporary
file renamed over it) under a lock, so two windows or a crash never leave half a file; an unreadable file reads as
empty and is never overwritten blindly (it is kept aside as ``.corrupt``). The transcripts themselves are never
touched here; deleting a session moves its transcript to ``trash/`` in the data directory (``trash``), from where
it can be put back by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from desktop_agent.util.dirs import data_dir
from desktop_agent.util.fileio import write_bytes_atomic

_LOCK = threading.Lock()
FILE = "session-names.json"


@dataclass
class SessionNames:
    names: dict[str, str] = field(default_factory=dict)
    archived: set[str] = field(default_factory=set)


def _path() -> Path:
    return data_dir() / FILE


def load() -> SessionNames:
    """The names and archived sessions (empty when there is no file or it cannot be read)."""
    path = _path()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return SessionNames()
    except (OSError, ValueError):
        try:
            shutil.copyfile(path, path.with_suffix(".json.corrupt"))
        except OSError:
            pass
        return SessionNames()
    names = raw.get("names") if isinstance(raw, dict) else None
    archived = raw.get("archived") if isinstance(raw, dict) else None
    return SessionNames({str(k): str(v) for k, v in (names or {}).items() if isinstance(v, str)},
                        {str(s) for s in (archived or []) if isinstance(s, str)})


def _save(state: SessionNames) -> None:
    path = _path()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"names": state.names, "archived": sorted(state.archived)}, indent=1, sort_keys=True)
    write_bytes_atomic(str(path), data.encode("utf-8"), mode=0o600)


def rename(session_id: str, name: str) -> SessionNames:
    """Name a session ("" takes the name away: its first prompt shows again)."""
    with _LOCK:
        state = load()
        if name.strip():
            state.names[session_id] = name.strip()[:200]
        else:
            state.names.pop(session_id, None)
        _save(state)
        return state


def set_archived(session_id: str, archived: bool) -> SessionNames:
    with _LOCK:
        state = load()
        (state.archived.add if archived else state.archived.discard)(session_id)
        _save(state)
        return state


def trash(transcript: str | os.PathLike[str]) -> Path:
    """Delete a session: its transcript moved (not unlinked) to ``trash/`` in the data directory, named with the time
    it went there. Returns where it is now."""
    src = Path(transcript)
    dest_dir = data_dir() / "trash"
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{src.name}"
    os.replace(src, dest) if src.stat().st_dev == dest_dir.stat().st_dev else shutil.move(str(src), str(dest))
    return dest


__all__ = ["SessionNames", "load", "rename", "set_archived", "trash"]
