"""The conversation's column: children stacked vertically with cached heights, no QLayout.

Appending a block or growing the last one costs O(1): no layout pass over the history. A child that
changes height calls ``child_changed`` and only what follows it moves.
"""

from __future__ import annotations

from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QWidget

MARGIN = 16
SPACING = 8


class Column(QWidget):
    """Children stacked vertically with cached heights; appending is O(1), no QLayout involved."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.items: list[QWidget] = []
        self._index: dict[QWidget, int] = {}  # position of each child in ``items``
        self._gaps: list[int] = []  # the space above each child
        self._tops: list[int] = []
        self._heights: list[int] = []
        self._bottom = SPACING

    def _content_width(self) -> int:
        return max(100, self.width() - 2 * MARGIN)

    def _measure(self, w: QWidget, width: int) -> int:
        if w.hasHeightForWidth():
            return max(1, w.heightForWidth(width))
        return max(1, w.sizeHint().height())

    def append(self, w: QWidget, gap: int = SPACING) -> None:
        w.setParent(self)
        self._index[w] = len(self.items)
        width = self._content_width()
        h = self._measure(w, width)
        top = self._bottom + (gap if self.items else 0)
        self.items.append(w)
        self._gaps.append(gap)
        self._tops.append(top)
        self._heights.append(h)
        w.setGeometry(MARGIN, top, width, h)
        w.show()
        self._bottom = top + h
        self.setFixedHeight(self._bottom + MARGIN)

    def insert_after(self, anchor: QWidget, w: QWidget, gap: int = 2) -> None:
        """Put ``w`` just below ``anchor`` (a checkpoint marker under its user message); at the end without it."""
        i = self._index.get(anchor)
        if i is None:
            self.append(w, gap)
            return
        w.setParent(self)
        width = self._content_width()
        h = self._measure(w, width)
        self.items.insert(i + 1, w)
        self._gaps.insert(i + 1, gap)
        self._tops.insert(i + 1, 0)
        self._heights.insert(i + 1, h)
        for j in range(i + 1, len(self.items)):
            self._index[self.items[j]] = j
        w.setGeometry(MARGIN, 0, width, h)
        w.show()
        self._relayout(i + 1)

    def index_of(self, w: QWidget | None) -> int | None:
        """Where ``w`` is in the column (None: not one of its children)."""
        return self._index.get(w) if w is not None else None

    def child_changed(self, w: QWidget) -> None:
        """A child's height may have changed: re-measure it and move what follows."""
        i = self._index.get(w)
        if i is None:
            return
        h = self._measure(w, self._content_width())
        if h == self._heights[i]:
            return
        self._heights[i] = h
        w.resize(w.width(), h)
        self._relayout(i + 1)

    def _relayout(self, start: int) -> None:
        bottom = self._tops[start - 1] + self._heights[start - 1] if start > 0 else SPACING
        for j in range(start, len(self.items)):
            top = bottom + (self._gaps[j] if j else 0)
            self._tops[j] = top
            if self.items[j].y() != top:
                self.items[j].move(MARGIN, top)
            bottom = top + self._heights[j]
        self._bottom = bottom
        self.setFixedHeight(self._bottom + MARGIN)

    def relayout_all(self) -> None:
        """Width changed: every child is re-measured (only on resize, never per event)."""
        width = self._content_width()
        for j, w in enumerate(self.items):
            self._heights[j] = self._measure(w, width)
            w.resize(width, self._heights[j])
        if self.items:
            self._tops[0] = SPACING
            self.items[0].move(MARGIN, SPACING)
            self._relayout(1)
        else:
            self.setFixedHeight(self._bottom + MARGIN)

    def remove(self, w: QWidget) -> None:
        """Take one child out (a replaced banner) and move what follows up."""
        i = self._index.pop(w, None)
        if i is None:
            return
        del self.items[i], self._gaps[i], self._tops[i], self._heights[i]
        for j in range(i, len(self.items)):
            self._index[self.items[j]] = j
        w.hide()
        w.deleteLater()
        if self.items:
            if i == 0:
                self._tops[0] = SPACING
                self.items[0].move(MARGIN, SPACING)
                self._relayout(1)
            else:
                self._relayout(i)
        else:
            self._bottom = SPACING
            self.setFixedHeight(self._bottom + MARGIN)

    def paintEvent(self, event) -> None:  # noqa: N802 - opaque widget: fill what Qt asks for
        p = QPainter(self)
        p.fillRect(event.rect(), self.palette().color(QPalette.ColorRole.Base))
        p.end()

    def clear(self) -> None:
        for w in self.items:
            w.deleteLater()
        self.items, self._gaps, self._tops, self._heights = [], [], [], []
        self._index.clear()
        self._bottom = SPACING
        self.setFixedHeight(self._bottom + MARGIN)

    def top_of(self, w: QWidget) -> int:
        i = self._index.get(w, 0)
        return self._tops[i] if i < len(self._tops) else 0
