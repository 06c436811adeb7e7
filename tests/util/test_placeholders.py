"""``util.placeholders``: the sandbox's mount points for protected names that do not exist yet — kept while
another agent process holds their lock, removed when untouched, and replaced by our own atomic writer (a write
the person allowed to a new ``.mcp.json`` lands)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from desktop_agent.tools.edit import take_snapshot
from desktop_agent.util import placeholders
from desktop_agent.util.fileio import write_bytes_atomic


@pytest.fixture(autouse=True)
def _own_registry(tmp_path, monkeypatch):
    """Lock files of these tests' own: another agent process's sweep (other tests running) would race them."""
    locks = tmp_path / "locks"
    locks.mkdir()
    monkeypatch.setenv(placeholders.LOCK_DIR_ENV, str(locks))
    yield
    placeholders.cleanup_placeholders()


def test_placeholder_of_another_process_is_not_removed(tmp_path):
    """A placeholder another agent process still holds (shared lock) survives this process's cleanup."""
    path = str(tmp_path / ".mcp.json")
    assert placeholders.make_placeholder(path, "file")
    other = subprocess.Popen([sys.executable, "-c", "import fcntl,os,sys,time; fd=os.open(sys.argv[1], os.O_RDWR);"
                              "fcntl.flock(fd, fcntl.LOCK_SH); print('held', flush=True); time.sleep(30)",
                              placeholders.lock_path(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "held"
        assert path not in placeholders.cleanup_placeholders()
        assert os.path.isdir(path)
    finally:
        other.kill()
        other.wait()
    placeholders.note_existing(path, "file")
    assert path in placeholders.cleanup_placeholders() and not os.path.lexists(path)


def test_a_write_the_person_allowed_replaces_a_file_placeholder(tmp_path):
    """Our atomic writer (Write/Edit after a yes, settings) takes the name of a "file" placeholder; a "dir"
    placeholder (``.claude``) takes the person's files as any folder does and is then kept."""
    mcp = str(tmp_path / ".mcp.json")
    assert placeholders.make_placeholder(mcp, "file") and os.path.isdir(mcp)
    assert take_snapshot(mcp).exists is False  # the tools see no file yet, not "a directory"
    write_bytes_atomic(mcp, b'{"mcpServers": {}}')
    assert open(mcp).read() == '{"mcpServers": {}}'
    claude = str(tmp_path / ".claude")
    assert placeholders.make_placeholder(claude, "dir")
    write_bytes_atomic(os.path.join(claude, "settings.local.json"), b"{}")
    other = tmp_path / "plain-dir"
    other.mkdir()
    with pytest.raises(IsADirectoryError):  # an ordinary directory is never replaced
        write_bytes_atomic(str(other), b"x")
    assert placeholders.cleanup_placeholders() == []  # both are real now: nothing removed
    assert os.path.isfile(mcp) and os.path.isfile(os.path.join(claude, "settings.local.json"))


def test_commondir_placeholder_is_neutral_and_removed(tmp_path):
    gitdir = tmp_path / ".git"
    gitdir.mkdir()
    path = str(gitdir / "commondir")
    assert placeholders.make_placeholder(path, "commondir")
    assert open(path).read() == ".\n" and placeholders.is_placeholder(path, "commondir")
    assert path in placeholders.cleanup_placeholders() and not os.path.exists(path)


def test_a_placeholder_someone_filled_is_kept(tmp_path):
    path = str(tmp_path / ".vscode")
    assert placeholders.make_placeholder(path, "dir")
    open(os.path.join(path, "settings.json"), "w").close()
    assert placeholders.cleanup_placeholders() == [] and os.path.isfile(os.path.join(path, "settings.json"))


def test_references_keep_a_placeholder_until_the_last_command_ends(tmp_path):
    """Two commands of this process bind ``.mcp.json``: the first to end leaves it, the last removes it — and
    the lock file with it."""
    path = str(tmp_path / ".mcp.json")
    a: list[str] = []
    b: list[str] = []
    assert placeholders.make_placeholder(path, "file", a) and a == [path]
    placeholders.note_existing(path, "file", b)
    assert b == [path] and placeholders.held_count(path) == 2
    assert placeholders.release_placeholders(a) == [] and os.path.isdir(path)
    assert placeholders.release_placeholders(b) == [path] and not os.path.lexists(path)
    assert not os.path.exists(placeholders.lock_path(path))


def test_an_entry_the_person_replaced_or_made_is_never_taken_for_ours(tmp_path):
    """The person removes our ``.vscode`` placeholder and makes their own empty one (the inode number may well be
    the same): it is kept. An empty ``.idea`` of theirs that we only saw existing is not ours either."""
    vscode = str(tmp_path / ".vscode")
    held: list[str] = []
    assert placeholders.make_placeholder(vscode, "dir", held)
    os.rmdir(vscode)
    os.mkdir(vscode)
    os.utime(vscode, ns=(1, 1))  # a change time of its own, whatever the clock's granularity
    assert placeholders.release_placeholders(held) == [] and os.path.isdir(vscode)
    idea = str(tmp_path / ".idea")
    os.mkdir(idea)
    other: list[str] = []
    placeholders.note_existing(idea, "dir", other)
    assert other == [] and os.path.isdir(idea)


def test_sweep_leaves_what_a_live_process_holds(tmp_path):
    """A placeholder another live agent process binds is not swept; once that process is gone, it is."""
    path = str(tmp_path / ".claude")
    script = ("import sys, time; from desktop_agent.util import placeholders as p; "
              "assert p.make_placeholder(sys.argv[1], 'dir'); print('made', flush=True); time.sleep(30)")
    other = subprocess.Popen([sys.executable, "-c", script, path], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(
                                 os.path.abspath(__file__))))})
    try:
        assert other.stdout.readline().strip() == "made"
        assert path not in placeholders.sweep() and os.path.isdir(path)
    finally:
        other.kill()
        other.wait()
    assert path in placeholders.sweep() and not os.path.lexists(path)


def test_a_placeholder_an_earlier_build_left_is_taken_over_and_removed(tmp_path):
    """The entries the bug report shows (an earlier build kept them for its process's life, lock file in the temp
    dir, no record): the next command binding one takes it over and removes it when it ends; a held one stays."""
    import fcntl
    import tempfile
    mcp, vscode, idea = (str(tmp_path / n) for n in (".mcp.json", ".vscode", ".idea"))
    for p in (mcp, vscode, idea):  # as that build did: the lock file first, then the entry
        legacy = placeholders.legacy_lock_path(p)
        assert os.path.dirname(legacy) == tempfile.gettempdir()
        open(legacy, "w").close()
    os.mkdir(mcp, 0o555)
    os.chmod(mcp, 0o555)
    os.mkdir(vscode)
    os.utime(placeholders.legacy_lock_path(idea), ns=(10**18, 10**18))  # the person's .idea: made long after
    os.mkdir(idea)
    held_by_old = os.open(placeholders.legacy_lock_path(vscode), os.O_RDWR)
    fcntl.flock(held_by_old, fcntl.LOCK_SH)  # an old-build process still runs with .vscode bound
    try:
        held: list[str] = []
        placeholders.note_existing(mcp, "file", held)
        placeholders.note_existing(vscode, "dir", held)
        placeholders.note_existing(idea, "dir", held)
        assert held == [mcp]
        assert placeholders.release_placeholders(held) == [mcp] and not os.path.lexists(mcp)
        assert os.path.isdir(vscode) and os.path.isdir(idea)
    finally:
        os.close(held_by_old)
        for p in (vscode, idea):
            os.unlink(placeholders.legacy_lock_path(p))
