"""``app.rewind`` in a real session: a checkpoint before each prompt and after each write, a restore told to the model
once with the next prompt, a broken store that never fails the tool call, the checkpointing switch (the SDK's
environment flag, our setting), and a fork of the conversation from before a message (the original kept)."""

from __future__ import annotations

import asyncio
import json

from desktop_agent.app.rewind import ENV_FLAG, NOT_ENABLED, checkpointing_enabled, fork_before
from desktop_agent.app.session import AgentSession
from desktop_agent.config import AppSettings
from desktop_agent.model.scripted import ScriptedModelClient, reply, text, tool_use
from desktop_agent.util import dirs


def _write(path, content, id):
    return reply(tool_use("Write", {"file_path": str(path), "content": content}, id=id))


def test_checkpoints_before_prompts_and_after_writes_and_the_restore_is_told(workdir):
    target = workdir / "notes.txt"
    client = ScriptedModelClient([_write(target, "one\n", "toolu_w1"), reply(text("wrote")),
                                  reply(text("ok"))])
    s = AgentSession.create(str(workdir), client=client, permission_mode="acceptEdits", checkpoint_default=True)
    assert s.ctx.checkpoints is s.checkpoints and s.checkpoints.enabled
    asyncio.run(s.run("write notes"))
    first = s.last_prompt_uuid
    assert target.read_text() == "one\n"
    store = s.checkpoints.store()
    assert store.checkpoint_for(first) is not None
    files, ins, dels = store.diff_stats(store.checkpoint_for(first), store.tip())
    assert files == ["notes.txt"] and (ins, dels) == (1, 0)  # the after-write snapshot is the tip
    dry = asyncio.run(s.checkpoints.rewind_files(first, dry_run=True))
    assert dry == {"canRewind": True, "filesChanged": [str(target)], "insertions": 0, "deletions": 1}
    real = asyncio.run(s.checkpoints.rewind_files(first, dry_run=False))
    assert real["canRewind"] and real["skippedLinks"] == 0 and not target.exists()
    asyncio.run(s.run("next"))
    note = client.requests[2].messages[-1]["content"][0]["text"]
    assert note.startswith("<system-reminder>\nThe user restored files in the working directory to the state just "
                           f"before user message {first}: notes.txt.")
    assert s.checkpoints.take_note() is None  # told once


def test_a_broken_store_never_fails_the_call(workdir):
    broken = dirs.data_dir() / "checkpoints"  # a file where the stores go: every snapshot fails
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text("not a folder")
    target = workdir / "x.txt"
    client = ScriptedModelClient([_write(target, "x\n", "toolu_w"), reply(text("done"))])
    s = AgentSession.create(str(workdir), client=client, permission_mode="acceptEdits", checkpoint_default=True)
    asyncio.run(s.run("write"))
    result = [b for m in client.requests[1].messages for b in (m["content"] if isinstance(m["content"], list) else [])
              if b.get("type") == "tool_result"][0]
    assert not result.get("is_error") and target.read_text() == "x\n"
    assert s.checkpoints.last_error is not None
    answer = asyncio.run(s.checkpoints.rewind_files(s.last_prompt_uuid, dry_run=True))
    assert answer["canRewind"] is False and answer["error"]


def test_the_switch(monkeypatch, workdir):
    monkeypatch.delenv(ENV_FLAG, raising=False)
    assert checkpointing_enabled(None) is False and checkpointing_enabled(None, True) is True
    assert checkpointing_enabled(False, True) is False and checkpointing_enabled(True) is True
    monkeypatch.setenv(ENV_FLAG, "true")
    assert checkpointing_enabled(False) is True
    monkeypatch.delenv(ENV_FLAG)
    s = AgentSession.create(str(workdir), client=ScriptedModelClient([]), settings=AppSettings())
    assert s.ctx.checkpoints is None
    assert asyncio.run(s.checkpoints.rewind_files("x", dry_run=True)) == {"canRewind": False, "error": NOT_ENABLED}


def test_fork_before_keeps_the_original(workdir):
    client = ScriptedModelClient([reply(text("one")), reply(text("two"))])
    s = AgentSession.create(str(workdir), client=client)
    asyncio.run(s.run("first"))
    asyncio.run(s.run("second"))
    second = s.last_prompt_uuid
    original = open(s.transcript_path, "rb").read()
    new_id = fork_before(s.transcript_path, s.cwd, second)
    assert open(s.transcript_path, "rb").read() == original
    resumed = AgentSession.create(str(workdir), client=ScriptedModelClient([]), resume=new_id)
    texts = json.dumps(resumed.messages)
    assert "first" in texts and "one" in texts and "second" not in texts and "two" not in texts
    assert resumed.session_id == new_id
    try:
        fork_before(s.transcript_path, s.cwd, "no-such-message")
    except Exception as exc:
        assert "not in this conversation" in str(exc)
    else:
        raise AssertionError("an unknown message must be refused")


def test_the_turn_snapshot_runs_beside_the_first_request_and_tools_wait_for_it(workdir, monkeypatch):
    """The snapshot before a prompt no longer delays the first model request; a write waits for it, so the
    checkpoint is still the folder before the turn."""
    import time

    from desktop_agent.session.checkpoints import CheckpointStore

    target = workdir / "late.txt"
    events: list[tuple[str, float]] = []
    real_snapshot = CheckpointStore.snapshot

    def slow_snapshot(self, kind="manual", **kw):
        if kind == "turn":
            events.append(("turn snapshot started", time.monotonic()))
            time.sleep(0.6)  # a big folder
            try:
                return real_snapshot(self, kind, **kw)
            finally:
                events.append(("turn snapshot done", time.monotonic()))
        return real_snapshot(self, kind, **kw)

    monkeypatch.setattr(CheckpointStore, "snapshot", slow_snapshot)

    class Client(ScriptedModelClient):
        async def stream(self, *a, **kw):  # type: ignore[override]
            events.append(("request", time.monotonic()))
            async for event in super().stream(*a, **kw):
                yield event

    client = Client([_write(target, "late\n", "toolu_late"), reply(text("done"))])
    s = AgentSession.create(str(workdir), client=client, permission_mode="acceptEdits", checkpoint_default=True)
    asyncio.run(s.run("write late"))
    at = dict(events)
    first_request = next(t for name, t in events if name == "request")
    assert first_request < at["turn snapshot done"], "the first request went out while the snapshot ran"
    store = s.checkpoints.store()
    before = store.checkpoint_for(s.last_prompt_uuid)
    assert before is not None
    files, _ins, _dels = store.diff_stats(before, store.tip())
    assert files == ["late.txt"], "the checkpoint is the folder before the write"
    assert s.checkpoints._pending is None


def _is_inotify(fd: int) -> bool:
    import os

    try:
        return os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
    except OSError:
        return False


def test_the_session_end_lets_go_of_the_folder_watch(workdir):
    """The folder watch holds an inotify instance (a user has 128 by default): ``aclose`` of the session closes it,
    and the store still takes a correct snapshot after (looking at everything)."""
    import sys

    import pytest

    if not sys.platform.startswith("linux"):
        pytest.skip("inotify is Linux's")
    bash = reply(tool_use("Bash", {"command": "printf 'b\\n' > b.txt"}, id="toolu_b1"))
    client = ScriptedModelClient([_write(workdir / "a.txt", "a\n", "toolu_w1"), bash, reply(text("done"))])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions",
                            checkpoint_default=True)
    asyncio.run(s.run("write and run"))
    store = s.checkpoints.store()
    watch = store._watch
    assert watch is not None and _is_inotify(watch._fd)  # armed by the turn's whole look
    fd = watch._fd
    asyncio.run(s.aclose())
    assert store._watch is None and watch._fd == -1 and not _is_inotify(fd)
    (workdir / "c.txt").write_text("c\n")
    snap = store.snapshot("manual")
    assert "c.txt" in store.diff_stats(store.checkpoint_for(s.last_prompt_uuid), snap.commit)[0]
