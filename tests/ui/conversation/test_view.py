"""The conversation view renders its presenter: one widget per item, kept in step as items change."""

from __future__ import annotations

from typing import Any

import pytest

from desktop_agent.core import events as ev
from desktop_agent.core.permission import PermissionReply, PermissionRequest
from desktop_agent.ui.conversation.cards import HEADER_H, Banner, RetryCard, ThinkingCard, ToolCard, UserBlock
from desktop_agent.ui.conversation.markdown import MarkdownBlock
from desktop_agent.ui.conversation.view import ConversationView


@pytest.fixture
def view(qtbot) -> ConversationView:
    v = ConversationView()
    qtbot.addWidget(v)
    v.resize(700, 600)
    v.show()
    v.cwd = "/w"
    return v


def feed(view: ConversationView, *events: Any) -> None:
    for event in events:
        view.handle_event(event)


def test_a_turn_through_handle_event(view):
    view.add_user("Fix the parser")
    feed(view, ev.TurnStarted(turn=1), ev.RequestStarted(turn=1), ev.ThinkingDelta(index=0, text="hm"),
         ev.TextDelta(index=1, text="Looking **now**."),
         ev.ToolCallStarted(tool_use_id="r", name="Read", input={"file_path": "/w/src/p.py"}),
         ev.ToolCallFinished(tool_use_id="r", name="Read", content="1\ta\n2\tb\n"),
         ev.Usage(input_tokens=10), ev.RequestStarted(turn=2), ev.TextDelta(index=0, text="Done."),
         ev.TurnFinished(reason="completed"))
    kinds = [type(w) for w in view.column.items]
    assert kinds == [UserBlock, ThinkingCard, MarkdownBlock, ToolCard, MarkdownBlock]
    card = view.cards["r"]
    assert card.arg == "src/p.py" and card.state == ToolCard.DONE and card.summary == "2 lines"
    assert view.column.items[1].ended is not None  # thinking ended when the text began
    assert all(w.closed for w in view.column.items if isinstance(w, MarkdownBlock))
    text = view.text_content()
    assert "you: Fix the parser" in text and "Looking now." in text and "[Read src/p.py done 2 lines]" in text
    assert view.presenter.items and len(view.presenter.items) == len(view.column.items)


def test_the_live_bash_card_shows_its_tail_then_folds_it(view):
    feed(view, ev.ToolCallStarted(tool_use_id="b", name="Bash", input={"command": "make"}))
    card = view.cards["b"]
    assert card.height() == HEADER_H
    feed(view, ev.ToolCallProgress(tool_use_id="b", data={"output": "one\ntwo\nthree\nfour\n", "elapsed_s": 3}))
    assert card.tail == ["two", "three", "four"] and card.height() > HEADER_H
    assert card.elapsed_text() == "3 s"
    card.grab()  # paints header and tail
    feed(view, ev.ToolCallProgress(tool_use_id="b", data={"output": "five\n"}))
    assert card.tail == ["five"]
    feed(view, ev.ToolCallFinished(tool_use_id="b", name="Bash", content="five\n"))
    assert card.state == ToolCard.DONE and card.height() == HEADER_H


def test_an_open_card_body_follows_the_result(view):
    card = view.start_tool("t", "Bash", {"command": "ls"})
    card.set_expanded(True)
    assert card.body is not None and "(running…)" in card.body.toPlainText()
    view.finish_tool("t", "Bash", "a.py\nb.py", False)
    assert "a.py" in card.body.toPlainText() and "(running…)" not in card.body.toPlainText()


def test_permission_states_and_deny_feedback(view):
    req = PermissionRequest(tool_name="Edit", tool_use_id="e", input={"file_path": "/w/a.py"}, cwd="/w")
    feed(view, ev.PermissionRequested(request=req))
    card = view.cards["e"]
    assert card.state == ToolCard.WAITING
    card.grab()
    feed(view, ev.PermissionResolved(request_id=req.request_id, tool_use_id="e",
                                     reply=PermissionReply(behavior="deny", feedback="not that file")))
    assert card.state == ToolCard.DENIED and card.summary == "denied"
    note = view.column.items[-1]
    assert isinstance(note, UserBlock) and note.prompt == "not that file"
    assert "You denied Edit and told the agent:" in note.text()


def test_the_retry_card_counts_down_and_says_how_it_ended(view):
    feed(view, ev.RetryWaiting(attempt=1, max_attempts=5, delay_s=30, error="Overloaded"))
    card = view.retry_card
    assert isinstance(card, RetryCard) and "Retrying in 30 s (attempt 1 of 5)" in card.text_plain
    assert "retry-now" in card.text() and card._timer.isActive()
    feed(view, ev.RetryWaiting(attempt=2, max_attempts=5, delay_s=0, error="Overloaded"))
    assert view.retry_card is card and "Retrying now (attempt 2 of 5)" in card.text_plain
    feed(view, ev.TextDelta(index=0, text="through"))
    assert view.retry_card is None and card.finished == "ok" and not card._timer.isActive()
    assert "Went through after 2 retries." in card.text_plain and "retry-now" not in card.text()
    assert [w for w in view.column.items if isinstance(w, RetryCard)] == [card]


def test_banners_stay_in_step_with_the_presenter(view, qtbot):
    actions = []
    view.banner_action.connect(actions.append)
    feed(view, ev.ErrorEvent(message="Bad key", kind="auth"))
    banner = view.banners["error:auth"]
    assert isinstance(banner, Banner) and banner.links == [("retry", "Retry the last message"),
                                                             ("settings", "Open settings")]
    banner.linkActivated.emit("settings")
    assert actions == ["settings"]
    feed(view, ev.ErrorEvent(message="Bad key again", kind="auth"))
    assert view.banners["error:auth"] is not banner and len(view.column.items) == 1
    view.remove_banner("error:auth")
    assert not view.banners and not view.column.items and not view.presenter.items
    feed(view, ev.StreamFallback(action="discarded_partial"), ev.Compacted(pre_tokens=9))
    assert [w.accessibleName() for w in view.column.items] == ["The stream broke; discarded_partial",
                                                               "Conversation compacted (9 tokens before)"]
    view.clear()
    assert not view.column.items and not view.cards and view.current_text is None


def test_stop_then_an_aborted_turn(view):
    view.start_tool("t", "Bash", {"command": "sleep 9"})
    view.stop_requested()
    assert view.cards["t"].progress == "stopping"
    feed(view, ev.TurnFinished(reason="aborted_streaming"))
    assert (view.cards["t"].state, view.cards["t"].summary) == (ToolCard.CANCELLED, "stopped")
    assert view.column.items[-1].kind == "interrupted"


def test_show_more_loads_earlier_history(view):
    entries = [{"type": "user", "message": {"content": f"q{i}"}} for i in range(80)]
    view.replay(view.history_ops(entries), limit=60)
    more = view.column.items[0]
    assert isinstance(more, Banner) and "20 earlier items are not shown." in more.accessibleName()
    more.linkActivated.emit("history:260")
    assert len(view.column.items) == 80 and "earlier items" not in view.text_content()
