"""The TypeScript SDK's ``rewindFiles`` (``enableFileCheckpointing``) against our CLI: the Bash side-effect corpus of
``tests/cli/test_rewind_files.py``, one command per prompt scripted by the fake Messages server, then a dry run and a
real rewind to each prompt, the folder compared after each with what it was just before that prompt (the
``rewind_files`` case of ``tests/sdk_ts/cases.mjs``). Skipped only when ``node`` or ``npm`` is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.cli.test_rewind_files import SEQUENCE, project
from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.session.checkpoint_helpers import git
from tests.test_cli import cli_env
from tests.test_cli_sdk_ts import PKG, ROOT, install_sdk, pytestmark  # noqa: F401


@pytest.mark.needs_sandbox
def test_typescript_sdk_rewind_files_restores_the_corpus(tmp_path):
    sdk = install_sdk()
    home = tmp_path / "h"
    cwd = project(tmp_path / "rewind_files")
    with FakeAnthropic() as fake:
        fake.script([item for i, command in enumerate(SEQUENCE)
                     for item in (reply(tool_use("Bash", {"command": command}, id=f"toolu_bash_{i}")),
                                  reply(text(f"done {i}")))])
        env = cli_env(None, home, ANTHROPIC_API_KEY="test-key", DA_PYTHON=sys.executable)
        env.pop("ANTHROPIC_BASE_URL", None)
        config = tmp_path / "config.json"
        config.write_text(json.dumps({
            "sdk": str(sdk), "cli": str(PKG / "desktop-agent.sh"), "env": env, "python": sys.executable,
            "root": str(ROOT), "cases": {"rewind_files": {"url": fake.base_url, "cwd": str(cwd),
                                                          "wire": str(tmp_path / "rewind.wire.jsonl"),
                                                          "steps": len(SEQUENCE), "commands": SEQUENCE}}}))
        proc = subprocess.run(["node", str(PKG / "cases.mjs"), str(config), "rewind_files"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, env=dict(os.environ, HOME=str(home)))
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        assert report["rewind_files"]["ok"], json.dumps(report, indent=1)
        fake.assert_done()
    # the SDK set CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING: our flag was not on the command line
    argv = (tmp_path / "rewind.wire.jsonl.args").read_text().splitlines()
    assert "--replay-user-messages" in argv
    # every Bash call ran, and none failed
    for i in range(len(SEQUENCE)):
        results = [b for m in fake.request_messages(2 * i + 1) if isinstance(m["content"], list)
                   for b in m["content"] if b.get("type") == "tool_result" and b["tool_use_id"] == f"toolu_bash_{i}"]
        assert results and not results[0].get("is_error"), (i, results)
    assert git(cwd, "stash", "list") == ""
