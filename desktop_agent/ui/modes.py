"""The permission modes as the window uses them, without Qt: their order (``MODE_ORDER``), ``BYPASS``, ``DONT_ASK``,
the Ctrl+Shift+M cycle that never enters bypass or dontAsk (``next_mode``: those two only from the menu and the
mode box), the guard on a freshly opened session (``settled_mode``) and Settings' default mode
(``default_mode_setting``). Their labels are ``ui.mode_labels``, the bypass question ``ui.dialogs.bypass``.
"""

from __future__ import annotations

from typing import Literal

from desktop_agent.ui.prefs import read_prefs

PermissionModeName = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"]
MODE_ORDER: tuple[PermissionModeName, ...] = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
BYPASS: PermissionModeName = "bypassPermissions"
DONT_ASK: PermissionModeName = "dontAsk"
CYCLE: tuple[PermissionModeName, ...] = tuple(m for m in MODE_ORDER if m not in (BYPASS, DONT_ASK))


def next_mode(current: str) -> str:
    """Ctrl+Shift+M: the next mode of ``CYCLE`` — never bypassPermissions (only through its question) nor dontAsk
    (it silently denies every write: chosen in the menu or the mode box only); leaving either, the mode after it
    in the list that is in the cycle."""
    if current in CYCLE:
        return CYCLE[(CYCLE.index(current) + 1) % len(CYCLE)]
    names = list(MODE_ORDER)
    if current not in names:
        return "default"
    return next((m for m in names[names.index(current) + 1:] + names if m in CYCLE), "default")


def settled_mode(session_mode: str | None, wanted: str) -> str:
    """The mode a freshly opened session is shown (and left) in: bypass is never entered without its question,
    so a session that says bypass when something else was wanted goes back to default."""
    mode = session_mode or "default"
    return "default" if mode == BYPASS and wanted != BYPASS else mode


def default_mode_setting() -> str:
    """Settings' default permission mode (read without pydantic, as at start-up); ``manual`` is default."""
    mode = str(read_prefs().get("default_permission_mode") or "default")
    mode = "default" if mode == "manual" else mode
    return mode if mode in MODE_ORDER else "default"
