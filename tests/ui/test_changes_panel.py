"""The changes panel (issue 13, UI-GUIDE "Changes panel"): nothing is cut (a big change folded, opened
in full on the change page without stalling the loop), accepted and rejected hunks of a partly
allowed change, ``new`` files, and the actions — open in editor, copy patch, revert (its own
focus-safe confirmation, the atomic writer on a worker thread, refused when the file changed since,
recorded in the transcript and resumable). End to end through the window against the fake API.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time

import pytest
from PySide6.QtCore import QTimer, QUrl, Qt
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QApplication

from desktop_agent.core.messages import normalize_for_api
from desktop_agent.core.permission import PermissionRequest
from desktop_agent.session.resume import load_conversation_for_resume
from desktop_agent.session.store import read_transcript
from desktop_agent.util.diff import hunk_old_range, structured_patch
from desktop_agent.ui.changes import actions as change_actions
from desktop_agent.ui.changes.panel import APPLIED, REVERTED, DiffPanel
from desktop_agent.ui.dialogs.permission import PermissionDialog
from desktop_agent.ui.dialogs.revert import RevertDialog
from tests.fakes.anthropic_server import reply, text, tool_use
from tests.ui.flow import CHANGED, ORIGINAL, READ, changed_text, open_and_send, wait_dialog, wait_for

def panel_at(qtbot, cwd) -> DiffPanel:
    panel = DiffPanel()
    qtbot.addWidget(panel)
    panel.cwd = str(cwd)
    panel.resize(600, 500)
    panel.show()
    return panel


def write_request(path, content, original=None, tid="toolu_w") -> PermissionRequest:
    return PermissionRequest(tool_name="Write", tool_use_id=tid, cwd=str(path.parent),
                             input={"file_path": str(path), "content": content}, file_path=str(path),
                             original_file=original,
                             structured_patch=structured_patch(original or "", content) if original else None)


def edit_data(path, original: str, updated: str, old: str, new: str) -> dict:
    return {"filePath": str(path), "oldString": old, "newString": new, "originalFile": original,
            "structuredPatch": structured_patch(original, updated), "userModified": False, "replaceAll": False}


# ----- nothing is cut ---------------------------------------------------------------------------------
def test_a_20000_line_change_opens_in_full_without_stalling_the_loop(qtbot, tmp_path):
    path = tmp_path / "generated.py"
    content = "".join(f"def handler_{i}(event):\n    return dispatch(event, {i})\n" for i in range(10_000))
    panel = panel_at(qtbot, tmp_path)
    change = panel.on_tool_finished("toolu_big", "Write", False, {
        "type": "create", "filePath": str(path), "content": content,
        "structuredPatch": structured_patch("", content), "originalFile": None}, turn=1)
    assert change.collapsed and change.new_file and change.line_count == 20_000
    listing = panel.text_content()
    assert "Show all 20,000 lines" in listing and "handler_0" not in listing  # folded: nothing rendered yet
    assert "not shown" not in listing
    gaps: list[float] = []
    last = [time.perf_counter()]

    def tick():
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    ticker = QTimer()
    ticker.setInterval(1)
    ticker.timeout.connect(tick)
    ticker.start()
    qtbot.wait(20)
    t0 = time.perf_counter()
    panel._on_anchor(QUrl(f"show:{change.id}"))
    opened = time.perf_counter() - t0
    view = panel.detail.view
    assert panel.showing_detail() is change and "handler_0(event)" in view.toPlainText()  # the first hunk at once
    qtbot.waitUntil(view.is_loaded, timeout=20_000)
    bar = view.verticalScrollBar()
    bar.setValue(bar.maximum())
    qtbot.wait(50)
    ticker.stop()
    assert view.document().blockCount() == 20_001  # the hunk header and every line
    assert "return dispatch(event, 9999)" in view.document().lastBlock().text()
    worst = max(gaps[2:])
    print(f"\nopen {opened * 1000:.1f} ms, largest gap of a 1 ms ticker while loading {worst * 1000:.1f} ms "
          f"({len(gaps)} ticks)")
    # The target is 50 ms (bench/bench_changes_panel.py measures it with a same-run baseline); a shared,
    # loaded 2-core box gets slack here. All at once (one 20,000-line insert) is ~60 ms unloaded.
    assert opened < 0.1 and worst < 0.25


def test_a_small_change_is_inline_and_whole(qtbot, tmp_path):
    panel = panel_at(qtbot, tmp_path)
    data = edit_data(tmp_path / "a.py", ORIGINAL, changed_text(), "", "")
    change = panel.on_tool_finished("toolu_e", "Edit", False, data, turn=1)
    assert not change.collapsed and not change.big
    assert all(f"line {i} changed" in panel.text_content() for i in CHANGED)


# ----- accepted and rejected hunks ----------------------------------------------------------------------
def _partial(tmp_path, panel, *, with_request=True):
    path = tmp_path / "lines.txt"
    proposed = structured_patch(ORIGINAL, changed_text())
    assert len(proposed) == 5
    rejected = [hunk_old_range(proposed[1]), hunk_old_range(proposed[3])]
    if with_request:
        panel.on_permission_requested(write_request(path, changed_text(), ORIGINAL), turn=1)
        panel.on_permission_resolved("toolu_w", True, True)
    written = changed_text(keep=(5, 29, 53))
    data = {"type": "update", "filePath": str(path), "content": written, "originalFile": ORIGINAL,
            "structuredPatch": structured_patch(ORIGINAL, written), "userModified": True,
            "rejectedHunks": [list(r) for r in rejected], "totalHunks": 5}
    return panel.on_tool_finished("toolu_w", "Write", False, data, turn=1), rejected


def test_a_partly_allowed_change_shows_accepted_and_rejected_hunks(qtbot, tmp_path):
    panel = panel_at(qtbot, tmp_path)
    change, rejected = _partial(tmp_path, panel)
    assert change.status == APPLIED and change.counts == (3, 3)  # what was written
    hunks, accepted = change.review()
    assert len(hunks) == 5 and accepted == [True, False, True, False, True]
    listing = panel.text_content()
    assert "2 of 5 hunks rejected" in listing
    assert listing.count("rejected: not written") == 2 and listing.count("accepted") == 3
    assert "line 17 changed" in listing and "line 41 changed" in listing  # the rejected text is shown too
    # ... struck through and muted: the rejected lines' fragments carry the strike-out.
    doc = panel.view.document()
    struck = {}
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            frag = it.fragment()
            if "changed" in frag.text():
                struck[frag.text().strip()] = frag.charFormat().fontStrikeOut()
            it += 1
        block = block.next()
    assert struck["line 17 changed"] and struck["line 41 changed"] and not struck.get("line 5 changed", False)
    # The change page shows the decisions too, read-only.
    panel.open_change(change)
    view = panel.detail.view
    assert view.toggles and view.accepted == [True, False, True, False, True]
    assert "(rejected: not written)" in view.document().findBlockByNumber(view.headers[1]).text()
    view.toggle(1)
    assert view.accepted[1] is False


def test_after_a_resume_the_rejected_ranges_are_named(qtbot, tmp_path):
    panel = panel_at(qtbot, tmp_path)
    change, rejected = _partial(tmp_path, panel, with_request=False)
    hunks, accepted = change.review()
    assert accepted is None and len(hunks) == 3
    (a, b), (c, d) = rejected
    assert f"2 of 5 hunks rejected (lines {a}\u2013{b}, {c}\u2013{d}): not written" in panel.text_content()


# ----- new files ------------------------------------------------------------------------------------------
def test_a_new_file_is_marked_new(qtbot, tmp_path):
    panel = panel_at(qtbot, tmp_path)
    created = panel.on_permission_requested(write_request(tmp_path / "fresh.py", "x = 1\n"), turn=1)
    existing = panel.on_permission_requested(write_request(tmp_path / "old.py", "x = 2\n", "x = 1\n", "toolu_2"), 1)
    assert created.new_file and not existing.new_file
    rows = [line for line in panel.text_content().splitlines() if ".py" in line]
    assert any("fresh.py" in r and "new" in r for r in rows) and not any("old.py" in r and "new" in r for r in rows)
    panel.on_tool_finished("toolu_3", "Write", False, {"type": "create", "filePath": str(tmp_path / "b.py"),
                                                       "content": "y\n", "structuredPatch": []}, turn=2)
    assert panel.changes[-1].new_file


# ----- actions --------------------------------------------------------------------------------------------
def test_open_in_editor_and_copy_patch(qtbot, tmp_path, monkeypatch):
    path = tmp_path / "src" / "a.py"
    path.parent.mkdir()
    path.write_text(changed_text())
    panel = panel_at(qtbot, tmp_path)
    change = panel.on_tool_finished("toolu_e", "Edit", False, edit_data(path, ORIGINAL, changed_text(), "", ""), 1)
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url) or True)
    panel._on_anchor(QUrl(f"open:{change.id}"))
    assert [u.toLocalFile() for u in opened] == [str(path)]
    panel._on_anchor(QUrl(f"copy:{change.id}"))
    patch = QApplication.clipboard().text()
    assert patch.startswith("--- a/src/a.py\n+++ b/src/a.py\n@@ -2,7 +2,7 @@\n line 2\n")
    assert patch.count("\n@@ ") == 5 and "-line 5\n+line 5 changed\n" in patch and patch.endswith("\n")
    # git takes it: the patch undoes nothing and applies to the original.
    import subprocess

    orig = tmp_path / "g" / "src" / "a.py"
    orig.parent.mkdir(parents=True)
    orig.write_text(ORIGINAL)
    (tmp_path / "g" / "p.diff").write_text(patch)
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path / "g", check=True)
    assert orig.read_text() == changed_text()
    # a new file's patch starts at /dev/null
    panel.on_tool_finished("toolu_n", "Write", False, {"type": "create", "filePath": str(tmp_path / "n.txt"),
                                                       "content": "hi\n", "structuredPatch": [],
                                                       "originalFile": None}, 1)
    assert panel.patch_text(panel.changes[-1]) == "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,1 @@\n+hi\n"


def _revert(qtbot, qloop, panel, change, delay_ms=0):
    dlg = panel.ask_revert(change)
    assert isinstance(dlg, RevertDialog)
    qtbot.waitUntil(dlg.isVisible)
    message = dlg.message.text()

    async def go():
        qtbot.waitUntil(dlg.is_ready, timeout=3000)
        qtbot.mouseClick(dlg.revert_button, Qt.MouseButton.LeftButton)
        await wait_for(lambda: not change.busy, what="the revert")

    qloop.run_until_complete(go())
    return message


def test_revert_restores_bytes_encoding_and_line_endings_and_is_recorded(qtbot, qloop, tmp_path):
    path = tmp_path / "crlf.txt"
    before = "\ufefffirst\r\nsecond\r\nthird\r\n"
    after = "\ufefffirst\r\nSECOND\r\nthird\r\n"
    path.write_bytes(after.encode("utf-8"))
    panel = panel_at(qtbot, tmp_path)
    recorded = []
    panel.recorder = recorded.append
    original, updated = "first\nsecond\nthird\n", "first\nSECOND\nthird\n"
    change = panel.on_tool_finished("toolu_e", "Edit", False,
                                    edit_data(path, original, updated, "second", "SECOND"), 1)
    assert "Revert…" in panel.text_content()
    _revert(qtbot, qloop, panel, change)
    assert path.read_bytes() == before.encode("utf-8")  # BOM and CRLF kept
    assert change.status == REVERTED and "reverted" in panel.text_content()
    assert "Revert…" not in panel.text_content()
    [entry] = recorded
    assert entry["type"] == "change-revert" and entry["action"] == "revert" and entry["outcome"] == "restored"
    assert entry["filePath"] == str(path) and entry["toolUseId"] == "toolu_e" and entry["tool"] == "Edit"
    assert (entry["added"], entry["removed"]) == (1, 1) and entry["ranges"] == [[1, 3]]
    assert entry["hashBefore"] == "sha256:" + hashlib.sha256(after.encode("utf-8")).hexdigest()
    assert entry["hashAfter"] == "sha256:" + hashlib.sha256(before.encode("utf-8")).hexdigest()
    assert (entry["encoding"], entry["lineEnding"]) == ("utf-8-sig", "CRLF")
    assert "Redo…" in panel.text_content()  # in Revert's place


def test_revert_refuses_when_the_file_changed_since(qtbot, qloop, tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("a\nB\nc\nlater\n")  # the change made b → B; then someone added a line
    panel = panel_at(qtbot, tmp_path)
    panel.recorder = lambda e: pytest.fail("a refused revert is not recorded")
    change = panel.on_tool_finished("toolu_e", "Edit", False, edit_data(path, "a\nb\nc\n", "a\nB\nc\n", "b", "B"), 1)
    _revert(qtbot, qloop, panel, change)
    assert path.read_text() == "a\nB\nc\nlater\n"
    assert change.status == APPLIED
    assert "Not reverted: a.txt changed since this change" in panel.text_content()


def test_reverting_a_new_file_deletes_it(qtbot, qloop, tmp_path):
    path = tmp_path / "fresh.py"
    path.write_text("x = 1\n")
    panel = panel_at(qtbot, tmp_path)
    panel.recorder = lambda e: None
    change = panel.on_tool_finished("toolu_w", "Write", False, {
        "type": "create", "filePath": str(path), "content": "x = 1\n", "originalFile": None,
        "structuredPatch": structured_patch("", "x = 1\n")}, 1)
    message = _revert(qtbot, qloop, panel, change)
    assert "deletes fresh.py" in message
    assert not path.exists() and change.status == REVERTED


def test_the_revert_confirmation_is_focus_safe(qtbot, qloop, tmp_path, monkeypatch):
    monkeypatch.setattr(PermissionDialog, "safety_delay_ms", 700)
    path = tmp_path / "a.txt"
    path.write_text("a\nB\n")
    panel = panel_at(qtbot, tmp_path)
    panel.recorder = lambda e: None
    change = panel.on_tool_finished("toolu_e", "Edit", False, edit_data(path, "a\nb\n", "a\nB\n", "b", "B"), 1)
    dlg = panel.ask_revert(change)
    qtbot.waitUntil(dlg.isVisible)
    for b in (dlg.revert_button, dlg.cancel_button):
        assert not b.isDefault() and not b.autoDefault() and not b.hasFocus()
    assert not dlg.is_ready() and dlg.revert_button.progress is not None
    qtbot.mouseClick(dlg.revert_button, Qt.MouseButton.LeftButton)  # within the delay: nothing
    qtbot.keyClick(dlg, Qt.Key.Key_R, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(dlg.is_ready, timeout=3000)
    qtbot.keyClick(dlg, Qt.Key.Key_Return)  # Enter never reverts
    qtbot.keyClick(dlg.revert_button, Qt.Key.Key_Space)  # nor Space
    qtbot.wait(50)
    assert dlg.isVisible() and path.read_text() == "a\nB\n" and not change.busy
    qtbot.keyClick(dlg, Qt.Key.Key_Escape)
    assert not dlg.isVisible() and change.status == APPLIED and path.read_text() == "a\nB\n"


# ----- end to end: partly allowed Write, revert, resume ----------------------------------------------------
def test_partly_allowed_change_then_revert_then_resume(qtbot, qloop, fake, make_window, workdir):
    path = workdir / "lines.txt"
    path.write_text(ORIGINAL)
    fake.script([READ(path), reply(text("Five changes."), tool_use("Write", {"file_path": str(path),
                                                                             "content": changed_text()},
                                                                    id="toolu_w")),
                 reply(text("Understood.")), reply(text("Still here."))])
    win = make_window()
    state = {}

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Change five lines")
        dlg = await wait_dialog(win)
        dlg.diff_view.set_accepted(1, False)
        dlg.diff_view.set_accepted(3, False)
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 10)
        panel = win.diff_panel
        change = panel.changes[0]
        assert change.review()[1] == [True, False, True, False, True]
        assert panel.text_content().count("rejected: not written") == 2
        assert path.read_text() == changed_text(keep=(5, 29, 53))
        dlg2 = panel.ask_revert(change)
        await wait_for(dlg2.is_ready, what="revert dialog")
        qtbot.mouseClick(dlg2.revert_button, Qt.MouseButton.LeftButton)
        await wait_for(lambda: change.status == REVERTED, what="the revert")
        state["sid"] = win.controller.session.session_id
        state["transcript"] = win.controller.session.transcript_path
        assert await win.folders.open_folder(str(workdir), resume=state["sid"])
        resumed = win.diff_panel.changes
        assert len(resumed) == 1 and resumed[0].rejected and "2 of 5 hunks rejected" in win.diff_panel.text_content()
        assert resumed[0].status == REVERTED and "Redo…" in win.diff_panel.text_content()
        assert "Revert…" not in win.diff_panel.text_content()
        assert win.controller.session.session_id == state["sid"]
        qtbot.keyClicks(win.prompt, "Are you there?")  # into the resumed session
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 10)

    qloop.run_until_complete(scenario())
    assert path.read_text() == ORIGINAL
    entries = read_transcript(state["transcript"], full=True)
    reverted = [e for e in entries if e.get("type") == "change-revert"]
    assert len(reverted) == 1 and reverted[0]["filePath"] == str(path) and "parentUuid" not in reverted[0]
    # The resumed request went out well-formed (the record is not sent, roles alternate), and its last user
    # message starts with the note naming the revert.
    last = fake.request_messages(3)
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert "change-revert" not in json.dumps(last)
    note, prompt = last[-1]["content"]
    assert note["text"].startswith("<system-reminder>") and "reverted your Write of lines.txt" in note["text"]
    assert prompt["text"] == "Are you there?"
    chain = load_conversation_for_resume(entries).messages
    assert not any(e.get("type") == "change-revert" for e in chain)
    assert [m["role"] for m in normalize_for_api(chain)][-1] == "assistant"
    fake.assert_done()


# ----- zh_CN ---------------------------------------------------------------------------------------------
def test_the_new_strings_ship_in_chinese(qtbot, qapp, tmp_path):
    from PySide6.QtCore import QTranslator

    from desktop_agent.resources import translation_path

    translator = QTranslator()
    assert translator.load(str(translation_path("zh_CN")))
    qapp.installTranslator(translator)
    try:
        panel = panel_at(qtbot, tmp_path)
        _partial(tmp_path, panel)
        listing = panel.text_content()
        assert "已拒绝：未写入" in listing and "复制补丁" in listing and "撤销…" in listing
        dlg = RevertDialog("a.py", 1, 2, False)
        qtbot.addWidget(dlg)
        assert dlg.windowTitle() == "撤销对 a.py 的更改？" and dlg.revert_button.text() == "撤销(&R)"
        perm = PermissionDialog(write_request(tmp_path / "lines.txt", changed_text(), ORIGINAL))
        qtbot.addWidget(perm)
        assert perm.allow_button.text().startswith("允许 5 个差异块")
        assert change_actions.revert_blocker("Bash", {}) == "无法在此撤销 Bash 的更改。"
    finally:
        qapp.removeTranslator(translator)
