"""``rewind_files`` (SPEC App. D.3–D.4) through the real CLI on stdio: the fake Messages server scripts Bash calls with
every kind of side effect, one per turn, each user message named by the host's ``uuid``; then the host rewinds to each
message in turn, dry run first, and the folder is byte for byte what it was just before that message (modes, symlinks,
hard links, empty folders included). Without checkpointing the answer is ``canRewind: false`` with an error."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.session.checkpoint_helpers import git, make_repo, manifest
from tests.test_cli import Driver, cli_env, fake, tool_results  # noqa: F401

# One Bash call per turn, applied in order to the same folder (the TypeScript SDK test runs the same list).
SEQUENCE = [
    "rm README.md",
    "rm -r docs",
    "mv src/util.py src/helpers.py",
    "sed -i 's/print/echo/' src/app.py",
    "cp run.sh src/helpers.py",
    "chmod 600 data/keep.txt && chmod +x src/app.py",
    "ln -s ../run.sh src/run-link",
    "ln run.sh run-hard",
    "mkdir -p new/empty && rmdir data/empty",
    "git checkout -- src/app.py",
    "mkdir gen && for i in $(seq 1 500); do echo \"file $i\" > gen/f$i.txt; done",
    "rm src/helpers.py && mkdir src/helpers.py && echo inner > src/helpers.py/inner.txt",
]

FILES = {"README.md": "hello\n", "src/app.py": "print(1)\nprint(2)\n", "src/util.py": "x = 1\n", "docs/a.md": "a\n",
         "run.sh": "#!/bin/sh\necho run\n", "data/keep.txt": "keep\n"}


def project(path: Path) -> Path:
    make_repo(path, FILES)
    os.chmod(path / "run.sh", 0o755)
    (path / "data" / "empty").mkdir()
    return path


def answer(d: Driver, request: dict[str, Any]) -> dict[str, Any]:
    rid = d.control(request)
    msg = d.expect(lambda m: m.get("type") == "control_response" and m["response"]["request_id"] == rid, timeout=60)
    return msg["response"]


def launch(fake, cwd: Path, tmp_path: Path, **env: str) -> Driver:
    d = Driver(["--permission-mode", "bypassPermissions", "--trust", "--replay-user-messages"], cwd,
               cli_env(fake, tmp_path / "h", **env))
    return d


@pytest.mark.needs_sandbox
def test_rewind_files_restores_every_bash_side_effect(fake, tmp_path):
    cwd = project(tmp_path / "proj")
    git_before = {name: (cwd / ".git" / name).read_bytes() for name in ("config", "HEAD")}
    fake.script([item for i, command in enumerate(SEQUENCE)
                 for item in (reply(tool_use("Bash", {"command": command}, id=f"toolu_bash_{i}")),
                              reply(text(f"done {i}")))])
    d = launch(fake, cwd, tmp_path, CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING="true")
    ids: list[str] = []
    states: list[dict[str, Any]] = []
    try:
        for i, _command in enumerate(SEQUENCE):
            states.append(manifest(cwd))
            mid = str(uuid.uuid4())
            ids.append(mid)
            d.send({"type": "user", "uuid": mid, "message": {"role": "user", "content": f"step {i}"},
                    "parent_tool_use_id": None, "session_id": ""})
            replayed = d.expect(lambda m: m.get("type") == "user" and m.get("uuid") == mid)
            assert replayed["message"]["content"] == f"step {i}"
            assert d.result()["subtype"] == "success"
            result = tool_results(d, f"toolu_bash_{i}")[0]
            assert not result.get("is_error"), (i, result)
        final = manifest(cwd)
        assert final != states[-1]

        # the transcript names each prompt by the host's uuid (D.3)
        # rewind to each message, last first: the folder is what it was just before it
        for k in reversed(range(len(SEQUENCE))):
            dry = answer(d, {"subtype": "rewind_files", "user_message_id": ids[k], "dry_run": True})
            assert dry["subtype"] == "success", dry
            preview = dry["response"]
            assert preview["canRewind"] is True and preview["filesChanged"], (k, preview)
            assert "skippedLinks" not in preview
            assert all(os.path.isabs(p) and p.startswith(str(cwd)) for p in preview["filesChanged"])
            assert manifest(cwd) == (final if k == len(SEQUENCE) - 1 else states[k + 1]), "the dry run wrote nothing"
            real = answer(d, {"subtype": "rewind_files", "user_message_id": ids[k], "dry_run": False})["response"]
            assert real["canRewind"] is True and real["skippedLinks"] == 0, real
            assert sorted(real["filesChanged"]) == sorted(preview["filesChanged"])
            assert (real["insertions"], real["deletions"]) == (preview["insertions"], preview["deletions"])
            assert manifest(cwd) == states[k], (k, SEQUENCE[k])

        unknown = answer(d, {"subtype": "rewind_files", "user_message_id": str(uuid.uuid4()), "dry_run": True})
        assert unknown["response"]["canRewind"] is False and unknown["response"]["error"]
    finally:
        assert d.close() == 0
    assert {name: (cwd / ".git" / name).read_bytes() for name in ("config", "HEAD")} == git_before
    assert git(cwd, "stash", "list") == ""
    assert not any(line.split()[-1].startswith("refs/da") for line in git(cwd, "show-ref").splitlines())
    # the transcript holds the host's ids on the prompts
    transcripts = list((tmp_path / "h" / "data" / "desktop-agent" / "projects").rglob("*.jsonl"))
    assert transcripts and all(mid in transcripts[0].read_text() for mid in ids)


def test_rewind_files_without_checkpointing_says_so(fake, tmp_path):
    cwd = project(tmp_path / "proj")
    fake.script([reply(text("hi"))])
    d = launch(fake, cwd, tmp_path)
    try:
        mid = str(uuid.uuid4())
        d.send({"type": "user", "uuid": mid, "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": None,
                "session_id": ""})
        assert d.result()["subtype"] == "success"
        body = answer(d, {"subtype": "rewind_files", "user_message_id": mid, "dry_run": True})
        assert body["subtype"] == "success"
        assert body["response"] == {"canRewind": False, "error": "File checkpointing is not enabled"}
    finally:
        assert d.close() == 0
    assert not (tmp_path / "h" / "data" / "desktop-agent" / "checkpoints").exists()


def _send(d: Driver, mid: str, content: str) -> None:
    d.send({"type": "user", "uuid": mid, "message": {"role": "user", "content": content}, "parent_tool_use_id": None,
            "session_id": ""})


def _note(body: dict[str, Any]) -> str:
    """The text blocks of a request's last user message (the note of a restore starts it)."""
    last = body["messages"][-1]
    assert last["role"] == "user"
    content = last["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


def test_a_restore_is_told_to_the_model_live_and_after_a_resume(fake, tmp_path):
    cwd = project(tmp_path / "proj")
    a, b = cwd / "made-a.txt", cwd / "made-b.txt"
    fake.script([reply(tool_use("Write", {"file_path": str(a), "content": "a\n"}, id="toolu_write_a")),
                 reply(text("wrote a")), reply(text("noted")),
                 reply(tool_use("Write", {"file_path": str(b), "content": "b\n"}, id="toolu_write_b")),
                 reply(text("wrote b")), reply(text("noted after the resume"))])
    env = dict(CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING="true")
    m1, m2, m3, m4 = (str(uuid.uuid4()) for _ in range(4))
    d = launch(fake, cwd, tmp_path, **env)
    try:
        _send(d, m1, "write a")
        first = d.result()
        assert first["subtype"] == "success" and a.exists()
        sid = first["session_id"]
        real = answer(d, {"subtype": "rewind_files", "user_message_id": m1, "dry_run": False})["response"]
        assert real["canRewind"] is True and real["filesChanged"] == [str(a)] and not a.exists()
        _send(d, m2, "go on")  # live: the next request starts with the note
        assert d.result()["subtype"] == "success"
        live = _note(fake.requests[2].body)
        assert f"The user restored files in the working directory to the state just before user message {m1}: " \
               "made-a.txt." in live
        _send(d, m3, "write b")
        assert d.result()["subtype"] == "success" and b.exists()
        real = answer(d, {"subtype": "rewind_files", "user_message_id": m3, "dry_run": False})["response"]
        assert real["canRewind"] is True and not b.exists()
    finally:
        assert d.close() == 0  # closed before any further message: only the transcript knows of the restore
    assert len(fake.requests) == 5
    d = Driver(["--permission-mode", "bypassPermissions", "--trust", "--resume", sid], cwd,
               cli_env(fake, tmp_path / "h", **env))
    try:
        _send(d, m4, "after the resume")
        assert d.result()["subtype"] == "success"
    finally:
        assert d.close() == 0
    resumed = _note(fake.requests[5].body)
    assert f"The user restored files in the working directory to the state just before user message {m3}: " \
           "made-b.txt." in resumed
    assert m1 not in resumed, "each restore is told once"
    assert "after the resume" in resumed
    fake.assert_done()
