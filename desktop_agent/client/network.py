"""What the window asks about a session's network (issue 27), without the engine: the session's egress log
(``permissions.egress``: ``<data dir>/egress/<session>.jsonl``, written by the session's proxy wherever the session
runs — this window's host, the background host or an executor) and adding a host to a folder's
``sandbox.network.allowedDomains``. Both touch the disk: call them on a worker thread (``util.threads.in_thread``).
"""

from __future__ import annotations

import json
import os
from typing import Any

from desktop_agent.permissions.egress import log_path_for, read_log
from desktop_agent.util import dirs, fileio


def read_session_log(data_dir: str | None, session_id: str) -> list[dict[str, Any]]:
    """The session's egress records as dicts, oldest first (a torn or bad line is skipped)."""
    return [r.to_json() for r in read_log(log_path_for(data_dir or str(dirs.data_dir()), session_id))]


def add_host_to_settings(folder: str, host: str) -> str:
    """Add ``host`` to ``sandbox.network.allowedDomains`` of ``<folder>/.claude/settings.local.json`` (an atomic
    write that keeps every other key); ``ValueError`` when the file's ``sandbox.network`` is not an object (nothing
    is written). Returns the file's path."""
    path = os.path.join(folder, ".claude", "settings.local.json")
    data: dict[str, Any] = {}
    try:
        with open(path, encoding="utf-8-sig") as fh:
            loaded = json.load(fh)
        if isinstance(loaded, dict):
            data = loaded
    except FileNotFoundError:
        pass
    sandbox = data.setdefault("sandbox", {})
    network = sandbox.setdefault("network", {}) if isinstance(sandbox, dict) else None
    if not isinstance(network, dict):
        raise ValueError(f"{path}: 'sandbox.network' is not an object; nothing was changed")
    allowed = network.setdefault("allowedDomains", [])
    if not isinstance(allowed, list):
        raise ValueError(f"{path}: 'sandbox.network.allowedDomains' is not a list; nothing was changed")
    if host not in allowed:
        allowed.append(host)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fileio.write_bytes_atomic(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))
    return path
