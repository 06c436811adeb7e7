"""The bashlex parse flattened into simple commands (shell/parse.py)."""

from __future__ import annotations

from desktop_agent.shell.parse import parse_command, split_command
from desktop_agent.shell.readonly import is_read_only_command


def test_parse_flattens_everything():
    p = parse_command("a && b || c; d | e |& f & g\nh $(i) <(j) `k`")
    assert p.ok
    heads = [c.argv[0] for c in p.commands if c.argv]
    assert set("abcdefghijk") <= set(heads)


def test_parse_failure_is_not_ok():
    assert not parse_command("echo 'unterminated").ok
    assert not is_read_only_command("echo 'unterminated")


def test_split_command():
    assert split_command("ls && npm test | tee x") == ["ls", "npm test", "tee x"]
    assert split_command("echo 'x") == ["echo 'x"]
