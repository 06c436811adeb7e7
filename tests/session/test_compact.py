"""Compaction's pure parts (SPEC §5.5): threshold, token estimate, summary formatting.

The session's policy (when it compacts, what it appends, the events) is tested in tests/app/test_compaction.py.
"""

from __future__ import annotations

from desktop_agent.core.messages import assistant_entry, user_entry
from desktop_agent.session import compact as c


def test_threshold_is_effective_window_minus_13000(monkeypatch):
    model = "claude-sonnet-4-5"
    assert c.effective_context_window(model) == 200_000 - 20_000
    assert c.auto_compact_threshold(model) == 200_000 - 20_000 - 13_000
    monkeypatch.setenv("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "100000")
    assert c.auto_compact_threshold(model) == 100_000 - 20_000 - 13_000
    monkeypatch.setenv("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "900000")  # can only lower the window
    assert c.auto_compact_threshold(model) == 167_000


def test_estimate_uses_last_usage_plus_later_messages():
    a = assistant_entry([{"type": "text", "text": "x"}], usage={"input_tokens": 5000, "output_tokens": 100,
                                                                "cache_read_input_tokens": 1000})
    msgs = [user_entry("hi"), a, user_entry("y" * 400)]
    assert c.estimate_tokens(msgs) == 6100 + 100
    state = c.AutoCompactState()
    assert not c.should_auto_compact(msgs, "m", state)
    assert c.should_auto_compact([user_entry("z" * 800_000)], "m", state)
    state.consecutive_failures = 3
    assert not c.should_auto_compact([user_entry("z" * 800_000)], "m", state)


def test_format_summary_drops_analysis():
    raw = "<analysis>scratch</analysis>\n<summary>1. Primary Request: change value</summary>"
    assert c.format_summary(raw) == "Summary:\n1. Primary Request: change value"
