"""The lexical scan: where the shell runs or expands something (shell/scan.py)."""

from __future__ import annotations

from desktop_agent.shell.scan import scan_shell


def test_scan_finds_code_where_the_shell_runs_it():
    s = scan_shell("cat <<EOF\n$(touch X)\nEOF")
    assert s.subs == ["touch X"]
    s = scan_shell("cat <<'EOF'\n$(touch X)\nEOF")
    assert s.subs == [] and s.quoted_code
    assert scan_shell("echo ${x:-`a`} $((b[$(c)]))").subs == ["a", "c"]
    assert scan_shell("echo 'x $(y)' # $(z)").subs == []
    assert scan_shell("cat <<-E\n\t$(a)\n\tE\necho $(b)").subs == ["a", "b"]
    assert not scan_shell("echo 'open").ok
