"""Word-level helpers: brace expansion and wrapper stripping (shell/words.py)."""

from __future__ import annotations

from desktop_agent.shell.words import brace_expand, strip_wrappers


def test_brace_expand():
    assert brace_expand("{a,b}x") == ["ax", "bx"]
    assert brace_expand("f{1..3}") == ["f1", "f2", "f3"]
    assert brace_expand("{FILE,}") == ["FILE", ""]
    assert brace_expand("{a,{b,c}}") == ["a", "b", "c"]
    assert brace_expand("plain") == ["plain"]


def test_wrappers():
    argv, _ = strip_wrappers(["timeout", "-s", "KILL", "5", "nice", "-n", "3", "rm", "x"],
                                ["timeout", "-s", "KILL", "5", "nice", "-n", "3", "rm", "x"])
    assert argv == ["rm", "x"]
    assert strip_wrappers(["xargs", "-0", "rm"], ["xargs", "-0", "rm"])[0][0] == "xargs"  # not bare
    assert strip_wrappers(["command", "-v", "ls"], ["command", "-v", "ls"])[0][0] == "command"
