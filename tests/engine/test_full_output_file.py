"""Where an oversized tool result is saved: a directory only this user can read, never one another local user
prepared (a symlink to their folder, or a world-writable directory under the same name)."""

from __future__ import annotations

import os
import stat
import tempfile

import pytest

from desktop_agent.engine import execution


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path / f"desktop-agent-tool-results-{os.getuid()}"


def test_saved_private(tmpdir_env):
    path = execution._save_full_output("x" * 10, "sess", "toolu_1")
    assert open(path).read() == "x" * 10
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmpdir_env).st_mode) == 0o700


def test_a_prepared_symlink_is_not_followed(tmpdir_env, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.symlink(theirs, tmpdir_env)
    with pytest.raises(OSError):
        execution._save_full_output("secret", "sess", "toolu_1")
    assert list(theirs.iterdir()) == []


def test_a_world_writable_directory_is_refused(tmpdir_env):
    tmpdir_env.mkdir()
    os.chmod(tmpdir_env, 0o777)
    with pytest.raises(PermissionError):
        execution._save_full_output("secret", "sess", "toolu_1")


def test_a_planted_file_symlink_is_replaced_not_followed(tmpdir_env, tmp_path):
    execution._save_full_output("a", "sess", "toolu_1")
    target = tmp_path / "victim"
    target.write_text("keep")
    link = tmpdir_env / "sess" / "toolu_1.txt"
    link.unlink()
    os.symlink(target, link)
    execution._save_full_output("b", "sess", "toolu_1")
    assert target.read_text() == "keep" and link.read_text() == "b" and not link.is_symlink()
