"""Find in the conversation (Ctrl+F, the window's find bar): every match over the column's items, the
marks in the text blocks (the current one stronger), the current match selected and scrolled to.

``ConversationFind`` is a mixin of ``ConversationView``: it reads the view's column and scrolls it.
"""

from __future__ import annotations

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QScrollArea, QWidget

from desktop_agent.ui.conversation.cards import Banner, ToolCard, UserBlock
from desktop_agent.ui.conversation.column import Column
from desktop_agent.ui.conversation.markdown import MarkdownBlock
from desktop_agent.ui.highlight import is_dark


class ConversationFind(QScrollArea):
    """The find half of the conversation view."""

    column: Column
    _stick: bool

    def select_card(self, tool_use_id: str, scroll: bool = False) -> None:  # pragma: no cover - the view's
        raise NotImplementedError

    def find_item(self, needle: str, start_after: QWidget | None = None) -> QWidget | None:
        """Ctrl+F: the next item containing ``needle`` (case-insensitive); scrolls to it."""
        needle = needle.lower()
        items = self.column.items
        at = self.column.index_of(start_after)
        start = at + 1 if at is not None else 0
        for i in list(range(start, len(items))) + list(range(0, start)):
            w = items[i]
            text = ""
            if isinstance(w, MarkdownBlock):
                text = w.text
            elif isinstance(w, UserBlock):
                text = w.prompt
            elif isinstance(w, ToolCard):
                text = f"{w.name} {w.arg} {w.result}"
            elif isinstance(w, Banner):
                text = w.accessibleName()
            if needle in text.lower():
                self._stick = False
                self.ensureVisible(0, self.column.top_of(w), 0, 48)
                if isinstance(w, MarkdownBlock):
                    w.find_text(needle)
                return w
        return None

    def _searchable(self, w: QWidget) -> str:
        if isinstance(w, MarkdownBlock):
            w.flush()
            return w.toPlainText()
        if isinstance(w, UserBlock):
            return w.prompt
        if isinstance(w, ToolCard):
            return f"{w.name} {w.arg} {w.result}"
        if isinstance(w, Banner):
            return w.accessibleName()
        return ""

    def find_matches(self, needle: str) -> list[tuple[QWidget, int]]:
        """Every case-insensitive occurrence of ``needle``: (item, offset in its searchable text)."""
        out: list[tuple[QWidget, int]] = []
        low = needle.lower()
        if not low:
            return out
        for w in self.column.items:
            text = self._searchable(w).lower()
            at = text.find(low)
            while at >= 0:
                out.append((w, at))
                at = text.find(low, at + len(low))
        return out

    def highlight_matches(self, needle: str, matches: list[tuple[QWidget, int]], current: int) -> None:
        """Mark every match in the text blocks (the current one stronger), select the card or block of
        the current match and scroll to it. ``needle`` empty: clear the marks."""
        dark = is_dark(self)
        all_bg, cur_bg = (QColor("#5a4a00"), QColor("#b36b00")) if dark else (QColor("#fff3a3"), QColor("#ffb454"))
        by_block: dict[int, list[tuple[int, bool]]] = {}
        for i, (w, at) in enumerate(matches):
            if isinstance(w, MarkdownBlock):
                by_block.setdefault(id(w), []).append((at, i == current))
        for w in self.column.items:
            if isinstance(w, MarkdownBlock) and (id(w) in by_block or w.extraSelections()):
                w.mark_matches(by_block.get(id(w), []), len(needle), all_bg, cur_bg)
        if 0 <= current < len(matches):
            w = matches[current][0]
            if isinstance(w, ToolCard):
                self.select_card(w.tool_use_id)
            self._stick = False
            y = self.column.top_of(w)
            if isinstance(w, MarkdownBlock):
                y += w.top_of_offset(matches[current][1])
            self.ensureVisible(0, y, 0, 64)
