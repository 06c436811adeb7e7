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
