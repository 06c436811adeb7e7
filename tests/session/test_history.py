"""File-history backups: what is saved before a write, listing, restoring, persistence."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from desktop_agent.session.history import FileHistory


def test_default_location(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    h = FileHistory(session_id="abc")
    f = tmp_path / "f.txt"
    f.write_text("v1")
    backup = h.backup(str(f))
    assert Path(backup).parent == tmp_path / "xdg" / "desktop-agent" / "file-history" / "abc"


def test_backup_versions_and_restore(tmp_path):
    h = FileHistory(tmp_path / "data", "s")
    f = tmp_path / "work" / "f.txt"
    f.parent.mkdir()
    f.write_text("v1")
    f.chmod(0o640)
    b1 = h.backup(str(f), tag="msg-1")
    f.write_text("v2")
    b2 = h.backup(str(f), tag="msg-2")
    f.write_text("v3")
    assert Path(b1).read_text() == "v1" and Path(b2).read_text() == "v2"
    entries = h.list(str(f))
    assert [(e.version, e.existed, e.tag) for e in entries] == [(1, True, "msg-1"), (2, True, "msg-2")]
    assert entries[0].mode == 0o640
    h.restore(str(f), version=2)
    assert f.read_text() == "v2"
    f.chmod(0o600)
    h.restore(str(f))  # default: as at the session's first backup
    assert f.read_text() == "v1"
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o640


def test_missing_file_is_recorded_and_restore_deletes(tmp_path):
    h = FileHistory(tmp_path / "data", "s")
    f = tmp_path / "new.txt"
    assert h.backup(str(f)) is None
    (entry,) = h.list()
    assert entry.existed is False and entry.backup is None
    f.write_text("created by the agent")
    h.restore(str(f))
    assert not f.exists()


def test_restore_unknown_raises(tmp_path):
    h = FileHistory(tmp_path / "data", "s")
    with pytest.raises(KeyError):
        h.restore(str(tmp_path / "x"))
    f = tmp_path / "f"
    f.write_text("a")
    h.backup(str(f))
    with pytest.raises(KeyError):
        h.restore(str(f), version=7)


def test_index_persists_and_tolerates_torn_line(tmp_path):
    f = tmp_path / "f.txt"
    f.write_text("one")
    h = FileHistory(tmp_path / "data", "s")
    h.backup(str(f))
    with open(h.index_path, "a") as fh:
        fh.write('{"path": "/tor')  # a crash mid-append
    again = FileHistory(tmp_path / "data", "s")
    assert [e.version for e in again.list(str(f))] == [1]
    f.write_text("two")
    assert again.backup(str(f)).endswith("@v2")
    assert again.files() == [str(f)]


def test_sessions_are_separate(tmp_path):
    f = tmp_path / "f.txt"
    f.write_text("x")
    FileHistory(tmp_path / "data", "a").backup(str(f))
    assert FileHistory(tmp_path / "data", "b").list() == []


def test_concurrent_backups_get_distinct_versions(tmp_path):
    h = FileHistory(tmp_path / "data", "s")
    f = tmp_path / "f.txt"
    f.write_text("same")
    threads = [threading.Thread(target=h.backup, args=(str(f),)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(e.version for e in h.list(str(f))) == list(range(1, 9))
    assert len({e.backup for e in h.list()}) == 8
