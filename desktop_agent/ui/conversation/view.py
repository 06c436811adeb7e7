"""The conversation pane: ``ConversationView``, the scrolling container that renders the presenter.

The window feeds it each ``AgentEvent`` once (``handle_event``: the controller's ``agent_event`` signal, the
stream's events and the ones the controller makes on cancel, crash or executor death) and what is no event
(``add_user``, ``stop_requested``, the window's own banners, ``replay``); every call goes to the
``ConversationPresenter`` (``presenter.py``, no widgets), which tells this view, as its sink, which item was
appended, changed or removed.
The view makes one widget per item (``cards.py``, ``markdown.py``) in an append-only ``Column`` and keeps the
scrolling: it sticks to the bottom while the user is there. Built for long sessions: it never re-renders history.
Find (Ctrl+F) is ``find.py``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from PySide6.QtCore import QCoreApplication, Qt, QTimer, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QFrame, QLabel, QWidget

from desktop_agent.core.events import AgentEvent
from desktop_agent.ui.conversation.cards import (
    HEADER_H, Banner, RetryCard, ThinkingCard, ToolCard, UserBlock,
)
from desktop_agent.ui.conversation.column import SPACING, Column
from desktop_agent.ui.conversation.find import ConversationFind
from desktop_agent.ui.conversation.markdown import MarkdownBlock
from desktop_agent.ui.conversation.presenter import (
    BannerItem, BannerKind, ConversationPresenter, HistoryOp, Item, RetryItem, TextItem, ThinkingItem, ToolItem,
    UserItem, history_ops,
)


def qt_translate(context: str, source: str, disambiguation: str | None = None, n: int = -1) -> str:
    return QCoreApplication.translate(context, source, disambiguation, n)


REPLAY_SLICE_S = 0.025  # a resumed session's replay: the longest stretch on the Qt thread between two paints


class ConversationView(ConversationFind):
    """The conversation pane, fed by ``handle_event`` (the controller's ``agent_event``); never re-renders history."""

    card_selected = Signal(str)  # tool_use_id
    banner_action = Signal(str)  # "retry", "settings"
    rewind_requested = Signal(str)  # a checkpoint marker's "Rewind…": the user message id

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("conversation")
        self.setAccessibleName(self.tr("Conversation"))
        self.setWidgetResizable(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.column = Column()
        self.column.setObjectName("conversationColumn")
        # Opaque + static contents: scrolling and growing blit the pixels already painted and repaint only
        # what is new (2 widget paints per appended card instead of every visible one).
        self.column.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)
        self.column.setAttribute(Qt.WidgetAttribute.WA_StaticContents, True)
        self._apply_style()
        self.setWidget(self.column)
        self.presenter = ConversationPresenter(self, qt_translate)
        self._widgets: dict[Item, QWidget] = {}  # the widget of each shown item
        self.cards: dict[str, ToolCard] = {}
        self.banners: dict[str, Banner] = {}  # keyed banners (one per key)
        self.selected: ToolCard | None = None
        self._history_ops: list[HistoryOp] = []
        self._stick = True
        self._spinner = QTimer(self)
        self._spinner.setInterval(80)
        self._spinner.timeout.connect(self._tick)
        self.verticalScrollBar().valueChanged.connect(self._on_scrolled)
        self.verticalScrollBar().rangeChanged.connect(self._on_range)
        self.empty_label: QLabel | None = None
        self.markers: dict[str, QWidget] = {}  # checkpoint markers by user message id
        self.last_user_block: QWidget | None = None

    def _apply_style(self) -> None:
        """Blocks paint their own backgrounds: no style sheet here (one on the view would make every
        block's polish go through QStyleSheetStyle, ~0.7 ms each)."""
        self.column.setBackgroundRole(QPalette.ColorRole.Base)

    # ----- what the presenter holds ------------------------------------------------------------
    @property
    def cwd(self) -> str | None:
        """The folder tool paths are shown relative to."""
        return self.presenter.cwd

    @cwd.setter
    def cwd(self, folder: str | None) -> None:
        self.presenter.cwd = folder

    @property
    def retry_card(self) -> RetryCard | None:
        """The retry card of the current request, while it waits or retries."""
        item = self.presenter.retry
        card = self._widgets.get(item) if item is not None else None
        return card if isinstance(card, RetryCard) else None

    @property
    def current_text(self) -> MarkdownBlock | None:
        item = self.presenter.current_text
        block = self._widgets.get(item) if item is not None else None
        return block if isinstance(block, MarkdownBlock) else None

    # ----- the presenter's sink: one widget per item -------------------------------------------
    def item_appended(self, item: Item) -> None:
        self._hide_empty()
        widget: QWidget
        match item:
            case UserItem(label=None):
                widget = UserBlock(item.text)
                self.column.append(widget, gap=SPACING * 3 if self.column.items else SPACING)
                self._stick = True
                self._scroll_to_bottom_later()
            case UserItem():
                widget = UserBlock(item.text, item.label)  # deny feedback
                self.column.append(widget)
                self._scroll_to_bottom_later()
            case TextItem():
                widget = MarkdownBlock(self.column)
                self.column.append(widget)
            case ThinkingItem():
                widget = ThinkingCard(item, self.column)
                widget.clicked.connect(lambda _c: None)
                self.column.append(widget)
            case ToolItem():
                widget = ToolCard(item, self.column)
                widget.clicked.connect(self._card_clicked)
                self.cards[item.tool_use_id] = widget
                self.column.append(widget)
                if not self._spinner.isActive():
                    self._spinner.start()
            case BannerItem():
                widget = Banner(item.kind, item.text, item.actions)
                widget.key = item.key
                widget.linkActivated.connect(self.banner_action.emit)
                self.column.append(widget)
                if item.key is not None:
                    self.banners[item.key] = widget
                self._scroll_to_bottom_later()
            case RetryItem():
                widget = RetryCard(item)
                widget.linkActivated.connect(self.banner_action.emit)
                self.column.append(widget)
                widget.sync()
                self._scroll_to_bottom_later()
        self._widgets[item] = widget

    def item_changed(self, item: Item) -> None:
        widget = self._widgets.get(item)
        if isinstance(widget, MarkdownBlock) and isinstance(item, TextItem):
            widget.set_text(item.text)
            if item.closed and not widget.closed:
                widget.flush()
                widget.closed = True
        elif isinstance(widget, (ToolCard, ThinkingCard, RetryCard)):
            widget.sync()

    def item_removed(self, item: Item) -> None:
        widget = self._widgets.pop(item, None)
        if isinstance(item, BannerItem) and item.key is not None and self.banners.get(item.key) is widget:
            del self.banners[item.key]
        if widget is not None:
            self.column.remove(widget)

    def items_cleared(self) -> None:
        self.column.clear()
        self._widgets.clear()
        self.cards.clear()
        self.banners.clear()
        self.markers.clear()
        self.last_user_block = None
        self.selected = None

    # ----- feeding it --------------------------------------------------------------------------
    def handle_event(self, event: AgentEvent) -> None:
        """One ``AgentEvent`` of the running turn (the presenter's exhaustive match decides)."""
        self.presenter.apply(event)

    def show_empty(self, text: str) -> None:
        if self.empty_label is None:
            self.empty_label = QLabel(self.viewport())
            self.empty_label.setObjectName("emptyState")
            self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.empty_label.setWordWrap(True)
            self.empty_label.setTextFormat(Qt.TextFormat.RichText)
        self.empty_label.setText(text)
        self.empty_label.setGeometry(self.viewport().rect().adjusted(32, 32, -32, -32))
        self.empty_label.show()

    def _hide_empty(self) -> None:
        if self.empty_label is not None and self.empty_label.isVisible():
            self.empty_label.hide()

    def _widget(self, item: Item) -> Any:
        return self._widgets[item]

    def close_text(self) -> None:
        self.presenter.close_text()

    def add_user(self, prompt: str) -> UserBlock:
        block: UserBlock = self._widget(self.presenter.user_prompt(prompt))
        self.last_user_block = block
        return block

    def add_checkpoint_marker(self, message_id: str, files: list[str], insertions: int, deletions: int,
                              under: QWidget | None = None) -> Any:
        """The checkpoint marker of a turn, just under its user message (``under``; the last one by default)."""
        from desktop_agent.ui.conversation.checkpoints import CheckpointMarker

        old = self.markers.pop(message_id, None)
        if old is not None:
            self.column.remove(old)
        marker = CheckpointMarker(message_id, files, insertions, deletions)
        marker.rewind_requested.connect(self.rewind_requested)
        anchor = under if under is not None else self.last_user_block
        self.column.insert_after(anchor, marker) if anchor is not None else self.column.append(marker)
        self.markers[message_id] = marker
        return marker

    def append_text(self, chunk: str) -> None:
        self.presenter.text(chunk)

    def start_tool(self, tool_use_id: str, name: str, inp: dict[str, Any]) -> ToolCard:
        return self._widget(self.presenter.start_tool(tool_use_id, name, inp))

    def finish_tool(self, tool_use_id: str, name: str, content: Any, is_error: bool,
                    data: dict[str, Any] | None = None) -> None:
        self.presenter.finish_tool(tool_use_id, name, content, is_error, data)

    def add_banner(self, kind: BannerKind, text: str, actions: list[tuple[str, str]] | None = None,
                   key: str | None = None) -> Banner:
        """A banner card. With ``key``, one banner per key: an earlier one of the same key is removed
        (the new one says what is true now), so set-up and error banners never pile up."""
        return self._widget(self.presenter.add_banner(kind, text, actions, key))

    def remove_banner(self, key: str) -> None:
        self.presenter.remove_banner(key)

    def show_retry(self, attempt: int, max_attempts: int, delay_s: float, error: str) -> RetryCard:
        """One retry card per request, updated in place by every further retry."""
        return self._widget(self.presenter.show_retry(attempt, max_attempts, delay_s, error))

    def stop_requested(self) -> None:
        """Stop was pressed: calls that end with an error from now on were stopped, not failed."""
        self.presenter.stop_requested()

    # ----- history -----------------------------------------------------------------------------
    history_ops = staticmethod(history_ops)

    _replays = 0  # replays begun: a slice of an async one that finds it changed stops

    def replay(self, ops: list[HistoryOp], limit: int = 60) -> None:
        """Show the last ``limit`` operations of a resumed session; older ones load on request."""
        self._history_ops = ops
        self._replays = self._replays + 1  # an async replay under way gives up
        self._replayed(self.presenter.replay(ops, limit))

    async def replay_async(self, ops: list[HistoryOp], limit: int = 60, budget_s: float = REPLAY_SLICE_S) -> None:
        """``replay`` in slices of at most ``budget_s`` on the Qt thread, the window painting between them (a
        resumed session's newest items lay out markdown: tens of milliseconds in all)."""
        self._history_ops = ops
        self._replays = generation = self._replays + 1
        steps = self.presenter.replay_steps(ops, limit)
        deadline = time.monotonic() + budget_s
        while True:
            try:
                next(steps)
            except StopIteration as done:
                self._replayed(done.value)
                return
            if time.monotonic() >= deadline:
                await asyncio.sleep(0.005)  # a paint between slices (as ``show_history`` does before the panel)
                if self._replays != generation:  # another replay (or a clear) took the view meanwhile
                    steps.close()
                    return
                deadline = time.monotonic() + budget_s

    def _replayed(self, more: BannerItem | None) -> None:
        if more is not None:
            banner = self._widget(more)
            banner.linkActivated.disconnect()
            banner.linkActivated.connect(lambda href: self.replay(self._history_ops, int(href.split(":")[1])))
        self._stick = True
        self._scroll_to_bottom_later()

    def clear(self) -> None:
        self._replays += 1
        self.presenter.clear()

    # ----- selection and scrolling -------------------------------------------------------------
    def _card_clicked(self, card: ToolCard) -> None:
        self.select_card(card.tool_use_id)
        self.card_selected.emit(card.tool_use_id)

    def select_card(self, tool_use_id: str, scroll: bool = False) -> None:
        if self.selected is not None:
            self.selected.selected = False
            self.selected.update()
        self.selected = self.cards.get(tool_use_id)
        if self.selected is not None:
            self.selected.selected = True
            self.selected.update()
            if scroll:
                self._stick = False
                self.ensureVisible(0, self.column.top_of(self.selected) + HEADER_H // 2, 0,
                                   self.viewport().height() // 3)

    def _tick(self) -> None:
        if not self.presenter.running:
            self._spinner.stop()
            return
        top = self.verticalScrollBar().value()
        bottom = top + self.viewport().height()
        for item in self.presenter.running:
            card = self.cards.get(item.tool_use_id)
            if card is not None and card.state == ToolCard.RUNNING:
                card.spin = (card.spin + 1) % 12
                if top - HEADER_H <= card.y() <= bottom:
                    card.update()

    def _on_scrolled(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._stick = value >= bar.maximum() - 4

    def _on_range(self, _min: int, maximum: int) -> None:
        if self._stick:
            self.verticalScrollBar().setValue(maximum)

    def _scroll_to_bottom_later(self) -> None:
        QTimer.singleShot(0, lambda: self.verticalScrollBar().setValue(self.verticalScrollBar().maximum()))

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        width = self.viewport().width()
        if self.column.width() != width:
            self.column.setFixedWidth(width)
            self.column.relayout_all()
        if self.empty_label is not None:
            self.empty_label.setGeometry(self.viewport().rect().adjusted(32, 32, -32, -32))

    def text_content(self) -> str:
        """Plain text of the whole conversation (tests, find, copy all)."""
        out = []
        for w in self.column.items:
            if isinstance(w, MarkdownBlock):
                w.flush()
                out.append(w.toPlainText())
            elif isinstance(w, UserBlock):
                out.append("you: " + w.prompt)
            elif isinstance(w, ToolCard):
                out.append(f"[{w.name} {w.arg} {w.state} {w.summary}]")
            elif isinstance(w, Banner):
                out.append(w.accessibleName())
        return "\n".join(out)
