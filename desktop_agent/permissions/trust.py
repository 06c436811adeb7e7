"""Workspace trust (App. A, App. B §B.4): the folders the user has trusted, kept in a small JSON store.

The store is ``$XDG_CONFIG_HOME/desktop-agent/trust.json`` (``~/.config/...`` by default). Project allow
rules and ``additionalDirectories`` apply only in a trusted folder, so a repository cannot grant itself
``Bash(*)``; deny/ask rules and hooks apply regardless. A folder is trusted when it or one of its parents
was trusted. The GUI asks once per folder (``needs_trust_prompt``); headless runs read the same store.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from desktop_agent.permissions.settings import has_allow_rules_or_hooks, local_settings_path, project_settings_path, read_json_file


def config_dir() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "desktop-agent")


def store_path() -> str:
    return os.path.join(config_dir(), "trust.json")


def _norm(folder: str) -> str:
    return os.path.realpath(os.path.abspath(os.path.expanduser(folder)))


def _load() -> dict[str, Any]:
    warnings: list[str] = []
    data = read_json_file(store_path(), warnings) or {}
    folders = data.get("trusted")
    if not isinstance(folders, dict):
        data["trusted"] = {}
    return data


def _save(data: dict[str, Any]) -> None:
    path = store_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".trust.", dir=os.path.dirname(path))
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def is_trusted(folder: str) -> bool:
    """True when ``folder`` or one of its parents was trusted (and not explicitly untrusted)."""
    trusted = _load()["trusted"]
    path = _norm(folder)
    while True:
        if path in trusted:
            return bool(trusted[path])
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def set_trusted(folder: str, value: bool = True) -> None:
    data = _load()
    data["trusted"][_norm(folder)] = bool(value)
    _save(data)


def needs_trust_prompt(folder: str) -> bool:
    """True when the folder's ``.claude/settings*.json`` carry allow rules, extra directories or hooks and the
    folder is not trusted yet."""
    if is_trusted(folder):
        return False
    warnings: list[str] = []
    for path in (project_settings_path(folder), local_settings_path(folder)):
        if has_allow_rules_or_hooks(read_json_file(path, warnings)):
            return True
    return False
