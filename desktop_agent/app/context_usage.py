"""What fills the context window of a session: the host's ``get_context_usage`` (the SDK's ``getContextUsage()``).

``context_usage(session)`` answers the way the reference's ``detail: "summary"`` does — from the last response's
usage and local estimates (about four characters a token), with no token-count API call:

- ``totalTokens``: what the next request would carry (``session.compact.estimate_tokens``: the last assistant
  message's API usage plus what came after it, or the estimate over every message when no request was made yet, plus
  the system prompt and the tool schemas then);
- rows: the system prompt, the built-in tools, the MCP tools, the memory files (``CLAUDE.md``…), the messages (the
  rest of the total), the auto-compact reserve when auto-compaction is on, and the free space;
- ``rawMaxTokens``: the model's window (``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` lowers it), ``maxTokens`` the window
  less the summary reserve, ``autoCompactThreshold`` where auto-compaction starts;
- ``gridRows``: the 10×10 grid of the reference's ``/context`` card, each square a hundredth of the window;
- ``apiUsage``: the last response's four token counts, or ``null`` before the first one.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from desktop_agent.app.system_prompt import find_memory_files
from desktop_agent.protocol.control import (
    ContextApiUsage, ContextCategory, ContextGridSquare, ContextMcpTool, ContextMemoryFile, ContextNamedTokens,
    ContextRowId, ContextUsageResponse,
)
from desktop_agent.session import compact

if TYPE_CHECKING:
    from desktop_agent.app.session import AgentSession

GRID = 10  # squares a side
_ROWS: dict[ContextRowId, tuple[str, str]] = {  # id → the reference's row name, its colour
    "system_prompt": ("System prompt", "promptBorder"),
    "system_tools": ("System tools", "inactive"),
    "mcp_tools": ("MCP tools", "cyan_FOR_SUBAGENTS_ONLY"),
    "memory_files": ("Memory files", "claude"),
    "messages": ("Messages", "purple_FOR_SUBAGENTS_ONLY"),
    "autocompact_buffer": ("Autocompact buffer", "inactive"),
    "free_space": ("Free space", "promptBorder"),
}
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _tokens(obj: Any) -> int:
    return compact.rough_tokens(obj)


def _last_usage(messages: list[dict[str, Any]]) -> ContextApiUsage | None:
    for m in reversed(compact.messages_after_boundary(messages)):
        usage = (m.get("message") or {}).get("usage") if m.get("type") == "assistant" else None
        if isinstance(usage, dict) and any(int(usage.get(k) or 0) for k in _USAGE_KEYS):
            return ContextApiUsage(**{k: int(usage.get(k) or 0) for k in _USAGE_KEYS})
    return None


def _window(model: str) -> int:
    window = compact.context_window_for_model(model)
    try:
        return min(window, int(os.environ.get("CLAUDE_CODE_AUTO_COMPACT_WINDOW") or window))
    except ValueError:
        return window


def _grid(rows: list[ContextCategory], window: int) -> list[list[ContextGridSquare]]:
    """Squares filled row by row in the categories' order, free space last; a square holds ``window / 100``."""
    per = max(1, window // (GRID * GRID))
    squares: list[ContextGridSquare] = []
    for row in rows:
        left = row.tokens
        while left > 0 and len(squares) < GRID * GRID:
            part = min(per, left)
            squares.append(ContextGridSquare(color=row.color, isFilled=row.kind != "free", categoryName=row.name,
                                             tokens=part, percentage=round(part * 100 / window),
                                             squareFullness=round(part / per, 3)))
            left -= part
    name, color = _ROWS["free_space"]
    while len(squares) < GRID * GRID:
        squares.append(ContextGridSquare(color=color, isFilled=False, categoryName=name, tokens=0, percentage=0,
                                         squareFullness=0.0))
    return [squares[i:i + GRID] for i in range(0, GRID * GRID, GRID)]


async def context_usage(session: AgentSession) -> ContextUsageResponse:
    """The session's context usage now (its system prompt is built if no turn built it yet)."""
    from desktop_agent.mcp.client import McpTool

    s = session
    model = s.model
    window = _window(model)
    blocks = await s.system_prompt_blocks()
    memory = [(f, _tokens(f.content)) for f in find_memory_files(s.cwd)]
    memory_tokens = sum(n for _, n in memory)
    system_tokens = max(0, _tokens([b.get("text", "") for b in blocks]) - memory_tokens)
    builtin = [(t.name, _tokens(t.to_api_schema())) for t in s.tools if not isinstance(t, McpTool)]
    mcp = [(t, _tokens(t.to_api_schema())) for t in s.tools if isinstance(t, McpTool)]
    tools_tokens, mcp_tokens = sum(n for _, n in builtin), sum(n for _, n in mcp)
    fixed = system_tokens + memory_tokens + tools_tokens + mcp_tokens
    api_usage = _last_usage(s.messages)
    conversation = compact.estimate_tokens(s.messages)
    # With an API usage the estimate already counts the system prompt and the tools (they were in that request).
    total = max(conversation, fixed) if api_usage is not None else fixed + conversation
    auto = bool(s.auto_compact and compact.auto_compact_enabled())
    threshold = compact.auto_compact_threshold(model)
    buffer = max(0, window - threshold) if auto else 0
    used: list[tuple[ContextRowId, int]] = [
        ("system_prompt", system_tokens), ("system_tools", tools_tokens), ("mcp_tools", mcp_tokens),
        ("memory_files", memory_tokens), ("messages", max(0, total - fixed))]
    rows = [ContextCategory(id=i, name=_ROWS[i][0], tokens=n, color=_ROWS[i][1], kind="used") for i, n in used]
    if auto:
        name, color = _ROWS["autocompact_buffer"]
        rows.append(ContextCategory(id="autocompact_buffer", name=name, tokens=buffer, color=color, kind="buffer"))
    name, color = _ROWS["free_space"]
    rows.append(ContextCategory(id="free_space", name=name, tokens=max(0, window - total - buffer), color=color,
                                kind="free"))
    return ContextUsageResponse(
        categories=rows, totalTokens=total, maxTokens=compact.effective_context_window(model), rawMaxTokens=window,
        percentage=round(total * 100 / window), gridRows=_grid(rows, window), model=model,
        memoryFiles=[ContextMemoryFile(path=f.path, type=f.kind.capitalize(), tokens=n) for f, n in memory],
        mcpTools=[ContextMcpTool(name=t.name, serverName=t.conn.name, tokens=n, isLoaded=True) for t, n in mcp],
        systemTools=[ContextNamedTokens(name=name, tokens=n) for name, n in builtin],
        autoCompactThreshold=threshold if auto else None, isAutoCompactEnabled=auto, apiUsage=api_usage)
