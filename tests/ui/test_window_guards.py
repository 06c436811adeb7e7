"""The window's guards and repairs (issue 13): bypassPermissions behind a confirmation at every entry
point, first-run set-up keeping the folder, banners replaced rather than stacked, the code font
fixed-pitch under a Chinese locale, resume rebuilding the changes panel, live Bash output, the retry
card. The real window and engine run against the fake Anthropic server.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from PySide6.QtCore import Qt

from desktop_agent.ui.modes import BYPASS
from tests.fakes.anthropic_server import reply, text
from tests.ui.flow import wait_for


def _box(win_or_dlg):
    box = win_or_dlg.bypass_box
    assert box is not None and box.isVisible(), "the bypass question is not open"
    assert "every tool runs without asking" in box.text() and "Deny rules still apply" in box.text()
    return box


def _assert_not_bypass(win, mode="default"):
    assert win.permission_mode == mode
    assert win.toolbar.mode_combo.currentData() == mode
    assert not win.toolbar.bypass_action.isVisible()
    assert "nothing asks" not in win.windowTitle()
    if win.controller.session is not None:
        assert win.controller.session.permission_mode == mode


# ----- 1. bypass behind a guard ---------------------------------------------------------------------------
def test_toolbar_box_asks_before_bypass_and_cancel_keeps_the_old_mode(qtbot, qloop, make_window, workdir):
    win = make_window()
    assert qloop.run_until_complete(win.folders.open_folder(str(workdir)))
    win.toolbar.mode_combo.setCurrentIndex(win.toolbar.mode_combo.findData("acceptEdits"))
    assert win.controller.session.permission_mode == "acceptEdits"

    win.toolbar.mode_combo.setCurrentIndex(win.toolbar.mode_combo.findData(BYPASS))
    box = _box(win.toolbar)
    _assert_not_bypass(win, "acceptEdits")  # nothing changes while the question is open
    qtbot.mouseClick(box.no_button, Qt.MouseButton.LeftButton)
    _assert_not_bypass(win, "acceptEdits")

    win.toolbar.mode_combo.setCurrentIndex(win.toolbar.mode_combo.findData(BYPASS))
    qtbot.mouseClick(_box(win.toolbar).yes_button, Qt.MouseButton.LeftButton)
    assert win.controller.session.permission_mode == BYPASS
    assert win.toolbar.mode_combo.currentData() == BYPASS
    assert win.toolbar.bypass_action.isVisible() and win.toolbar.bypass_badge.text() == "Bypass — nothing asks"
    assert "Bypass — nothing asks" in win.windowTitle()
    assert win.windowTitle().count("Desktop Agent") == 1 and win.windowTitle().endswith("Desktop Agent")

    combo = win.toolbar.mode_combo
    combo.setCurrentIndex(combo.findData("default"))  # leaving bypass needs no question
    assert win.toolbar.bypass_box is None
    _assert_not_bypass(win)


def test_menu_entry_asks_and_escape_cancels(qtbot, qloop, make_window, workdir):
    win = make_window()
    assert qloop.run_until_complete(win.folders.open_folder(str(workdir)))
    action = next(a for a in win.mode_group.actions() if a.data() == BYPASS)
    action.trigger()
    box = _box(win.toolbar)
    assert not action.isChecked()  # the menu still shows the mode in force
    qtbot.keyClick(box, Qt.Key.Key_Escape)
    assert not box.isVisible()
    _assert_not_bypass(win)
    action.trigger()
    box = _box(win.toolbar)
    qtbot.keyClick(box, Qt.Key.Key_Return)  # Enter turns nothing on (and no button is default)
    _assert_not_bypass(win)
    assert box.isVisible()
    qtbot.mouseClick(box.no_button, Qt.MouseButton.LeftButton)
    _assert_not_bypass(win)


def test_cycle_shortcut_never_reaches_bypass_nor_dont_ask(qtbot, qloop, make_window, workdir):
    win = make_window()
    assert qloop.run_until_complete(win.folders.open_folder(str(workdir)))
    seen = []
    for _ in range(12):
        mods = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
        qtbot.keyClick(win.prompt, Qt.Key.Key_M, mods)
        seen.append(win.controller.session.permission_mode)
        assert win.toolbar.bypass_box is None
    assert BYPASS not in seen and "dontAsk" not in seen
    assert set(seen) == {"default", "acceptEdits", "plan"}
    # entered deliberately, the cycle leaves it
    win.toolbar.request_mode(BYPASS)
    _box(win.toolbar).yes_button.click()
    assert win.permission_mode == BYPASS
    win.toolbar.cycle_mode()
    assert win.permission_mode == "default" and win.controller.session.permission_mode == "default"


def test_dont_ask_says_what_it_does_from_the_menu_with_a_badge(qtbot, qloop, make_window, workdir):
    win = make_window()
    assert qloop.run_until_complete(win.folders.open_folder(str(workdir)))
    label = "Don't ask \u2014 deny anything not allowed"
    assert win.toolbar.mode_combo.itemText(win.toolbar.mode_combo.findData("dontAsk")) == label
    action = next(a for a in win.mode_group.actions() if a.data() == "dontAsk")
    assert action.text() == label
    assert not win.toolbar.dont_ask_action.isVisible()
    action.trigger()  # the menu: no question, but a badge in the toolbar and the title
    assert win.permission_mode == "dontAsk" and win.controller.session.permission_mode == "dontAsk"
    assert win.toolbar.dont_ask_action.isVisible() and not win.toolbar.bypass_action.isVisible()
    assert win.toolbar.dont_ask_badge.text() == "Don't ask \u2014 denies anything not allowed"
    assert "Don't ask \u2014 denies anything not allowed" in win.windowTitle()
    win.toolbar.cycle_mode()  # the cycle leaves it and never comes back to it
    assert win.permission_mode == "default" and not win.toolbar.dont_ask_action.isVisible()
    assert "Don't ask" not in win.windowTitle()


# ----- 1b. the Bypass confirmation, as an attacker types at it ---------------------------------------------
def _typed_at(qtbot, box, keys):
    for key in keys:
        for target in (box, box.focusWidget() or box, box.yes_button, box.no_button):
            qtbot.keyClick(target, key)
        qtbot.keyClick(box, key, Qt.KeyboardModifier.AltModifier)


@pytest.fixture
def bypass_delay(monkeypatch):
    from desktop_agent.ui.dialogs.permission import PermissionDialog

    monkeypatch.setattr(PermissionDialog, "safety_delay_ms", 700)


def test_b_space_and_return_never_turn_bypass_on(qtbot, qloop, make_window, workdir, bypass_delay):
    """The box a QMessageBox clicked "Turn on &Bypass" for on a bare ``b``: ``b``, Space and Return — before the
    delay, after it, on every widget of it, with and without Alt — leave bypass off; only a click on the button
    after the delay turns it on."""
    win = make_window()
    assert qloop.run_until_complete(win.folders.open_folder(str(workdir)))
    win.toolbar.request_mode(BYPASS)
    box = _box(win.toolbar)
    assert "&" not in box.yes_button.text() and not box.yes_button.isDefault() and not box.no_button.isDefault()
    qtbot.waitUntil(box.isActiveWindow)
    assert box.focusWidget() is box.no_button  # Cancel has the focus
    keys = (Qt.Key.Key_B, Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter)
    _typed_at(qtbot, box, keys)  # before the delay
    _assert_not_bypass(win)
    assert box.isVisible()  # Space on the focused Cancel did not even cancel: typed before it was ready
    qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)  # a click before the delay
    _assert_not_bypass(win)
    for _ in range(3):  # after the delay: each key restarts it; still nothing turns it on
        qtbot.waitUntil(box.is_ready, timeout=3000)
        box.yes_button.setFocus()
        _typed_at(qtbot, box, (Qt.Key.Key_B, Qt.Key.Key_Return, Qt.Key.Key_Space))
        _assert_not_bypass(win)
        assert box.isVisible()
    qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)  # right after the keys: not ready
    _assert_not_bypass(win)
    qtbot.waitUntil(box.is_ready, timeout=3000)
    qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)
    assert win.permission_mode == BYPASS and win.controller.session.permission_mode == BYPASS
    assert win.toolbar.bypass_box is None and not box.isVisible()


def test_the_bypass_question_at_launch_over_an_inactive_window_takes_no_keys(qtbot, qloop, make_window, workdir,
                                                                            bypass_delay):
    """``--permission-mode bypassPermissions`` while the person types elsewhere: the question opens without taking
    the focus, and nothing typed turns Bypass on."""
    from PySide6.QtWidgets import QApplication, QLineEdit

    other = QLineEdit()
    qtbot.addWidget(other)
    other.show()
    other.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is other)
    win = make_window()
    qtbot.waitUntil(win.isActiveWindow)  # shown (offscreen activates it), then the person types elsewhere
    other.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is other)
    win.toolbar.request_mode(BYPASS)
    box = _box(win.toolbar)
    assert box.opened_inactive and box.testAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
    other.activateWindow()  # offscreen activates it anyway; a window manager does not
    qtbot.waitUntil(lambda: QApplication.activeWindow() is other)
    qtbot.wait(800)
    assert not box.is_ready()
    _typed_at(qtbot, box, (Qt.Key.Key_B, Qt.Key.Key_Space, Qt.Key.Key_Return))
    qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)
    _assert_not_bypass(win)
    qtbot.keyClick(box, Qt.Key.Key_Escape)  # typed before it was ready (inactive): goes nowhere either
    assert box.isVisible()
    box.activateWindow()
    qtbot.waitUntil(box.is_ready, timeout=3000)
    qtbot.keyClick(box, Qt.Key.Key_Escape)
    assert not box.isVisible()
    _assert_not_bypass(win)


def test_settings_default_bypass_asks_and_applies_once_saved(qtbot, qloop, make_window, workdir):
    from desktop_agent import config

    config.store_api_key("sk-test")
    win = make_window(with_client=False)
    dlg = win.show_settings()
    dlg.mode_combo.setCurrentIndex(dlg.mode_combo.findData(BYPASS))
    qtbot.mouseClick(_box(dlg).no_button, Qt.MouseButton.LeftButton)
    assert dlg.model_mode() == "default"
    dlg.mode_combo.setCurrentIndex(dlg.mode_combo.findData(BYPASS))
    qtbot.mouseClick(_box(dlg).yes_button, Qt.MouseButton.LeftButton)
    assert dlg.model_mode() == BYPASS
    dlg._save()
    assert config.AppSettings.load().default_permission_mode == BYPASS
    assert win.permission_mode == BYPASS and win.toolbar.bypass_action.isVisible()  # confirmed in Settings: asked once
    assert win.toolbar.bypass_box is None


def test_command_line_bypass_asks_before_the_window_uses_it(qtbot, qloop, make_window, workdir):
    from desktop_agent.cli.argv import parse_args
    from desktop_agent.ui.main import launch_mode

    def window_options(args):
        return parse_args(args).window()

    assert launch_mode(window_options([str(workdir), "--dangerously-skip-permissions"]), {}) == BYPASS
    assert launch_mode(window_options([str(workdir), "--permission-mode", "bypassPermissions"]), {}) == BYPASS
    assert launch_mode(window_options([str(workdir), "--permission-mode", "manual"]), {}) == "default"
    assert launch_mode(window_options([str(workdir)]), {"default_permission_mode": "plan"}) == "plan"

    win = make_window()
    win.toolbar.request_mode(launch_mode(window_options([str(workdir), "--dangerously-skip-permissions"]), {}))
    box = _box(win.toolbar)
    assert qloop.run_until_complete(win.folders.open_folder(str(workdir)))  # the folder opens meanwhile, not in bypass
    _assert_not_bypass(win)
    qtbot.mouseClick(box.no_button, Qt.MouseButton.LeftButton)
    _assert_not_bypass(win)

    win.toolbar.request_mode(BYPASS)
    qtbot.mouseClick(_box(win.toolbar).yes_button, Qt.MouseButton.LeftButton)
    assert win.controller.session.permission_mode == BYPASS


def test_bypass_confirmed_before_the_session_exists_is_used_by_it(qtbot, qloop, make_window, workdir, fake):
    fake.script([reply(text("hi"))])
    win = make_window()
    win.toolbar.request_mode(BYPASS)
    _box(win.toolbar).yes_button.click()
    assert qloop.run_until_complete(win.folders.open_folder(str(workdir)))
    assert win.controller.session.permission_mode == BYPASS and win.toolbar.bypass_action.isVisible()


# ----- 2. first run keeps the folder ----------------------------------------------------------------------
def test_first_run_opens_the_folder_once_the_key_is_saved(qtbot, qloop, make_window, workdir, fake, monkeypatch):
    """``desktop-agent FOLDER`` without a key: the set-up banner names the folder; sending again replaces
    it (no pile); after the key is saved in the first-run Settings the folder opens and the stale banner
    is gone; the prompt then reaches the model."""
    monkeypatch.chdir(workdir)
    fake.script([reply(text("Hello from the model."))])
    win = make_window(with_client=False)  # the real client, built from the saved key and base URL

    async def scenario():
        assert not await win.folders.open_folder(str(workdir))
        banners = list(win.conversation.banners.values())
        assert len(banners) == 1 and "No API key" in banners[0].text_plain
        for _ in range(3):  # Enter again and again: still one banner
            win.send("hello")
        assert [type(w).__name__ for w in win.conversation.column.items] == ["Banner"]
        assert "Open a folder first" not in win.conversation.text_content()
        assert win.folders.folder_dialog_start() == str(workdir)
        dlg = win.show_settings(first_run=True)
        qtbot.keyClicks(dlg.key_edit, "sk-test-first-run")
        dlg.base_url_edit.setText(fake.base_url)
        qtbot.mouseClick(dlg.buttons.button(dlg.buttons.StandardButton.Save), Qt.MouseButton.LeftButton)
        await wait_for(lambda: win.controller.session is not None, what="the folder's session")
        await asyncio.wait_for(win.open_task, 10)
        assert win.folder == str(workdir)
        assert "No API key" not in win.conversation.text_content() and not win.conversation.banners
        win.send("hello")
        await asyncio.wait_for(win.controller._task, 10)

    qloop.run_until_complete(scenario())
    assert "Hello from the model." in win.conversation.text_content()
    fake.assert_done()


def test_keyed_banners_replace_each_other(qtbot):
    from desktop_agent.ui.conversation.view import ConversationView

    view = ConversationView()
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.add_user("hi")
    first = view.add_banner("error", "Overloaded", key="error:overloaded")
    view.add_banner("notice", "a notice")
    second = view.add_banner("error", "Overloaded again", key="error:overloaded")
    items = view.column.items
    assert first not in items and second in items and len(items) == 3
    assert [view.column.index_of(w) for w in items] == [0, 1, 2]
    assert items[1].y() + items[1].height() < items[2].y()  # what followed moved up, no overlap
    view.remove_banner("error:overloaded")
    assert len(view.column.items) == 2 and not view.banners


def test_folder_dialog_starts_in_the_last_folder_or_cwd(qtbot, qloop, make_window, workdir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    win = make_window()
    assert win.folders.folder_dialog_start() == str(tmp_path)  # nothing opened yet: the cwd, not HOME
    assert qloop.run_until_complete(win.folders.open_folder(str(workdir)))
    win.save_state()
    win.folders.choose_folder()
    assert win.folders.folder_dialog.directory().absolutePath() == str(workdir)
    win.folders.folder_dialog.reject()
    win2 = make_window()
    assert win2.folders.folder_dialog_start() == str(workdir)  # the last folder, from the saved state


# ----- 3. monospace under zh_CN ---------------------------------------------------------------------------
_MONO_PROBE = r'''
import json, os, sys
from PySide6.QtWidgets import QApplication
from PySide6.QtCore import QLocale
app = QApplication([])
from desktop_agent.ui.conversation.view import ConversationView
from desktop_agent.ui.highlight import is_fixed_pitch, mono_font
from desktop_agent.ui.changes.panel import DiffPanel
from desktop_agent.ui.dialogs.permission import PermissionDialog
from desktop_agent.core.permission import PermissionRequest

def fragment_fonts(doc, needle):
    fonts = []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            frag = it.fragment()
            if frag.isValid() and needle in frag.text():
                fonts.append(frag.charFormat().font())
            it += 1
        block = block.next()
    return fonts

out = {"locale": QLocale.system().name(), "mono": mono_font().family(), "mono_fixed": is_fixed_pitch(mono_font())}
view = ConversationView(); view.resize(700, 500); view.show()
view.append_text("Look:\n\n```python\ndef f(x):\n    return x_code + 1\n```\n")
view.close_text()
md = view.column.items[0]
fonts = fragment_fonts(md.code_views()[0].document(), "x_code")
out["code_block"] = [f.family() for f in fonts]
out["code_block_fixed"] = bool(fonts) and all(is_fixed_pitch(f) for f in fonts)
patch = [{"oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 2,
          "lines": [" def f(x):", "-    return diffcode", "+    return diffcode + 1"]}]
req = PermissionRequest(tool_name="Edit", tool_use_id="t1", cwd="/w", file_path="/w/a.py",
                        input={"file_path": "/w/a.py", "old_string": "    return diffcode",
                               "new_string": "    return diffcode + 1"},
                        structured_patch=patch, original_file="def f(x):\n    return diffcode\n")
dlg = PermissionDialog(req); dlg.open()
app.processEvents()
fonts = fragment_fonts(dlg.diff_view.document(), "diffcode")
out["dialog"] = [f.family() for f in fonts]
out["dialog_fixed"] = bool(fonts) and all(is_fixed_pitch(f) for f in fonts) and is_fixed_pitch(dlg.diff_view.font())
panel = DiffPanel(); panel.cwd = "/w"; panel.resize(500, 400); panel.show()
panel.on_tool_finished("t2", "Edit", False, {"filePath": "/w/a.py", "structuredPatch": patch}, turn=1)
app.processEvents()
fonts = fragment_fonts(panel.view.document(), "diffcode")
out["panel"] = [f.family() for f in fonts]
out["panel_fixed"] = bool(fonts) and all(is_fixed_pitch(f) for f in fonts)
card_font = mono_font()
out["card_fixed"] = is_fixed_pitch(card_font)
print(json.dumps(out))
'''


def test_code_fonts_are_fixed_pitch_under_zh_cn(tmp_path):
    """Under LANG=zh_CN.UTF-8 (a fresh process: the locale is read at start-up) the fonts of the
    conversation's code blocks, the dialog's diff and the changes panel are all fixed-pitch."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, LANG="zh_CN.UTF-8", LC_ALL="zh_CN.UTF-8", LANGUAGE="zh_CN", QT_QPA_PLATFORM="offscreen")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", _MONO_PROBE], env=env, cwd=root, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["locale"] == "zh_CN"
    assert out["mono_fixed"], out
    assert out["code_block"] and out["code_block_fixed"], out
    assert out["dialog"] and out["dialog_fixed"], out
    assert out["panel"] and out["panel_fixed"], out
    assert out["card_fixed"], out


def test_mono_font_falls_back_when_the_system_fixed_font_is_proportional(qapp, monkeypatch):
    """The chain: a system "fixed" font that is really proportional (what a Chinese locale's fontconfig
    can give) is skipped for the next fixed-pitch family."""
    from PySide6.QtGui import QFont, QFontDatabase

    from desktop_agent.ui import highlight as cv

    monkeypatch.setattr(cv, "_MONO", [])
    monkeypatch.setattr(cv.QFontDatabase, "systemFont", staticmethod(lambda _which: QFont("DejaVu Sans")))
    assert not cv.is_fixed_pitch(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    font = cv.mono_font()
    assert cv.is_fixed_pitch(font) and font.family() == "DejaVu Sans Mono"
    monkeypatch.setattr(cv, "_MONO", [])  # the next test gets the real one


# ----- 4. resume rebuilds the changes panel; a session exists from its first prompt -------------------------
def test_resume_rebuilds_changes_panel_card_summaries_and_tokens(qtbot, qloop, make_window, workdir, fake):
    from tests.fakes.anthropic_server import tool_use

    app_ts, new_py = workdir / "app.ts", workdir / "new.py"
    fake.script([
        reply(tool_use("Read", {"file_path": str(app_ts)}, id="toolu_read"),
              usage={"input_tokens": 0, "output_tokens": 0}),
        reply(tool_use("Edit", {"file_path": str(app_ts), "old_string": "export const value = 1",
                                "new_string": "export const value = 2"}, id="toolu_edit"),
              usage={"input_tokens": 1000, "output_tokens": 200}),
        reply(tool_use("Write", {"file_path": str(new_py), "content": "a = 1\nb = 2\n"}, id="toolu_write"),
              usage={"input_tokens": 1500, "output_tokens": 100}),
        reply(text("Done."), usage={"input_tokens": 1600, "output_tokens": 20}),
    ])
    win = make_window()
    win.toolbar.request_mode("acceptEdits")

    async def scenario():
        assert await win.folders.open_folder(str(workdir))
        win.send("Change value and add new.py")
        await asyncio.wait_for(win.controller._task, 10)
        live = (win.controller.tokens, round(win.controller.cost, 6), win.diff_panel.text_content())
        sid = win.controller.session.session_id
        assert await win.folders.open_folder(str(workdir))  # a fresh session: empty panel, zero tokens
        assert not win.diff_panel.changes and win.controller.tokens == 0
        empty_path = win.controller.session.transcript_path
        assert await win.folders.open_folder(str(workdir), resume=sid)
        return live, sid, empty_path

    (tokens, cost, panel_before), sid, empty_path = qloop.run_until_complete(scenario())
    fake.assert_done()
    assert tokens == 1000 + 200 + 1500 + 100 + 1600 + 20
    changes = win.diff_panel.changes
    assert [c.tool for c in changes] == ["Edit", "Write"]
    assert changes[0].counts == (1, 1) and changes[1].counts == (2, 0)
    assert all(c.status == "applied" for c in changes)
    assert "export const value = 2" in win.diff_panel.text_content()
    assert win.conversation.cards["toolu_edit"].summary == "+1 \u22121"
    assert win.conversation.cards["toolu_write"].summary == "+2 \u22120"
    assert win.controller.tokens == tokens and round(win.controller.cost, 6) == cost
    assert "4.4k tokens" in win.usage_label.text()
    assert win.controller.turn_index == 1
    # the fresh session left in between never got a prompt: no file, no "(no messages yet)" row
    import os

    assert not os.path.exists(empty_path)
    rows = [win.sessions.item(i).text() for i in range(win.sessions.count())]
    assert len(rows) == 1 and "Change value" in rows[0] and "no messages" not in " ".join(rows)


def test_an_unused_session_leaves_no_file_when_the_window_closes(qtbot, qloop, make_window, workdir):
    import os

    from desktop_agent.app.session import AgentSession

    win = make_window()
    assert qloop.run_until_complete(win.folders.open_folder(str(workdir)))
    path = win.controller.session.transcript_path
    win.close()
    assert not os.path.exists(path)
    assert AgentSession.list_sessions(str(workdir)) == []


# ----- 5. a running command shows its output and time; Stop reads "stopped" -------------------------------
def test_running_bash_card_shows_output_tail_and_elapsed_then_stopped(qtbot, qloop, make_window, workdir, fake):
    from tests.fakes.anthropic_server import tool_use

    cmd = "for i in 1 2 3 4 5; do echo step-$i; sleep 0.2; done; sleep 8"
    fake.script([reply(tool_use("Bash", {"command": cmd}, id="toolu_run"))])
    win = make_window(permission_mode=BYPASS)
    shots = {}

    async def scenario():
        assert await win.folders.open_folder(str(workdir))
        win.send("Run it")
        task = win.controller._task
        card = await wait_for(lambda: win.conversation.cards.get("toolu_run"), what="Bash card")
        await wait_for(lambda: card.tail and card.tail[-1] == "step-5", timeout=10, what="live output")
        assert card.state == "running" and card.tail == ["step-3", "step-4", "step-5"]
        assert card.height() > 32  # the tail is shown under the header
        await asyncio.sleep(1.1)
        assert card.elapsed_text().endswith(" s") and int(card.elapsed_text().split()[0]) >= 1
        shots["running"] = card.grab()
        qtbot.keyClick(win.prompt, Qt.Key.Key_Escape)
        await asyncio.wait_for(task, 6)
        return card

    card = qloop.run_until_complete(scenario())
    assert card.state == "cancelled" and card.summary == "stopped"
    assert "[Bash" in win.conversation.text_content() and "cancelled stopped]" in win.conversation.text_content()
    assert card.height() == 32  # the tail goes with the run
    assert not shots["running"].isNull()


# ----- 6. retries: one card, a countdown, Retry now and Cancel ---------------------------------------------
def _retry_cards(win):
    from desktop_agent.ui.conversation.cards import RetryCard

    return [w for w in win.conversation.column.items if isinstance(w, RetryCard)]


def test_one_retry_card_counts_down_and_retry_now_skips_the_wait(qtbot, qloop, make_window, workdir, fake):
    from tests.fakes.anthropic_server import http_error

    wait = {"retry-after": "30"}
    fake.script([http_error(529, headers=wait), http_error(529, headers=wait), reply(text("Through at last."))])
    win = make_window(retries=5)

    async def scenario():
        assert await win.folders.open_folder(str(workdir))
        t0 = time.monotonic()
        win.send("hello")
        task = win.controller._task
        card = await wait_for(lambda: win.conversation.retry_card, what="retry card")
        assert "Retrying in 30 s (attempt 1 of 5)" in card.text_plain and "Overloaded" in card.text_plain.title()
        await asyncio.sleep(1.3)
        assert card.seconds_left() in (28, 29) and f"Retrying in {card.seconds_left()} s" in card.text_plain
        assert "retry-now" in card.text() and "retry-cancel" in card.text()
        card.linkActivated.emit("retry-now")  # what a click on the link does
        await wait_for(lambda: card.attempt == 2, what="second attempt")
        assert _retry_cards(win) == [card]  # updated in place, not a second card
        card.linkActivated.emit("retry-now")
        await asyncio.wait_for(task, 10)
        return card, time.monotonic() - t0

    card, elapsed = qloop.run_until_complete(scenario())
    fake.assert_done()
    assert elapsed < 10  # two 30 s waits skipped
    assert card.finished == "ok" and "Went through after 2 retries." in card.text_plain
    assert len(_retry_cards(win)) == 1 and "Through at last." in win.conversation.text_content()


def test_retry_cancel_stops_the_turn(qtbot, qloop, make_window, workdir, fake):
    from tests.fakes.anthropic_server import http_error

    fake.script([http_error(529, headers={"retry-after": "30"})])
    win = make_window(retries=5)

    async def scenario():
        assert await win.folders.open_folder(str(workdir))
        win.send("hello")
        task = win.controller._task
        card = await wait_for(lambda: win.conversation.retry_card, what="retry card")
        card.linkActivated.emit("retry-cancel")
        await asyncio.wait_for(task, 6)
        return card

    card = qloop.run_until_complete(scenario())
    assert len(fake.requests) == 1  # no further attempt
    assert card.finished == "cancelled" and "cancelled" in card.text_plain
    assert win.controller.status == "idle" and not win.controller.busy


# ----- 7. find bar, language, 900×600 -----------------------------------------------------------------------
def test_find_bar_counts_marks_steps_and_escape_closes(qtbot, qloop, make_window, workdir):
    from desktop_agent.ui.conversation.markdown import MarkdownBlock

    win = make_window()
    conv = win.conversation
    conv.add_user("where is the parser?")
    conv.append_text("The parser reads dates. A second parser line.\n\nAnd a third PARSER mention.")
    conv.close_text()
    conv.start_tool("t1", "Grep", {"pattern": "parser"})
    conv.finish_tool("t1", "Grep", "Found 1 file\nsrc/parser.ts", False)
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=3000)  # shortcuts need the active window
    win.prompt.setFocus()
    qtbot.keyClick(win.prompt, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert win.find_bar.isVisible() and win.find_edit.hasFocus()
    qtbot.keyClicks(win.find_edit, "parser")
    # 1 in the prompt, 3 in the text, 2 in the Grep card (pattern and result)
    assert win.find_count.text() == "1 of 6"
    block = next(w for w in conv.column.items if isinstance(w, MarkdownBlock))
    assert len(block.extraSelections()) == 3  # every match in the text is marked
    qtbot.keyClick(win.find_edit, Qt.Key.Key_Return)
    assert win.find_count.text() == "2 of 6"
    qtbot.keyClick(win.find_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClick(win.find_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert win.find_count.text() == "6 of 6" and conv.selected is conv.cards["t1"]
    win.find_edit.setText("nothing like it")
    assert win.find_count.text() == "No matches" and not block.extraSelections()
    win.find_edit.setText("parser")
    assert not win.stop_action.isEnabled()  # idle: Esc must still close the bar
    qtbot.keyClick(win.find_edit, Qt.Key.Key_Escape)
    assert not win.find_bar.isVisible() and not block.extraSelections()
    assert win.prompt.hasFocus() or win.focusWidget() is win.prompt


def test_ui_language_from_env_and_settings(qtbot, tmp_path):
    import json
    import os
    import subprocess
    import sys

    from desktop_agent import config
    from desktop_agent.ui.main import resolve_language
    from desktop_agent.ui.dialogs.settings import SettingsDialog

    assert resolve_language({}, {}) is None
    assert resolve_language({"ui_language": "en"}, {}) is None  # the old default follows the system
    assert resolve_language({"ui_language": "zh_CN"}, {}) == "zh_CN"
    assert resolve_language({"ui_language": "en_US"}, {"LANG": "zh_CN.UTF-8"}) == "en"
    assert resolve_language({"ui_language": "en_US"}, {"DESKTOP_AGENT_UI_LANGUAGE": "zh_CN"}) == "zh_CN"

    config.store_api_key("sk-x")
    dlg = SettingsDialog()
    qtbot.addWidget(dlg)
    dlg.language_combo.setCurrentIndex(dlg.language_combo.findData("zh_CN"))
    assert dlg.theme_combo.currentData() == "system"
    dlg._save()
    saved = config.AppSettings.load()
    assert saved.ui_language == "zh_CN" and saved.theme == "system"

    probe = ("import os; from PySide6.QtWidgets import QApplication; app = QApplication([]); "
             "from desktop_agent.ui.main import install_translator, resolve_language; "
             "install_translator(app, resolve_language({})); "
             "from desktop_agent.ui.window.main_window import MainWindow; w = MainWindow(); "
             "print('|'.join(a.text() for a in w.menuBar().actions()))")
    env = dict(os.environ, LANG="C.UTF-8", LC_ALL="C.UTF-8", DESKTOP_AGENT_UI_LANGUAGE="zh_CN",
               QT_QPA_PLATFORM="offscreen", DESKTOP_AGENT_CONFIG_DIR=str(tmp_path / "cfg"))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", probe], env=env, cwd=root, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    menus = out.stdout.strip().splitlines()[-1]
    assert any("\u4e00" <= ch <= "\u9fff" for ch in menus), menus  # Chinese menu titles under LANG=C
    _ = json


def test_deny_feedback_appears_in_the_conversation(qtbot, qloop, make_window, workdir, fake):
    from desktop_agent.ui.conversation.cards import UserBlock
    from tests.fakes.anthropic_server import tool_use

    app_ts = workdir / "app.ts"
    fake.script([reply(tool_use("Read", {"file_path": str(app_ts)}, id="toolu_read")),
                 reply(tool_use("Edit", {"file_path": str(app_ts), "old_string": "export const value = 1",
                                         "new_string": "export const value = 2"}, id="toolu_edit")),
                 reply(text("OK, left alone."))])
    win = make_window()

    async def scenario():
        assert await win.folders.open_folder(str(workdir))
        win.send("Change value")
        task = win.controller._task
        dlg = await wait_for(lambda: win.controller.current_dialog if win.controller.current_dialog is not None
                             and win.controller.current_dialog.isVisible() else None, what="dialog")
        dlg.feedback.setText("keep it at one, please")
        await asyncio.sleep(0.9)  # past the dialog's safety delay
        qtbot.mouseClick(dlg.deny_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 10)

    qloop.run_until_complete(scenario())
    notes = [w for w in win.conversation.column.items if isinstance(w, UserBlock) and w.prompt.startswith("keep")]
    assert len(notes) == 1 and "You denied Edit and told the agent:" in notes[0].text()
    items = win.conversation.column.items
    assert items.index(win.conversation.cards["toolu_edit"]) < items.index(notes[0])
    assert app_ts.read_text() == "export const value = 1"


def test_code_blocks_scroll_sideways_inside_themselves(qtbot):
    """A wide code block scrolls sideways in its own frame; the message's prose never moves (issue 28)."""
    from desktop_agent.ui.conversation.markdown import CodeView
    from desktop_agent.ui.conversation.view import ConversationView

    view = ConversationView()
    qtbot.addWidget(view)
    view.resize(500, 400)
    view.show()
    long = "x = " + " + ".join(f"value_{i}" for i in range(40))
    view.append_text(f"Prose that is long enough to wrap " * 6 + f"\n\n```python\n{long}\nshort = 1\n```\n\nAfter.")
    view.close_text()
    md = view.column.items[0]
    prose, code, after = md.segments
    assert isinstance(code, CodeView) and not isinstance(prose, CodeView)
    block = code.document().begin()
    while block.isValid() and "value_1" not in block.text():
        block = block.next()
    assert block.isValid() and block.blockFormat().nonBreakableLines()
    assert block.layout().lineCount() == 2  # the two code lines, unwrapped
    assert prose.document().begin().layout().lineCount() > 1  # prose still wraps
    bar = code.horizontalScrollBar()
    assert bar.maximum() > 0 and bar.isVisible()  # the code block's own bar
    for seg in (prose, after):
        assert seg.horizontalScrollBar().maximum() == 0 and not seg.horizontalScrollBar().isVisible()
    assert code.width() <= md.width() and md.width() <= view.viewport().width()
    assert code.height() >= code.document().size().height() + bar.height() - 2
    bar.setValue(bar.maximum())  # scrolling the code moves nothing else
    assert prose.horizontalScrollBar().value() == 0 and after.horizontalScrollBar().value() == 0


def test_disabled_stop_looks_disabled(qtbot, make_window):
    from PySide6.QtGui import QColor, QIcon

    from desktop_agent.ui.highlight import colors

    win = make_window(with_client=False)
    assert not win.stop_action.isEnabled()
    win._apply_icons()  # the palette in force (screenshots cover the dark one)
    c = colors(win._icons_dark)
    img = win.stop_action.icon().pixmap(16, 16, QIcon.Mode.Disabled).toImage()
    opaque = [img.pixelColor(x, y) for x in range(16) for y in range(16) if img.pixelColor(x, y).alpha() > 200]
    assert opaque, "the stop icon has no opaque pixels"
    red = QColor(c.error)
    assert all(abs(p.red() - red.red()) + abs(p.green() - red.green()) > 60 for p in opaque)  # not red
    assert "disabled" in win.toolbar.stop_button.styleSheet() and c.muted in win.toolbar.stop_button.styleSheet()


def test_900_by_600_nothing_clipped(qtbot, make_window):
    from PySide6.QtGui import QFontMetrics

    win = make_window(with_client=False)
    win.resize(900, 600)
    qtbot.waitUntil(lambda: win.width() == 900)
    assert win.splitter.sizes()[0] <= 140  # the sessions pane gives way to the conversation
    p = win.prompt
    fm = QFontMetrics(p.font())
    assert fm.horizontalAdvance(p.placeholderText()) <= p.viewport().width()  # the hint fits its one line
    assert win.toolbar.stop_button.isVisible() and win.toolbar.bar.width() <= 900
    win.resize(1400, 800)
    qtbot.waitUntil(lambda: win.width() == 1400)
    assert "Shift+Enter" in p.placeholderText()  # the full hint where it fits
