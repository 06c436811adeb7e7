"""Typed control messages of the stdio protocol (SPEC §1.5, App. C).

``ControlRequest`` (``request_id`` + one of ``InitializeRequest``, ``CanUseToolRequest``, ``HookCallbackRequest``,
``InterruptRequest``, ``SetPermissionModeRequest``, ``SetModelRequest``, the host's App. D.5 requests
(``HostRequest``: ``mcp_status``, ``mcp_toggle``, ``mcp_reconnect``, ``get_context_usage``, ``apply_flag_settings``,
``update_settings``, ``seed_read_state``, ``rewind_files`` (answered with ``RewindFilesResponse``), with their responses ``McpStatusResponse`` and ``ContextUsageResponse``, as
the TypeScript SDK's ``sdk.d.ts`` shapes them); any other subtype decodes as ``OtherRequest``, answered with
``unsupported(subtype)``), ``ControlResponse`` (``success`` with an optional ``response`` object, or ``error``) and
``ControlCancelRequest``. ``can_use_tool`` carries the extension fields ``file_path``, ``structured_patch``,
``original_file`` and ``subcommands`` (the patch our engine built, so a host shows exactly it; Claude Code
sends none of them). ``PermissionAllow`` / ``PermissionDeny`` are the bodies a host answers it with.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, ClassVar, Literal, Union

from pydantic import Field, ValidationError

from desktop_agent.protocol._wire import ProtocolError, WireModel, loads_object

ControlSubtype = Literal["initialize", "can_use_tool", "hook_callback", "interrupt", "set_permission_mode",
                         "set_model"]


def new_request_id() -> str:
    return f"req_{uuid.uuid4().hex[:12]}"


class InitializeRequest(WireModel):
    subtype: Literal["initialize"] = "initialize"
    # ours (SPEC App. D.1): {"agentEvents": true} asks for the lossless ``agent_event`` lines; an SDK never sends it
    desktopAgent: dict[str, Any] | None = None
    hooks: dict[str, Any] | None = None
    # the TypeScript SDK's prompt options (a string or a list of parts), sent here rather than as flags
    systemPrompt: Any = None
    appendSystemPrompt: Any = None
    # read only at launch under --await-initialize (the SDK sends them here, off the command line): the servers as
    # one --mcp-config item, the flag-settings layer (an object, or a --settings value), more --disallowedTools
    mcpServers: dict[str, Any] | None = None
    settings: dict[str, Any] | str | None = None
    disallowedTools: list[str] | None = None


class CanUseToolRequest(WireModel):
    subtype: Literal["can_use_tool"] = "can_use_tool"
    tool_name: str
    display_name: str | None = None
    input: dict[str, Any] = Field(default_factory=dict)
    permission_suggestions: list[dict[str, Any]] = Field(default_factory=list)
    tool_use_id: str = ""
    description: str | None = None
    agent_id: str | None = None
    blocked_path: str | None = None
    decision_reason: Any = None  # ours: a sentence; kept as sent
    # extension fields (our executor only)
    file_path: str | None = None
    structured_patch: list[dict[str, Any]] | None = None
    original_file: str | None = None
    subcommands: list[str] | None = None


class HookCallbackRequest(WireModel):
    subtype: Literal["hook_callback"] = "hook_callback"
    callback_id: str
    input: dict[str, Any] = Field(default_factory=dict)
    tool_use_id: str | None = None


class InterruptRequest(WireModel):
    subtype: Literal["interrupt"] = "interrupt"


class SetPermissionModeRequest(WireModel):
    subtype: Literal["set_permission_mode"] = "set_permission_mode"
    mode: str


class SetModelRequest(WireModel):
    subtype: Literal["set_model"] = "set_model"
    model: str | None = None


class OtherRequest(WireModel):
    """A subtype this module has no model for (``reload_skills``, …); its fields are kept as extras."""

    subtype: str


Request = Union[InitializeRequest, CanUseToolRequest, HookCallbackRequest, InterruptRequest, SetPermissionModeRequest,
                SetModelRequest, "HostRequest", "OurRequest", OtherRequest]
_REQUESTS: dict[str, type[WireModel]] = {
    "initialize": InitializeRequest, "can_use_tool": CanUseToolRequest, "hook_callback": HookCallbackRequest,
    "interrupt": InterruptRequest, "set_permission_mode": SetPermissionModeRequest, "set_model": SetModelRequest,
}


class ControlRequest(WireModel):
    type: Literal["control_request"] = "control_request"
    request_id: str = Field(default_factory=new_request_id)
    request: Request


class SuccessBody(WireModel):
    subtype: Literal["success"] = "success"
    request_id: str
    response: dict[str, Any] | None = None  # the interrupt reply has none


class ErrorBody(WireModel):
    subtype: Literal["error"] = "error"
    request_id: str
    error: str = ""


class ControlResponse(WireModel):
    type: Literal["control_response"] = "control_response"
    response: SuccessBody | ErrorBody

    @property
    def request_id(self) -> str:
        return self.response.request_id

    @classmethod
    def success(cls, request_id: str, response: dict[str, Any] | None = None) -> ControlResponse:
        return cls(response=SuccessBody(request_id=request_id, response=response))

    @classmethod
    def failure(cls, request_id: str, error: str) -> ControlResponse:
        return cls(response=ErrorBody(request_id=request_id, error=error))


class ControlCancelRequest(WireModel):
    type: Literal["control_cancel_request"] = "control_cancel_request"
    request_id: str


class PermissionAllow(WireModel):
    """Allow: ``updatedInput`` is the input to run (``{}`` means "keep the original" to our CLI; Claude Code runs
    what it is given, so a host sends the whole input). ``updatedPermissions``: ``PermissionUpdate`` wire dicts."""

    behavior: Literal["allow"] = "allow"
    updatedInput: dict[str, Any] = Field(default_factory=dict)
    updatedPermissions: list[dict[str, Any]] | None = None
    # extension fields: the hunks the person rejected (original line ranges) of how many
    rejectedHunks: list[tuple[int, int]] | None = None
    totalHunks: int | None = None


class PermissionDeny(WireModel):
    """Deny: ``message`` becomes the tool_result verbatim (``is_error``); ``interrupt`` also stops the turn."""

    behavior: Literal["deny"] = "deny"
    message: str = "User denied via UI"
    interrupt: bool | None = None
    # extension field: what the person typed, already folded into ``message``; kept so every client shows it
    feedback: str | None = None


ControlMessage = Union[ControlRequest, ControlResponse, ControlCancelRequest]


def encode(message: WireModel) -> str:
    return json.dumps(message.to_wire(), ensure_ascii=False) + "\n"


def decode_request(obj: dict[str, Any]) -> Request:
    subtype = str(obj.get("subtype"))
    model = _REQUESTS.get(subtype) or _HOST_REQUESTS.get(subtype) or _OUR_REQUESTS.get(subtype) or OtherRequest
    return model.model_validate(obj)  # type: ignore[return-value]


def decode_control(obj: dict[str, Any]) -> ControlMessage:
    kind = obj.get("type")
    try:
        if kind == "control_request":
            body = obj.get("request")
            if not isinstance(body, dict):
                raise ProtocolError("control_request without a request object")
            return ControlRequest(request_id=str(obj.get("request_id") or ""), request=decode_request(body),
                                  **{k: v for k, v in obj.items() if k not in ("type", "request_id", "request")})
        if kind == "control_response":
            body = obj.get("response")
            if not isinstance(body, dict):
                raise ProtocolError("control_response without a response object")
            parsed: SuccessBody | ErrorBody = ErrorBody.model_validate(body) if body.get("subtype") == "error" \
                else SuccessBody.model_validate(body)
            return ControlResponse(response=parsed)
        if kind == "control_cancel_request":
            return ControlCancelRequest.model_validate(obj)
    except ValidationError as exc:
        raise ProtocolError(f"bad {kind}: {exc.errors()[0].get('msg')}") from exc
    raise ProtocolError(f"not a control message: {kind!r}")


def decode(text: str | bytes | dict[str, Any]) -> ControlMessage:
    return decode_control(loads_object(text))


# ------------------------------------------------------------------ the host's further requests (SPEC App. D.5)
# The TypeScript SDK's ``Query`` methods, shapes as its ``sdk.d.ts`` (0.3.333) declares them.


def unsupported(subtype: str) -> str:
    """The error text of a control request we do not implement (App. D.5)."""
    return f"Unsupported control request: {subtype}"


class McpStatusRequest(WireModel):
    """``mcpServerStatus()``."""

    subtype: Literal["mcp_status"] = "mcp_status"


class McpToggleRequest(WireModel):
    """``toggleMcpServer(name, enabled)``."""

    subtype: Literal["mcp_toggle"] = "mcp_toggle"
    serverName: str
    enabled: bool


class McpReconnectRequest(WireModel):
    """``reconnectMcpServer(name)``."""

    subtype: Literal["mcp_reconnect"] = "mcp_reconnect"
    serverName: str


class GetContextUsageRequest(WireModel):
    """``getContextUsage({detail})``: we always answer the ``summary`` way (last usage and local estimates)."""

    subtype: Literal["get_context_usage"] = "get_context_usage"
    detail: Literal["summary", "full"] | None = None


class ApplyFlagSettingsRequest(WireModel):
    """``applyFlagSettings(settings)``: top-level keys shallow-merged into the flag layer, ``null`` clears one."""

    subtype: Literal["apply_flag_settings"] = "apply_flag_settings"
    settings: dict[str, Any]


class UpdateSettingsRequest(WireModel):
    """``updateSettings(source, settings)``: allowlisted keys written to a settings file."""

    subtype: Literal["update_settings"] = "update_settings"
    source: Literal["localSettings", "userSettings"]
    settings: dict[str, Any]


class SeedReadStateRequest(WireModel):
    """``seedReadState(path, mtime)``: ``mtime`` in ms (floored) when the host saw the Read."""

    subtype: Literal["seed_read_state"] = "seed_read_state"
    path: str
    mtime: float


class RewindFilesRequest(WireModel):
    """``rewindFiles(userMessageId, {dryRun})``: the files back to their state just before that user message."""

    subtype: Literal["rewind_files"] = "rewind_files"
    user_message_id: str
    dry_run: bool | None = None


class RewindFilesResponse(WireModel):
    """``RewindFilesResult`` (``skippedLinks`` only on a real rewind)."""

    canRewind: bool
    error: str | None = None
    filesChanged: list[str] | None = None
    insertions: int | None = None
    deletions: int | None = None
    skippedLinks: int | None = None


HostRequest = Union[McpStatusRequest, McpToggleRequest, McpReconnectRequest, GetContextUsageRequest,
                    ApplyFlagSettingsRequest, UpdateSettingsRequest, SeedReadStateRequest, RewindFilesRequest]
_HOST_REQUESTS: dict[str, type[WireModel]] = {
    "mcp_status": McpStatusRequest, "mcp_toggle": McpToggleRequest, "mcp_reconnect": McpReconnectRequest,
    "get_context_usage": GetContextUsageRequest, "apply_flag_settings": ApplyFlagSettingsRequest,
    "update_settings": UpdateSettingsRequest, "seed_read_state": SeedReadStateRequest,
    "rewind_files": RewindFilesRequest,
}


class McpToolInfo(WireModel):
    name: str
    description: str | None = None
    annotations: dict[str, bool] | None = None  # readOnly, destructive, openWorld


class McpServerStatusInfo(WireModel):
    """One ``McpServerStatus``; ``restarts`` and ``transport`` are our extension fields."""

    name: str
    status: Literal["connected", "failed", "needs-auth", "pending", "disabled"]
    serverInfo: dict[str, str] | None = None
    error: str | None = None
    config: dict[str, Any] | None = None  # stdio: type, command, args; http: type, url (never env or headers)
    scope: str | None = None
    source: str | None = None
    tools: list[McpToolInfo] | None = None
    transport: str | None = None
    restarts: int | None = None


class McpStatusResponse(WireModel):
    mcpServers: list[McpServerStatusInfo] = Field(default_factory=list)


ContextRowId = Literal["system_prompt", "system_tools", "mcp_tools", "memory_files", "messages", "autocompact_buffer",
                       "free_space"]


class ContextCategory(WireModel):
    id: ContextRowId
    name: str
    tokens: int
    color: str
    kind: Literal["used", "free", "buffer", "deferred"]
    isDeferred: bool | None = None


class ContextGridSquare(WireModel):
    color: str
    isFilled: bool
    categoryName: str
    tokens: int
    percentage: int
    squareFullness: float


class ContextMemoryFile(WireModel):
    path: str
    type: str
    tokens: int


class ContextMcpTool(WireModel):
    name: str
    serverName: str
    tokens: int
    isLoaded: bool | None = None


class ContextNamedTokens(WireModel):
    name: str
    tokens: int


class ContextApiUsage(WireModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


class ContextUsageResponse(WireModel):
    """``SDKControlGetContextUsageResponse``."""

    _keep_null: ClassVar[frozenset[str]] = frozenset({"apiUsage"})
    categories: list[ContextCategory]
    totalTokens: int
    maxTokens: int
    rawMaxTokens: int
    percentage: int
    gridRows: list[list[ContextGridSquare]]
    model: str
    memoryFiles: list[ContextMemoryFile] = Field(default_factory=list)
    mcpTools: list[ContextMcpTool] = Field(default_factory=list)
    agents: list[dict[str, Any]] = Field(default_factory=list)
    systemTools: list[ContextNamedTokens] | None = None
    systemPromptSections: list[ContextNamedTokens] | None = None
    autoCompactThreshold: int | None = None
    isAutoCompactEnabled: bool = False
    apiUsage: ContextApiUsage | None = None


# ------------------------------------------------------------------ our own requests (host ↔ our clients, App. D.1)
# A client of the host (the window over memory or the socket) opens or attaches a session with its first request;
# a connection then speaks for that one session. The SDKs never send these.


class SessionSettings(WireModel):
    """How to open a session: ``client.SessionOptions`` without the objects (those stay host-side in process)."""

    permission_mode: str | None = None
    model: str | None = None
    resume: str | None = None
    session_id: str | None = None
    trusted: bool | None = None
    allowed_tools: list[str] = Field(default_factory=list)
    disallowed_tools: list[str] = Field(default_factory=list)
    add_dirs: list[str] = Field(default_factory=list)
    max_turns: int | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    script: Literal["tour"] | None = None
    idle_notification: bool = False


class OpenSessionRequest(WireModel):
    """Open a session on ``folder`` in the host and attach this connection to it; response ``SessionInfo``."""

    subtype: Literal["desktop_agent_open"] = "desktop_agent_open"
    folder: str
    settings: SessionSettings = Field(default_factory=SessionSettings)
    agentEvents: bool = True


class AttachSessionRequest(WireModel):
    """Attach this connection to a session the host runs; response ``SessionInfo``, then every pending question of
    the session as a ``can_use_tool`` request."""

    subtype: Literal["desktop_agent_attach"] = "desktop_agent_attach"
    session_id: str
    agentEvents: bool = True


class ListSessionsRequest(WireModel):
    """Response ``{"sessions": [SessionInfo…]}``."""

    subtype: Literal["desktop_agent_sessions"] = "desktop_agent_sessions"


class ListPendingRequest(WireModel):
    """Response ``{"questions": [PendingInfo…]}``, oldest first (of one session, or all)."""

    subtype: Literal["desktop_agent_pending"] = "desktop_agent_pending"
    session_id: str | None = None


class HistoryRequest(WireModel):
    """The attached session's transcript for display; response ``{"entries": [...]}``."""

    subtype: Literal["desktop_agent_history"] = "desktop_agent_history"


class RecordRequest(WireModel):
    """Append a front end's entry (a ``change-revert`` record) to the attached session's transcript."""

    subtype: Literal["desktop_agent_record"] = "desktop_agent_record"
    entry: dict[str, Any]


class RetryNowRequest(WireModel):
    """End the model client's backoff wait now; response ``{"retried": bool}``."""

    subtype: Literal["desktop_agent_retry_now"] = "desktop_agent_retry_now"


class EndSessionRequest(WireModel):
    """SessionEnd hooks with ``reason``, then the session is closed and leaves the host
    (``discard_if_empty``: its transcript goes when it holds no message); response ``{"discarded": bool}``."""

    subtype: Literal["desktop_agent_end"] = "desktop_agent_end"
    reason: str | None = "other"  # None: closed without SessionEnd hooks
    discard_if_empty: bool = False


class RewindRequest(WireModel):
    """Rewind in the window (``app.rewind``), for the attached session: ``marker`` — the checkpoint marker of
    ``message_id`` (or of the last prompt) ``{"messageId", "files", "insertions", "deletions"}`` or ``{}``;
    ``plan`` — the dry run; ``restore`` — the files and/or the conversation (a fork: ``forkSessionId``);
    ``undo`` — undo the restore ``restore_id``; ``revert_change`` — the changes panel's Revert of the call
    ``tool_use_id`` on ``paths`` through the same restore (``{}`` when the store holds no snapshot of that call);
    ``redo_change`` — its Redo (the revert ``restore_id`` undone, refused where the file changed since). A refusal
    (checkpointing off, unknown message) is an error."""

    subtype: Literal["desktop_agent_rewind"] = "desktop_agent_rewind"
    action: Literal["marker", "plan", "restore", "undo", "revert_change", "redo_change"]
    message_id: str | None = None
    restore_id: str | None = None
    files: bool = True
    conversation: bool = False
    tool_use_id: str | None = None
    paths: list[str] | None = None


class AllowHostRequest(WireModel):
    """"Allow this host for the session" (issue 27), confirmed by the person in the window: the session's egress
    proxy lets ``host`` through from the next command on; response ``{}``, an error when the session has no proxy."""

    subtype: Literal["desktop_agent_allow_host"] = "desktop_agent_allow_host"
    host: str


class McpServersRequest(WireModel):
    """The attached session's MCP servers as the window's Servers view shows them (``name``, ``status`` —
    ``connecting`` included —, ``tools`` by name, ``error``, ``transport``, ``source``, ``restarts``), without
    starting them; response ``{"servers": [...]}``."""

    subtype: Literal["desktop_agent_mcp_servers"] = "desktop_agent_mcp_servers"


class McpRestartRequest(WireModel):
    """Restart one MCP server (the Servers view's Restart): done when it is up again or failed again; ``{}``."""

    subtype: Literal["desktop_agent_mcp_restart"] = "desktop_agent_mcp_restart"
    serverName: str


class ClientActiveRequest(WireModel):
    """The window this connection belongs to became active (``true``) or stopped being active (another app has the
    focus): the background host notifies the questions of a session whose attached clients are all inactive
    (``host.away``), and closes those notifications when one becomes active. A client that never sends it counts
    as active. Response ``{}``."""

    subtype: Literal["desktop_agent_client_active"] = "desktop_agent_client_active"
    active: bool = Field(strict=True)  # a JSON true or false: never "false", 0 or null coerced (fail closed)


class ReviewRequest(WireModel):
    """Host → client: Review was chosen on the host's notification of the question ``request_id`` of
    ``session_id`` (a session this connection is attached to): the window raises itself on that question's
    dialog. Response ``{}``; an error when the client cannot show it (the host then starts a window)."""

    subtype: Literal["desktop_agent_review"] = "desktop_agent_review"
    session_id: str
    request_id: str


class PhoneRequest(WireModel):
    """The background host's phone page (``host.remote.relay``; Settings → "Answer from my phone"): ``on`` — start
    it (once per host; its certificate, port and devices live in the host's own state directory — ``state_dir``,
    when sent, must be exactly that absolute path, or the request is refused) and count this connection as a window
    that confirms pairings; response ``PhoneInfo``; ``off`` — stop it, ``{}``; ``offer`` — ``code`` is the
    single-use pairing code of the QR this window shows now, ``{}``; ``revoke`` — forget ``device_id`` and close
    its connections, ``{"revoked": bool, "devices": [...]}``. ``off``, ``offer`` and ``revoke`` are refused from a
    connection that did not turn the page on."""

    subtype: Literal["desktop_agent_phone"] = "desktop_agent_phone"
    action: Literal["on", "off", "offer", "revoke"]
    state_dir: str | None = None
    code: str | None = None
    device_id: str | None = None


class PhoneInfo(WireModel):
    """Where the phone page serves: its base URL, address and port, its certificate (PEM) and the certificate's
    fingerprint (the QR carries it), and the paired devices (no key: name, id, when paired and last used)."""

    url: str
    host: str
    port: int
    fingerprint: str
    cert_pem: str
    devices: list[dict[str, Any]] = Field(default_factory=list)


class ConfirmPairingRequest(WireModel):
    """Host → a window that turned the phone page on: confirm pairing ``device_name`` (the window's focus-safe
    dialog with ``verification``, the code the phone shows too, and the phone's ``address``); response
    ``{"accepted": bool}``."""

    subtype: Literal["desktop_agent_confirm_pairing"] = "desktop_agent_confirm_pairing"
    device_name: str
    verification: str
    address: str = ""


class PhoneDevicesRequest(WireModel):
    """Host → those windows: the paired devices changed (a device paired, revoked elsewhere); response ``{}``."""

    subtype: Literal["desktop_agent_phone_devices"] = "desktop_agent_phone_devices"
    devices: list[dict[str, Any]] = Field(default_factory=list)


# The requests only the host sends to its clients: a client that sends one to the host is refused.
HOST_TO_CLIENT: tuple[type[WireModel], ...] = (CanUseToolRequest, HookCallbackRequest, ReviewRequest,
                                               ConfirmPairingRequest, PhoneDevicesRequest)

OurRequest = Union[OpenSessionRequest, AttachSessionRequest, ListSessionsRequest, ListPendingRequest, HistoryRequest,
                   RecordRequest, RetryNowRequest, EndSessionRequest, McpServersRequest, McpRestartRequest, RewindRequest,
                   AllowHostRequest, ClientActiveRequest, ReviewRequest, PhoneRequest, ConfirmPairingRequest,
                   PhoneDevicesRequest]
_OUR_REQUESTS: dict[str, type[WireModel]] = {
    "desktop_agent_open": OpenSessionRequest, "desktop_agent_attach": AttachSessionRequest,
    "desktop_agent_sessions": ListSessionsRequest, "desktop_agent_pending": ListPendingRequest,
    "desktop_agent_history": HistoryRequest, "desktop_agent_record": RecordRequest,
    "desktop_agent_retry_now": RetryNowRequest, "desktop_agent_end": EndSessionRequest,
    "desktop_agent_mcp_servers": McpServersRequest, "desktop_agent_mcp_restart": McpRestartRequest,
    "desktop_agent_rewind": RewindRequest, "desktop_agent_allow_host": AllowHostRequest,
    "desktop_agent_client_active": ClientActiveRequest, "desktop_agent_review": ReviewRequest,
    "desktop_agent_phone": PhoneRequest, "desktop_agent_confirm_pairing": ConfirmPairingRequest,
    "desktop_agent_phone_devices": PhoneDevicesRequest,
}


class SessionInfo(WireModel):
    session_id: str
    cwd: str
    model: str = ""
    permissionMode: str = "default"
    transcript_path: str = ""
    manages_mcp: bool = False
    busy: bool = False
    pending: int = 0


class PendingInfo(WireModel):
    session_id: str
    request_id: str
    tool_name: str
    tool_use_id: str = ""
    folder: str = ""
    title: str = ""
    asked_at: float = 0.0
    input_sha256: str = ""
