"""The folder watch (``session.folder_watch``) on real folders with real inotify: file events become changed paths,
a folder made, removed or renamed (or a watched one gone) makes the drain incomplete, and it can be turned off."""

from __future__ import annotations

import os
import sys

import pytest

from desktop_agent.session.folder_watch import FolderWatch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "x.txt").write_text("x\n")
    (tmp_path / "top.txt").write_text("top\n")
    w = FolderWatch.create(str(tmp_path))
    assert w is not None
    assert w.watch(["", "a", "a/b"])
    assert w.covers({"": 1, "a": 1, "a/b": 1}) and not w.covers({"a/c": 1})
    yield tmp_path, w
    w.close()


def test_file_events_become_paths(tree):
    root, w = tree
    assert w.drain().paths == set()
    with open(root / "a" / "x.txt", "a") as fh:
        fh.write("more\n")
    os.chmod(root / "top.txt", 0o600)
    (root / "a" / "b" / "new.txt").write_text("new\n")
    os.rename(root / "a" / "x.txt", root / "a" / "b" / "y.txt")
    os.link(root / "top.txt", root / "a" / "hard.txt")
    os.symlink("../top.txt", root / "a" / "link")
    ch = w.drain()
    assert ch.complete
    assert ch.paths == {"a/x.txt", "top.txt", "a/b/new.txt", "a/b/y.txt", "a/hard.txt", "a/link"}
    assert ch.dirs == {"a", "a/b"}  # names changed there ("" only saw a chmod)
    assert w.drain().paths == set(), "a drain empties the queue"


@pytest.mark.parametrize("change", ["mkdir", "rmdir", "rename a folder", "the watched root of a folder removed"])
def test_folder_changes_make_the_drain_incomplete(tree, change):
    root, w = tree
    if change == "mkdir":
        (root / "a" / "c").mkdir()
    elif change == "rmdir":
        (root / "a" / "b").rmdir()
    elif change == "rename a folder":
        os.rename(root / "a" / "b", root / "a" / "d")
    else:
        os.rename(root / "a" / "b", root / "moved")
        (root / "moved").rmdir()
    assert not w.drain().complete


def test_it_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("DESKTOP_AGENT_CHECKPOINT_WATCH", "0")
    assert FolderWatch.create(str(tmp_path)) is None
