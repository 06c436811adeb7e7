"""``client.claude_code`` and what it adds to the subprocess client for Claude Code: the PostToolUse hook callbacks
registered in ``initialize`` (the rejected-hunks sentence as ``additionalContext``, an unknown callback id
refused), the rejected hunks in the tool result's data, "Allow for session" narrowed to one file's rule, the
model from Settings at spawn, and Claude Code's own sessions of a folder (``projects/<slug>/*.jsonl``)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

import pytest

from desktop_agent.client import SessionOptions, claude_code
from desktop_agent.client.subprocess import SubprocessClient
from desktop_agent.config import AppSettings
from desktop_agent.core.events import ToolCallFinished
from desktop_agent.core.permission import PermissionReply, PermissionRequest, PermissionUpdate, RuleValue
from desktop_agent.util.diff import rejected_hunks_sentence

from .conftest import ScriptedPrompter

HERE = Path(__file__).parent


def fake_client() -> SubprocessClient:
    return SubprocessClient([sys.executable, str(HERE / "fake_claude.py")], flavor="claude")


@pytest.fixture
def ws(tmp_path, monkeypatch):
    d = tmp_path / "ws"
    d.mkdir()
    (d / "app.ts").write_text("export const value = 1\n")
    monkeypatch.setenv("FAKE_CLAUDE_ARGV", str(tmp_path / "argv.json"))
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(tmp_path / "sent.jsonl"))
    return d


def sent(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "sent.jsonl").read_text().splitlines()]


@pytest.mark.asyncio
async def test_rejected_hunks_go_to_the_model_through_our_hook_and_to_the_panel(ws, tmp_path):
    target = ws / "app.ts"
    prompter = ScriptedPrompter([PermissionReply(behavior="allow", rejected_hunks=[(3, 4), (9, 9)], total_hunks=5)])
    handle = await fake_client().open(str(ws), SessionOptions(prompter=prompter))
    events = [e async for e in handle.submit(str(target))]
    await handle.close()
    lines = sent(tmp_path)
    init = lines[0]["request"]
    assert init["subtype"] == "initialize" and init["hooks"] == {
        "PostToolUse": [{"matcher": "Edit|Write|NotebookEdit", "hookCallbackIds": [claude_code.POST_EDIT_HOOK_ID]}]}
    replies = {m["response"]["request_id"]: m["response"] for m in lines if m["type"] == "control_response"}
    sentence = rejected_hunks_sentence([(3, 4), (9, 9)], 5)
    assert sentence == "The user rejected 2 of 5 hunks (lines 3\u20134, 9); those parts were NOT written."
    assert replies["hook-0"] == {"subtype": "success", "request_id": "hook-0", "response": {
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": sentence}}}
    assert replies["hook-1"]["subtype"] == "error" and "hook_callback" in replies["hook-1"]["error"]
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.data["rejectedHunks"] == [[3, 4], [9, 9]] and finished.data["totalHunks"] == 5
    assert finished.data["structuredPatch"]  # Claude Code's own data kept


@pytest.mark.asyncio
async def test_a_whole_allow_gets_an_empty_hook_reply_and_our_cli_registers_no_hook(ws, tmp_path):
    handle = await fake_client().open(str(ws), SessionOptions(prompter=ScriptedPrompter()))
    events = [e async for e in handle.submit(str(ws / "app.ts"))]
    await handle.close()
    replies = {m["response"]["request_id"]: m["response"] for m in sent(tmp_path) if m["type"] == "control_response"}
    assert replies["hook-0"] == {"subtype": "success", "request_id": "hook-0", "response": {}}
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert "rejectedHunks" not in finished.data
    ours = SubprocessClient([sys.executable, str(HERE / "fake_claude.py")], flavor="ours")
    handle = await ours.open(str(ws), SessionOptions(prompter=ScriptedPrompter()))
    await handle.close()
    assert sent(tmp_path)[-1]["request"].get("hooks") is None


def test_hook_output_is_only_for_our_callback_and_the_call_it_names():
    r = claude_code.Rejections()
    r.record("toolu_a", [(1, 2)], 3)
    assert r.hook_output(claude_code.POST_EDIT_HOOK_ID, {"hook_event_name": "PostToolUse",
                                                         "tool_use_id": "toolu_b"}, None) == {}
    with pytest.raises(KeyError):
        r.hook_output("hook_0", {"tool_use_id": "toolu_a"}, "toolu_a")
    out = r.hook_output(claude_code.POST_EDIT_HOOK_ID, {"hook_event_name": "PostToolUse"}, "toolu_a")
    assert out["hookSpecificOutput"]["additionalContext"] == rejected_hunks_sentence([(1, 2)], 3)
    assert r.result_fields("toolu_a", is_error=True) == {}  # a failed call wrote nothing: no ✗ on it
    assert r.result_fields("toolu_a", is_error=False) == {}  # and it is forgotten


def test_allow_for_session_is_narrowed_to_this_call(tmp_path):
    ask = lambda name, inp, sugg: PermissionRequest(tool_name=name, tool_use_id="t", input=inp,  # noqa: E731
                                                    cwd=str(tmp_path), suggestions=sugg)
    mode = PermissionUpdate(type="setMode", mode="acceptEdits", destination="session")
    edit = claude_code.narrow_suggestions(ask("Edit", {"file_path": "src/a.ts"}, [mode]))
    assert [str(r) for r in edit.suggestions[0].rules] == [f"Edit(/{tmp_path}/src/a.ts)"]
    assert edit.suggestions[0].destination == "session" and edit.suggestions[1] == mode
    bash_rule = PermissionUpdate(type="addRules", behavior="allow", destination="localSettings",
                                 rules=[RuleValue(tool_name="Bash", rule_content="npm test:*")])
    folder_dir = PermissionUpdate(type="addDirectories", directories=[str(tmp_path)], destination="session")
    bash = claude_code.narrow_suggestions(ask("Bash", {"command": "npm test"}, [bash_rule, folder_dir]))
    assert [u.to_wire() for u in bash.suggestions] == [{
        "type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}], "behavior": "allow",
        "destination": "session"}]  # the session, never a settings file
    outside = PermissionUpdate(type="addDirectories", directories=["/srv/data"], destination="localSettings")
    read = claude_code.narrow_suggestions(ask("Read", {"file_path": "/srv/data/x"}, [outside, mode]))
    assert [u.to_wire() for u in read.suggestions] == [
        {"type": "addDirectories", "directories": ["/srv/data"], "destination": "session"}, mode.to_wire()]
    bypass = PermissionUpdate(type="setMode", mode="bypassPermissions", destination="session")
    assert claude_code.narrow_suggestions(ask("Bash", {"command": "x"}, [bypass])).suggestions == []  # never here
    for name in ("a*.ts", "[ab].ts", "x(1).ts", "a?.ts"):  # a rule for it could match other files: none offered
        assert claude_code.narrow_suggestions(ask("Write", {"file_path": name}, [mode])).suggestions == [mode]


@pytest.mark.asyncio
async def test_the_model_from_settings_is_passed_at_spawn_unless_the_session_names_one(ws, tmp_path):
    AppSettings(model="claude-from-settings").save()
    handle = await fake_client().open(str(ws), SessionOptions())
    await handle.close()
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[argv.index("--model") + 1] == "claude-from-settings" and handle.model == "claude-from-settings"
    handle = await fake_client().open(str(ws), SessionOptions(model="claude-explicit"))
    await handle.close()
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[argv.index("--model") + 1] == "claude-explicit"


def _transcript(path: Path, cwd: str, prompt: str, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [
        {"type": "user", "isMeta": True, "cwd": cwd, "message": {"role": "user", "content": "<local-command-caveat>"}},
        {"type": "user", "cwd": cwd, "message": {"role": "user", "content": prompt}, "uuid": "u1"},
        {"type": "assistant", "cwd": cwd, "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
         "uuid": "a1"},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    os.utime(path, (mtime, mtime))


def test_its_sessions_of_a_folder_by_slug_and_recorded_cwd(tmp_path):
    root = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    folder = tmp_path / "my proj" / "b-c"
    folder.mkdir(parents=True)
    twin = tmp_path / "my proj" / "b" / "c"  # the same slug as folder
    twin.mkdir(parents=True)
    slug = re.sub(r"[^a-zA-Z0-9]", "-", str(folder))
    assert claude_code.folder_slug(str(folder)) == slug == re.sub(r"[^a-zA-Z0-9]", "-", str(twin))
    _transcript(root / slug / "11111111-aaaa.jsonl", str(folder), "older prompt", 1000)
    _transcript(root / slug / "22222222-bbbb.jsonl", str(folder), "newer prompt", 2000)
    _transcript(root / slug / "33333333-cccc.jsonl", str(twin), "the twin's prompt", 3000)
    (root / slug / "44444444-dddd").mkdir()  # its per-session folder: not a session
    listed = claude_code.list_sessions(folder)
    assert [(s.session_id, s.first_prompt, s.message_count) for s in listed] == [
        ("22222222-bbbb", "newer prompt", 2), ("11111111-aaaa", "older prompt", 2)]
    assert [s.session_id for s in claude_code.list_sessions(twin)] == ["33333333-cccc"]
    assert [s.session_id for s in asyncio.run(fake_client().list_sessions(folder))] == ["22222222-bbbb",
                                                                                        "11111111-aaaa"]
    history = asyncio.run(fake_client().history(folder, "11111111-aaaa"))
    assert history is not None and "older prompt" in json.dumps(history)
    assert claude_code.transcript_path("../" + slug + "/11111111-aaaa") == ""  # an id is never a path


def test_a_long_folder_is_found_by_the_cut_slug_and_its_cwd(tmp_path):
    root = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    folder = tmp_path / ("x" * 120) / ("y" * 120)
    folder.mkdir(parents=True)
    slug = re.sub(r"[^a-zA-Z0-9]", "-", str(folder))
    assert len(slug) > 200
    _transcript(root / f"{slug[:200]}-1abc2de" / "55555555-eeee.jsonl", str(folder), "long one", 1000)
    other = tmp_path / ("x" * 120) / ("y" * 121)
    _transcript(root / f"{slug[:200]}-9zz" / "66666666-ffff.jsonl", str(other), "another long one", 2000)
    assert [s.session_id for s in claude_code.list_sessions(folder)] == ["55555555-eeee"]


def test_only_our_exact_sentence_is_read_back_from_its_transcript():
    for ranges, total in ([(14, 20), (38, 44)], 5), ([(9, 9)], 2), ([(1, 3), (7, 7), (20, 25)], 9):
        assert claude_code.parse_rejection(rejected_hunks_sentence(ranges, total)) == (ranges, total)
    for text in ("The user rejected 2 of 5 hunks (lines 14\u201320); those parts were NOT written.",  # count mismatch
                 "The user rejected 1 of 5 hunks (line 14\u201320); those parts were NOT written.",
                 "rejected", ""):
        assert claude_code.parse_rejection(text) is None
    sentence = rejected_hunks_sentence([(3, 4)], 2)
    entries = [
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_x", "content": "updated"}]},
         "toolUseResult": {"filePath": "/w/a.ts", "structuredPatch": []}},
        {"type": "attachment", "attachment": {"type": "hook_additional_context", "content": [sentence],
                                              "hookName": "PostToolUse:Edit", "toolUseID": "toolu_x",
                                              "hookEvent": "PostToolUse"}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_y", "content": "updated"}]},
         "toolUseResult": {"filePath": "/w/b.ts"}},
    ]
    out = claude_code.with_rejections(entries)
    assert out[0]["toolUseResult"] == {"filePath": "/w/a.ts", "structuredPatch": [], "rejectedHunks": [[3, 4]],
                                       "totalHunks": 2}
    assert out[2] == entries[2] and "rejectedHunks" not in entries[0]["toolUseResult"]  # the input is not changed
