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
The GUI asks once per folder (``needs_trust_prompt``), naming what trusting would let run (``trust_details``: the
files that exist and ask for it, their hook commands, MCP server commands, apiKeyHelper and grants); headless runs
read the same records.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class TrustDetails:
    """What trusting a folder would let run or apply, read from its files (each list in file order):

    - ``files``: the folder's files that ask for trust, relative to it — only files that exist and hold something
      that waits for trust (``.claude/settings.json``, ``.claude/settings.local.json``, ``.mcp.json``);
    - ``hooks``: ``(event, command)`` of each command hook;
    - ``servers``: ``(name, command line or URL)`` of each MCP server of ``.mcp.json`` (a stdio server's command and
      arguments, shell-quoted; an HTTP server's URL);
    - ``helpers``: the ``apiKeyHelper`` commands;
    - ``grants``: allow rules, extra directories, a permissive mode, the names of ``env`` variables set.
    """

    files: list[str] = field(default_factory=list)
    hooks: list[tuple[str, str]] = field(default_factory=list)
    servers: list[tuple[str, str]] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)
    grants: list[str] = field(default_factory=list)


def _hook_commands(hooks: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if not isinstance(hooks, dict):
        return out
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            entries = group.get("hooks") if isinstance(group, dict) else None
            for hook in entries if isinstance(entries, list) else []:
                if isinstance(hook, dict) and isinstance(hook.get("command"), str) and hook["command"].strip():
                    out.append((str(event), hook["command"]))
                elif isinstance(hook, dict) and hook.get("type") not in (None, "command"):
                    out.append((str(event), f"({hook.get('type')} hook)"))
    return out


def _grants(data: dict[str, Any]) -> list[str]:
    given = data.get("permissions")
    perms: dict[str, Any] = given if isinstance(given, dict) else {}
    out = [f"allow {r}" for r in perms.get("allow") or [] if isinstance(r, str)]
    out += [f"directory {d}" for d in perms.get("additionalDirectories") or [] if isinstance(d, str)]
    mode = perms.get("defaultMode")
    if isinstance(mode, str) and mode not in ("default", "plan", "dontAsk", "manual"):
        out.append(f"mode {mode}")
    env = data.get("env")
    if isinstance(env, dict) and env:
        out.append("env " + ", ".join(sorted(str(k) for k in env)))
    for key in ("enableAllProjectMcpServers", "enabledMcpjsonServers"):
        if data.get(key):
            out.append(f"{key} {json.dumps(data[key])}")
    return out


def _server_line(cfg: Any) -> str:
    if not isinstance(cfg, dict):
        return "(not a server entry)"
    if isinstance(cfg.get("url"), str):
        return cfg["url"]
    command = cfg.get("command")
    given = cfg.get("args")
    args: list[Any] = given if isinstance(given, list) else []
    if not isinstance(command, str):
        return "(no command)"
    return " ".join(shlex.quote(str(a)) for a in [command, *args])


def trust_details(folder: str) -> TrustDetails:
    """What the trust question names: the files of ``folder`` that exist and ask for trust, and the commands they
    would run (hooks, MCP servers, apiKeyHelper) and grants — never a file that is not there."""
    details = TrustDetails()
    warnings: list[str] = []
    for path in (project_settings_path(folder), local_settings_path(folder)):
        data = read_json_file(path, warnings) if os.path.isfile(path) else None
        if not isinstance(data, dict) or not has_allow_rules_or_hooks(data):
            continue
        details.files.append(os.path.relpath(path, folder))
        details.hooks.extend(_hook_commands(data.get("hooks")))
        if isinstance(data.get("apiKeyHelper"), str) and data["apiKeyHelper"].strip():
            details.helpers.append(data["apiKeyHelper"])
        details.grants.extend(_grants(data))
    mcp = os.path.join(folder, ".mcp.json")
    if os.path.isfile(mcp):
        details.files.append(".mcp.json")
        data = read_json_file(mcp, warnings)
        servers = data.get("mcpServers") if isinstance(data, dict) else None
        if isinstance(servers, dict):
            details.servers.extend((str(name), _server_line(cfg)) for name, cfg in servers.items())
    return details
