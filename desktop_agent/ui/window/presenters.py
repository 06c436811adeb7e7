"""What the window shows, decided without widgets (no Qt here; tested in tests/ui/window/): the sessions list's
rows, whether a session failed for want of set-up, the failed MCP servers, the find bar's position, the usage
figure and the status dot's colour. (The mode cycle and the bypass guard are ``ui.modes``.)

The widgets (toolbar, sidebar, banners, find bar) translate and paint what these return.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Sequence

DotColour = Literal["muted", "error", "accent", "added_fg"]

# Status values (SPEC §1.6 plus the states the status bar shows); the controller sets them.
IDLE, THINKING, STREAMING, TOOL, WAITING, RETRYING, ERROR, STOPPING = (
    "idle", "thinking", "streaming", "tool", "waiting", "retrying", "error", "stopping",
)


def home(path: str) -> str:
    """``~/…`` for a path under the home folder."""
    h = os.path.expanduser("~")
    if path and h not in ("", "/") and (path == h or path.startswith(h + os.sep)):
        return "~" + path[len(h):]
    return path


@dataclass(frozen=True)
class SessionRow:
    """One row of the sessions list. ``title`` None: the session has no prompt yet (shown as "(new session)")."""

    session_id: str
    title: str | None
    when: str
    message_count: int
    current: bool
    archived: bool = False


def session_rows(infos: Iterable[Any], current: str | None, names: dict[str, str] | None = None,
                 archived: set[str] | None = None, show_archived: bool = False) -> list[SessionRow]:
    """Newest first; empty launches are left out (a session exists from its first prompt), the current one kept;
    a name given with Rename is the title; archived sessions only with ``show_archived`` (the current one always)."""
    names, archived = names or {}, archived or set()
    kept = [i for i in infos if (i.message_count > 0 or i.session_id == current)
            and (show_archived or i.session_id not in archived or i.session_id == current)]
    rows = []
    for info in sorted(kept, key=lambda i: -i.mtime):
        title = names.get(info.session_id) or (
            info.first_prompt.strip().splitlines()[0] if info.first_prompt and info.first_prompt.strip() else None)
        rows.append(SessionRow(info.session_id, title, time.strftime("%d %b %H:%M", time.localtime(info.mtime)),
                               info.message_count, info.session_id == current, info.session_id in archived))
    return rows


def is_setup_error(type_name: str, text: str) -> bool:
    """A session that could not open for want of an API key (the banner offers Settings and the tour)."""
    return type_name == "ConfigError" or "API key" in text


def failed_servers(servers: Sequence[dict[str, Any]], restarting: set[str]) -> dict[str, dict[str, Any]]:
    """The MCP servers that failed and are not being restarted, by name (one banner each)."""
    return {str(s.get("name")): s for s in servers
            if s.get("status") == "failed" and s.get("name") not in restarting}


def find_index(index: int, count: int, delta: int) -> int:
    """The find bar's match after a step of ``delta`` (wrapping); -1 with no matches."""
    if not count:
        return -1
    if index < 0:
        return 0 if delta > 0 else count - 1
    return (index + delta) % count


def token_text(tokens: int) -> str:
    return f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)


def status_dot(status: str) -> DotColour:
    dots: dict[str, DotColour] = {IDLE: "muted", ERROR: "error", WAITING: "accent"}
    return dots.get(status, "added_fg")
