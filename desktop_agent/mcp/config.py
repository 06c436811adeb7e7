"""Where MCP servers come from, and what a server entry says (the reference's ``mcpServers`` format).

Sources, later ones winning per server name:
1. the user's own: Claude Code's global config → ``mcpServers`` (its user scope; read only, never written) and
   the user settings file (``<CLAUDE_CONFIG_DIR>/settings.json``) → ``mcpServers``. The global config is the file
   the trust record is read from (``util.dirs.claude_global_config_path``): ``$CLAUDE_CONFIG_DIR/.claude.json``
   when ``CLAUDE_CONFIG_DIR`` is set (its legacy ``.config.json`` first), else ``~/.claude.json``;
2. the project's ``.mcp.json`` → ``mcpServers`` — **only in a trusted folder** (an untrusted clone
   must not start programs; SPEC Appendix A), and the global config's ``projects[<folder>].mcpServers``;
3. ``--mcp-config FILE|JSON`` (each value a path or an inline JSON object with ``mcpServers``).

An entry is ``{"command", "args", "env", "cwd"}`` (stdio; ``"type": "stdio"`` optional) or
``{"type": "http", "url", "headers"}`` (streamable HTTP; ``"streamable-http"`` accepted). ``${VAR}`` and
``${VAR:-default}`` expand from the environment in command, args, env, url and headers. A malformed
entry is not dropped silently: it becomes a server in the ``failed`` state with the reason, shown in the
Servers view and ``system/init``. ``sse`` servers are reported as unsupported.

A server the settings deny is never started (``denial``; ``app.build.make_mcp``): settings ``deniedMcpServers``
(``{"serverName"}``, ``{"serverCommand": [argv]}`` or ``{"serverUrl": "glob"}``, from any settings file: a deny list
only restricts) or a deny rule on the whole server (``mcp__<server>``); it is listed ``failed`` with the reason.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from desktop_agent.util import dirs

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass
class McpServerConfig:
    name: str
    transport: Literal["stdio", "http"] = "stdio"
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    source: str = ""
    error: str | None = None  # set when the entry itself is invalid


def expand_vars(value: str, env: Mapping[str, str] | None = None) -> str:
    lookup: Mapping[str, str] = os.environ if env is None else env

    def sub(m: re.Match[str]) -> str:
        got = lookup.get(m.group(1))
        return got if got is not None else (m.group(2) or "")

    return _VAR.sub(sub, value)


def normalize_name(name: str) -> str:
    """A server or tool name as it may appear in ``mcp__<server>__<tool>`` (the reference's rule)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def parse_entry(name: str, raw: Any, source: str) -> McpServerConfig:
    cfg = McpServerConfig(name=normalize_name(name), source=source)
    if "__" in cfg.name:
        cfg.error = (f"the MCP server name {name!r} in {source} contains \"__\" (or characters that become \"__\"): "
                     f"its tools would be named mcp__{cfg.name}__<tool>, which rules cannot tell apart from another "
                     "server's; rename the server")
        return cfg
    if not isinstance(raw, dict):
        cfg.error = f"the entry for {name!r} in {source} must be an object"
        return cfg
    kind = raw.get("type") or ("http" if raw.get("url") else "stdio")
    if kind in ("http", "streamable-http", "streamableHttp"):
        url = raw.get("url")
        if not isinstance(url, str) or not url:
            cfg.error = f"{name!r} in {source}: an http server needs a \"url\""
            return cfg
        headers = raw.get("headers") or {}
        if not isinstance(headers, dict):
            cfg.error = f"{name!r} in {source}: \"headers\" must be an object"
            return cfg
        cfg.transport = "http"
        cfg.url = expand_vars(url)
        cfg.headers = {str(k): expand_vars(str(v)) for k, v in headers.items()}
        return cfg
    if kind != "stdio":
        cfg.error = f"{name!r} in {source}: server type {kind!r} is not supported (use stdio or http)"
        return cfg
    command, args, env = raw.get("command"), raw.get("args") or [], raw.get("env") or {}
    if not isinstance(command, str) or not command:
        cfg.error = f"{name!r} in {source}: a stdio server needs a \"command\""
        return cfg
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        cfg.error = f"{name!r} in {source}: \"args\" must be a list of strings"
        return cfg
    if not isinstance(env, dict):
        cfg.error = f"{name!r} in {source}: \"env\" must be an object"
        return cfg
    cfg.command = expand_vars(command)
    cfg.args = [expand_vars(str(a)) for a in args]
    cfg.env = {str(k): expand_vars(str(v)) for k, v in env.items()}
    cwd = raw.get("cwd")
    cfg.cwd = expand_vars(cwd) if isinstance(cwd, str) and cwd else None
    return cfg


def _url_matches(pattern: str, url: str) -> bool:
    return re.fullmatch(".*".join(re.escape(p) for p in pattern.split("*")), url) is not None


def denial(cfg: McpServerConfig, entries: list[dict[str, Any]]) -> str | None:
    """Why settings' ``deniedMcpServers`` forbid starting ``cfg`` (the first matching entry), or None. A name
    matches as the tools are named (``my.fs`` is ``my_fs``); a command is the whole argv; a URL a ``*`` glob."""
    for entry in entries:
        where = entry.get("where", "settings")
        name = entry.get("serverName")
        if isinstance(name, str) and normalize_name(name) == cfg.name:
            return f"the MCP server {cfg.name!r} is denied by deniedMcpServers in {where}; it was not started"
        command = entry.get("serverCommand")
        if isinstance(command, list) and cfg.transport == "stdio" and [cfg.command, *cfg.args] == command:
            return f"the command of MCP server {cfg.name!r} is denied by deniedMcpServers in {where}; it was not started"
        url = entry.get("serverUrl")
        if isinstance(url, str) and cfg.transport == "http" and _url_matches(url, cfg.url):
            return f"the URL of MCP server {cfg.name!r} is denied by deniedMcpServers in {where}; it was not started"
    return None


def _servers_of(data: Any, source: str, out: dict[str, McpServerConfig], warnings: list[str]) -> None:
    if not isinstance(data, dict):
        warnings.append(f"{source}: expected a JSON object with \"mcpServers\"")
        return
    servers = data.get("mcpServers")
    if servers is None:
        return
    if not isinstance(servers, dict):
        warnings.append(f"{source}: \"mcpServers\" must be an object")
        return
    for name, raw in servers.items():
        cfg = parse_entry(str(name), raw, source)
        out[cfg.name] = cfg


def _read_json(path: str, warnings: list[str]) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        warnings.append(f"{path}: not readable as JSON ({exc})")
        return None


def load_cli_value(value: str, cwd: str, warnings: list[str]) -> dict[str, McpServerConfig]:
    """One ``--mcp-config`` value: inline JSON, or a file path (relative to ``cwd``)."""
    out: dict[str, McpServerConfig] = {}
    text = value.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"--mcp-config: not valid JSON ({exc})") from None
        _servers_of(data, "--mcp-config", out, warnings)
        return out
    path = os.path.join(cwd, os.path.expanduser(text))
    if not os.path.isfile(path):
        raise ValueError(f"--mcp-config: no such file: {text}")
    data = _read_json(path, warnings)
    if data is None:
        raise ValueError(f"--mcp-config: {text} is not valid JSON")
    _servers_of(data, path, out, warnings)
    return out


def load_server_configs(cwd: str, *, trusted: bool, cli_values: list[str] | None = None,
                        warnings: list[str] | None = None) -> list[McpServerConfig]:
    """Every configured server, in name order. ``cli_values`` errors raise ``ValueError`` (a usage error)."""
    warnings = warnings if warnings is not None else []
    cwd = os.path.abspath(cwd)
    out: dict[str, McpServerConfig] = {}
    global_path = dirs.claude_global_config_path()
    claude_json = _read_json(global_path, warnings)
    if isinstance(claude_json, dict):
        _servers_of({"mcpServers": claude_json.get("mcpServers")}, global_path, out, warnings)
    user_settings = _read_json(os.path.join(dirs.claude_config_dir(), "settings.json"), warnings)
    if isinstance(user_settings, dict):
        _servers_of({"mcpServers": user_settings.get("mcpServers")}, "user settings", out, warnings)
    project_file = os.path.join(cwd, ".mcp.json")
    if trusted:
        project = _read_json(project_file, warnings)
        if project is not None:
            _servers_of(project, ".mcp.json", out, warnings)
        if isinstance(claude_json, dict):
            proj = (claude_json.get("projects") or {}).get(cwd)
            if isinstance(proj, dict):
                _servers_of({"mcpServers": proj.get("mcpServers")}, f"{global_path} (project)", out, warnings)
    elif os.path.isfile(project_file):
        warnings.append(".mcp.json ignored: the folder is not trusted (its servers would start programs).")
    for value in cli_values or []:
        out.update(load_cli_value(value, cwd, warnings))
    for cfg in out.values():
        if cfg.cwd is None and cfg.transport == "stdio":
            cfg.cwd = cwd
    return [out[k] for k in sorted(out)]
