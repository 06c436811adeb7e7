"""Workspace trust (App. A, App. B §B.4): is this folder trusted, and the store of the folders the user trusted.

A folder is trusted when
- our store says so: ``util.dirs.trust_store_path()`` (``~/.config/desktop-agent/trust.json``), the folder or
  its nearest recorded parent (an explicit "not trusted" there wins over Claude Code's record); or
- Claude Code's own record says so: ``projects["<absolute folder>"].hasTrustDialogAccepted: true`` in
  ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json`` when that is set; its legacy ``.config.json`` first
  when present), for the folder or any parent, as the reference walks up (trusting a folder trusts its
  children). That file is read, never written.
- The CLI's ``--trust`` (``PermissionContext.load(trusted=True)``) trusts the folder for one run.

Until then a project's allow rules, ``additionalDirectories``, permissive ``defaultMode``, hooks, ``env``,
``apiKeyHelper`` and MCP servers do not apply (``settings.load_settings``); deny/ask rules apply regardless.
The GUI asks once per folder (``needs_trust_prompt``); headless runs read the same records.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from desktop_agent.permissions.settings import (has_allow_rules_or_hooks, local_settings_path, project_settings_path,
                                                read_json_file)
from desktop_agent.util import dirs


def store_path() -> str:
    return str(dirs.trust_store_path())


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


def _store_answer(folder: str) -> bool | None:
    """Our store's answer for ``folder`` (its nearest recorded parent), or None when it has none."""
    trusted = _load()["trusted"]
    path = _norm(folder)
    while True:
        if path in trusted:
            return bool(trusted[path])
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def trusted_by_claude_code(folder: str) -> bool:
    """``projects[<folder or a parent>].hasTrustDialogAccepted is true`` in Claude Code's config (read only)."""
    warnings: list[str] = []
    data = read_json_file(dirs.claude_global_config_path(), warnings) or {}
    projects = data.get("projects")
    if not isinstance(projects, dict):
        return False
    starts = {os.path.normpath(os.path.abspath(os.path.expanduser(folder))), _norm(folder)}
    for path in starts:
        while True:
            entry = projects.get(path)
            if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
                return True
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    return False


def is_trusted(folder: str) -> bool:
    """True when our store trusts ``folder`` (or its nearest recorded parent), or, when our store has no answer,
    when Claude Code's record trusts it or a parent."""
    answer = _store_answer(folder)
    if answer is not None:
        return answer
    return trusted_by_claude_code(folder)


def set_trusted(folder: str, value: bool = True) -> None:
    data = _load()
    data["trusted"][_norm(folder)] = bool(value)
    _save(data)


def needs_trust_prompt(folder: str) -> bool:
    """True when the folder's ``.claude/settings*.json`` carry something that waits for trust (allow rules, extra
    directories, a permissive mode, hooks, env, apiKeyHelper, MCP servers) or it has a ``.mcp.json``, and the
    folder is not trusted yet."""
    if is_trusted(folder):
        return False
    warnings: list[str] = []
    for path in (project_settings_path(folder), local_settings_path(folder)):
        if has_allow_rules_or_hooks(read_json_file(path, warnings)):
            return True
    return os.path.isfile(os.path.join(folder, ".mcp.json"))
