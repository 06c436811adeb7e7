"""Widget-level tests: conversation view, permission dialog, diff panel, controller prompter, settings."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import time

import pytest
from PySide6.QtCore import Qt, QUrl

from desktop_agent.core import events as ev
from desktop_agent.core.permission import (
    DecisionReason, PermissionReply, PermissionRequest, PermissionUpdate, RuleValue,
)
from desktop_agent.ui import highlight
from desktop_agent.ui.window.controller import AgentController
from desktop_agent.ui.conversation.cards import ToolCard
from desktop_agent.ui.conversation.markdown import MarkdownBlock, _stable_boundary
from desktop_agent.ui.conversation.view import ConversationView
from desktop_agent.ui.changes.panel import DiffPanel
from desktop_agent.ui.dialogs.permission import PermissionDialog, hunks_from_texts
from tests.ui.flow import transcript_entries

PATCH = [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
          "lines": ["-export const value = 1", "+export const value = 2"]}]


def edit_request(cwd="/w", **kw):
    base = dict(tool_name="Edit", tool_use_id="toolu_1", cwd=cwd,
                input={"file_path": f"{cwd}/src/app.ts", "old_string": "export const value = 1",
                       "new_string": "export const value = 2"},
                file_path=f"{cwd}/src/app.ts", structured_patch=PATCH, original_file="export const value = 1",
                decision_reason=DecisionReason(type="mode", mode="default"),
                suggestions=[PermissionUpdate(type="addRules", behavior="allow",
                                              rules=[RuleValue(tool_name="Edit", rule_content="src/**")])])
    base.update(kw)
    return PermissionRequest(**base)


# ----- conversation view --------------------------------------------------------------------------
def test_conversation_is_append_only_and_fast_at_2000_cards(qtbot):
    view = ConversationView()
    qtbot.addWidget(view)
    view.resize(700, 600)
    view.show()
    view.cwd = "/w"
    for i in range(2000):
        view.start_tool(f"t{i}", "Read", {"file_path": f"/w/f{i}.py"})
        view.finish_tool(f"t{i}", "Read", "a\nb\n", False)
    first_y = view.cards["t0"].y()
    mid_y = view.cards["t1000"].y()
    times = []
    for j in range(50):
        t0 = time.perf_counter()
        view.start_tool(f"x{j}", "Bash", {"command": "ls"})
        view.finish_tool(f"x{j}", "Bash", "ok", False)
        times.append(time.perf_counter() - t0)
    assert view.cards["t0"].y() == first_y and view.cards["t1000"].y() == mid_y  # history untouched
    times.sort()
    assert times[len(times) // 2] < 0.005  # median append < 5 ms (the call itself; bench measures paint too)
    assert view.cards["t5"].arg == "f5.py" and view.cards["t5"].summary == "2 lines"


def test_tool_card_states_and_lazy_body(qtbot):
    view = ConversationView()
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.show()
    card = view.start_tool("t1", "Bash", {"command": "make test"})
    assert card.state == ToolCard.RUNNING and card.body is None
    view.finish_tool("t1", "Bash", "<tool_use_error>Exit code 2\nboom</tool_use_error>", True)
    assert card.state == ToolCard.ERROR and card.summary == "Exit code 2"
    h = card.height()
    card.set_expanded(True)
    assert card.body is not None and "boom" in card.body.toPlainText() and "command: make test" in card.body.toPlainText()
    assert card.height() > h
    card.grab()  # paints without error (cached header)


def test_markdown_streaming_matches_full_render(qtbot):
    view = ConversationView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show()
    text = ("Intro paragraph with **bold**.\n\n```python\ndef f(x):\n\n    return x\n```\n\n"
            "- item one\n- item two\n\nClosing `code` words.")
    for i in range(0, len(text), 3):
        view.append_text(text[i:i + 3])
        view.current_text.flush()
    streamed = view.current_text.toPlainText()
    full = MarkdownBlock(view.column)
    full.text = text
    full.render_text()
    assert streamed == full.toPlainText()
    assert "def f(x):" in streamed and "Closing code words." in streamed
    assert _stable_boundary("a\n\n```\nx\n\ny") == 3  # a break inside an open fence is not stable


def test_replay_shows_newest_and_offers_more(qtbot):
    view = ConversationView()
    qtbot.addWidget(view)
    view.resize(600, 400)
    ops = view.history_ops(transcript_entries(100))
    view.replay(ops, limit=30)
    assert len(view.cards) <= 10 and "t99" in view.cards and view.cards["t99"].state == "done"
    assert "earlier items" in view.text_content()
    view.replay(ops, limit=1000)
    assert len(view.cards) == 100 and "earlier items" not in view.text_content()


def test_find_in_conversation(qtbot):
    view = ConversationView()
    qtbot.addWidget(view)
    view.add_user("first prompt")
    view.append_text("the needle is here")
    view.close_text()
    hit = view.find_item("NEEDLE")
    assert isinstance(hit, MarkdownBlock)
    assert view.find_item("absent") is None


def test_code_block_copy_button_copies_the_code_exactly(qtbot, qapp):
    from PySide6.QtGui import QTextCursor

    view = ConversationView()
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    code = "def f(x):\n    if x:\n        return  'two  spaces'\n    return None"
    view.append_text(f"Here is the fix:\n\n```python\n{code}\n```\n\nAnd some prose after it.")
    view.close_text()
    block = next(b for b in view.column.children() if isinstance(b, MarkdownBlock))
    assert [c for _, _, c in block.code_blocks] == [code]
    first, last, _ = block.code_blocks[0]
    assert block.toPlainText()[first:last].replace("\u00a0", " ") == code
    # hover the code: the Copy button shows at the block's top right; leave it: it hides
    code_view = block.code_views()[0]
    qtbot.mouseMove(code_view.viewport(), code_view.viewport().rect().center())
    qtbot.waitUntil(lambda: block.copy_button.isVisible())
    assert block.copy_button.geometry().right() > code_view.width() // 2
    qtbot.mouseClick(block.copy_button, Qt.MouseButton.LeftButton)
    assert qapp.clipboard().text() == code and block.copy_button.text() == "Copied"
    prose = block.segments[-1]
    qtbot.mouseMove(prose.viewport(), prose.viewport().rect().center())
    qtbot.waitUntil(lambda: not block.copy_button.isVisible())
    # a plain selection copies plain spaces, not the NBSPs that keep the indentation on screen
    block.selectAll()
    block.copy()
    copied = qapp.clipboard().text()
    assert "\u00a0" not in copied and "        return  'two  spaces'" in copied


# ----- permission dialog --------------------------------------------------------------------------
def test_dialog_shows_everything_and_allow_is_default(qtbot):
    dlg = PermissionDialog(edit_request())
    qtbot.addWidget(dlg)
    replies = []
    dlg.decided.connect(replies.append)
    dlg.open()
    assert dlg.windowTitle() == "Allow Edit: app.ts?"
    assert "src/app.ts" in dlg.title_label.text() and "/w" in dlg.cwd_label.text()
    assert "Default mode" in dlg.reason_label.text()
    assert "export const value = 2" in dlg.diff_view.toPlainText()
    assert "Edit(src/**)" in dlg.rule_label.text()
    assert not dlg.allow_button.isDefault() and not dlg.allow_button.hasFocus()  # focus-safe
    qtbot.waitUntil(dlg.isActiveWindow)  # Enter allows only in the active dialog
    qtbot.keyClick(dlg, Qt.Key.Key_Return)
    assert replies and replies[0].behavior == "allow" and replies[0].updated_input is None
    assert replies[0].updated_permissions == []
    assert not dlg.isVisible()


def test_dialog_allow_for_session_carries_the_suggestions(qtbot):
    req = edit_request()
    dlg = PermissionDialog(req)
    qtbot.addWidget(dlg)
    replies = []
    dlg.decided.connect(replies.append)
    dlg.open()
    qtbot.mouseClick(dlg.allow_session_button, Qt.MouseButton.LeftButton)
    assert replies[0].behavior == "allow" and replies[0].updated_permissions == req.suggestions


def test_dialog_deny_with_feedback_and_escape(qtbot):
    dlg = PermissionDialog(edit_request())
    qtbot.addWidget(dlg)
    replies = []
    dlg.decided.connect(replies.append)
    dlg.open()
    qtbot.keyClicks(dlg.feedback, "use 3 instead")
    qtbot.keyClick(dlg, Qt.Key.Key_Escape)
    assert len(replies) == 1
    assert replies[0].behavior == "deny" and replies[0].message == "User denied via UI"
    assert replies[0].feedback == "use 3 instead"


def test_dialog_bash_full_command_never_truncated(qtbot):
    command = "find . -name '*.py' | xargs grep -n TODO && " + "echo " + "x" * 3000 + " && rm -rf build"
    req = PermissionRequest(tool_name="Bash", tool_use_id="t", cwd="/w", input={"command": command},
                            subcommands=["find . -name '*.py'", "xargs grep -n TODO", "echo x", "rm -rf build"],
                            message="This command requires approval")
    dlg = PermissionDialog(req)
    qtbot.addWidget(dlg)
    dlg.open()
    assert dlg.command_view.toPlainText() == command
    assert not dlg.input_view.isVisible()  # secondary to the command view; filled when first shown
    qtbot.mouseClick(dlg.input_toggle, Qt.MouseButton.LeftButton)
    assert dlg.input_view.isVisible()
    assert command in dlg.input_view.toPlainText().replace("\\'", "'")
    assert dlg.windowTitle().startswith("Allow Bash: find")
    assert "rm -rf build" in " ".join(lbl.text() for lbl in dlg.findChildren(type(dlg.rule_label)))
    assert not dlg.allow_session_button.isEnabled()


def test_diffs_copy_with_plain_spaces(qtbot, qapp):
    """The dialog's and the panel's diffs render indentation with NBSPs; copying gives plain spaces."""
    patch = [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
              "lines": ["-    return  1", "+    return  2"]}]
    dlg = PermissionDialog(edit_request(structured_patch=patch))
    qtbot.addWidget(dlg)
    panel = DiffPanel()
    qtbot.addWidget(panel)
    panel.on_permission_requested(edit_request(structured_patch=patch), turn=1)
    for view in (dlg.diff_view, panel.view):
        view.selectAll()
        view.copy()
        copied = qapp.clipboard().text()
        assert "\u00a0" not in copied and "    return  2" in copied, type(view).__name__


def test_dialog_edit_toggle_updates_input_and_preview(qtbot):
    req = PermissionRequest(tool_name="Write", tool_use_id="t", cwd="/w",
                            input={"file_path": "/w/new.py", "content": "print(1)\n"})
    dlg = PermissionDialog(req)
    qtbot.addWidget(dlg)
    replies = []
    dlg.decided.connect(replies.append)
    dlg.open()
    assert "print(1)" in dlg.diff_view.toPlainText()  # a new file: every line added
    qtbot.mouseClick(dlg.edit_button, Qt.MouseButton.LeftButton)
    dlg.editor.setPlainText("print(2)\n")
    dlg._update_preview()
    assert "print(2)" in dlg.diff_view.toPlainText()
    qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
    assert replies[0].updated_input == {"file_path": "/w/new.py", "content": "print(2)\n"}


def test_hunks_from_texts():
    # The live preview uses the engine's patch: no phantom empty context line after a final newline
    # (the UI's own difflib copy used to add one, so the preview differed from the Edit's patch).
    hunks = hunks_from_texts("a\nb\nc\n", "a\nB\nc\n")
    assert hunks == [{"oldStart": 1, "oldLines": 3, "newStart": 1, "newLines": 3,
                      "lines": [" a", "-b", "+B", " c"]}]
    from desktop_agent.util.diff import structured_patch

    assert hunks_from_texts("x = 1\n", "x = 2\n") == structured_patch("x = 1\n", "x = 2\n")


# ----- diff panel ---------------------------------------------------------------------------------
def test_diff_panel_lifecycle(qtbot):
    panel = DiffPanel()
    qtbot.addWidget(panel)
    panel.cwd = "/w"
    panel.on_permission_requested(edit_request(), turn=1)
    assert panel.changes[0].status == "pending" and "pending" in panel.text_content()
    panel.on_permission_resolved("toolu_1", allowed=False)
    assert panel.changes[0].status == "rejected"
    panel.on_tool_finished("toolu_2", "Write", False, {"type": "create", "filePath": "/w/b.py",
                                                      "content": "x = 1\ny = 2\n", "structuredPatch": []}, turn=2)
    panel.on_tool_finished("toolu_3", "Edit", False, {"filePath": "/w/src/app.ts", "structuredPatch": PATCH}, turn=2)
    text = panel.text_content()
    assert text.index("TURN 2") < text.index("TURN 1")  # newest first
    assert panel.changes[1].counts == (2, 0) and panel.changes[2].counts == (1, 1)
    assert "rejected" in text and "applied" in text
    assert panel.select_tool("toolu_3") and panel.selected_id == panel.changes[2].id
    picked = []
    panel.change_selected.connect(picked.append)
    panel._on_anchor(QUrl(f"toggle:{panel.changes[1].id}"))
    assert panel.changes[1].collapsed and picked == ["toolu_2"]
    panel.on_tool_finished("toolu_4", "Edit", True, None, turn=2)  # failed without data: no change row
    assert len(panel.changes) == 3


def _plain(html_text: str) -> list[str]:
    from PySide6.QtGui import QTextDocument

    doc = QTextDocument()
    doc.setHtml(html_text)
    return doc.toPlainText().split("\n")


def test_diff_html_line_numbers_and_colours(qapp):
    out = highlight.diff_html(highlight.normalize_hunks(
        [{"old_start": 10, "old_lines": 2, "new_start": 10, "new_lines": 2, "lines": [" keep", "-old", "+new"]}]),
        "x.py", dark=False)
    assert highlight.LIGHT.added_bg in out and highlight.LIGHT.removed_bg in out
    assert highlight.LIGHT.added_gutter in out and highlight.LIGHT.removed_gutter in out
    # The gutter: old and new line numbers, right-aligned; then the +/- mark and the code.
    assert [x.rstrip() for x in _plain(out)] == [
        "          @@ -10,2 +10,2 @@", " 10  10    keep", " 11      \u2212 old", "     11  + new"]


def test_diff_html_caps_long_diffs_and_says_so(qapp, monkeypatch):
    lexed: list[str] = []
    real = highlight.highlight_lines_steps

    def spy(text, lexer, dark, every=0):
        lexed.append(text)
        return real(text, lexer, dark, every)

    monkeypatch.setattr(highlight, "highlight_lines_steps", spy)
    hunks = [{"oldStart": 1, "oldLines": 0, "newStart": 1, "newLines": 2500, "lines": [f"+x = {i}" for i in range(2500)]},
             {"oldStart": 9000, "oldLines": 1, "newStart": 11500, "newLines": 1, "lines": ["-far = 1", "+far = 2"]}]
    lines = _plain(highlight.diff_html(hunks, "x.py", dark=True))
    assert len(lines) == 1 + highlight.DIFF_MAX_LINES + 1
    assert lines[-1].strip() == "\u2026 1,502 more lines of this change are not shown (1,000 shown)"
    assert len(lexed) == 2  # old and new side of the first hunk; the hunk past the cap is never lexed


def _big_write(tag: str, n: int = 1000) -> PermissionRequest:
    content = "".join(f"value_{tag}_{i} = {i}\n" for i in range(n))
    return PermissionRequest(tool_name="Write", tool_use_id=f"toolu_{tag}", cwd="/w",
                             input={"file_path": f"/w/{tag}.py", "content": content}, file_path=f"/w/{tag}.py")


def test_a_big_diff_is_filled_in_slices_while_the_dialog_is_up(qtbot):
    dlg = PermissionDialog(_big_write("dialog", n=5000))
    qtbot.addWidget(dlg)
    dlg.open()
    # The dialog is up at once with the first hunk's first lines; the rest follows in slices
    # between the loop's other events, and nothing is cut.
    assert "value_dialog_0 = 0" in dlg.diff_view.toPlainText()
    assert "value_dialog_4999 = 4999" not in dlg.diff_view.toPlainText()
    qtbot.waitUntil(dlg.diff_view.is_loaded, timeout=10_000)
    assert "value_dialog_4999 = 4999" in dlg.diff_view.toPlainText()
    assert dlg.diff_view.document().blockCount() == 5001


def test_a_big_change_starts_collapsed_in_the_panel_and_opens_in_full(qtbot):
    panel = DiffPanel()
    qtbot.addWidget(panel)
    panel.cwd = "/w"
    change = panel.on_permission_requested(_big_write("panel"), turn=1)
    assert change.collapsed and "panel.py" in panel.text_content() and "+1000" in panel.text_content()
    assert "value_panel_0" not in panel.text_content() and "Show all 1,000 lines" in panel.text_content()
    panel._on_anchor(QUrl(f"toggle:{change.id}"))  # the user opens it: every line, on the change page
    assert panel.showing_detail() is change
    view = panel.detail.view
    qtbot.waitUntil(view.is_loaded, timeout=10_000)
    assert "value_panel_999 = 999" in view.toPlainText() and view.document().blockCount() == 1001
    panel.show_list()
    assert panel.showing_detail() is None and "pending" in panel.text_content()


# ----- controller as PermissionPrompter -----------------------------------------------------------
def test_controller_ask_resolves_from_dialog(qtbot, qloop, qapp):
    qapp.setQuitOnLastWindowClosed(False)  # the dialog is the only window here
    ctl = AgentController()
    statuses = []
    ctl.status_changed.connect(lambda s, d: statuses.append(s))

    async def scenario():
        task = asyncio.ensure_future(ctl.ask(edit_request()))
        while ctl.current_dialog is None or not ctl.current_dialog.isVisible():
            await asyncio.sleep(0.01)
        assert ctl.status == "waiting"
        qtbot.mouseClick(ctl.current_dialog.allow_button, Qt.MouseButton.LeftButton)
        return await asyncio.wait_for(task, 2)

    reply = qloop.run_until_complete(scenario())
    assert isinstance(reply, PermissionReply) and reply.behavior == "allow"
    assert "waiting" in statuses and ctl.current_dialog is None


def test_controller_cancelled_ask_closes_dialog(qtbot, qloop, qapp):
    qapp.setQuitOnLastWindowClosed(False)
    ctl = AgentController()

    async def scenario():
        task = asyncio.ensure_future(ctl.ask(edit_request()))
        while ctl.current_dialog is None:
            await asyncio.sleep(0.01)
        dlg = ctl.current_dialog
        task.cancel()  # the engine's abort race cancels the ask
        with pytest.raises(asyncio.CancelledError):
            await task
        return dlg

    dlg = qloop.run_until_complete(scenario())
    assert not dlg.isVisible()


def test_controller_turn_events_and_status(qtbot, qloop):
    class FakeSession:
        cwd = "/w"
        session_id = "s-1"

        async def submit(self, prompt):
            yield ev.RequestStarted(turn=1)
            yield ev.TextDelta(index=0, text="Hello")
            yield ev.ToolCallStarted(tool_use_id="t", name="Read", input={"file_path": "/w/a"})
            await asyncio.sleep(0.01)
            yield ev.ToolCallFinished(tool_use_id="t", name="Read", content="x")
            yield ev.Usage(input_tokens=10, output_tokens=5, session_tokens=15, session_cost_usd=0.01)
            yield ev.TurnFinished(reason="completed")

    ctl = AgentController()
    ctl.set_session(FakeSession(), "/w")
    seen = []
    ctl.status_changed.connect(lambda s, d: seen.append(s))
    texts = []
    ctl.agent_event.connect(lambda e: isinstance(e, ev.TextDelta) and texts.append(e.text))
    task = ctl.submit("hi")
    qloop.run_until_complete(task)
    assert texts == ["Hello"] and ctl.tokens == 15 and ctl.cost == pytest.approx(0.01)
    assert seen[:4] == ["thinking", "streaming", "tool", "thinking"] and ctl.status == "idle"
    assert ctl.submit("   ") is None


# ----- misc -------------------------------------------------------------------------------------
def test_none_refcount_shield_survives_many_void_calls(qtbot):
    from PySide6.QtWidgets import QWidget

    import desktop_agent.ui as ui

    w = QWidget()
    qtbot.addWidget(w)
    for _ in range(20000):  # PySide6 6.12 on 3.11 drops a ref to None per call: would abort without the shield
        w.update()
    assert ui.NONE_SHIELDED or sys.version_info >= (3, 12)


def test_settings_dialog_stores_key_privately(qtbot):
    from desktop_agent import config
    from desktop_agent.ui.dialogs.settings import SettingsDialog

    dlg = SettingsDialog(first_run=True)
    qtbot.addWidget(dlg)
    dlg.open()
    tours = []
    dlg.tour_requested.connect(lambda: tours.append(1))
    dlg._save()  # no key yet: stays open with a hint
    assert dlg.error_label.isVisible() and dlg.isVisible()
    qtbot.keyClicks(dlg.key_edit, "sk-test-123")
    dlg.base_url_edit.setText("http://127.0.0.1:9")
    dlg._save()
    key, source = config.find_api_key()
    assert key == "sk-test-123" and source in ("keyring", "credentials")
    if source == "credentials":
        assert stat.S_IMODE(os.stat(config.credentials_path()).st_mode) == 0o600
    assert config.AppSettings.load().base_url == "http://127.0.0.1:9"
    dlg2 = SettingsDialog()
    qtbot.addWidget(dlg2)
    assert dlg2.key_edit.text() == ""  # the stored key is never shown
    dlg2.tour_requested.connect(lambda: tours.append(1))
    qtbot.mouseClick(dlg2.tour_button, Qt.MouseButton.LeftButton)
    assert tours == [1]
