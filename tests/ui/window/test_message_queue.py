"""Typing while the agent works queues the message (issue 28 part 2): shown greyed under the conversation with Edit
and Cancel, sent as its own turn when the running turn ends, in order; a stopped turn holds the queue until Send now.

The real window, engine and AnthropicClient against the fake Anthropic server; what was sent is read back from the
requests the server got.
"""

from __future__ import annotations

import asyncio
import json

from PySide6.QtCore import Qt

from tests.fakes.anthropic_server import reply, text
from tests.ui.flow import open_and_send, wait_for

CTRL = Qt.KeyboardModifier.ControlModifier
LEFT = Qt.MouseButton.LeftButton


def _type(qtbot, widget, words):
    qtbot.keyClicks(widget, words)
    qtbot.keyClick(widget, Qt.Key.Key_Return)


def _user_texts(fake, n):
    """The text of every user message of the n-th request (tool results left out)."""
    out = []
    for m in fake.request_messages(n):
        if m["role"] != "user":
            continue
        content = m["content"]
        if isinstance(content, str):
            out.append(content)
        else:
            out.extend(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return out


def test_queue_two_edit_one_cancel_one_the_other_is_sent_at_turn_end(qtbot, qloop, fake, make_window, workdir):
    fake.script([reply(text("working " * 40), delay=0.03), reply(text("second turn done"))])
    win = make_window()
    queue = win.message_queue

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "first")
        assert win.controller.busy and not queue.isVisible()
        _type(qtbot, win.prompt, "queued one")
        _type(qtbot, win.prompt, "queued two")
        assert win.prompt.toPlainText() == ""  # the prompt is free again
        assert queue.isVisible() and queue.texts() == ["queued one", "queued two"]
        assert "2 queued · sent when this turn ends" in queue.header.text()
        assert all(not r.label.isEnabled() for r in queue.rows)  # greyed
        from desktop_agent.ui.highlight import colors, is_dark
        muted = colors(is_dark(win)).muted.lower()
        assert all(r.label.palette().color(r.label.foregroundRole()).name() == muted for r in queue.rows)
        await asyncio.sleep(0.05)  # laid out and painted, as a person sees it

        second = queue.rows[1]
        qtbot.mouseClick(second.edit_button, LEFT)
        assert second.editor.isVisible() and second.editor.toPlainText() == "queued two"
        qtbot.keyClick(second.editor, Qt.Key.Key_A, CTRL)
        _type(qtbot, second.editor, "queued two, edited")
        assert not second.editor.isVisible() and second.label.text() == "queued two, edited"

        qtbot.mouseClick(queue.rows[0].cancel_button, LEFT)
        assert queue.texts() == ["queued two, edited"]
        assert len(fake.requests) <= 1 and win.controller.busy  # nothing sent while the turn runs

        await asyncio.wait_for(task, 15)
        await wait_for(lambda: len(fake.requests) == 2, what="the queued message's request")
        await wait_for(lambda: not win.controller.busy, what="the second turn's end")

    qloop.run_until_complete(scenario())
    fake.assert_done()
    assert _user_texts(fake, 1) == ["first", "queued two, edited"]  # its own turn, after the first
    assert "queued one" not in json.dumps(fake.requests[1].body)
    assert not queue.isVisible() and queue.texts() == []
    content = win.conversation.text_content()
    assert "you: queued two, edited" in content and "second turn done" in content


def test_queued_messages_go_one_per_turn_in_order(qtbot, qloop, fake, make_window, workdir):
    fake.script([reply(text("one " * 30), delay=0.03), reply(text("two")), reply(text("three"))])
    win = make_window()

    async def scenario():
        await open_and_send(qtbot, win, workdir, "first")
        _type(qtbot, win.prompt, "a")
        _type(qtbot, win.prompt, "b")
        await wait_for(lambda: len(fake.requests) == 3 and not win.controller.busy, timeout=20,
                       what="both queued turns")

    qloop.run_until_complete(scenario())
    fake.assert_done()
    assert _user_texts(fake, 1) == ["first", "a"]
    assert _user_texts(fake, 2) == ["first", "a", "b"]


def test_stop_holds_the_queue_and_escape_in_its_editor_does_not_stop(qtbot, qloop, fake, make_window, workdir):
    fake.script([reply(text("slow " * 200), delay=0.03), reply(text("after send now"))])
    win = make_window()
    queue = win.message_queue

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "first")
        _type(qtbot, win.prompt, "later")
        await asyncio.sleep(0.05)
        row = queue.rows[0]
        qtbot.mouseClick(row.edit_button, LEFT)
        qtbot.keyClicks(row.editor, " (typo")
        qtbot.keyClick(row.editor, Qt.Key.Key_Escape)  # puts the text back; the turn goes on
        assert row.text == "later" and not row.editing and win.controller.busy
        await wait_for(lambda: len(fake.requests) == 1, what="the first turn's request")
        win.stop_turn()  # Esc in the prompt: Stop
        await asyncio.wait_for(task, 10)
        await asyncio.sleep(0.1)
        assert len(fake.requests) == 1, "a stopped turn must not send the queue"
        assert queue.held and queue.send_now_button.isVisible() and "held" in queue.header.text()
        qtbot.mouseClick(queue.send_now_button, LEFT)
        await wait_for(lambda: len(fake.requests) == 2 and not win.controller.busy, what="the held message")

    qloop.run_until_complete(scenario())
    fake.assert_done()
    assert _user_texts(fake, 1)[-1] == "later"
    assert queue.texts() == [] and not queue.isVisible()
