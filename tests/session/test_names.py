"""``session.names``: the names and archive marks beside the transcripts — written whole or not at all, an unreadable
file kept aside (never overwritten blindly), and Delete moving a transcript to the trash instead of unlinking it."""

from __future__ import annotations

import json
import os

import pytest

from desktop_agent.session import names
from desktop_agent.util.dirs import data_dir


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(tmp_path / "data"))


def test_rename_archive_and_take_back(tmp_path):
    names.rename("s1", "  Alpha work  ")
    names.set_archived("s2", True)
    state = names.load()
    assert state.names == {"s1": "Alpha work"} and state.archived == {"s2"}
    names.rename("s1", "")
    names.set_archived("s2", False)
    assert names.load().names == {} and names.load().archived == set()
    assert oct(os.stat(data_dir() / names.FILE).st_mode & 0o777) == "0o600"
    assert not [p for p in os.listdir(data_dir()) if p.endswith(".tmp")]  # no temporary file left


def test_an_unreadable_file_reads_empty_and_is_kept_aside(tmp_path):
    path = data_dir() / names.FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"names": {"s1": "half')
    assert names.load().names == {}
    assert (path.with_suffix(".json.corrupt")).read_text() == '{"names": {"s1": "half'
    names.rename("s2", "new")
    assert json.loads(path.read_text())["names"] == {"s2": "new"}


def test_trash_moves_the_transcript(tmp_path):
    transcript = tmp_path / "abc.jsonl"
    transcript.write_bytes(b'{"type":"user"}\n')
    moved = names.trash(transcript)
    assert not transcript.exists() and moved.read_bytes() == b'{"type":"user"}\n'
    assert moved.parent == data_dir() / "trash" and moved.name.endswith("-abc.jsonl")
