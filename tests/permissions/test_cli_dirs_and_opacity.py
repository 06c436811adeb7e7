"""Issue 21 items 6 and 7 through the real CLI (``python -m desktop_agent -p``) against the fake API.

- A PermissionRequest hook's ``updatedPermissions`` removes an ``--add-dir`` directory: the next Write and Bash
  redirect there are asked again (the hook gives no answer: denied headless) and nothing is written; a later
  ``addDirectories`` makes it a working folder again (acceptEdits writes there, unasked). The same through a
  host's ``control_response`` on stdio (``--permission-prompt-tool stdio``).
- The opacity rule: a trusted project allows ``Bash(python3 *)`` and denies only ``Read(./secret.txt)``;
  ``python3 -c 'print(1)'`` runs, and inline code that opens the secret still cannot read it — the sandbox masks
  it (the canary text never reaches a tool_result).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.test_cli import cli_env, run_cli
from tests.test_cli_fidelity import Host

HOOK = """import json, sys
event = json.load(sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps({"tool": event["tool_name"], "input": event["tool_input"]}) + "\\n")
path = event["tool_input"].get("file_path", "")
updates = None
if path.endswith("trigger-remove.txt"):
    updates = [{"type": "removeDirectories", "directories": [sys.argv[2]], "destination": "session"}]
elif path.endswith("trigger-add.txt"):
    updates = [{"type": "addDirectories", "directories": [sys.argv[2]], "destination": "session"}]
if updates is not None:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                             "decision": {"behavior": "allow", "updatedPermissions": updates}}}))
"""
SECRET = "CANARY-SECRET-5e1f0a"


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def results(fake: FakeAnthropic) -> dict[str, dict[str, Any]]:
    """tool_use_id → its tool_result, from the conversation the CLI sent back last."""
    out: dict[str, dict[str, Any]] = {}
    for message in fake.requests[-1].messages:
        if message["role"] == "user" and isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    out[block["tool_use_id"]] = block
    return out


def content(block: dict[str, Any]) -> str:
    c = block.get("content")
    return c if isinstance(c, str) else json.dumps(c)


def test_a_hooks_update_removes_and_readds_a_working_directory(fake, tmp_path):
    proj, extra, out = tmp_path / "proj", tmp_path / "extra", tmp_path / "out"
    for d in (proj, extra, out):
        d.mkdir()
    log = tmp_path / "hook.log"
    script = tmp_path / "hook.py"
    script.write_text(HOOK)
    settings = {"hooks": {"PermissionRequest": [{"matcher": "*", "hooks": [
        {"type": "command", "command": f"{sys.executable} {script} {log} {extra}"}]}]}}
    calls = [
        ("w0", "Write", {"file_path": str(extra / "before.txt"), "content": "0\n"}),         # inside: no ask
        ("w1", "Write", {"file_path": str(out / "trigger-remove.txt"), "content": "1\n"}),  # hook: allow + remove
        ("w2", "Write", {"file_path": str(extra / "after-remove.txt"), "content": "pwn\n"}),
        ("b3", "Bash", {"command": f"echo pwn > {extra}/bash-after-remove.txt"}),
        ("w4", "Write", {"file_path": str(out / "trigger-add.txt"), "content": "4\n"}),     # hook: allow + add
        ("w5", "Write", {"file_path": str(extra / "after-readd.txt"), "content": "5\n"}),   # inside again: no ask
    ]
    fake.script([*[reply(tool_use(name, inp, id=f"toolu_{cid}")) for cid, name, inp in calls], reply(text("done"))])
    run = run_cli(["-p", "go", "--output-format", "json", "--permission-mode", "acceptEdits", "--add-dir", str(extra),
                   "--settings", json.dumps(settings)], proj, cli_env(fake, tmp_path / "h"))
    assert run.returncode == 0, run.stderr
    fake.assert_done()
    got = results(fake)
    assert set(got) == {f"toolu_{cid}" for cid, _, _ in calls}
    for cid in ("w0", "w1", "w4", "w5"):
        assert not got[f"toolu_{cid}"].get("is_error"), (cid, got[f"toolu_{cid}"])
    for cid in ("w2", "b3"):
        assert got[f"toolu_{cid}"].get("is_error"), (cid, got[f"toolu_{cid}"])
    assert (extra / "before.txt").exists() and (out / "trigger-remove.txt").exists()
    assert not (extra / "after-remove.txt").exists() and not (extra / "bash-after-remove.txt").exists()
    assert (extra / "after-readd.txt").read_text() == "5\n"
    asked = [json.loads(line) for line in log.read_text().splitlines()]
    # the hook saw exactly the asks: the trigger, the two writes into the removed directory, the re-add trigger
    assert [(a["tool"], a["input"].get("file_path") or a["input"].get("command")) for a in asked] == [
        ("Write", str(out / "trigger-remove.txt")), ("Write", str(extra / "after-remove.txt")),
        ("Bash", f"echo pwn > {extra}/bash-after-remove.txt"), ("Write", str(out / "trigger-add.txt"))]
    denials = {d["tool_use_id"] for d in json.loads(run.stdout)["permission_denials"]}
    assert denials == {"toolu_w2", "toolu_b3"}


def test_a_hosts_control_response_removes_a_working_directory(fake, tmp_path):
    proj, extra, out = tmp_path / "proj", tmp_path / "extra", tmp_path / "out"
    for d in (proj, extra, out):
        d.mkdir()

    def answer(req: dict[str, Any]) -> dict[str, Any]:
        path = req["input"].get("file_path", "")
        if path.endswith("trigger-remove.txt"):
            return {"behavior": "allow", "updatedInput": req["input"], "updatedPermissions": [
                {"type": "removeDirectories", "directories": [str(extra)], "destination": "session"}]}
        if path.endswith("trigger-add.txt"):
            return {"behavior": "allow", "updatedInput": req["input"], "updatedPermissions": [
                {"type": "addDirectories", "directories": [str(extra)], "destination": "session"}]}
        return {"behavior": "deny", "message": "the host says no"}

    calls = [("w1", {"file_path": str(out / "trigger-remove.txt"), "content": "1\n"}),
             ("w2", {"file_path": str(extra / "after-remove.txt"), "content": "pwn\n"}),
             ("w3", {"file_path": str(out / "trigger-add.txt"), "content": "3\n"}),
             ("w4", {"file_path": str(extra / "after-readd.txt"), "content": "4\n"})]
    fake.script([*[reply(tool_use("Write", inp, id=f"toolu_{cid}")) for cid, inp in calls], reply(text("done"))])
    proc = subprocess.Popen(
        [sys.executable, "-m", "desktop_agent", "--output-format", "stream-json", "--verbose", "--input-format",
         "stream-json", "--permission-prompt-tool", "stdio", "--permission-mode", "acceptEdits", "--add-dir",
         str(extra)], cwd=proj, env=cli_env(fake, tmp_path / "h"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    host = Host(proc, answer)
    try:
        host.send({"type": "user", "message": {"role": "user", "content": "go"}, "parent_tool_use_id": None,
                   "session_id": "default"})
        host.wait_for(lambda m: m.get("type") == "result")
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(30)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    fake.assert_done()
    asked = [r["input"]["file_path"] for r in host.requests if r.get("subtype") == "can_use_tool"]
    assert asked == [str(out / "trigger-remove.txt"), str(extra / "after-remove.txt"), str(out / "trigger-add.txt")]
    got = results(fake)
    assert got["toolu_w2"].get("is_error") and "the host says no" in content(got["toolu_w2"])
    assert not (extra / "after-remove.txt").exists() and (extra / "after-readd.txt").read_text() == "4\n"


@pytest.mark.needs_sandbox
def test_opaque_python_runs_under_an_allow_rule_and_the_sandbox_still_hides_the_secret(fake, tmp_path):
    proj = tmp_path / "proj"
    (proj / ".claude").mkdir(parents=True)
    (proj / "secret.txt").write_text(SECRET + "\n")
    (proj / ".claude" / "settings.json").write_text(json.dumps(
        {"permissions": {"allow": ["Bash(python3 *)"], "deny": ["Read(./secret.txt)"]}}))
    calls = [
        ("p1", "python3 -c 'print(1)'"),
        ("p2", "python3 -c 'print(open(\"secret.txt\").read())'"),
        ("p3", "python3 -c 'import os; print(os.path.getsize(\"secret.txt\"))'"),
    ]
    fake.script([*[reply(tool_use("Bash", {"command": c}, id=f"toolu_{cid}")) for cid, c in calls],
                 reply(text("done"))])
    run = run_cli(["-p", "go", "--output-format", "json", "--trust"], proj, cli_env(fake, tmp_path / "h"))
    assert run.returncode == 0, run.stderr
    fake.assert_done()
    got = results(fake)
    assert not got["toolu_p1"].get("is_error") and content(got["toolu_p1"]).strip() == "1"
    # the inline code ran (no ask, no denial) and met the sandbox's mask
    assert json.loads(run.stdout)["permission_denials"] == []
    assert "Permission denied" in content(got["toolu_p2"]) and SECRET not in content(got["toolu_p2"])
    assert content(got["toolu_p3"]).strip() == "0"  # /dev/null is bound over it
    assert SECRET not in run.stdout and SECRET not in json.dumps(fake.requests[-1].body)
    assert (proj / "secret.txt").read_text() == SECRET + "\n"
