"""The permission modes without Qt (``ui.modes``): the Ctrl+Shift+M cycle never enters bypass nor dontAsk (issue 21:
"Don't ask" silently denies every write, so it is chosen in the menu or the mode box only), a fresh session is never
left in bypass that was not asked for, Settings' default mode."""

from __future__ import annotations

import json

import pytest

from desktop_agent.ui import modes as p


@pytest.mark.parametrize("current, nxt", [
    ("default", "acceptEdits"), ("acceptEdits", "plan"), ("plan", "default"),
    ("dontAsk", "default"),  # leaving dontAsk: the next mode of the cycle
    ("bypassPermissions", "default"),  # leaving bypass: the mode after it that is in the cycle
    ("nonsense", "default"),
])
def test_next_mode_cycles_and_never_enters_bypass_or_dont_ask(current, nxt):
    assert p.next_mode(current) == nxt


def test_cycling_from_anywhere_never_reaches_bypass_or_dont_ask():
    for start in p.MODE_ORDER:
        mode = start
        seen = set()
        for _ in range(10):
            mode = p.next_mode(mode)
            seen.add(mode)
            assert mode not in (p.BYPASS, p.DONT_ASK)
        assert seen == {"default", "acceptEdits", "plan"}


@pytest.mark.parametrize("session, wanted, shown", [
    ("bypassPermissions", "default", "default"),  # never bypass without its question
    ("bypassPermissions", "bypassPermissions", "bypassPermissions"),
    ("plan", "default", "plan"), (None, "plan", "default"), ("", "plan", "default"),
])
def test_settled_mode(session, wanted, shown):
    assert p.settled_mode(session, wanted) == shown


@pytest.mark.parametrize("saved, mode", [("plan", "plan"), ("manual", "default"), ("bypassPermissions",
                                                                                  "bypassPermissions"),
                                         ("nonsense", "default"), (None, "default")])
def test_default_mode_setting(saved, mode, monkeypatch, tmp_path):
    from desktop_agent.util import dirs

    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"default_permission_mode": saved} if saved else {}))
    monkeypatch.setattr(dirs, "settings_path", lambda: str(path))
    assert p.default_mode_setting() == mode
