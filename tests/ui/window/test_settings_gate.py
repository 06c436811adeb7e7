"""A folder whose settings cannot be read does not open: a blocking banner names the file and the position, no session
starts and the model is never called; once the file is fixed, "Try again" opens it. Invalid entries of a readable file
are a notice banner naming the file and the entry, and the folder opens with every valid entry in force."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from desktop_agent.ui.window.settings_gate import BLOCKED_KEY, PROBLEMS_KEY, RETRY_ACTION
from tests.fakes.anthropic_server import reply, text
from tests.ui.flow import wait_for


@pytest.fixture(autouse=True)
def _no_managed_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("DESKTOP_AGENT_MANAGED_SETTINGS_DIR", str(tmp_path / "managed"))


def _transcripts() -> list[str]:
    root = os.path.join(os.environ["XDG_DATA_HOME"], "desktop-agent", "projects")
    return [os.path.join(d, f) for d, _, files in os.walk(root) for f in files if f.endswith(".jsonl")]


@pytest.mark.parametrize("executor", [None, "process"])
def test_invalid_project_settings_block_the_folder_until_fixed(qtbot, qloop, make_window, workdir, fake, executor,
                                                               monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # an executor process reads the model's address from env
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    settings = workdir / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  "permissions": {\n    "deny": ["Bash(rm:*)",]\n  }\n}\n')  # a trailing comma
    win = make_window(executor)

    async def scenario():
        assert not await win.folders.open_folder(str(workdir))
        banner = win.conversation.banners.get(BLOCKED_KEY)
        assert banner is not None and banner.kind == "error"
        assert str(settings) in banner.text_plain and "line 3, column 26" in banner.text_plain
        assert "trailing comma" in banner.text_plain and [a for a, _ in banner.links] == [RETRY_ACTION]
        assert win.controller.session is None and win.folder is None
        assert fake.requests == [] and _transcripts() == []
        # Try again with the file still broken: still closed
        banner.linkActivated.emit(RETRY_ACTION)
        assert not await win.open_task
        assert win.controller.session is None
        win.send("rm victim.txt")  # typed meanwhile: the same error again, nothing sent
        again = win.conversation.banners[BLOCKED_KEY]
        assert str(settings) in again.text_plain and fake.requests == []
        assert again is not banner and [a for a, _ in again.links] == [RETRY_ACTION]  # with its Retry link
        settings.write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}}))  # fixed
        win.conversation.banners[BLOCKED_KEY].linkActivated.emit(RETRY_ACTION)
        assert await win.open_task
        assert win.controller.session is not None and win.folder == str(workdir)
        assert BLOCKED_KEY not in win.conversation.banners

    qloop.run_until_complete(scenario())


def test_user_settings_with_a_key_given_twice_block_every_folder(qtbot, qloop, make_window, workdir, fake):
    user = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "settings.json")
    os.makedirs(os.path.dirname(user), exist_ok=True)
    with open(user, "w") as fh:
        fh.write('{"permissions": {"deny": ["Read(./.env)"]},\n "permissions": {"allow": []}}')
    win = make_window()
    assert not qloop.run_until_complete(win.folders.open_folder(str(workdir)))
    banner = win.conversation.banners[BLOCKED_KEY]
    assert user in banner.text_plain and "given twice" in banner.text_plain and "line 2, column 2" in banner.text_plain
    assert win.controller.session is None and fake.requests == []


def test_invalid_entries_are_a_notice_and_the_valid_ones_hold(qtbot, qloop, make_window, workdir, fake):
    settings = workdir / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text("\ufeff" + json.dumps({"permissions": {"deny": ["Bash(rm:*", 5, "read(./app.ts)"]}}))
    fake.script([reply(text("hello"))])
    win = make_window()

    async def scenario():
        assert await win.folders.open_folder(str(workdir))
        notice = win.conversation.banners.get(PROBLEMS_KEY)
        assert notice is not None and notice.kind == "notice"
        assert str(settings) in notice.text_plain
        assert "'Bash(rm:*'" in notice.text_plain and "permissions.deny[1]" in notice.text_plain
        assert "'read(./app.ts)'" in notice.text_plain and "'Read(./app.ts)'" in notice.text_plain
        assert BLOCKED_KEY not in win.conversation.banners
        session = win.controller.session
        engine = win.controller.client.host.sessions[session.session_id].session  # the host in this process
        rules = {str(r.value) for r in engine.permission_context.rules if r.behavior == "deny"}
        assert rules == {"Read(./app.ts)"}  # the lower-case rule read as Read's; the broken ones skipped
        await asyncio.sleep(0)

    qloop.run_until_complete(scenario())
