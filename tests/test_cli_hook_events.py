"""The hook events beyond the tool and prompt ones (App. B §B.5, issue 17) through the real CLI against the fake API:
``Notification`` (``permission_prompt`` when a host's prompter is asked; ``idle_prompt`` after a turn when the
session sits idle), ``PreCompact`` (manual and auto; exit 2 or an SDK ``decision: block`` stops a ``/compact``),
``SessionStart`` with ``source: compact`` after a compaction, and ``SessionEnd`` (``reason: other`` when ``-p``
exits). Each event's command hook comes from ``.claude/settings.json`` in a folder trusted with ``--trust`` and
dumps its stdin JSON to a file; the SDK case registers ``hook_callback`` hooks in ``initialize``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.test_cli import cli_env, jsonl, run_cli
from tests.test_cli_fidelity import Host

COMMON = {"cwd", "effort", "hook_event_name", "permission_mode", "prompt_id", "session_id", "transcript_path"}
EXTRA = {"Notification": {"message", "title", "notification_type"}, "PreCompact": {"trigger", "custom_instructions"},
         "SessionEnd": {"reason"}, "SessionStart": {"source"}}
SUMMARY = "<analysis>thinking</analysis><summary>We wrote new.txt.</summary>"

DUMP = """import json, os, sys, tempfile, time
data = sys.stdin.read()
event = json.loads(data)
fd, path = tempfile.mkstemp(prefix="%d-" % time.time_ns(), suffix=".json", dir=sys.argv[1])
os.write(fd, data.encode())
os.close(fd)
if len(sys.argv) > 2 and event.get("trigger") == sys.argv[2]:
    sys.stderr.write("no manual compaction today\\n")
    sys.exit(2)
"""


def project(tmp_path: Path, name: str, block_trigger: str | None = None) -> tuple[Path, Path]:
    """A folder whose settings hook every event into a dump script (the PreCompact one exits 2 for
    ``block_trigger``), and the dump directory."""
    proj, dumps = tmp_path / name, tmp_path / f"{name}-dumps"
    (proj / ".claude").mkdir(parents=True)
    dumps.mkdir()
    script = tmp_path / "dump.py"
    script.write_text(DUMP)
    cmd = f"{sys.executable} {script} {dumps}"
    hooks = {event: [{"hooks": [{"type": "command", "command": cmd}]}] for event in EXTRA}
    if block_trigger:
        hooks["PreCompact"] = [{"matcher": "manual|auto",
                                "hooks": [{"type": "command", "command": f"{cmd} {block_trigger}"}]}]
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    return proj, dumps


def dumped(dumps: Path) -> dict[str, list[dict[str, Any]]]:
    """The hook inputs by event, in the order they ran."""
    out: dict[str, list[dict[str, Any]]] = {}
    for f in sorted(dumps.iterdir(), key=lambda p: int(p.name.split("-")[0])):
        data = json.loads(f.read_text())
        out.setdefault(data["hook_event_name"], []).append(data)
    return out


def check_keys(inputs: dict[str, list[dict[str, Any]]], session_id: str, cwd: Path) -> None:
    for event, items in inputs.items():
        for item in items:
            keys = set(item) | ({"title"} if event == "Notification" else set())  # idle_prompt has no title
            assert keys == COMMON | EXTRA[event], (event, sorted(item))
            assert item["session_id"] == session_id and item["cwd"] == str(cwd)
            assert item["effort"] == {"level": "high"} and item["transcript_path"].endswith(f"{session_id}.jsonl")


def test_command_and_sdk_hooks_through_a_host(tmp_path):
    """A host session on stdio: a Write asks (``permission_prompt`` Notification, to the command hook and to the
    SDK callback alike), a ``/compact`` the SDK PreCompact callback blocks, one it lets through (manual, with
    the instructions; SessionStart ``compact`` follows), then stdin closes (SessionEnd ``other``)."""
    proj, dumps = project(tmp_path, "proj")
    answers = {"PreCompact": 0}

    def answer(req: dict[str, Any]) -> dict[str, Any]:
        if req["subtype"] == "hook_callback":
            if req["input"]["hook_event_name"] == "PreCompact":
                answers["PreCompact"] += 1
                return {"decision": "block", "reason": "the host says not yet"} if answers["PreCompact"] == 1 else {}
            return {}
        return {"behavior": "allow", "updatedInput": req["input"]}

    with FakeAnthropic() as fake:
        fake.script([reply(tool_use("Write", {"file_path": str(proj / "new.txt"), "content": "x\n"}, id="toolu_w")),
                     reply(text("written")), reply(text(SUMMARY))])
        env = cli_env(fake, tmp_path / "h")
        proc = subprocess.Popen(
            [sys.executable, "-m", "desktop_agent", "--output-format", "stream-json", "--verbose", "--input-format",
             "stream-json", "--permission-prompt-tool", "stdio", "--permission-mode", "default", "--trust"],
            cwd=proj, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        host = Host(proc, answer)
        try:
            sdk_hooks = {"Notification": [{"matcher": "permission_prompt", "hookCallbackIds": ["hook_n"]}],
                         "PreCompact": [{"matcher": "manual", "hookCallbackIds": ["hook_c"]}]}
            host.send({"type": "control_request", "request_id": "req_1_init",
                       "request": {"subtype": "initialize", "hooks": sdk_hooks}})
            host.wait_for(lambda m: m.get("type") == "control_response")
            for n, prompt in enumerate(["write it", "/compact", "/compact keep the file names"], 1):
                host.send({"type": "user", "message": {"role": "user", "content": prompt},
                           "parent_tool_use_id": None, "session_id": "default"})
                host.wait_for(lambda m, n=n: sum(x.get("type") == "result" for x in host.lines) >= n)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(30)
        fake.assert_done()
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    results = [m for m in host.lines if m.get("type") == "result"]
    session_id = results[0]["session_id"]
    assert results[0]["subtype"] == "success" and (proj / "new.txt").read_text() == "x\n"
    assert results[1]["is_error"] and "the host says not yet" in results[1]["errors"][0]
    assert results[2]["subtype"] == "success"
    assert len(fake.requests) == 3  # the blocked /compact sent no summary request

    inputs = dumped(dumps)
    check_keys(inputs, session_id, proj)
    (note,) = inputs["Notification"]
    assert note["notification_type"] == "permission_prompt" and note["title"] == "Permission needed"
    assert note["message"] == "Claude needs your permission to use Write" and note["permission_mode"] == "default"
    pre = inputs["PreCompact"]
    assert [(p["trigger"], p["custom_instructions"]) for p in pre] == [("manual", ""),
                                                                        ("manual", "keep the file names")]
    assert [s["source"] for s in inputs["SessionStart"]] == ["startup", "compact"]
    (end,) = inputs["SessionEnd"]
    assert end["reason"] == "other" and end["prompt_id"]
    # the SDK callbacks saw the same inputs as the command hooks
    callbacks = [r["input"] for r in host.requests if r["subtype"] == "hook_callback"]
    assert [c["hook_event_name"] for c in callbacks] == ["Notification", "PreCompact", "PreCompact"]
    assert callbacks[0] == note and callbacks[2] == pre[1]


def test_precompact_exit_2_blocks_manual_compact_and_auto_trigger(tmp_path):
    """``-p`` with three stream-json prompts and a one-token auto-compact threshold: ``/compact`` is blocked by the
    exit-2 hook (its stderr in the result, no summary request), the next prompt auto-compacts (``trigger:
    auto``, empty instructions) before it is sent."""
    proj, dumps = project(tmp_path, "proj2", block_trigger="manual")
    lines = [json.dumps({"type": "user", "message": {"role": "user", "content": c}, "parent_tool_use_id": None,
                         "session_id": "default"}) for c in ("a", "/compact", "b")]
    with FakeAnthropic() as fake:
        fake.script([reply(text("A")), reply(text(SUMMARY)), reply(text("B"))])
        env = cli_env(fake, tmp_path / "h", CLAUDE_CODE_AUTO_COMPACT_WINDOW="33001")
        proc = run_cli(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                        "--trust"], proj, env, stdin="\n".join(lines) + "\n")
        fake.assert_done()
    out = jsonl(proc.stdout)
    results = [m for m in out if m.get("type") == "result"]
    assert [r["is_error"] for r in results] == [False, True, False], (proc.stderr, results)
    assert results[1]["errors"] == ["Error during compaction: PreCompact hook blocked the compaction: "
                                    "no manual compaction today"]
    assert [m["compact_metadata"]["trigger"] for m in out if m.get("subtype") == "compact_boundary"] == ["auto"]
    assert fake.request_messages(1)[-1]["content"][0]["text"].startswith("Your task is to create a detailed summary")
    inputs = dumped(dumps)
    check_keys(inputs, results[0]["session_id"], proj)
    assert [(p["trigger"], p["custom_instructions"]) for p in inputs["PreCompact"]] == [("manual", ""), ("auto", "")], \
        (proc.stderr, inputs)
    assert [s["source"] for s in inputs["SessionStart"]] == ["startup", "compact"]
    assert [e["reason"] for e in inputs["SessionEnd"]] == ["other"]
    assert "Notification" not in inputs  # nothing asked, and -p never notifies idleness


def test_no_host_no_permission_notification(tmp_path):
    """``-p`` without a host denies an ask at once: nobody waits, so no ``permission_prompt`` Notification."""
    proj, dumps = project(tmp_path, "proj3")
    with FakeAnthropic() as fake:
        fake.script([reply(tool_use("Write", {"file_path": str(proj / "new.txt"), "content": "x\n"}, id="toolu_w")),
                     reply(text("denied"))])
        proc = run_cli(["-p", "write", "--output-format", "json", "--trust"], proj, cli_env(fake, tmp_path / "h"))
        fake.assert_done()
    assert json.loads(proc.stdout)["permission_denials"], proc.stderr
    inputs = dumped(dumps)
    assert "Notification" not in inputs and [e["reason"] for e in inputs["SessionEnd"]] == ["other"]


def test_idle_prompt_notification_after_a_turn(tmp_path):
    """A session with ``idle_notification_s`` set (the window sets 60 s) notifies ``idle_prompt`` once when no
    prompt follows a turn in time, never while a turn runs; ``end`` sends SessionEnd with its reason."""
    from desktop_agent.app.session import IDLE_NOTIFICATION_S, AgentSession
    from desktop_agent.model.anthropic_client import AnthropicClient

    assert IDLE_NOTIFICATION_S == 60.0
    proj, dumps = project(tmp_path, "proj4")

    async def scenario(fake: FakeAnthropic) -> str:
        session = AgentSession.create(proj, client=AnthropicClient("test-key", fake.base_url), trusted=True)
        session.idle_notification_s = 0.3
        await session.run("one")
        await session.run("two")  # within the idle time: the first timer is cancelled
        await asyncio.sleep(1.0)
        await session.end("prompt_input_exit")
        return session.session_id

    with FakeAnthropic() as fake:
        fake.script([reply(text("1")), reply(text("2"))])
        session_id = asyncio.run(scenario(fake))
        fake.assert_done()
    inputs = dumped(dumps)
    check_keys(inputs, session_id, proj)
    (idle,) = inputs["Notification"]
    assert idle["notification_type"] == "idle_prompt" and idle["message"] == "Claude is waiting for your input"
    assert [e["reason"] for e in inputs["SessionEnd"]] == ["prompt_input_exit"]
