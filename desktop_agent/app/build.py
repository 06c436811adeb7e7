"""Composition: the parts an ``AgentSession`` is built from, each made here once and failing loudly.

The model client (Messages API or an OpenAI-compatible provider), the permission context (rules, mode, trust,
``env``), the hooks the settings allow, the offered tools (whole-tool deny rules applied) and the MCP servers,
the per-session file history and the ``ToolUseContext`` that ties them together. The permission, hook, settings
and prompt modules are imported directly: a part that cannot be built is a ``ConfigError`` at start-up, never a
session without it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Sequence

from desktop_agent.config import AppSettings, find_api_key, find_openai_key, resolve_provider
from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import PermissionPrompter
from desktop_agent.core.tool import Tool
from desktop_agent.mcp.config import denial, load_server_configs
from desktop_agent.model.anthropic_client import AnthropicClient
from desktop_agent.permissions import identity
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.hooks import HookRunner
from desktop_agent.permissions.sandbox_launch import BubblewrapSandbox
from desktop_agent.session.history import FileHistory
from desktop_agent.tools.registry import all_builtin_tools, default_tools
from desktop_agent.util import dirs

if TYPE_CHECKING:
    from desktop_agent.mcp.client import McpManager


class ConfigError(Exception):
    """Missing API key or another configuration problem, with a one-line message for the user."""


def make_client(settings: AppSettings, provider: str | None = None) -> AnthropicClient:
    """The model client from env + settings: the Messages API, or an OpenAI-compatible provider
    (``--provider openai`` / ``DESKTOP_AGENT_PROVIDER`` / settings; ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``),
    both under the same retry/watchdog policy. Raises ConfigError without an Anthropic API key."""
    provider = resolve_provider(provider, settings)
    if provider not in ("anthropic", "openai"):
        raise ConfigError(f"unknown provider {provider!r}: use anthropic or openai")
    idle_from_settings = (not os.environ.get("DESKTOP_AGENT_STREAM_IDLE_TIMEOUT_S")
                          and settings.stream_idle_timeout_s > 0)
    if provider == "openai":
        okey, _ = find_openai_key()
        base = os.environ.get("OPENAI_BASE_URL") or settings.openai_base_url or None
        kw: dict[str, Any] = {"transport": "openai"}
        if idle_from_settings:
            kw["idle_timeout_s"] = settings.stream_idle_timeout_s
        return AnthropicClient(okey or "", base, **kw)
    key, _source = find_api_key()
    if not key and not os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        raise ConfigError("no API key found: set ANTHROPIC_API_KEY (or save a key in the app's settings)")
    kwargs: dict[str, Any] = {"api_key": key or ""}  # else from_env sends ANTHROPIC_AUTH_TOKEN as a bearer token
    base_url = os.environ.get("ANTHROPIC_BASE_URL") or settings.base_url
    if base_url:
        kwargs["base_url"] = base_url
    if idle_from_settings:
        kwargs["idle_timeout_s"] = settings.stream_idle_timeout_s
    return AnthropicClient.from_env(**kwargs)


def load_permission_context(cwd: str, *, allowed: Sequence[str], disallowed: Sequence[str], settings_arg: str | None,
                            mode: str | None, add_dirs: Sequence[str], trusted: bool | None) -> PermissionContext:
    """Rules, mode and trust from the settings files and the command line (a bad ``--settings`` raises here).
    The deny rules are bound to their files at once (``identity.capture``), before any command can rename them."""
    pc = PermissionContext.load(cwd, cli_allowed=list(allowed), cli_disallowed=list(disallowed),
                                settings_arg=settings_arg, mode=mode, add_dirs=list(add_dirs), trusted=trusted)
    identity.capture(pc)
    return pc


def make_hooks(permission_context: PermissionContext) -> HookRunner:
    """The session's HookRunner over the hooks the settings allow (a trusted folder's project hooks included).

    Fails loudly: an error here is a start-up error (``ConfigError``), never a session without its hooks."""
    try:
        return HookRunner.from_permission_context(permission_context)
    except Exception as exc:
        raise ConfigError(f"could not load the hooks from the settings: {type(exc).__name__}: {exc}") from exc


def _tool_names_denied(permission_context: PermissionContext) -> set[str]:
    """Whole-tool deny rules remove the tool from the request (App. A)."""
    names = set(permission_context.disabled_tools)
    for tool in all_builtin_tools():
        if permission_context.whole_tool_rule("deny", tool.name) is not None:
            names.add(tool.name)
    return names


def offered_tools(permission_context: PermissionContext, names: Sequence[str] | None) -> list[Tool]:
    """The built-in tools sent to the model: ``--tools`` narrows the set, whole-tool deny rules remove tools."""
    offered = default_tools(list(names) if names is not None else None)
    denied = _tool_names_denied(permission_context)
    return [t for t in offered if t.name not in denied]


def make_mcp(cwd: str, permission_context: PermissionContext, mcp_config: Sequence[str]) -> McpManager | None:
    """The MCP servers (a project's ``.mcp.json`` only in a trusted folder), or None when none is configured;
    a bad ``--mcp-config`` is a ``ConfigError``."""
    try:
        configs = load_server_configs(cwd, trusted=bool(permission_context.trusted), cli_values=list(mcp_config),
                                      warnings=permission_context.warnings)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    for cfg in configs:  # a denied server never starts: it is listed failed, with the reason
        if cfg.error is None:
            rule = permission_context.whole_tool_rule("deny", f"mcp__{cfg.name}")
            cfg.error = denial(cfg, permission_context.denied_mcp_servers) or (
                f"the MCP server {cfg.name!r} is denied by the rule {rule.rule.value.tool_name}; it was not started"
                if rule is not None else None)
    if not configs:
        return None
    # deferred (a cost, not a cycle): the MCP client (its pydantic models) only in a session with servers
    from desktop_agent.mcp.client import McpManager

    return McpManager(configs)


def make_context(cwd: str, permission_context: PermissionContext, *, prompter: PermissionPrompter | None,
                 hooks: HookRunner | None, session_id: str, transcript_path: str, tools: list[Tool]) -> ToolUseContext:
    """The context tools run against, with backups before each write under the app's data dir."""
    ctx = ToolUseContext(
        cwd=cwd, permission_context=permission_context,
        prompter=prompter, hooks=hooks, session_id=session_id, transcript_path=transcript_path, tools=list(tools),
    )
    ctx.file_history = FileHistory(dirs.data_dir(), session_id)
    ctx.sandbox = BubblewrapSandbox()  # every shell of the Bash tool starts through it
    return ctx
