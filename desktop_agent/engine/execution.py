"""``run_tool_use``: how one tool_use block becomes exactly one tool_result (SPEC §3.1–3.4, §3.11).

The six steps, each failure leaving by its own exit with the original ``tool_use_id``:
1. definition (the tools sent this turn), 2. lookup by name/alias, then deprecated aliases among
all built-ins, 3. schema check then ``validate_input``, 4. PreToolUse hooks and the permission
decision (ask → prompter), 5. ``call`` (any exception becomes an ``is_error`` result), 6.
``map_result_to_block`` with the per-tool size cap, then PostToolUse hooks.
``run_tool_use`` never raises (except ``CancelledError``, which the orchestrator turns into a result).

Hook events around the call besides PreToolUse/PostToolUse (App. B §B.5, ``docs/hooks.md``):
- a call that fails — ``call`` raises, or its result is an error (a command's non-zero exit, an MCP ``isError``) —
  gets PostToolUseFailure instead of PostToolUse (its ``additionalContext`` and block reason follow the error);
- a call denied without a person's answer (a deny rule, the mode, an ask nobody can answer) gets
  PermissionDenied; its ``retry: true`` adds ``PERMISSION_DENIED_RETRY`` for the model after the result;
- a PreToolUse ``defer`` (``engine.defer``): in a non-interactive session, for the reply's only call, the outcome
  is ``stage="deferred"`` (no tool_result: the ledger saves the call); otherwise it is treated as ``ask``.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.messages import user_entry
from desktop_agent.core.tool import CallInfo, current_call, set_current_call
from desktop_agent.core.errors import ToolError, input_validation_error, no_such_tool, wrap_error
from desktop_agent.util.input_guard import MAX_INPUT_DEPTH, clip_json_text, hostile_input_error
from desktop_agent.core.messages import tool_result_block
from desktop_agent.permissions.decide import current_mode
from desktop_agent.permissions.gateway import can_use_tool, decide_after_hook_for, decide_for
from desktop_agent.core.permission import DecisionReason, PermissionDecision
from desktop_agent.engine import defer

# The reference's meta message after a denied call whose PermissionDenied hook answered ``retry: true``.
PERMISSION_DENIED_RETRY = "The PermissionDenied hook indicated you may retry this tool call."




@dataclass
class ToolUseOutcome:
    """The single result of one tool_use, plus what the UI and the orchestrator need."""

    block: dict[str, Any]
    tool_name: str
    tool: Any = None
    data: Any = None
    context_modifier: Any = None
    duration_ms: float = 0.0
    stage: str = "result"  # lookup, schema, validation, hook, permission, call, result
    stop_reason: str | None = None  # a hook asked to stop the loop
    extra_messages: list[dict[str, Any]] = field(default_factory=list)
    # stage "deferred": the call as saved ({"id", "name", "input"}) — no tool_result is written for it
    deferred: dict[str, Any] | None = None

    @property
    def is_error(self) -> bool:
        return bool(self.block.get("is_error"))


def find_tool_by_name(tools: list[Any], name: str) -> Any | None:
    for tool in tools:
        if tool.matches_name(name):
            return tool
    return None


def lookup_tool(name: str, ctx: ToolUseContext) -> Any | None:
    """This turn's tools by name or alias, then any built-in through a deprecated alias (SPEC §3.3)."""
    tool = find_tool_by_name(ctx.tools, name)
    if tool is not None:
        return tool
    from desktop_agent.tools.registry import all_builtin_tools

    for candidate in all_builtin_tools():
        if name in candidate.deprecated_aliases:
            return candidate
    return None


def lookup_error(name: str, ctx: ToolUseContext) -> str:
    """The tool_result text for a call that ``lookup_tool`` cannot resolve, on every execution path (App. A): a
    tool removed by a whole-tool deny or ``--tools`` "exists but is not enabled", any other name is unknown."""
    from desktop_agent.permissions.decide import unavailable_tool_message
    from desktop_agent.tools.registry import builtin_tool_names

    return unavailable_tool_message(name, ctx, builtin_tool_names()) or no_such_tool(name)


def _error(tool_use_id: str, name: str, content: str, stage: str, tool: Any = None, t0: float = 0.0) -> ToolUseOutcome:
    return ToolUseOutcome(
        block=tool_result_block(tool_use_id, content, is_error=True), tool_name=name, tool=tool, stage=stage,
        duration_ms=(time.perf_counter() - t0) * 1000 if t0 else 0.0,
    )


def _dump_input(parsed: Any) -> dict[str, Any]:
    if isinstance(parsed, BaseModel):
        return parsed.model_dump(exclude_unset=True)
    return dict(parsed)


def _cap_result(block: dict[str, Any], tool: Any, ctx: ToolUseContext, tool_use_id: str) -> dict[str, Any]:
    """Per-tool size cap: an oversized text result is saved to a file and replaced by a preview."""
    limit = tool.max_result_size_chars
    content = block.get("content")
    if not isinstance(content, str) or limit == float("inf") or len(content) <= limit:
        return block
    try:
        path = _save_full_output(content, ctx.session_id or "session", tool_use_id)
        where = f"Full output saved to: {path}"
    except OSError:
        where = "The full output could not be saved"
    preview = content[:2000]
    block = dict(block)
    block["content"] = (
        f"<persisted-output>\nOutput too large ({len(content)} characters, limit {int(limit)}). {where}\n\n"
        f"Preview (first 2000 characters):\n{preview}\n...\n</persisted-output>"
    )
    return block


def _save_full_output(content: str, session_id: str, tool_use_id: str) -> str:
    """Write an oversized result where only this user can read it: ``$TMPDIR/desktop-agent-tool-results-<uid>``
    (0700, ours, not a symlink — another local user could have made the name first), the file created new
    (``O_EXCL``, 0600). Raises OSError when the place is not safe."""
    base = os.path.join(tempfile.gettempdir(), f"desktop-agent-tool-results-{os.getuid()}")
    for directory in (base, os.path.join(base, os.path.basename(session_id) or "session")):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(directory)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise PermissionError(f"{directory} is not a private directory of this user")
    path = os.path.join(base, os.path.basename(session_id) or "session", f"{os.path.basename(tool_use_id)}.txt")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(content)
    return path


async def run_tool_use(block: dict[str, Any], ctx: ToolUseContext) -> ToolUseOutcome:
    """Run one tool_use block through the six steps. Never raises except CancelledError."""
    t0 = time.perf_counter()
    tool_use_id = str(block.get("id", ""))
    name = block.get("name")
    name = name if isinstance(name, str) else str(name)
    try:
        return await _run(block, ctx, tool_use_id, name, t0)
    except Exception as exc:  # our bug, not the model's: still exactly one result
        return _error(tool_use_id, name, wrap_error(f"Error: {type(exc).__name__}: {exc}"), "internal", t0=t0)


async def _run(block: dict[str, Any], ctx: ToolUseContext, tool_use_id: str, name: str, t0: float) -> ToolUseOutcome:
    # 2. lookup
    tool = lookup_tool(name, ctx)
    if tool is None:
        return _error(tool_use_id, name, lookup_error(name, ctx), "lookup", t0=t0)

    # 3a. schema
    raw_input = block.get("input")
    if isinstance(raw_input, str):  # some providers send the JSON text
        try:
            raw_input = json.loads(clip_json_text(raw_input, MAX_INPUT_DEPTH + 1))
        except (ValueError, RecursionError):
            pass
    hostile = hostile_input_error(tool.name, raw_input)  # over-deep, NUL in a path: before pydantic
    if hostile is not None:
        return _error(tool_use_id, tool.name, wrap_error(hostile), "schema", tool, t0)
    try:
        parsed = tool.input_model.model_validate(raw_input if raw_input is not None else {})
    except ValidationError as exc:
        return _error(tool_use_id, tool.name, input_validation_error(tool.name, exc), "schema", tool, t0)

    # 3b. state
    validation = await tool.validate_input(parsed, ctx)
    if not validation.result:
        return _error(tool_use_id, tool.name, wrap_error(validation.message), "validation", tool, t0)

    # 4a. PreToolUse hooks
    force: PermissionDecision | None = None
    hook_context: str | None = None
    if ctx.hooks is not None:
        hook = await ctx.hooks.pre_tool_use(tool.name, _dump_input(parsed), tool_use_id, ctx)
        if hook.blocking_error is not None:
            return _error(tool_use_id, tool.name, hook.blocking_error, "hook", tool, t0)
        if hook.decision == "deny":
            return _error(tool_use_id, tool.name, hook.reason or f"Hook denied {tool.name}", "hook", tool, t0)
        if hook.updated_input is not None:
            try:
                parsed = tool.input_model.model_validate(hook.updated_input)
            except ValidationError as exc:
                return _error(tool_use_id, tool.name, input_validation_error(tool.name, exc), "schema", tool, t0)
        hook_context = hook.additional_context
        if getattr(hook, "deferred", False) and hook.decision is None:
            if await defer.may_defer(ctx):
                inp = _dump_input(parsed)
                return ToolUseOutcome(
                    block=tool_result_block(tool_use_id, defer.DEFERRED_NOTICE.format(tool=tool.name)),
                    tool_name=tool.name, tool=tool, stage="deferred", duration_ms=(time.perf_counter() - t0) * 1000,
                    deferred={"id": tool_use_id, "name": tool.name, "input": inp, "mode": current_mode(ctx)})
            force = decide_after_hook_for(tool, parsed, ctx, "ask", hook.reason)  # defer is ask here (D.6)
        elif hook.decision in ("allow", "ask"):
            force = decide_after_hook_for(tool, parsed, ctx, hook.decision, hook.reason)

    # 4b. permission
    if force is None:
        force = decide_for(tool, parsed, ctx)
    decision = await can_use_tool(tool, parsed, ctx, tool_use_id, force_decision=force)
    if decision.behavior != "allow":
        message = decision.message or f"Permission to use {tool.name} has been denied."
        outcome = _error(tool_use_id, tool.name, message, "permission", tool, t0)
        if _nobody_answered(force, ctx):
            await _permission_denied(outcome, tool, parsed, tool_use_id, message, ctx)
        return outcome
    if decision.updated_input:
        try:
            parsed = tool.input_model.model_validate(decision.updated_input)
        except ValidationError as exc:
            return _error(tool_use_id, tool.name, input_validation_error(tool.name, exc), "schema", tool, t0)

    # 5. call (once the turn's first checkpoint, taken beside the model request, is done), then a checkpoint of
    # the folder when the tool may have changed it (a failed call too)
    if ctx.checkpoints is not None:
        await ctx.checkpoints.before_tool()
    token = set_current_call(CallInfo(tool_use_id, decision.user_modified, decision))
    try:
        result = await tool.call(parsed, ctx)
    except Exception as exc:
        text = str(exc) or type(exc).__name__
        content = text if isinstance(exc, ToolError) and not exc.wrap else wrap_error(text)
        return await _failed(_error(tool_use_id, tool.name, content, "call", tool, t0), tool, parsed, text, ctx, t0)
    finally:
        token.var.reset(token)
        await _checkpoint_after(tool, parsed, ctx, tool_use_id)

    # 6. mapping, size cap, PostToolUse. Built-in tools map first; an MCP tool's hook runs first, so its
    # updated output is what gets mapped (SPEC §3.11).
    post = None
    data = result.data
    if tool.is_mcp and isinstance(data, dict) and data.get("isError") is True:
        out_block = tool.map_result_to_block(data, tool_use_id)
        out_block["tool_use_id"] = tool_use_id
        failed = _error(tool_use_id, tool.name, "", "result", tool, t0)
        failed.block, failed.data = _cap_result(out_block, tool, ctx, tool_use_id), result.data
        return await _failed(failed, tool, parsed, _text_of(out_block.get("content")), ctx, t0)
    if tool.is_mcp and ctx.hooks is not None:
        post = await ctx.hooks.post_tool_use(tool.name, _dump_input(parsed), result.data, tool_use_id, ctx)
        if post.updated_output is not None:
            data = post.updated_output
    out_block = tool.map_result_to_block(data, tool_use_id)
    out_block["tool_use_id"] = tool_use_id
    out_block = _cap_result(out_block, tool, ctx, tool_use_id)
    if out_block.get("is_error") and not tool.is_mcp:  # the tool's own failure (a command's non-zero exit)
        failed = ToolUseOutcome(
            block=out_block, tool_name=tool.name, tool=tool, data=result.data, context_modifier=result.context_modifier,
            stage="result", extra_messages=list(result.new_messages))
        if hook_context:
            failed.block = dict(out_block, content=_append_text(out_block.get("content"), hook_context))
        return await _failed(failed, tool, parsed, _text_of(out_block.get("content")), ctx, t0)
    stop_reason = None
    if ctx.hooks is not None:
        if post is None:
            post = await ctx.hooks.post_tool_use(tool.name, _dump_input(parsed), result.data, tool_use_id, ctx)
            if post.updated_output is not None:
                out_block = dict(out_block, content=post.updated_output)
        if post.block_reason:
            extra = f"PostToolUse:{tool.name} hook blocking error: {post.block_reason}"
            out_block = dict(out_block, content=_append_text(out_block.get("content"), extra))
        if post.additional_context:
            out_block = dict(out_block, content=_append_text(out_block.get("content"), post.additional_context))
        if post.stop:
            stop_reason = post.stop_reason or "PostToolUse hook stopped continuation"
    if hook_context:
        out_block = dict(out_block, content=_append_text(out_block.get("content"), hook_context))
    return ToolUseOutcome(
        block=out_block, tool_name=tool.name, tool=tool, data=result.data, context_modifier=result.context_modifier,
        duration_ms=(time.perf_counter() - t0) * 1000, stage="result", stop_reason=stop_reason,
        extra_messages=list(result.new_messages),
    )


def _nobody_answered(decision: PermissionDecision, ctx: ToolUseContext) -> bool:
    """The call was denied without a person's answer: the check denied it, or it asked and nobody can answer
    (no prompter, or one that answers at once: ``-p`` without a host)."""
    if decision.behavior == "deny":
        return True
    return decision.behavior == "ask" and (ctx.prompter is None or not getattr(ctx.prompter, "waits", True))


async def _permission_denied(outcome: ToolUseOutcome, tool: Any, parsed: Any, tool_use_id: str, reason: str,
                             ctx: ToolUseContext) -> None:
    hooks = ctx.hooks
    runner = getattr(hooks, "permission_denied", None)
    if hooks is None or runner is None or not hooks.has_hooks("PermissionDenied", tool.name):
        return
    try:
        verdict = await runner(tool.name, _dump_input(parsed), tool_use_id, reason, ctx)
    except Exception:  # a broken hook changes nothing: the call stays denied
        return
    if getattr(verdict, "retry", False):
        outcome.extra_messages.append(user_entry([{"type": "text", "text": PERMISSION_DENIED_RETRY}], isMeta=True))


async def _failed(outcome: ToolUseOutcome, tool: Any, parsed: Any, error: str, ctx: ToolUseContext,
                  t0: float) -> ToolUseOutcome:
    """PostToolUseFailure for a failed call: its block reason and context follow the error for the model;
    ``continue: false`` stops the loop."""
    hooks = ctx.hooks
    runner = getattr(hooks, "post_tool_use_failure", None)
    outcome.duration_ms = (time.perf_counter() - t0) * 1000
    if hooks is None or runner is None or not hooks.has_hooks("PostToolUseFailure", tool.name):
        return outcome
    tool_use_id = str(outcome.block.get("tool_use_id", ""))
    try:
        post = await runner(tool.name, _dump_input(parsed), tool_use_id, error, ctx,
                            is_interrupt=ctx.abort.aborted, duration_ms=int(outcome.duration_ms))
    except Exception:
        return outcome
    content = outcome.block.get("content")
    if post.block_reason:
        content = _append_text(content, f"PostToolUseFailure:{tool.name} hook blocking error: {post.block_reason}")
    if post.additional_context:
        content = _append_text(content, post.additional_context)
    outcome.block = dict(outcome.block, content=content)
    if post.stop:
        outcome.stop_reason = post.stop_reason or "PostToolUseFailure hook stopped continuation"
    return outcome


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return str(content or "")


async def _checkpoint_after(tool: Any, parsed: Any, ctx: ToolUseContext, tool_use_id: str) -> None:
    """The session's checkpoint after a tool that is not read-only (Bash, Write, Edit, …). Its failure is logged by
    the seam and never reaches the call's result; only a cancellation passes through."""
    checkpoints = ctx.checkpoints
    if checkpoints is None:
        return
    try:
        if tool.is_read_only(parsed):
            return
    except Exception:
        pass
    paths = None
    if tool.name in _NAMED_WRITES:  # the file it wrote is in its input: only that file is looked at
        path = getattr(parsed, "file_path", None) or getattr(parsed, "notebook_path", None)
        if isinstance(path, str) and path:
            paths = [path if os.path.isabs(path) else os.path.join(ctx.cwd, path)]
    try:
        await checkpoints.after_tool(tool.name, tool_use_id, paths)
    except Exception:  # the seam logs its own failures; this is a last guard
        pass


# built-in tools that write exactly the one file their input names (an MCP tool of the same name is not built in)
_NAMED_WRITES = ("Write", "Edit", "MultiEdit", "NotebookEdit")


def _append_text(content: Any, text: str) -> Any:
    if isinstance(content, str):
        return f"{content}\n\n{text}" if content else text
    if isinstance(content, list):
        return [*content, {"type": "text", "text": text}]
    return text


__all__ = ["run_tool_use", "ToolUseOutcome", "current_call", "CallInfo", "lookup_tool", "lookup_error",
           "find_tool_by_name", "DecisionReason"]
