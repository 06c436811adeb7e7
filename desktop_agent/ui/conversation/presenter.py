"""The conversation as data: ``AgentEvent``s in, a plain view-model out. No widgets, no Qt.

``ConversationPresenter`` owns what the conversation pane shows and in which state: the user's prompts,
the streamed text and thinking, one ``ToolItem`` per call (running → waiting → done / error / denied /
cancelled, its key argument, its output so far), banners (one per key) and the retry card of the
request. ``apply`` consumes every ``AgentEvent`` with an exhaustive ``match``; the window's finer
calls (``start_tool``, ``stop_requested``, ``end_turn``…) go through the same methods. Each change is
told to a ``ConversationSink`` (the widgets: ``ui/conversation/view.py``) as appended / changed /
removed / cleared, so a widget only renders its item.

Texts go through the injected ``translate`` (``QCoreApplication.translate`` in the app, the English
source in tests) under the contexts they always had, so the translation file is unchanged.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Literal, Protocol, Union, assert_never

from desktop_agent.core.events import (
    AgentEvent, AssistantBlock, AssistantMessage, Compacted, ErrorEvent, PermissionRequested, PermissionResolved,
    RequestStarted, RetryWaiting, StreamEvent, StreamFallback, TextDelta, ThinkingDelta, ToolCallFinished,
    ToolCallProgress, ToolCallStarted, TurnFinished, TurnFinishReason, TurnStarted, Usage, UserMessage,
)
from desktop_agent.ui.conversation.summary import Translate, english, key_argument, result_text, short_summary

CardState = Literal["running", "waiting", "done", "error", "denied", "cancelled"]
BannerKind = Literal["error", "notice", "interrupted"]
RetryOutcome = Literal["ok", "cancelled", "failed"]
TAIL_LINES = 3  # a running command's last output lines shown under its header

# ----- the view-model --------------------------------------------------------------------------
@dataclass(eq=False)
class UserItem:
    """A prompt of the user, or (with ``label``) what they told the agent when denying a call."""

    text: str
    label: str | None = None


@dataclass(eq=False)
class TextItem:
    """A block of the model's Markdown; ``closed`` once something else follows it."""

    text: str = ""
    closed: bool = False


@dataclass(eq=False)
class ThinkingItem:
    started: float
    text: str = ""
    ended: float | None = None


@dataclass(eq=False)
class ToolItem:
    """One tool call: what it is (name, input, the key argument) and how it stands."""

    tool_use_id: str
    name: str
    input: dict[str, Any]
    arg: str
    started: float
    state: CardState = "running"
    summary: str = ""  # a word or two for the header: "12 lines", "+1 −1", the error's first line
    result: str = ""
    is_error: bool = False
    progress: str = ""  # the last progress message ("stopping" once Stop was pressed)
    tail: list[str] = field(default_factory=list)  # a running command's last output lines
    ended: float | None = None

    def set_state(self, state: CardState, summary: str, now: float) -> None:
        self.state, self.summary = state, summary
        if state not in ("running", "waiting") and self.ended is None:
            self.ended = now

    def take_progress(self, data: Any, now: float) -> None:
        """A progress event: a running command's output so far (``bash_progress``) or a message."""
        if isinstance(data, dict) and "output" in data:
            text = str(data.get("output") or "").replace("\r\n", "\n").replace("\r", "\n")
            lines = [x.rstrip() for x in text.splitlines() if x.strip()]
            self.tail = [x[:400] for x in lines[-TAIL_LINES:]]
            if isinstance(data.get("elapsed_s"), (int, float)):
                self.started = min(self.started, now - float(data["elapsed_s"]))
        else:
            if isinstance(data, str):
                text = data
            elif isinstance(data, dict):
                text = str((data or {}).get("message") or "")
            else:
                text = ""
            self.progress = text.strip().splitlines()[-1][:60] if text.strip() else ""

    def elapsed_text(self, now: float) -> str:
        secs = int((self.ended or now) - self.started)
        return f"{secs // 60}:{secs % 60:02d}" if secs >= 60 else f"{secs} s"


@dataclass(eq=False)
class BannerItem:
    """An error or notice; ``actions`` are (href, label) links; with ``key``, one banner per key."""

    kind: BannerKind
    text: str
    actions: list[tuple[str, str]] = field(default_factory=list)
    key: str | None = None


@dataclass(eq=False)
class RetryItem:
    """The one card of a retried request: the error, when the next attempt goes, how it ended."""

    attempt: int = 0
    max_attempts: int = 0
    error: str = ""
    deadline: float = 0.0
    finished: RetryOutcome | None = None

    def seconds_left(self, now: float) -> int:
        return max(0, math.ceil(self.deadline - now))


Item = Union[UserItem, TextItem, ThinkingItem, ToolItem, BannerItem, RetryItem]


class ConversationSink(Protocol):
    """What renders the view-model (the widgets); told about every item as it changes."""

    def item_appended(self, item: Item) -> None: ...

    def item_changed(self, item: Item) -> None: ...

    def item_removed(self, item: Item) -> None: ...

    def items_cleared(self) -> None: ...


class _NoSink:
    def item_appended(self, item: Item) -> None:
        pass

    def item_changed(self, item: Item) -> None:
        pass

    def item_removed(self, item: Item) -> None:
        pass

    def items_cleared(self) -> None:
        pass


# ----- history ---------------------------------------------------------------------------------
HistoryOp = tuple[Any, ...]  # ("user", text) ("text", text) ("tool", id, name, input) ("result", id, content,
#                              is_error, data) ("notice", text)


def history_ops(entries: list[dict[str, Any]]) -> list[HistoryOp]:
    """Transcript entries → display operations (cheap tuples; widgets are made only when shown)."""
    ops: list[HistoryOp] = []
    for entry in entries:
        msg = entry.get("message") or {}
        content = msg.get("content")
        role = entry.get("type")
        if role == "user":
            if isinstance(content, str):
                if not entry.get("isMeta"):
                    ops.append(("user", content))
            elif isinstance(content, list):
                for block in content:
                    if not isinstance(block, dict):
                        continue
                    if block.get("type") == "tool_result":
                        data = entry.get("toolUseResult")  # the tool's structured result (patches)
                        ops.append(("result", str(block.get("tool_use_id")), block.get("content"),
                                    bool(block.get("is_error")), data if isinstance(data, dict) else None))
                    elif block.get("type") == "text" and not entry.get("isMeta"):
                        text = block.get("text", "")
                        ops.append(("notice", text) if text.startswith("[Request interrupted") else ("user", text))
        elif role == "assistant" and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and block.get("text"):
                    ops.append(("text", block["text"]))
                elif block.get("type") == "tool_use":
                    ops.append(("tool", str(block.get("id")), str(block.get("name")), block.get("input") or {}))
    return ops


# ----- the presenter ---------------------------------------------------------------------------
class ConversationPresenter:
    """The conversation's state machine. ``items`` in display order; ``cards`` by tool_use_id."""

    def __init__(self, sink: ConversationSink | None = None, translate: Translate = english,
                 clock: Callable[[], float] = time.monotonic):
        self.sink: ConversationSink = sink if sink is not None else _NoSink()
        self.translate = translate
        self.clock = clock
        self.cwd: str | None = None
        self.items: list[Item] = []
        self.cards: dict[str, ToolItem] = {}
        self.banners: dict[str, BannerItem] = {}
        self.running: dict[ToolItem, None] = {}  # calls not finished yet, in start order
        self.retry: RetryItem | None = None
        self.current_text: TextItem | None = None
        self.current_thinking: ThinkingItem | None = None
        self.stop_at = float("inf")  # when the user pressed Stop in this turn
        self._saw_text = False  # this request streamed text (else a whole AssistantMessage carries it)

    # ----- the event stream ----------------------------------------------------------------------
    def apply(self, event: AgentEvent) -> None:
        """One ``AgentEvent`` → the view-model. Every event type is named, the ones not shown too."""
        match event:
            case TurnStarted():
                self._saw_text = False
            case RequestStarted():
                self._saw_text = False
                self.close_text()
            case TextDelta(text=text):
                self._saw_text = True
                self.text(text)
                self.retry_over()  # the request went through
            case ThinkingDelta(text=text):
                self.thinking(text)
            case AssistantMessage(message=message):
                if not self._saw_text:  # non-streaming fallback: the text arrives whole
                    content = (message.get("message") or message).get("content") or []
                    for block in content if isinstance(content, list) else []:
                        if isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
                            self._saw_text = True
                            self.text(block["text"])
                            self.retry_over()
            case ToolCallStarted(tool_use_id=tool_use_id, name=name, input=inp):
                self.start_tool(tool_use_id, name, inp)
                self.retry_over()
            case ToolCallProgress(tool_use_id=tool_use_id, data=data):
                if isinstance(data, (str, dict)):
                    self.tool_progress(tool_use_id, data)
            case ToolCallFinished():
                self.finish_tool(event.tool_use_id, event.name, event.content, event.is_error, event.data)
            case PermissionRequested(request=request):
                self.tool_waiting(request.tool_use_id, request.tool_name, request.input)
            case PermissionResolved(tool_use_id=tool_use_id, reply=reply):
                self.permission_resolved(tool_use_id, reply.behavior == "allow", reply.feedback or "")
            case RetryWaiting():
                self.show_retry(event.attempt, event.max_attempts, event.delay_s, event.error)
            case StreamFallback(action=action, detail=detail):
                self.add_banner("notice", self.translate("AgentController", "The stream broke; {0}")
                                .format(detail or action))
            case Compacted(pre_tokens=pre_tokens):
                self.add_banner("notice", self.translate("AgentController", "Conversation compacted ({0} tokens "
                                                         "before)").format(pre_tokens))
            case ErrorEvent(message=message, kind=kind):
                self.error(message, kind)
            case TurnFinished(reason=reason, error=error):
                self.end_turn(reason, error)
            case StreamEvent() | AssistantBlock() | UserMessage() | Usage():
                pass  # raw stream events, transcript copies of what is shown, token counts (the status bar's)
            case _:
                assert_never(event)

    # ----- appending -----------------------------------------------------------------------------
    def _append(self, item: Item) -> None:
        self.items.append(item)
        self.sink.item_appended(item)

    def close_text(self) -> None:
        """What streams next starts a new block: the current text and thinking are final."""
        if self.current_text is not None:
            self.current_text.closed = True
            self.sink.item_changed(self.current_text)
        self.current_text = None
        self._end_thinking()

    def _end_thinking(self) -> None:
        thinking, self.current_thinking = self.current_thinking, None
        if thinking is not None and thinking.ended is None:
            thinking.ended = self.clock()
            self.sink.item_changed(thinking)

    def user_prompt(self, text: str) -> UserItem:
        self.close_text()
        item = UserItem(text)
        self._append(item)
        return item

    def feedback(self, label: str, text: str) -> UserItem:
        """The user's deny feedback, shown as their words."""
        self.close_text()
        item = UserItem(text, label)
        self._append(item)
        return item

    def text(self, chunk: str) -> TextItem:
        self._end_thinking()
        if self.current_text is None:
            self.current_text = TextItem()
            self._append(self.current_text)
        self.current_text.text += chunk
        self.sink.item_changed(self.current_text)
        return self.current_text

    def thinking(self, chunk: str) -> ThinkingItem:
        if self.current_thinking is None:
            self.close_text()
            self.current_thinking = ThinkingItem(started=self.clock())
            self._append(self.current_thinking)
        self.current_thinking.text += chunk
        self.sink.item_changed(self.current_thinking)
        return self.current_thinking

    # ----- tool calls ----------------------------------------------------------------------------
    def _set(self, card: ToolItem, state: CardState, summary: str = "") -> None:
        card.set_state(state, summary, self.clock())

    def start_tool(self, tool_use_id: str, name: str, inp: dict[str, Any]) -> ToolItem:
        self.close_text()
        card = self.cards.get(tool_use_id)
        if card is not None:
            return card
        card = ToolItem(tool_use_id, name, inp, key_argument(name, inp, self.cwd), started=self.clock())
        self.cards[tool_use_id] = card
        self.running[card] = None
        self._append(card)
        return card

    def tool_progress(self, tool_use_id: str, data: Any) -> None:
        card = self.cards.get(tool_use_id)
        if card is not None:
            card.take_progress(data, self.clock())
            self.sink.item_changed(card)

    def tool_waiting(self, tool_use_id: str, name: str = "", inp: dict[str, Any] | None = None) -> ToolItem:
        """A permission request for the call: it waits for the user."""
        card = self.cards.get(tool_use_id) or self.start_tool(tool_use_id, name, inp or {})
        self._set(card, "waiting")
        self.sink.item_changed(card)
        return card

    def tool_resumed(self, tool_use_id: str, allowed: bool) -> None:
        card = self.cards.get(tool_use_id)
        if card is None:
            return
        if allowed:
            self._set(card, "running")
        else:
            self._set(card, "denied", self.translate("ConversationView", "denied"))
        self.sink.item_changed(card)

    def permission_resolved(self, tool_use_id: str, allowed: bool, feedback: str = "") -> None:
        """The request was answered: a waiting card runs or reads "denied"; deny feedback is shown."""
        card = self.cards.get(tool_use_id)
        if card is not None and card.state == "waiting":
            self.tool_resumed(tool_use_id, allowed)
        feedback = feedback.strip()
        if not allowed and feedback:  # what the user told the agent, where the conversation shows it
            name = card.name if card is not None else ""
            self.feedback(self.translate("MainWindow", "You denied {0} and told the agent:").format(name), feedback)

    def finish_tool(self, tool_use_id: str, name: str, content: Any, is_error: bool,
                    data: dict[str, Any] | None = None) -> ToolItem:
        card = self.cards.get(tool_use_id) or self.start_tool(tool_use_id, name, {})
        denied = card.state == "denied"
        card.result = result_text(content)
        card.is_error = is_error
        self._set(card, "error" if is_error else "done", short_summary(card.name, card.result, data, is_error,
                                                                      self.translate))
        if denied and is_error:
            self._set(card, "denied", self.translate("ConversationView", "denied"))
        elif is_error and self.clock() >= self.stop_at:
            self._set(card, "cancelled", self.translate("ConversationView", "stopped"))
        self.running.pop(card, None)
        self.sink.item_changed(card)
        return card

    # ----- banners and the retry card ------------------------------------------------------------
    def add_banner(self, kind: BannerKind, text: str, actions: list[tuple[str, str]] | None = None,
                   key: str | None = None) -> BannerItem:
        """A banner. With ``key``, one banner per key: an earlier one of the same key is removed (the new
        one says what is true now), so set-up and error banners never pile up."""
        self.close_text()
        if key is not None:
            self.remove_banner(key)
        item = BannerItem(kind, text, list(actions or []), key)
        self._append(item)
        if key is not None:
            self.banners[key] = item
        return item

    def remove_banner(self, key: str) -> None:
        old = self.banners.pop(key, None)
        if old is not None:
            self.items.remove(old)
            self.sink.item_removed(old)

    def error(self, message: str, kind: str = "error") -> BannerItem:
        """An ``ErrorEvent``: what happened and what the user can do (links the window acts on)."""
        if kind == "executor":  # the session's process is gone: say which, offer a restart
            return self.add_banner(
                "error", message + " " + self.translate("MainWindow", "The conversation is kept; Restart session "
                                                        "resumes it in a new process."),
                [("restart", self.translate("MainWindow", "Restart session"))], key="error:executor")
        actions = [("retry", self.translate("MainWindow", "Retry the last message"))]
        if kind in ("auth", "model", "model_not_found", "connection"):
            actions.append(("settings", self.translate("MainWindow", "Open settings")))
        return self.add_banner("error", message, actions, key=f"error:{kind}")

    def show_retry(self, attempt: int, max_attempts: int, delay_s: float, error: str) -> RetryItem:
        """One retry card per request, updated in place by every further retry."""
        item = self.retry
        fresh = item is None or item.finished is not None
        if fresh:
            self.close_text()
            item = RetryItem()
            self.retry = item
        assert item is not None
        item.attempt, item.max_attempts, item.error = attempt, max_attempts, error
        item.deadline = self.clock() + max(0.0, delay_s)
        item.finished = None
        if fresh:
            self._append(item)
        else:
            self.sink.item_changed(item)
        return item

    def retry_over(self, outcome: RetryOutcome = "ok") -> None:
        item, self.retry = self.retry, None
        if item is not None and item.finished is None:
            item.finished = outcome
            self.sink.item_changed(item)

    # ----- the end of a turn ---------------------------------------------------------------------
    def stop_requested(self) -> None:
        """Stop was pressed: calls that end with an error from now on were stopped, not failed."""
        self.stop_at = min(self.stop_at, self.clock())
        for card in self.running:
            if card.state == "running":
                card.progress = self.translate("ConversationView", "stopping")
                self.sink.item_changed(card)

    def end_turn(self, reason: TurnFinishReason, error: str | None = None) -> None:
        self.close_text()
        aborted = reason.startswith("aborted")
        self.retry_over("cancelled" if aborted else "failed" if reason == "model_error" else "ok")
        for card in list(self.running):
            if card.state in ("running", "waiting"):
                self._set(card, "cancelled", self.translate("ConversationView", "stopped") if aborted
                          else self.translate("ConversationView", "interrupted"))
                self.sink.item_changed(card)
        self.running.clear()
        if aborted:
            for card in self.cards.values():  # a call cut short by Stop reads "stopped", not an error
                if card.state == "error" and card.ended is not None and card.ended >= self.stop_at:
                    self._set(card, "cancelled", self.translate("ConversationView", "stopped"))
                    self.sink.item_changed(card)
            self.add_banner("interrupted", self.translate("ConversationView", "Interrupted by you. The transcript is "
                                                          "intact; send a new message to continue."))
        elif reason == "max_turns":
            self.add_banner("notice", self.translate("ConversationView", "Stopped after the maximum number of turns."))
        elif reason in ("stop_hook_prevented", "hook_stopped", "prompt_blocked"):
            self.add_banner("notice", self.translate("ConversationView", "A hook stopped this turn.")
                            + (f" {error}" if error else ""))
        self.stop_at = float("inf")

    # ----- history -------------------------------------------------------------------------------
    def replay(self, ops: list[HistoryOp], limit: int = 60) -> BannerItem | None:
        """Show the last ``limit`` operations of a resumed session. Returns the "earlier items are not
        shown" banner (its link, ``history:N``, asks for N) when some were left out."""
        steps = self.replay_steps(ops, limit)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def replay_steps(self, ops: list[HistoryOp], limit: int = 60) -> Generator[None, None, BannerItem | None]:
        """``replay`` one operation per step (a caller on the Qt thread paints between steps); its value is
        ``replay``'s."""
        self.clear()
        start = max(0, len(ops) - limit)
        more = None
        if start:
            more = self.add_banner("notice", self.translate("ConversationView", "{0} earlier items are not shown.")
                                   .format(start),
                                   [(f"history:{limit + 200}", self.translate("ConversationView", "Show more"))])
        names: dict[str, str] = {}
        last_batch: list[ToolItem] = []  # the calls of the last assistant message: an interrupt cut them short
        previous = ""
        for op in ops[start:]:
            kind = op[0]
            if kind == "user":
                self.user_prompt(op[1])
            elif kind == "text":
                self.text(op[1])
            elif kind == "tool":
                self.close_text()
                if previous != "tool":
                    last_batch = []
                names[op[1]] = op[2]
                last_batch.append(self.start_tool(op[1], op[2], op[3]))
            elif kind == "result" and op[1] in self.cards:
                self.finish_tool(op[1], names.get(op[1], ""), op[2], op[3], op[4] if len(op) > 4 else None)
            elif kind == "notice":
                for card in last_batch:  # as live after Stop: a call the interrupt ended reads "stopped"
                    if card.state == "error":
                        self._set(card, "cancelled", self.translate("ConversationView", "stopped"))
                        self.sink.item_changed(card)
                last_batch = []
                self.add_banner("interrupted", self.translate("ConversationView", "Interrupted by you."))
            previous = kind
            yield
        self.close_text()
        for card in list(self.running):  # a call without a result (crash, kill): not running any more
            self._set(card, "cancelled", self.translate("ConversationView", "no result"))
            self.sink.item_changed(card)
        self.running.clear()
        return more

    def clear(self) -> None:
        self.close_text()
        self.items.clear()
        self.cards.clear()
        self.banners.clear()
        self.retry = None
        self.running.clear()
        self.sink.items_cleared()
