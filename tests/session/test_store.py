"""The JSONL transcript store (SPEC §5.1, §5.2; §9 items 81–84, 88) and the app config."""

from __future__ import annotations

import json
import logging
import os
import stat

import pytest

from desktop_agent import config
from desktop_agent.util import dirs
from desktop_agent.core.messages import assistant_entry, tool_result_block, user_entry
from desktop_agent.session.store import (
    TranscriptStore, count_transcript_messages, find_session, latest_session, list_sessions, read_transcript,
    sanitize_path, transcript_path_for,
)


def lines(path) -> list[dict]:
    return [json.loads(x) for x in open(path, encoding="utf-8").read().splitlines() if x.strip()]


def test_sanitize_path_like_claude_code():
    assert sanitize_path("/home/a/my proj_1") == "-home-a-my-proj-1"
    long = "/x" * 200
    out = sanitize_path(long)
    assert len(out) <= 214 and out.startswith("-x-x")


def test_new_session_has_exactly_two_header_lines(workdir):
    store = TranscriptStore.create(str(workdir), "11111111-1111-1111-1111-111111111111")
    store.close()
    path = transcript_path_for(str(workdir), "11111111-1111-1111-1111-111111111111")
    assert path == store.path
    assert str(dirs.data_dir()) in str(path) and "/projects/" in str(path)
    got = lines(path)
    assert [g["type"] for g in got] == ["file-history-snapshot", "session-meta"]
    assert got[0]["isSnapshotUpdate"] is False
    assert got[1]["isMeta"] is True and got[1]["workDir"] == str(workdir)
    assert count_transcript_messages(got) == 0


def test_placeholder_is_cleared_but_a_used_id_is_refused(workdir):
    sid = "22222222-2222-2222-2222-222222222222"
    TranscriptStore.create(str(workdir), sid).close()
    # count == 0 → the placeholder is cleared and the session starts again
    store = TranscriptStore.create(str(workdir), sid)
    store.record(user_entry("hi"))
    store.close()
    assert len(lines(store.path)) == 3
    with pytest.raises(FileExistsError):
        TranscriptStore.create(str(workdir), sid)


def test_parent_chain_tool_results_and_dedup(workdir):
    store = TranscriptStore.create(str(workdir))
    u1 = user_entry("Change `value` to 2")
    a1 = assistant_entry([{"type": "tool_use", "id": "toolu_read_1", "name": "Read", "input": {"file_path": "app.ts"}}])
    r1 = user_entry([tool_result_block("toolu_read_1", "1\texport const value = 1")])
    a2 = assistant_entry([{"type": "text", "text": "Done."}])
    for e in (u1, a1, r1, a2):
        assert store.record(e)
    # re-recording the same array writes nothing (UUID dedup)
    assert store.record_all([u1, a1, r1, a2]) == 0
    # progress is never written
    assert not store.record({"type": "progress", "uuid": "p1", "data": {}})
    # ephemeral attachments are never written
    assert not store.record(user_entry("file", isEphemeral=True))
    store.close()
    got = [g for g in lines(store.path) if g["type"] in ("user", "assistant")]
    assert [g["uuid"] for g in got] == [u1["uuid"], a1["uuid"], r1["uuid"], a2["uuid"]]
    assert got[0]["parentUuid"] is None
    for prev, cur in zip(got, got[1:]):
        assert cur["parentUuid"] == prev["uuid"]
    assert got[2]["parentUuid"] == a1["uuid"]  # the tool_result points to the calling assistant message
    assert all(g["sessionId"] == store.session_id for g in got)
    assert not any(g["type"] == "progress" for g in lines(store.path))


def test_each_line_is_on_disk_as_soon_as_recorded(workdir):
    store = TranscriptStore.create(str(workdir))
    e = user_entry("written before the model call")
    store.record(e)
    # read through a separate file object without closing the store
    assert lines(store.path)[-1]["uuid"] == e["uuid"]
    store.close()


def test_corrupt_and_half_written_lines_are_skipped(workdir, caplog):
    store = TranscriptStore.create(str(workdir))
    store.record(user_entry("one"))
    store.close()
    with open(store.path, "ab") as fh:
        fh.write(b'{"type":"user","uuid":"x","message":{"role":"us')  # half-written, no newline
    with caplog.at_level(logging.WARNING):
        entries = read_transcript(store.path)
    assert [e.get("message", {}).get("content") for e in entries if e["type"] == "user"] == ["one"]
    assert any("corrupt" in r.message for r in caplog.records)
    # appending after a torn line starts on a fresh line
    reopened = TranscriptStore.open_existing(store.path, store.session_id, str(workdir))
    reopened.record(user_entry("two"))
    reopened.close()
    texts = [e["message"]["content"] for e in read_transcript(store.path) if e["type"] == "user"]
    assert texts == ["one", "two"]


def test_garbage_in_the_middle_is_skipped(workdir):
    store = TranscriptStore.create(str(workdir))
    store.record(user_entry("a"))
    store._append_raw({"type": "user", "uuid": "u-b", "message": {"role": "user", "content": "b"}})
    store.close()
    raw = open(store.path, "rb").read().splitlines()
    raw.insert(3, b"\x00\xffnot json at all")
    open(store.path, "wb").write(b"\n".join(raw) + b"\n")
    assert [e["message"]["content"] for e in read_transcript(store.path) if e["type"] == "user"] == ["a", "b"]


def test_permission_state_lines_only_when_changed(workdir):
    store = TranscriptStore.create(str(workdir))
    assert store.record_permission_state({"mode": "acceptEdits"})
    assert not store.record_permission_state({"mode": "acceptEdits"})
    assert store.record_permission_state({"mode": "plan"})
    store.close()
    assert [g["mode"] for g in lines(store.path) if g["type"] == "permission-state"] == ["acceptEdits", "plan"]


def test_list_latest_and_find(workdir, tmp_path):
    import time

    s1 = TranscriptStore.create(str(workdir))
    s1.record(user_entry("first session prompt"))
    s1.close()
    time.sleep(0.02)
    s2 = TranscriptStore.create(str(workdir))
    s2.record(user_entry([{"type": "text", "text": "second   session\nprompt"}]))
    s2.record(assistant_entry([{"type": "text", "text": "ok"}]))
    s2.close()
    os.utime(s1.path, (time.time() - 100, time.time() - 100))
    time.sleep(0.02)
    empty = TranscriptStore.create(str(workdir))  # newest, but no messages
    empty.close()
    infos = list_sessions(str(workdir))
    assert [i.session_id for i in infos] == [empty.session_id, s2.session_id, s1.session_id]
    assert infos[1].first_prompt == "second session prompt" and infos[1].message_count == 2
    assert latest_session(str(workdir)).session_id == s2.session_id
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert find_session(s1.session_id, str(other)) == s1.path
    assert find_session("nope", str(workdir)) is None


def test_app_settings_roundtrip_and_corrupt_file(tmp_path):
    s = config.AppSettings.load()
    assert s.stream_idle_timeout_s == 90.0 and s.recent_folders == []
    s.model = "claude-x"
    s.add_recent_folder(str(tmp_path))
    s.add_recent_folder(str(tmp_path))
    s.save()
    again = config.AppSettings.load()
    assert again.model == "claude-x" and again.recent_folders == [str(tmp_path)]
    assert config.settings_path().parent == dirs.config_dir()
    config.settings_path().write_text("{not json")
    assert config.AppSettings.load().model is None


def test_api_key_lookup_order(monkeypatch):
    assert config.find_api_key() == (None, "none")
    config.store_api_key("sk-file")  # no usable keyring here → credentials file, 0600
    path = config.credentials_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert config.find_api_key() == ("sk-file", "credentials")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    assert config.find_api_key() == ("sk-env", "ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    os.chmod(path, 0o644)  # readable by others: refused
    assert config.find_api_key() == (None, "none")


def test_large_transcript_is_read_from_the_last_boundary(workdir):
    from desktop_agent.core.messages import system_entry
    from desktop_agent.session.resume import load_conversation_for_resume

    store = TranscriptStore.create(str(workdir))
    store.record_permission_state({"mode": "acceptEdits"})
    big = "x" * 100_000
    for _ in range(60):  # ~6 MB of pre-compaction history
        store.record(user_entry(big))
        store.record(assistant_entry([{"type": "text", "text": "ok"}]))
    boundary = system_entry("compact_boundary", "Conversation compacted")
    summary = user_entry("summary", isCompactSummary=True)
    tail = assistant_entry([{"type": "text", "text": "after"}])
    store.record_all([boundary, summary, tail])
    store.close()
    assert store.path.stat().st_size > 5 * 1024 * 1024
    entries = read_transcript(store.path)
    assert [e["type"] for e in entries] == ["permission-state", "system", "user", "assistant"]
    resumed = load_conversation_for_resume(entries)
    assert [m["uuid"] for m in resumed.messages] == [boundary["uuid"], summary["uuid"], tail["uuid"]]
    assert resumed.permission_state["mode"] == "acceptEdits"
    assert len(read_transcript(store.path, full=True)) == 2 + 1 + 120 + 3


def test_list_sessions_large_file_quick_scan(workdir):
    store = TranscriptStore.create(str(workdir))
    store.record(user_entry("the first prompt"))
    for _ in range(40):
        store.record(assistant_entry([{"type": "text", "text": "x" * 10_000}]))
        store.record(user_entry([tool_result_block("t", "r")]))
    store.record(user_entry("meta", isMeta=True))
    store.close()
    assert store.path.stat().st_size > 256 * 1024
    info = list_sessions(str(workdir))[0]
    assert info.first_prompt == "the first prompt"
    assert info.message_count == count_transcript_messages(read_transcript(store.path)) == 81
    assert list_sessions(str(workdir))[0] == info  # cached


def test_api_key_from_keyring_before_file(monkeypatch):
    import sys
    import types

    class Backend:  # a working backend
        pass

    store: dict = {}
    fake = types.ModuleType("keyring")
    fake.get_keyring = lambda: Backend()
    fake.get_password = lambda service, user: store.get((service, user))
    fake.set_password = lambda service, user, value: store.__setitem__((service, user), value)
    backends = types.ModuleType("keyring.backends")
    failmod = types.ModuleType("keyring.backends.fail")

    class FailKeyring:
        pass

    failmod.Keyring = FailKeyring
    backends.fail = failmod
    monkeypatch.setitem(sys.modules, "keyring", fake)
    monkeypatch.setitem(sys.modules, "keyring.backends", backends)
    monkeypatch.setitem(sys.modules, "keyring.backends.fail", failmod)
    assert config.store_api_key("sk-ring") == "keyring"
    assert config.find_api_key() == ("sk-ring", "keyring")
    assert not config.credentials_path().exists()
    fake.get_keyring = lambda: FailKeyring()  # the fail backend is treated as "no keyring"
    assert config.find_api_key() == (None, "none")


class _MemoryKeyring:
    """A real ``keyring`` backend that keeps passwords in memory (no D-Bus, no file)."""

    @staticmethod
    def make():
        import keyring.backend

        class MemoryKeyring(keyring.backend.KeyringBackend):
            priority = 10  # type: ignore[assignment]

            def __init__(self):
                super().__init__()
                self.store: dict = {}

            def get_password(self, service, username):
                return self.store.get((service, username))

            def set_password(self, service, username, password):
                self.store[(service, username)] = password

            def delete_password(self, service, username):
                self.store.pop((service, username), None)

        return MemoryKeyring()


def test_real_keyring_backend_stores_and_file_key_moves_in(monkeypatch):
    import keyring
    from keyring.backends import fail

    monkeypatch.setattr(keyring.core, "_keyring_backend", fail.Keyring())
    assert config.store_api_key("sk-old") == "credentials"  # no keyring yet: the 0600 file
    assert "credentials.json" in config.api_key_location()
    backend = _MemoryKeyring.make()
    keyring.set_keyring(backend)
    try:
        assert config.find_api_key() == ("sk-old", "keyring")  # moved on first lookup
        assert backend.store[(config.KEYRING_SERVICE, config.KEYRING_USER)] == "sk-old"
        assert not config.credentials_path().exists()
        assert config.api_key_location() == "The key is stored in the system keyring."
        assert config.store_api_key("sk-new") == "keyring"
        assert config.find_api_key() == ("sk-new", "keyring")
    finally:
        keyring.set_keyring(fail.Keyring())


def test_fallback_when_the_keyring_cannot_store(monkeypatch):
    import keyring
    from keyring.backends import fail

    backend = _MemoryKeyring.make()

    def refuse(*a):
        raise keyring.errors.PasswordSetError("locked")

    backend.set_password = refuse
    keyring.set_keyring(backend)
    try:
        assert config.store_api_key("sk-file") == "credentials"
        assert stat.S_IMODE(config.credentials_path().stat().st_mode) == 0o600
        assert config.find_api_key() == ("sk-file", "credentials")  # move failed: the file keeps it
        assert config.credentials_path().exists()
    finally:
        keyring.set_keyring(fail.Keyring())
