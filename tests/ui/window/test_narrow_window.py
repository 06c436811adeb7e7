"""The window at 900×600 (issue 28 part 2): no side pane scrolls sideways, no label is clipped (its size hint fits
its geometry, or it wraps to a height that fits), a wide code block scrolls inside itself and the message around it
does not; the prompt, the queue and Stop stay on screen.

The real window after a real turn against the fake Anthropic server: a long first prompt (the sessions list), a
message with a wide code block, a failed Bash call and an Edit of long lines (the changes panel, acceptEdits).
"""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QAbstractScrollArea, QLabel

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.ui.flow import open_and_send, wait_for

WIDE = "result = compute(" + ", ".join(f"argument_number_{i}" for i in range(30)) + ")"
LONG_OLD = "export const message = 'a sentence that is long enough to pass the width of a narrow changes pane';\n"
LONG_NEW = "export const message = 'a sentence that is long enough to pass the width of a narrow changes pane!!';\n"


def _visible(widget):
    return widget.isVisible() and widget.width() > 0


def _clipped_labels(win):
    out = []
    for label in win.findChildren(QLabel):
        if not _visible(label) or not label.text():
            continue
        if label.wordWrap():
            need = label.heightForWidth(label.width())
            if need > label.height() + 1:
                out.append((label.objectName(), label.text()[:50], "height", need, label.height()))
        elif label.sizeHint().width() > label.width() + 1:
            out.append((label.objectName(), label.text()[:50], "width", label.sizeHint().width(), label.width()))
    for button in win.findChildren(QAbstractButton):
        if _visible(button) and button.text() and button.sizeHint().width() > button.width() + 1:
            out.append((button.objectName(), button.text(), "button", button.sizeHint().width(), button.width()))
    return out


def test_900_by_600_no_side_pane_scrolls_sideways_and_nothing_is_clipped(qtbot, qloop, fake, make_window, workdir):
    (workdir / "message.ts").write_text(LONG_OLD)
    fake.script([
        reply(text("Reading it and running the tests first."),
              tool_use("Read", {"file_path": str(workdir / "message.ts")}, id="toolu_read"),
              tool_use("Bash", {"command": "exit 2"}, id="toolu_bash")),
        reply(text(f"The fix:\n\n```python\n{WIDE}\nshort = 1\n```\n\nThen the message."),
              tool_use("Edit", {"file_path": str(workdir / "message.ts"), "old_string": LONG_OLD,
                                "new_string": LONG_NEW}, id="toolu_edit")),
        reply(text("Done.")),
        reply(text("slow " * 100), delay=0.02),
    ])
    win = make_window(permission_mode="bypassPermissions")
    win.resize(900, 600)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Please make the message in message.ts end with two "
                                                        "exclamation marks and run the tests")
        await asyncio.wait_for(task, 20)
        await wait_for(lambda: win.sessions.count() > 0 and win.sessions.item(0).flags(), what="sessions list")
        # a queued message while a turn runs, at 900×600 too
        win.prompt.setFocus()
        qtbot.keyClicks(win.prompt, "one more turn, slowly")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        assert win.controller.busy
        qtbot.keyClicks(win.prompt, "and a queued follow-up that is long enough to wrap in the strip " * 2)
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.sleep(0.3)
        found = (_clipped_labels(win), [
            (sa.objectName(), sa.horizontalScrollBar().maximum())
            for pane in (win.sessions_pane, win.diff_panel) for sa in pane.findChildren(QAbstractScrollArea)
            if _visible(sa) and sa.horizontalScrollBar().isVisible()])
        win.controller.stop()
        await wait_for(lambda: not win.controller.busy, what="stopped")
        return found

    clipped, side_bars = qloop.run_until_complete(scenario())
    assert win.width() == 900 and win.height() == 600
    assert side_bars == [], side_bars
    assert clipped == [], clipped
    assert win.splitter.sizes()[0] <= 140
    assert win.toolbar.stop_button.isVisible() and win.toolbar.bar.width() <= 900
    # the changes panel shows the long lines (wrapped, not cut)
    card = win.conversation.cards["toolu_edit"]
    assert card.state == "done", (card.state, card.result)
    assert "pane!!" in win.diff_panel.view.toPlainText().replace("\n", "")
    # the code block scrolls inside itself; the prose around it does not
    md = next(w for w in win.conversation.column.items if type(w).__name__ == "MarkdownBlock" and w.code_views())
    code = md.code_views()[0]
    assert code.horizontalScrollBar().isVisible() and code.horizontalScrollBar().maximum() > 0
    assert all(not s.horizontalScrollBar().isVisible() for s in md.segments if s is not code)
    assert md.width() <= win.conversation.viewport().width()
    assert not win.conversation.horizontalScrollBar().isVisible()
