"""The permission question on the wire, both ways: every mapping between ``core.permission`` and ``protocol.control``
is written here once and used by both ends (the host asking, a client answering; a client reading a ``can_use_tool``
from Claude Code, our host reading a client's reply).

- ``request_to_wire(request)`` → ``CanUseToolRequest`` (with our extension fields: the patch the engine built);
  ``request_from_wire(request_id, wire, cwd)`` → ``PermissionRequest``;
- ``reply_to_wire(reply, original_input)`` → ``PermissionAllow`` | ``PermissionDeny`` (allow runs the whole input,
  deny carries the tool_result's text, the feedback folded in as the engine folds it);
  ``reply_from_wire(body)`` → ``PermissionReply`` (a malformed ``updatedPermissions`` entry or ``rejectedHunks``
  list is dropped, never turned into a wider allow).
"""

from __future__ import annotations

import os
from typing import Any

from desktop_agent.core.errors import USER_DENIED_MESSAGE
from desktop_agent.core.permission import DecisionReason, PermissionReply, PermissionRequest, PermissionUpdate
from desktop_agent.protocol.control import CanUseToolRequest, PermissionAllow, PermissionDeny


def _describe(request: PermissionRequest) -> str:
    path = request.file_path or (request.input or {}).get("file_path") or (request.input or {}).get("path")
    if isinstance(path, str) and path:
        return os.path.basename(path)
    command = (request.input or {}).get("command")
    return str(command) if isinstance(command, str) else ""


def request_to_wire(request: PermissionRequest) -> CanUseToolRequest:
    return CanUseToolRequest(
        tool_name=request.tool_name, display_name=request.tool_name, input=request.input,
        permission_suggestions=[s.to_wire() for s in request.suggestions], tool_use_id=request.tool_use_id,
        description=request.description or _describe(request) or None, blocked_path=request.blocked_path or None,
        decision_reason=request.reason_text if request.decision_reason is not None else None,
        # Extension fields (issue 15/16): the patch the engine built, so a host's dialog shows exactly it.
        file_path=request.file_path, structured_patch=request.structured_patch,
        original_file=request.original_file, subcommands=request.subcommands,
    )


def request_from_wire(request_id: str, wire: CanUseToolRequest, cwd: str) -> PermissionRequest:
    suggestions: list[PermissionUpdate] = []
    for raw in wire.permission_suggestions:
        try:
            suggestions.append(PermissionUpdate.model_validate(raw))
        except Exception:  # a kind this engine does not know: not offered
            continue
    reason: DecisionReason | None = None
    if isinstance(wire.decision_reason, dict):
        try:
            reason = DecisionReason.model_validate(wire.decision_reason)
        except Exception:
            reason = None
    elif isinstance(wire.decision_reason, str) and wire.decision_reason:
        reason = DecisionReason(type="other", reason=wire.decision_reason)
    description = wire.description
    target = wire.file_path or wire.input.get("file_path") or wire.input.get("notebook_path")
    if description and isinstance(target, str) and target:  # Claude Code's "src/app.ts": the heading says it
        full = target if os.path.isabs(target) else os.path.join(cwd, target)
        if description.strip() in (target, full, os.path.relpath(full, cwd), os.path.basename(full)):
            description = None
    return PermissionRequest(
        request_id=request_id, tool_name=wire.tool_name, tool_use_id=wire.tool_use_id, input=dict(wire.input),
        cwd=cwd, message="", decision_reason=reason, suggestions=suggestions, blocked_path=wire.blocked_path,
        file_path=wire.file_path, structured_patch=wire.structured_patch, original_file=wire.original_file,
        subcommands=wire.subcommands, description=description)


def reply_to_wire(reply: PermissionReply, original_input: dict[str, Any]) -> PermissionAllow | PermissionDeny:
    """The ``control_response`` body: allow runs the whole input (Claude Code runs what it is given), deny carries
    the message the tool_result will say verbatim (the feedback folded in as the engine folds it)."""
    if reply.behavior == "allow":
        updates = [u.to_wire() for u in reply.updated_permissions]
        return PermissionAllow(updatedInput=dict(reply.updated_input or original_input),
                               updatedPermissions=updates or None, rejectedHunks=reply.rejected_hunks,
                               totalHunks=reply.total_hunks)
    message = reply.message or USER_DENIED_MESSAGE
    if reply.feedback and message == USER_DENIED_MESSAGE:
        message = f"{message}. The user said: {reply.feedback}"
    return PermissionDeny(message=message, interrupt=True if reply.interrupt else None, feedback=reply.feedback or None)


def _hunks(raw: Any, total: Any) -> dict[str, Any]:
    """``rejectedHunks`` ([[start, end], …], original lines, 1-based inclusive) and ``totalHunks`` of an allow that
    took only some hunks; a malformed list is dropped whole."""
    if not isinstance(raw, list) or not raw:
        return {}
    ranges = []
    for item in raw:
        if not (isinstance(item, (list, tuple)) and len(item) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in item) and 1 <= item[0] <= item[1]):
            return {}
        ranges.append((item[0], item[1]))
    ok = isinstance(total, int) and not isinstance(total, bool) and total >= len(ranges)
    return {"rejected_hunks": ranges, "total_hunks": total if ok else len(ranges)}


def reply_from_wire(body: dict[str, Any] | None) -> PermissionReply:
    """A ``can_use_tool`` response body → the reply. Anything but a well-formed allow is a deny (fail closed)."""
    body = body or {}
    if body.get("behavior") == "allow":
        updates = []
        for item in body.get("updatedPermissions") or []:
            try:
                updates.append(PermissionUpdate.model_validate(item))
            except Exception:
                pass
        updated = body.get("updatedInput")
        return PermissionReply(behavior="allow", updated_input=updated if isinstance(updated, dict) and updated
                               else None, updated_permissions=updates,
                               **_hunks(body.get("rejectedHunks"), body.get("totalHunks")))
    message, feedback = body.get("message"), body.get("feedback")
    return PermissionReply(behavior="deny", message=str(message or USER_DENIED_MESSAGE),
                           interrupt=bool(body.get("interrupt")),
                           feedback=feedback if isinstance(feedback, str) and feedback else None)
