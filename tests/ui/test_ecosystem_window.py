"""Issue 17 through the window: MCP tool calls allowed and denied in the permission dialog (a real MCP server
from a trusted folder's ``.mcp.json``), a crashed server failed in the Servers view and back after Restart and
after the next call, an OpenAI-compatible provider chosen in Settings (Read → Edit → text against FakeOpenAI),
Settings' default permission mode for new sessions, and SessionEnd hooks when a session is replaced and when
the window closes. The real window, engine and clients; the fake API servers over HTTP."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import stat
import sys
from pathlib import Path

from PySide6.QtCore import Qt

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.fakes.openai_server import FakeOpenAI
from tests.ui import flow

ROOT = Path(__file__).resolve().parents[2]


wait_for = functools.partial(flow.wait_for, timeout=20.0)  # these flows are given 20 s, not 10
dialog = functools.partial(flow.wait_dialog, timeout=20.0)


async def send(qtbot, win, prompt):
    qtbot.keyClicks(win.prompt, prompt)
    qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
    return win.controller._task


def results(fake, n):
    return {b["tool_use_id"]: b for b in fake.request_messages(n)[-1]["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"}


def mcp_project(folder: Path, log: Path) -> None:
    """The fake MCP server in the folder's .mcp.json, and the folder trusted (so the file is read)."""
    from desktop_agent.permissions import trust

    env = {"PYTHONPATH": str(ROOT), "MCP_FAKE_LOG": str(log)}
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"fake": {
        "command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"], "env": env}}}))
    trust.set_trusted(str(folder), True)


def test_mcp_calls_through_the_dialog_and_a_crashed_server_in_the_servers_view(
        qtbot, qloop, fake, make_window, workdir, tmp_path):
    allowed, denied = workdir / "allowed.txt", workdir / "denied.txt"
    log = tmp_path / "mcp.log"
    mcp_project(workdir, log)
    fake.script([
        reply(tool_use("mcp__fake__write_file", {"path": str(allowed), "text": "yes"}, id="toolu_m1")),
        reply(tool_use("mcp__fake__write_file", {"path": str(denied), "text": "no"}, id="toolu_m2")),
        reply(text("One written, one refused.")),
        reply(tool_use("mcp__fake__crash", {}, id="toolu_c1")),
        reply(text("It crashed.")),
        reply(tool_use("mcp__fake__crash", {}, id="toolu_c2")),
        reply(tool_use("mcp__fake__echo", {"text": "again"}, id="toolu_e1")),
        reply(text("Back.")),
    ])
    win = make_window()

    async def scenario():
        assert await win.folders.open_folder(str(workdir))
        view = win.banners.show_servers()
        assert view.isVisible() and not view.isModal()
        assert view.rows["fake"].state == "pending"  # servers start with the first request
        # 1. the dialog asks for each call: Allow writes, Deny does not
        task = await send(qtbot, win, "use the server")
        dlg = await dialog(win)
        assert dlg.request.tool_name == "mcp__fake__write_file" and dlg.request.tool_use_id == "toolu_m1"
        assert not allowed.exists()
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        dlg = await wait_for(lambda: win.controller.current_dialog if win.controller.current_dialog is not None
                             and win.controller.current_dialog is not dlg
                             and win.controller.current_dialog.isVisible() else None, what="second dialog")
        assert dlg.request.tool_use_id == "toolu_m2"
        qtbot.mouseClick(dlg.deny_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 20)
        assert allowed.read_text() == "yes" and not denied.exists()
        row = view.rows["fake"]
        assert row.state == "connected" and "write_file" in row.tools_label.text()
        assert "stdio" in row.details.text() and not row.error_label.isVisible()
        assert not [k for k in win.conversation.banners if k.startswith("mcp:")]

        # 2. a crash: failed in the view, one banner; Restart brings it back (on the loop, not blocking)
        task = await send(qtbot, win, "crash it")
        dlg = await dialog(win)
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 20)
        assert row.state == "failed" and row.error_label.isVisible()
        assert "Last error" in row.error_label.text()
        banner = win.conversation.banners["mcp:fake"]
        assert banner.text_plain.startswith("MCP server fake failed: ")
        assert "1 failed" in view.summary.text()
        qtbot.mouseClick(row.restart_button, Qt.MouseButton.LeftButton)
        assert "fake" in win.banners.restarting and not row.restart_button.isEnabled()  # the click returned at once
        await wait_for(lambda: row.state == "connected" and not win.banners.restarting, what="restarted server")
        assert "mcp:fake" not in win.conversation.banners and row.restart_button.isEnabled()

        # 3. crashed again, then the next call restarts it by itself
        task = await send(qtbot, win, "crash, then echo")
        dlg = await dialog(win)
        assert dlg.request.tool_use_id == "toolu_c2"
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await wait_for(lambda: "mcp:fake" in win.conversation.banners, what="the failure banner mid-turn")
        dlg = await wait_for(lambda: win.controller.current_dialog if win.controller.current_dialog is not None
                             and win.controller.current_dialog.request.tool_use_id == "toolu_e1" else None,
                             what="echo dialog")
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 20)
        assert row.state == "connected" and "restarted 1×" in row.details.text()
        assert "mcp:fake" not in win.conversation.banners

    qloop.run_until_complete(scenario())
    r = results(fake, 2)
    assert r["toolu_m2"]["is_error"] is True
    assert results(fake, 1)["toolu_m1"]["content"] == f"wrote 3 characters to {allowed}"
    assert "stopped during the call" in json.dumps(results(fake, 4)["toolu_c1"]["content"])
    assert results(fake, 7)["toolu_e1"]["content"] == "echo: again"
    calls = log.read_text().splitlines()
    assert calls == [f"write_file {allowed}", "crash", "crash", "echo again"]
    fake.assert_done()


def test_openai_compatible_provider_from_settings_read_edit_text(qtbot, qloop, make_window, workdir):
    from desktop_agent import config
    from desktop_agent.ui.main import needs_first_run

    app_ts = workdir / "app.ts"
    assert needs_first_run()  # Anthropic and no key: the first-run Settings is due
    with FakeOpenAI(chunk_size=4, api_key="sk-local-test") as oa:
        oa.script([
            reply(tool_use("Read", {"file_path": str(app_ts)}, id="call_read")),
            reply(text("Changing it."), tool_use("Edit", {"file_path": str(app_ts), "old_string": "value = 1",
                                                          "new_string": "value = 2"}, id="call_edit")),
            reply(text("Set `value` to 2 over the local model.")),
        ])
        win = make_window(with_client=False)  # the client comes from the saved settings

        async def scenario():
            dlg = win.show_settings(first_run=True)
            dlg.provider_combo.setCurrentIndex(dlg.provider_combo.findData("openai"))
            assert dlg.base_url_edit.placeholderText() == "http://localhost:11434/v1"
            assert dlg.model_combo.count() == 0 and dlg.model_combo.currentText() == ""
            dlg.base_url_edit.setText(oa.base_url)
            dlg._save()  # no model yet: says so and stays open; no Anthropic key is asked for
            assert dlg.isVisible() and "model" in dlg.error_label.text()
            dlg.model_combo.setCurrentText("local-model")
            qtbot.keyClicks(dlg.key_edit, "sk-local-test")
            qtbot.mouseClick(dlg.buttons.button(dlg.buttons.StandardButton.Save), Qt.MouseButton.LeftButton)
            assert not dlg.isVisible()
            saved = config.AppSettings.load()
            assert (saved.provider, saved.openai_base_url, saved.model) == ("openai", oa.base_url, "local-model")
            assert saved.base_url is None and config.find_api_key() == (None, "none")
            assert config.find_openai_key() == ("sk-local-test", "credentials")
            assert stat.S_IMODE(os.stat(config.credentials_path()).st_mode) == 0o600
            assert not needs_first_run()
            reopened = win.show_settings()  # the saved provider comes back with its own fields
            assert reopened.provider() == "openai" and reopened.base_url_edit.text() == oa.base_url
            reopened.provider_combo.setCurrentIndex(reopened.provider_combo.findData("anthropic"))
            assert reopened.base_url_edit.text() == "" and reopened.model_combo.count() > 0
            reopened.reject()

            assert await win.folders.open_folder(str(workdir))
            assert win.controller.session.model == "local-model"
            task = await send(qtbot, win, "Change value to 2")
            perm = await dialog(win)
            assert perm.request.tool_name == "Edit" and app_ts.read_text() == "export const value = 1"
            qtbot.mouseClick(perm.allow_button, Qt.MouseButton.LeftButton)
            await asyncio.wait_for(task, 20)

        qloop.run_until_complete(scenario())
        oa.assert_done()
        bodies = [r.body for r in oa.requests]
    assert app_ts.read_text() == "export const value = 2"
    assert "Set value to 2 over the local model." in win.conversation.text_content()
    assert all(b["model"] == "local-model" and b["stream"] is True for b in bodies)
    tool_msgs = [m for m in bodies[2]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["call_read", "call_edit"]
    assert win.diff_panel.changes[0].counts == (1, 1)


def test_settings_default_mode_applies_to_new_sessions(qtbot, qloop, fake, make_window, workdir):
    from desktop_agent import config

    s = config.AppSettings.load()
    s.default_permission_mode = "acceptEdits"
    s.save()
    app_ts = workdir / "app.ts"
    fake.script([reply(tool_use("Read", {"file_path": str(app_ts)}, id="toolu_read")),
                 reply(tool_use("Edit", {"file_path": str(app_ts), "old_string": "value = 1",
                                         "new_string": "value = 3"}, id="toolu_edit")),
                 reply(text("Done without asking."))])
    win = make_window()
    assert win.permission_mode == "acceptEdits" and win.toolbar.mode_combo.currentData() == "acceptEdits"
    asked = []
    win.controller.dialog_opened.connect(asked.append)

    async def scenario():
        assert await win.folders.open_folder(str(workdir))
        assert win.controller.session.permission_mode == "acceptEdits"
        win.toolbar.request_mode("default")  # this session only
        assert win.controller.session.permission_mode == "default"
        first = win.controller.session
        win.folders.new_session()
        await asyncio.wait_for(win.open_task, 20)
        assert win.controller.session is not first
        assert win.controller.session.permission_mode == "acceptEdits" and win.permission_mode == "acceptEdits"
        task = await send(qtbot, win, "Set value to 3")
        await asyncio.wait_for(task, 20)

    qloop.run_until_complete(scenario())
    assert asked == []  # acceptEdits: the Edit was not asked
    assert app_ts.read_text() == "export const value = 3"
    assert win.conversation.cards["toolu_edit"].state == "done"
    fake.assert_done()


DUMP = """import json, os, sys, tempfile, time
data = sys.stdin.read()
fd, path = tempfile.mkstemp(prefix="%d-" % time.time_ns(), suffix=".json", dir=sys.argv[1])
os.write(fd, data.encode())
os.close(fd)
"""


def test_session_end_hooks_on_new_session_and_window_close(qtbot, qloop, fake, make_window, tmp_path,
                                                           keep_app_running):
    from desktop_agent.permissions import trust

    proj, dumps = tmp_path / "proj", tmp_path / "dumps"
    (proj / ".claude").mkdir(parents=True)
    dumps.mkdir()
    script = tmp_path / "dump.py"
    script.write_text(DUMP)
    hook = {"hooks": [{"type": "command", "command": f"{sys.executable} {script} {dumps}"}]}
    (proj / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"SessionEnd": [hook]}}))
    trust.set_trusted(str(proj), True)
    fake.script([reply(text("first")), reply(text("second"))])
    win = make_window()

    def ends():
        out = []
        for f in sorted(dumps.iterdir(), key=lambda p: int(p.name.split("-")[0])):
            out.append(json.loads(f.read_text()))
        return out

    async def scenario():
        assert await win.folders.open_folder(str(proj))
        first = win.controller.session.session_id
        await asyncio.wait_for(await send(qtbot, win, "one"), 20)
        win.folders.new_session()
        await asyncio.wait_for(win.open_task, 20)
        assert ends() == []  # a new session opens beside the first, which stays open (issue 24)
        win.folders.new_session()  # one that has not started is replaced (an empty session leaves no trace)
        await asyncio.wait_for(win.open_task, 20)
        assert ends() == [] and len(win.lives) == 2
        second = win.controller.session.session_id
        await asyncio.wait_for(await send(qtbot, win, "two"), 20)
        assert win.isVisible()
        win.close()  # the hook runs first, on the loop; then the window closes
        await wait_for(lambda: not win.isVisible(), what="the window to close")
        return first, second

    first, second = qloop.run_until_complete(scenario())
    got = ends()
    assert sorted((e["reason"], e["session_id"]) for e in got) == sorted(
        [("prompt_input_exit", first), ("prompt_input_exit", second)])
    assert all(e["hook_event_name"] == "SessionEnd" and e["cwd"] == str(proj) for e in got)
    assert win.controller.session is None
    fake.assert_done()


def test_settings_store_each_providers_key_in_the_keyring_or_the_file(qtbot, monkeypatch):
    """The OpenAI-compatible key goes to the keyring when one is usable (else the 0600 file), next to the
    Anthropic key and never over it; the dialog says where and never shows either key."""
    import keyring
    from keyring.backends import fail

    from desktop_agent import config
    from desktop_agent.ui.dialogs.settings import SettingsDialog
    from tests.session.test_store import _MemoryKeyring

    config.store_api_key("sk-ant-file")  # no keyring yet: the file
    backend = _MemoryKeyring.make()
    keyring.set_keyring(backend)
    try:
        dlg = SettingsDialog()
        qtbot.addWidget(dlg)
        qtbot.waitUntil(dlg.key_facts_known)  # where the keys come from is looked up off the Qt thread
        dlg.provider_combo.setCurrentIndex(dlg.provider_combo.findData("openai"))
        assert "system keyring" in dlg.where_label.text()
        dlg.base_url_edit.setText("http://127.0.0.1:9/v1")
        dlg.model_combo.setCurrentText("llama3.1")
        dlg.key_edit.setText("sk-oa-ring")
        dlg._save()
        assert not dlg.error_label.isVisible()
        assert backend.store[(config.KEYRING_SERVICE, config.KEYRING_OPENAI_USER)] == "sk-oa-ring"
        assert config.find_openai_key() == ("sk-oa-ring", "keyring")
        assert config.find_api_key() == ("sk-ant-file", "keyring")  # moved in, unchanged
        again = SettingsDialog()
        qtbot.addWidget(again)
        qtbot.waitUntil(again.key_facts_known)
        assert again.provider() == "openai" and again.key_edit.text() == ""
        assert "keyring" in again.key_edit.placeholderText()
    finally:
        keyring.set_keyring(fail.Keyring())
    assert config.store_openai_key("sk-oa-file") == "credentials"
    assert stat.S_IMODE(os.stat(config.credentials_path()).st_mode) == 0o600
    assert config.find_openai_key() == ("sk-oa-file", "credentials")
