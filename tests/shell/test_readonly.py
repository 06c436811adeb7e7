"""Proven read-only and concurrency-safe commands (shell/readonly.py)."""

from __future__ import annotations

import pytest

from desktop_agent.shell.readonly import is_concurrency_safe_command, is_read_only_command


@pytest.mark.parametrize("command,expected", [
    ("ls", True), ("ls -la src", True), ("cat a | grep b | wc -l", True), ("git status", True),
    ("git log --oneline", True), ("git diff HEAD~1", True), ("git branch", True), ("git branch new", False),
    ("git push", False), ("git -c x=y log", False), ("rm x", False), ("ls > out", False), ("ls >> out", False),
    ("ls 2>&1", True), ("ls 2>/dev/null", True), ("echo $(rm x)", False),
    # fail closed (issue 12): any substitution, and any wrapper, makes a command not read-only
    ("echo $(ls)", False), ("cat <(ls)", False), ("cat <(curl x)", False), ("find . -name x", True), ("find . -delete", False),
    ("find . -exec cat {} ;", False), ("LANG=C ls", True), ("FOO=1 ls", False), ("cd src && ls", True),
    ("timeout 5 ls", False), ("npm test", False), ("", False), ("sed -i s/a/b/ f", False),
    ("(ls; pwd)", True), ("ls & rm x", False), ("tee out", False),
])
def test_read_only(command, expected):
    assert is_read_only_command(command) is expected


def test_item_54_concurrency_flags_shape():
    assert is_read_only_command("ls") and not is_read_only_command("rm x")


@pytest.mark.parametrize("command,expected", [
    ("ls", True), ("cat a | grep b", True), ("git log --oneline", True), ("echo $(ls)", False),
    ("cat <<EOF\n$(id)\nEOF", False), ("cat <<'EOF'\n$(id)\nEOF", True), ("echo ${x:-$(id)}", False),
    ("printf -v 'a[$(id)]' x", False), ("printf '%s' x", True), ("test -v x", False), ("[ -f x ]", True),
    ("git reflog", True), ("git reflog expire --all", False), ("git grep -Oless x", False), ("git grep x", True),
    ("git -c a=b log", False), ("git --no-pager log", True), ("date -f x", False), ("date +%s", True),
    ("wc --files0-from=x", False), ("diff --from-file=x y", False), ("grep -f x y", False), ("rg --pre x y", False),
    ("cat {a,b}", True), ("{cat,x}", False), ("/bin/c[a]t x", False), ("cat $F", False), ("echo $F", True),
    ("sh -c ls", False), ("env ls", False), ("nohup ls", False), ("find . -L", False), ("cat .e*", True),
])
def test_is_read_only(command, expected):
    assert is_read_only_command(command) is expected


@pytest.mark.parametrize("command,expected", [
    ("ls", True), ("cat a | grep b", True), ("sleep 1", True), ("cd src", False), ("cd src && ls", False),
    ("rm x", False), ("echo $(ls)", False),
])
def test_concurrency_safe_is_read_only_without_cd(command, expected):
    # a `cd` changes the shell's cwd for later calls: it runs alone, in order (BashTool.is_concurrency_safe)
    assert is_concurrency_safe_command(command) is expected
