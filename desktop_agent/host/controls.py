"""The host's further control requests (SPEC App. D.5), answered for every session the host serves (``host.server``).

``answer(session, layer, request)`` gives the ``response`` object of the SDK's ``Query`` methods (and whether the
permission mode changed):
``mcp_status`` → ``{"mcpServers": [McpServerStatus…]}`` (the servers started first); ``mcp_toggle`` /
``mcp_reconnect`` → ``{}`` once the server is stopped or up again (the tool list follows at once);
``get_context_usage`` → ``app.context_usage``; ``apply_flag_settings``, ``update_settings``, ``seed_read_state`` →
``{}`` (``app.host_requests``). A refusal raises (``HostRequestError``, ``KeyError``, ``RuntimeError``): the caller
answers it as the error ``control_response``. ``unsupported`` names every other subtype.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, assert_never

from desktop_agent.protocol.control import (
    ApplyFlagSettingsRequest, GetContextUsageRequest, HostRequest, McpReconnectRequest, McpStatusRequest,
    McpStatusResponse, McpToggleRequest, SeedReadStateRequest, UpdateSettingsRequest,
)

if TYPE_CHECKING:
    from desktop_agent.app.host_requests import FlagLayer
    from desktop_agent.app.session import AgentSession


def _manager(session: AgentSession, name: str) -> Any:
    if session.mcp is None:
        raise KeyError(f"Server not found: {name}")
    return session.mcp


async def answer(session: AgentSession, layer: FlagLayer, request: HostRequest) -> tuple[dict[str, Any], bool]:
    """The response object, and whether the permission mode changed (the caller then writes a ``status`` line)."""
    from desktop_agent.app import host_requests

    match request:
        case McpStatusRequest():
            await session.start_mcp()
            servers = session.mcp.host_status() if session.mcp is not None else []
            return McpStatusResponse(mcpServers=servers).to_wire(), False
        case McpToggleRequest():
            await session.start_mcp()
            try:
                await _manager(session, request.serverName).set_enabled(request.serverName, request.enabled)
            finally:
                await session.start_mcp()  # the tool list follows the server's state
            return {}, False
        case McpReconnectRequest():
            await session.start_mcp()
            try:
                await _manager(session, request.serverName).reconnect(request.serverName)
            finally:
                await session.start_mcp()
            return {}, False
        case GetContextUsageRequest():
            from desktop_agent.app.context_usage import context_usage

            await session.start_mcp()
            return (await context_usage(session)).to_wire(), False
        case ApplyFlagSettingsRequest():
            return {}, host_requests.apply_flag_settings(session, layer, request.settings)
        case UpdateSettingsRequest():
            host_requests.update_settings(session, request.source, request.settings)
            return {}, False
        case SeedReadStateRequest():
            host_requests.seed_read_state(session, request.path, request.mtime)
            return {}, False
        case _:
            assert_never(request)


def error_text(exc: BaseException) -> str:
    """A refusal as one sentence (``KeyError`` quotes its message; the others are sentences already)."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
