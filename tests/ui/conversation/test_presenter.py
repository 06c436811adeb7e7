"""The conversation presenter without widgets: AgentEvents in, view-model items out (no Qt needed)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, Literal, get_args

import pytest

from desktop_agent.core import events as ev
from desktop_agent.core.permission import PermissionReply, PermissionRequest
from desktop_agent.ui.conversation.presenter import (
    BannerItem, ConversationPresenter, RetryItem, TextItem, ThinkingItem, ToolItem, UserItem, history_ops,
)
from desktop_agent.ui.conversation.summary import key_argument, rel_path, result_text, short_summary
from tests.ui.flow import transcript_entries


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Sink:
    """Records what the widgets would be told, as (what, item type, item)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    def item_appended(self, item: Any) -> None:
        self.calls.append(("appended", type(item).__name__, item))

    def item_changed(self, item: Any) -> None:
        self.calls.append(("changed", type(item).__name__, item))

    def item_removed(self, item: Any) -> None:
        self.calls.append(("removed", type(item).__name__, item))

    def items_cleared(self) -> None:
        self.calls.append(("cleared", "", None))

    def appended(self) -> list[str]:
        return [name for what, name, _ in self.calls if what == "appended"]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sink() -> Sink:
    return Sink()


@pytest.fixture
def p(sink: Sink, clock: Clock) -> ConversationPresenter:
    presenter = ConversationPresenter(sink, clock=clock)
    presenter.cwd = "/w"
    return presenter


def request(tool_use_id: str = "t1", tool_name: str = "Edit", **inp: Any) -> PermissionRequest:
    return PermissionRequest(tool_name=tool_name, tool_use_id=tool_use_id, input=inp or {"file_path": "/w/a.py"},
                             cwd="/w")


def resolved(tool_use_id: str, behavior: Literal["allow", "deny"], feedback: str | None = None) -> ev.PermissionResolved:
    return ev.PermissionResolved(request_id="r", tool_use_id=tool_use_id,
                                 reply=PermissionReply(behavior=behavior, feedback=feedback))


# One of every AgentEvent type: the test below fails when a new type is added and not listed here.
SAMPLES: list[Any] = [
    ev.TurnStarted(turn=1), ev.RequestStarted(turn=1), ev.TextDelta(index=0, text="hi"),
    ev.ThinkingDelta(index=0, text="hmm"), ev.StreamEvent(event={"type": "ping"}),
    ev.AssistantMessage(message={"type": "assistant", "message": {"content": [{"type": "text", "text": "x"}]}}),
    ev.AssistantBlock(message={"content": [{"type": "text", "text": "x"}]}),
    ev.UserMessage(message={"role": "user", "content": []}),
    ev.ToolCallStarted(tool_use_id="t1", name="Read", input={"file_path": "/w/a.py"}),
    ev.ToolCallProgress(tool_use_id="t1", data="reading"),
    ev.ToolCallFinished(tool_use_id="t1", name="Read", content="1\ta\n"),
    ev.PermissionRequested(request=request("t2")), resolved("t2", "allow"),
    ev.RetryWaiting(attempt=1, max_attempts=3, delay_s=2, error="Overloaded"),
    ev.StreamFallback(action="discarded_partial"), ev.Usage(input_tokens=3),
    ev.Compacted(pre_tokens=1000), ev.ErrorEvent(message="boom", kind="server"),
    ev.TurnFinished(reason="completed"),
]


# ----- every event type ---------------------------------------------------------------------------
def test_every_agent_event_type_is_sampled_and_handled(p):
    union = get_args(get_args(ev.AgentEvent)[0])
    assert {type(e) for e in SAMPLES} == set(union)
    for event in SAMPLES:
        p.apply(event)  # the exhaustive match: none falls through to assert_never
    with pytest.raises(AssertionError):
        p.apply("not an event")


@pytest.mark.parametrize("event", [ev.StreamEvent(event={"type": "ping"}),
                                   ev.AssistantBlock(message={"content": [{"type": "text", "text": "x"}]}),
                                   ev.UserMessage(message={"role": "user", "content": []}),
                                   ev.Usage(input_tokens=5, session_tokens=5), ev.TurnStarted(turn=2)])
def test_events_the_conversation_does_not_show_change_nothing(p, sink, event):
    p.apply(event)
    assert sink.calls == [] and p.items == []


def test_the_presenter_imports_no_qt():
    code = ("import sys; import desktop_agent.ui.conversation.presenter, desktop_agent.ui.conversation.summary; "
            "print([m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'qasync')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# ----- text and thinking --------------------------------------------------------------------------
def test_text_deltas_grow_one_block_until_the_next_request(p, sink):
    p.apply(ev.RequestStarted(turn=1))
    for chunk in ("Hel", "lo", " world"):
        p.apply(ev.TextDelta(index=0, text=chunk))
    assert [type(i) for i in p.items] == [TextItem] and p.items[0].text == "Hello world"
    assert not p.items[0].closed
    p.apply(ev.RequestStarted(turn=2))
    assert p.items[0].closed and p.current_text is None
    p.apply(ev.TextDelta(index=0, text="again"))
    assert [i.text for i in p.items] == ["Hello world", "again"]
    assert sink.appended() == ["TextItem", "TextItem"]


def test_thinking_ends_when_text_starts(p, clock):
    p.apply(ev.ThinkingDelta(index=0, text="let me "))
    p.apply(ev.ThinkingDelta(index=0, text="see"))
    thinking = p.items[0]
    assert isinstance(thinking, ThinkingItem) and thinking.text == "let me see" and thinking.ended is None
    clock.now += 4
    p.apply(ev.TextDelta(index=1, text="Answer"))
    assert thinking.ended is not None and thinking.ended == clock.now and thinking.ended - thinking.started == 4
    assert [type(i) for i in p.items] == [ThinkingItem, TextItem]


def test_assistant_message_shows_its_text_only_when_nothing_streamed(p):
    msg = {"type": "assistant", "message": {"content": [{"type": "text", "text": "whole reply"},
                                                       {"type": "tool_use", "id": "t", "name": "Read"}]}}
    p.apply(ev.RequestStarted(turn=1))
    p.apply(ev.AssistantMessage(message=msg))  # the non-streaming fallback
    assert [i.text for i in p.items] == ["whole reply"]
    p.apply(ev.RequestStarted(turn=2))
    p.apply(ev.TextDelta(index=0, text="streamed"))
    p.apply(ev.AssistantMessage(message={"message": {"content": [{"type": "text", "text": "streamed"}]}}))
    assert [i.text for i in p.items] == ["whole reply", "streamed"]  # not twice


def test_user_prompt_closes_the_text_before_it(p):
    p.text("answer")
    user = p.user_prompt("next question")
    assert p.items[0].closed and p.items[-1] is user and user.label is None


# ----- tool calls ---------------------------------------------------------------------------------
def test_tool_call_runs_reports_progress_and_finishes(p, sink, clock):
    p.apply(ev.TextDelta(index=0, text="Let me look."))
    p.apply(ev.ToolCallStarted(tool_use_id="t1", name="Bash", input={"command": "make\ntest"}))
    card = p.cards["t1"]
    assert isinstance(card, ToolItem) and card.state == "running" and card.arg == "make ⏎ test"
    assert p.items[0].closed and card in p.running
    p.apply(ev.ToolCallProgress(tool_use_id="t1", data={"output": "a\r\nb\n\nc\rd\n", "elapsed_s": 12}))
    assert card.tail == ["b", "c", "d"] and card.started == clock.now - 12
    clock.now += 3
    assert card.elapsed_text(clock.now) == "15 s"
    p.apply(ev.ToolCallProgress(tool_use_id="t1", data={"message": "compiling\nlinking"}))
    assert card.progress == "linking"
    p.apply(ev.ToolCallProgress(tool_use_id="t1", data=42))  # neither text nor dict: ignored
    p.apply(ev.ToolCallFinished(tool_use_id="t1", name="Bash", content="ok\nfine\n"))
    assert card.state == "done" and card.summary == "2 lines" and card.result == "ok\nfine\n"
    assert card.ended == clock.now and card not in p.running
    assert [w for w, _, i in sink.calls if i is card][:1] == ["appended"]


def test_a_repeated_start_reuses_the_card_and_an_unknown_finish_makes_one(p):
    a = p.start_tool("t1", "Read", {"file_path": "/w/src/a.py"})
    assert p.start_tool("t1", "Read", {}) is a and a.arg == "src/a.py"
    p.finish_tool("t9", "Grep", "Found 3 files\na\nb\nc", False)
    assert p.cards["t9"].summary == "3 files" and p.cards["t9"].arg == ""
    assert [i.tool_use_id for i in p.items if isinstance(i, ToolItem)] == ["t1", "t9"]


def test_elapsed_text_in_minutes():
    card = ToolItem("t", "Bash", {}, "", started=0.0, ended=75.0)
    assert card.elapsed_text(1000.0) == "1:15"


# ----- permissions --------------------------------------------------------------------------------
def test_permission_asked_then_allowed_runs_again(p):
    p.apply(ev.ToolCallStarted(tool_use_id="t1", name="Edit", input={"file_path": "/w/a.py"}))
    p.apply(ev.PermissionRequested(request=request("t1")))
    assert p.cards["t1"].state == "waiting"
    p.apply(resolved("t1", "allow"))
    assert p.cards["t1"].state == "running" and p.cards["t1"].ended is None


def test_a_request_for_an_unseen_call_makes_its_card(p):
    p.apply(ev.PermissionRequested(request=request("t5", "Write", file_path="/w/new.py")))
    assert p.cards["t5"].state == "waiting" and p.cards["t5"].name == "Write" and p.cards["t5"].arg == "new.py"


def test_denied_stays_denied_when_the_error_result_comes(p):
    p.apply(ev.PermissionRequested(request=request("t1")))
    p.apply(resolved("t1", "deny"))
    card = p.cards["t1"]
    assert card.state == "denied" and card.summary == "denied" and card.ended is not None
    p.apply(ev.ToolCallFinished(tool_use_id="t1", name="Edit", content="User denied via UI", is_error=True))
    assert card.state == "denied" and card.summary == "denied" and card.result == "User denied via UI"


def test_deny_feedback_follows_the_card_as_the_users_words(p):
    p.apply(ev.ToolCallStarted(tool_use_id="t1", name="Edit", input={"file_path": "/w/a.py"}))
    p.apply(ev.PermissionRequested(request=request("t1")))
    p.apply(resolved("t1", "deny", feedback="  keep it at one  "))
    note = p.items[-1]
    assert isinstance(note, UserItem) and note.text == "keep it at one"
    assert note.label == "You denied Edit and told the agent:"
    assert p.items.index(p.cards["t1"]) < p.items.index(note)


def test_a_resolution_for_a_card_not_waiting_changes_nothing(p, sink):
    p.apply(ev.ToolCallStarted(tool_use_id="t1", name="Read", input={}))
    sink.calls.clear()
    p.apply(resolved("t1", "deny"))  # e.g. decided by a hook before the card asked
    assert p.cards["t1"].state == "running" and sink.calls == []


# ----- stop, interrupts, the end of a turn --------------------------------------------------------
def test_stop_marks_running_calls_stopping_and_errors_after_it_read_stopped(p, clock):
    p.start_tool("t1", "Bash", {"command": "sleep 9"})
    p.start_tool("t2", "Bash", {"command": "false"})
    p.finish_tool("t2", "Bash", "<tool_use_error>Exit code 1\nno</tool_use_error>", True)
    assert p.cards["t2"].state == "error" and p.cards["t2"].summary == "Exit code 1"  # before Stop: an error
    clock.now += 1
    p.stop_requested()
    assert p.cards["t1"].progress == "stopping"
    clock.now += 1
    p.finish_tool("t1", "Bash", "Interrupted", True)
    assert p.cards["t1"].state == "cancelled" and p.cards["t1"].summary == "stopped"


def test_an_aborted_turn_cancels_what_runs_and_says_interrupted(p, clock):
    p.start_tool("t1", "Bash", {"command": "sleep 9"})
    p.apply(ev.PermissionRequested(request=request("t2")))
    p.start_tool("t3", "Bash", {"command": "x"})
    clock.now += 1
    p.stop_requested()
    p.cards["t3"].set_state("error", "Exit code 130", clock.now)  # ended with an error after Stop
    p.running.pop(p.cards["t3"])
    p.apply(ev.TurnFinished(reason="aborted_tools"))
    assert [(c.state, c.summary) for c in p.cards.values()] == [("cancelled", "stopped")] * 3
    banner = p.items[-1]
    assert isinstance(banner, BannerItem) and banner.kind == "interrupted" and "Interrupted by you" in banner.text
    assert not p.running and p.stop_at == float("inf")


def test_a_completed_turn_with_a_call_left_running_reads_interrupted(p):
    p.start_tool("t1", "Read", {})
    p.apply(ev.TurnFinished(reason="completed"))
    assert (p.cards["t1"].state, p.cards["t1"].summary) == ("cancelled", "interrupted")
    assert not any(isinstance(i, BannerItem) for i in p.items)


@pytest.mark.parametrize("reason,error,text", [
    ("max_turns", None, "Stopped after the maximum number of turns."),
    ("stop_hook_prevented", "no tests", "A hook stopped this turn. no tests"),
    ("hook_stopped", None, "A hook stopped this turn."),
    ("prompt_blocked", "blocked", "A hook stopped this turn. blocked"),
])
def test_turn_end_notices(p, reason, error, text):
    p.apply(ev.TurnFinished(reason=reason, error=error))
    assert [(i.kind, i.text) for i in p.items] == [("notice", text)]


def test_a_model_error_turn_adds_no_banner_of_its_own(p):
    p.apply(ev.TurnFinished(reason="model_error", error="bad"))
    assert p.items == []


# ----- retries ------------------------------------------------------------------------------------
def test_one_retry_card_per_request_updated_in_place_until_the_request_goes_through(p, sink, clock):
    p.apply(ev.RetryWaiting(attempt=1, max_attempts=5, delay_s=30, error="Overloaded"))
    card = p.retry
    assert isinstance(card, RetryItem) and card.seconds_left(clock.now) == 30 and card.finished is None
    clock.now += 10.5
    assert card.seconds_left(clock.now) == 20
    p.apply(ev.RetryWaiting(attempt=2, max_attempts=5, delay_s=-1, error="Overloaded again"))
    assert p.retry is card and card.attempt == 2 and card.seconds_left(clock.now) == 0
    assert card.error == "Overloaded again"
    assert sink.appended() == ["RetryItem"]
    p.apply(ev.TextDelta(index=0, text="Through"))
    assert card.finished == "ok" and p.retry is None
    p.apply(ev.RetryWaiting(attempt=1, max_attempts=5, delay_s=1, error="again"))  # a later request: a new card
    assert p.retry is not card and sink.appended() == ["RetryItem", "TextItem", "RetryItem"]


def test_a_tool_call_also_ends_the_retry(p):
    p.apply(ev.RetryWaiting(attempt=1, max_attempts=3, delay_s=1, error="e"))
    card = p.retry
    p.apply(ev.ToolCallStarted(tool_use_id="t1", name="Read", input={}))
    assert card is not None and card.finished == "ok"


@pytest.mark.parametrize("reason,outcome", [("aborted_streaming", "cancelled"), ("model_error", "failed"),
                                            ("completed", "ok")])
def test_the_turn_end_says_how_the_retries_ended(p, reason, outcome):
    p.apply(ev.RetryWaiting(attempt=2, max_attempts=3, delay_s=1, error="e"))
    card = p.retry
    p.apply(ev.TurnFinished(reason=reason))
    assert card is not None and card.finished == outcome and p.retry is None


# ----- banners and errors -------------------------------------------------------------------------
def test_keyed_banners_replace_each_other_and_unkeyed_ones_pile(p, sink):
    first = p.add_banner("error", "Overloaded", key="error:overloaded")
    p.add_banner("notice", "a notice")
    second = p.add_banner("error", "Overloaded again", key="error:overloaded")
    assert first not in p.items and second in p.items and len(p.items) == 2
    assert ("removed", "BannerItem", first) in sink.calls and p.banners == {"error:overloaded": second}
    p.remove_banner("error:overloaded")
    p.remove_banner("absent")
    assert len(p.items) == 1 and not p.banners


@pytest.mark.parametrize("kind,hrefs", [("server", ["retry"]), ("auth", ["retry", "settings"]),
                                        ("connection", ["retry", "settings"]), ("executor", ["restart"]),
                                        ("model", ["retry", "settings"]), ("model_not_found", ["retry", "settings"]),
                                        ("internal", ["retry"]), ("", ["retry"])])
def test_error_events_offer_what_the_user_can_do(p, kind, hrefs):
    p.apply(ev.ErrorEvent(message="It broke.", kind=kind))
    banner = p.items[-1]
    assert isinstance(banner, BannerItem) and banner.kind == "error" and banner.text.startswith("It broke.")
    assert [href for href, _ in banner.actions] == hrefs and banner.key == f"error:{kind}"


def test_stream_fallback_and_compaction_are_notices(p):
    p.apply(ev.StreamFallback(action="non_streaming_retry"))
    p.apply(ev.StreamFallback(action="discarded_partial", detail="the partial reply was dropped"))
    p.apply(ev.Compacted(pre_tokens=12345))
    assert [i.text for i in p.items] == ["The stream broke; non_streaming_retry",
                                         "The stream broke; the partial reply was dropped",
                                         "Conversation compacted (12345 tokens before)"]


def test_translate_is_used_with_the_old_contexts(sink):
    seen: list[tuple[str, str]] = []

    def translate(context, source, disambiguation=None, n=-1):
        seen.append((context, source))
        return source.upper()

    p = ConversationPresenter(sink, translate)
    p.apply(ev.PermissionRequested(request=request("t1")))
    p.apply(resolved("t1", "deny"))
    p.finish_tool("t2", "Read", "a\nb", False)
    assert p.cards["t1"].summary == "DENIED" and ("ConversationView", "denied") in seen
    assert ("ConversationView", "%n line(s)") in seen and p.cards["t2"].summary == "%N LINE(S)"  # no "(s)"


# ----- ordering, the whole turn -------------------------------------------------------------------
def test_a_turn_in_order(p, sink):
    p.user_prompt("Fix it")
    for event in [ev.TurnStarted(turn=1), ev.RequestStarted(turn=1), ev.ThinkingDelta(index=0, text="t"),
                  ev.TextDelta(index=1, text="Reading."),
                  ev.ToolCallStarted(tool_use_id="r", name="Read", input={"file_path": "/w/a.py"}),
                  ev.ToolCallFinished(tool_use_id="r", name="Read", content="1\tx\n2\t"),
                  ev.RequestStarted(turn=2),
                  ev.ToolCallStarted(tool_use_id="e", name="Edit", input={"file_path": "/w/a.py"}),
                  ev.PermissionRequested(request=request("e")), resolved("e", "allow"),
                  ev.ToolCallFinished(tool_use_id="e", name="Edit", content="ok",
                                      data={"structuredPatch": [{"lines": [" a", "-x", "+y", "+z"]}]}),
                  ev.RequestStarted(turn=3), ev.TextDelta(index=0, text="Done."), ev.TurnFinished(reason="completed")]:
        p.apply(event)
    assert sink.appended() == ["UserItem", "ThinkingItem", "TextItem", "ToolItem", "ToolItem", "TextItem"]
    assert [(c.state, c.summary) for c in p.cards.values()] == [("done", "1 line"), ("done", "+2 \u22121")]
    assert all(i.closed for i in p.items if isinstance(i, TextItem))
    states = [i.state for w, _, i in sink.calls if isinstance(i, ToolItem) and i.tool_use_id == "e"]
    assert states[-1] == "done"


# ----- history ------------------------------------------------------------------------------------
def test_history_ops_from_transcript_entries():
    entries: list[dict[str, Any]] = [
        {"type": "user", "isMeta": True, "message": {"content": "<system reminder>"}},
        {"type": "user", "message": {"content": "hello"}},
        {"type": "assistant", "message": {"content": [
            {"type": "thinking", "thinking": "."}, {"type": "text", "text": ""},
            {"type": "tool_use", "id": "t1", "name": "Edit", "input": None}]}},
        {"type": "user", "toolUseResult": {"structuredPatch": []}, "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": False}]}},
        {"type": "user", "message": {"content": [{"type": "text", "text": "[Request interrupted by user]"},
                                                 {"type": "text", "text": "go on"}, "junk"]}},
    ]
    assert history_ops(entries) == [("user", "hello"), ("tool", "t1", "Edit", {}),
                                     ("result", "t1", "ok", False, {"structuredPatch": []}),
                                     ("notice", "[Request interrupted by user]"), ("user", "go on")]


def test_replay_shows_the_newest_and_offers_more(p, sink):
    ops = history_ops(transcript_entries(100))
    more = p.replay(ops, limit=30)
    assert sink.calls[0] == ("cleared", "", None)
    assert more is not None and more.actions == [("history:230", "Show more")]
    assert more.text == "370 earlier items are not shown."  # 4 ops per exchange
    assert len(p.cards) <= 10 and p.cards["t99"].state == "done" and p.cards["t99"].summary == "1 line"
    assert p.replay(ops, limit=1000) is None and len(p.cards) == 100


def test_replay_marks_calls_without_a_result_and_interruptions(p):
    ops = [("user", "q"), ("tool", "t1", "Bash", {"command": "ls"}), ("notice", "[Request interrupted by user]"),
           ("result", "zz", "orphan", False, None)]
    p.replay(ops)
    assert (p.cards["t1"].state, p.cards["t1"].summary) == ("cancelled", "no result")
    assert [type(i).__name__ for i in p.items] == ["UserItem", "ToolItem", "BannerItem"]
    assert p.items[-1].text == "Interrupted by you." and not p.running


def test_replay_reads_calls_an_interrupt_cut_short_as_stopped_not_failed(p, sink):
    """Issue 21 item 5: a stopped Bash call's result is an error whose first line is its output; replayed, it
    read as a red failure ("first line"). Cut short by the interrupt that follows it, it reads "stopped"; a
    genuine failure of an earlier call stays an error."""
    stopped = "first line\nsecond\n<error>Command was aborted before completion</error>"
    ops = [("user", "q"), ("tool", "t0", "Bash", {"command": "false"}), ("result", "t0", "boom", True, None),
           ("text", "Trying again."),
           ("tool", "t1", "Bash", {"command": "long"}), ("tool", "t2", "Read", {"file_path": "/w/a"}),
           ("result", "t1", stopped, True, {"interrupted": True}), ("result", "t2", "1\tx", False, None),
           ("notice", "[Request interrupted by user for tool use]")]
    p.replay(ops)
    assert (p.cards["t0"].state, p.cards["t0"].summary) == ("error", "boom")
    assert (p.cards["t1"].state, p.cards["t1"].summary) == ("cancelled", "stopped")
    assert p.cards["t1"].result == stopped  # the output stays in the card's body
    assert p.cards["t2"].state == "done"
    assert ("changed", "ToolItem", p.cards["t1"]) in sink.calls


def test_clear_forgets_everything(p, sink):
    p.start_tool("t1", "Read", {})
    p.add_banner("error", "x", key="k")
    p.show_retry(1, 2, 1, "e")
    p.clear()
    assert not p.items and not p.cards and not p.banners and p.retry is None and not p.running
    assert sink.calls[-1][0] == "cleared"


# ----- what a call shows --------------------------------------------------------------------------
@pytest.mark.parametrize("name,inp,arg", [
    ("Read", {"file_path": "/w/src/a.py"}, "src/a.py"),
    ("Read", {"file_path": "/elsewhere/a.py"}, "/elsewhere/a.py"),
    ("Grep", {"pattern": "parse", "path": "/w"}, "parse"),
    ("Grep", {"pattern": "parse", "path": "/w/src"}, "parse  in src"),
    ("NotebookEdit", {"notebook_path": "/w/n.ipynb"}, "n.ipynb"),
    ("Bash", {"command": "a\nb"}, "a ⏎ b"),
    ("WebFetch", {"url": "https://x", "prompt": "p"}, "https://x"),
    ("Task", {}, ""),
])
def test_key_argument(name, inp, arg):
    assert key_argument(name, inp, "/w") == arg


def test_rel_path_without_a_folder():
    assert rel_path("/w/a", None) == "/w/a" and rel_path("", "/w") == ""


@pytest.mark.parametrize("name,content,data,is_error,summary", [
    ("Bash", "<tool_use_error>Exit code 2\nboom</tool_use_error>", None, True, "Exit code 2"),
    ("Bash", "", None, True, "error"),
    ("Edit", "ok", {"structuredPatch": [{"lines": ["-a", "+b"]}]}, False, "+1 \u22121"),
    ("Write", "ok", {"type": "create", "structuredPatch": [], "content": "a\nb\nc\n"}, False, "+3 \u22120"),
    ("Read", "1\ta\n2\tb\n3\t", None, False, "2 lines"),
    ("Read", "1\ta", None, False, "1 line"),
    ("Grep", "Found 1 file\na.py", None, False, "1 file"),
    ("Grep", "Found 4 matches\n...", None, False, "4 match(es)"),  # as Qt fills it in untranslated
    ("Glob", "No files found", None, False, "no matches"),
    ("Glob", "a.py\nb.py\n", None, False, "2 results"),
    ("Bash", "(Bash completed with no output)", None, False, "no output"),
    ("Bash", "x\n\ny\n", None, False, "2 lines"),
    ("WebFetch", "page", None, False, "done"),
])
def test_short_summary(name, content, data, is_error, summary):
    assert short_summary(name, content, data, is_error) == summary


def test_result_text_of_every_content_shape():
    assert result_text("plain") == "plain" and result_text(None) == ""
    assert result_text([{"type": "text", "text": "a"}, {"type": "image"}, "b"]) == "a\n[image]\nb"
    assert result_text({"k": 1}) == '{\n  "k": 1\n}'
