"""Translation between the stdio protocol and the engine's vocabulary, for ``client.subprocess``.

- ``LineTranslator.translate(line)``: one decoded stdout line → the ``AgentEvent``s the in-process engine
  would have yielded (``stream_event`` deltas → ``TextDelta``/``ThinkingDelta``, each ``message_start`` →
  ``TurnStarted``/``RequestStarted``; an ``assistant`` line → ``AssistantBlock`` plus ``ToolCallStarted`` for a
  tool_use (and the text when it was not streamed); a ``user`` line → ``UserMessage`` plus ``ToolCallFinished``
  per tool_result with ``tool_use_result`` as its data — the changes panel's ``structuredPatch``; ``result`` →
  ``Usage``, an ``ErrorEvent`` for a failed turn, ``TurnFinished``);
- ``with_computed_patch``: the patch of an Edit/MultiEdit/Write computed here from the input and the file on disk
  (``computed_here=True``). The question and its reply are mapped by ``protocol.permission`` (``request_from_wire``
  and ``reply_body`` are its functions, named here for older callers).
"""

from __future__ import annotations

import os
import time
from typing import Any, get_args

from desktop_agent.core.errors import USER_DENIED_MESSAGE
from desktop_agent.core.events import (
    AssistantBlock, Compacted, ErrorEvent, RequestStarted, TextDelta, ThinkingDelta, ToolCallFinished,
    ToolCallStarted, TurnFinished, TurnStarted, Usage, UserMessage,
)
from desktop_agent.core.permission import PermissionRequest
from desktop_agent.protocol.permission import reply_to_wire as reply_body
from desktop_agent.protocol.permission import request_from_wire
from desktop_agent.protocol.stream_json import (
    AssistantLine, ResultLine, StreamEventLine, SystemLine, UserLine,
)

TURN_REASONS: frozenset[str] = frozenset(get_args(TurnFinished.model_fields["reason"].annotation))
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _summary(name: str, tool_input: dict[str, Any]) -> str:
    from desktop_agent.tools.registry import tool_by_name

    tool = tool_by_name(name)
    if tool is None:
        return ""
    try:
        return str(tool.summary(tool_input))
    except Exception:
        return ""


class LineTranslator:
    """Per executor process: what it has shown so far (tool names, streamed text, denials, session usage)."""

    def __init__(self, cwd: str):
        self.cwd = cwd
        self.requests = 0
        self.streamed_text = False
        self.tool_names: dict[str, str] = {}
        self.denied: set[str] = set()
        self.session_tokens = 0
        self.turn_started = time.perf_counter()

    def translate(self, line: Any, *, interrupted: bool = False) -> list[Any]:
        if isinstance(line, StreamEventLine):
            return self._stream_event(line.event)
        if isinstance(line, AssistantLine):
            return self._assistant(line)
        if isinstance(line, UserLine):
            return self._user(line)
        if isinstance(line, ResultLine):
            return self._result(line, interrupted)
        if isinstance(line, SystemLine) and line.subtype == "compact_boundary":
            return [Compacted(pre_tokens=line.compact_pre_tokens or 0)]
        return []

    def _stream_event(self, event: dict[str, Any]) -> list[Any]:
        kind = event.get("type")
        if kind == "message_start":
            self.requests += 1
            model = str((event.get("message") or {}).get("model") or "")
            out: list[Any] = [TurnStarted(turn=self.requests)] if self.requests == 1 else []
            return [*out, RequestStarted(turn=self.requests, model=model)]
        if kind == "content_block_delta":
            delta = event.get("delta") or {}
            index = int(event.get("index") or 0)
            if delta.get("type") == "text_delta" and delta.get("text"):
                self.streamed_text = True
                return [TextDelta(index=index, text=str(delta["text"]))]
            if delta.get("type") == "thinking_delta" and delta.get("thinking"):
                return [ThinkingDelta(index=index, text=str(delta["thinking"]))]
        return []

    def _assistant(self, line: AssistantLine) -> list[Any]:
        out: list[Any] = [AssistantBlock(message=line.message)]
        streamed, self.streamed_text = self.streamed_text, False
        for block in line.blocks:
            kind = block.get("type")
            if kind == "text" and block.get("text") and not streamed:
                out.append(TextDelta(index=0, text=str(block["text"])))
            elif kind == "tool_use":
                tool_id, name = str(block.get("id") or ""), str(block.get("name") or "")
                raw_input = block.get("input")
                tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
                self.tool_names[tool_id] = name
                out.append(ToolCallStarted(tool_use_id=tool_id, name=name, input=tool_input,
                                           summary=_summary(name, tool_input)))
        return out

    def _user(self, line: UserLine) -> list[Any]:
        entry: dict[str, Any] = {"type": "user", "uuid": line.uuid, "message": line.message}
        if line.tool_use_result is not None:
            entry["toolUseResult"] = line.tool_use_result
        out: list[Any] = [UserMessage(message=entry)]
        results = [b for b in line.blocks if b.get("type") == "tool_result"]
        for block in results:
            tool_id = str(block.get("tool_use_id") or "")
            data = line.tool_use_result if len(results) == 1 and isinstance(line.tool_use_result, dict) else None
            out.append(ToolCallFinished(tool_use_id=tool_id, name=self.tool_names.get(tool_id, ""),
                                        content=block.get("content"), is_error=bool(block.get("is_error")),
                                        data=data, denied=tool_id in self.denied))
        return out

    def _result(self, line: ResultLine, interrupted: bool) -> list[Any]:
        usage = {k: int(line.usage.get(k) or 0) for k in USAGE_KEYS}
        self.session_tokens += sum(usage.values())
        out: list[Any] = [Usage(input_tokens=usage["input_tokens"], output_tokens=usage["output_tokens"],
                                cache_read_input_tokens=usage["cache_read_input_tokens"],
                                cache_creation_input_tokens=usage["cache_creation_input_tokens"],
                                session_cost_usd=line.total_cost_usd, session_tokens=self.session_tokens)]
        if line.terminal_reason in TURN_REASONS:
            reason = str(line.terminal_reason)
        elif line.subtype == "success":
            reason = "completed"
        elif line.subtype == "error_max_turns":
            reason = "max_turns"
        else:
            reason = "aborted_tools" if interrupted else "model_error"
        errors = [e for e in (line.errors or []) if e]
        error = "; ".join(errors) or None
        if reason == "model_error" and error:
            out.append(ErrorEvent(message=error, kind="model"))
        out.append(TurnFinished(
            reason=reason,  # type: ignore[arg-type]  # one of TURN_REASONS
            num_turns=line.num_turns, result_text=line.result or "", duration_ms=line.duration_ms,
            duration_api_ms=line.duration_api_ms, cost_usd=line.total_cost_usd, usage=usage,
            error=error if line.is_error else None))
        self.requests, self.streamed_text = 0, False
        return out


def with_computed_patch(request: PermissionRequest) -> PermissionRequest:
    """For an Edit/MultiEdit/Write asked without a patch (Claude Code): the patch computed here, from the input
    and the file on disk, with the Edit tool's own code. Other tools, or an unreadable file: unchanged."""
    name, inp = request.tool_name, request.input
    path = inp.get("file_path")
    if name not in ("Edit", "MultiEdit", "Write") or not isinstance(path, str) or not path:
        return request
    from desktop_agent.tools.edit import proposed_file
    from desktop_agent.util.fileio import normalize_newlines
    from desktop_agent.util.diff import structured_patch

    abs_path = path if os.path.isabs(path) else os.path.join(request.cwd, path)
    exists = os.path.isfile(abs_path)
    original = ""
    if exists:
        try:
            with open(abs_path, encoding="utf-8", errors="replace", newline="") as f:
                original = normalize_newlines(f.read())
        except OSError:
            return request
    if name == "Write":
        updated = normalize_newlines(str(inp.get("content", "")))
    elif name == "Edit":
        updated = proposed_file(original, inp)
    else:
        updated = original
        for edit in inp.get("edits") or []:
            if isinstance(edit, dict):
                updated = proposed_file(updated, edit)
    return request.model_copy(update={
        "file_path": abs_path, "structured_patch": structured_patch(original, updated),
        "original_file": original if exists else None, "computed_here": True})


__all__ = ["LineTranslator", "reply_body", "request_from_wire", "with_computed_patch"]
