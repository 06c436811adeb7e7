"""Model text as Markdown: ``MarkdownBlock``, one message that grows with its text.

A message is a column of *segments*: runs of prose (``_Prose``, a text view at reading width, about 96 characters)
and code blocks (``CodeView``). A code block is highlighted with pygments (``ui/highlight.py``), never wraps, and
scrolls sideways **inside itself** — its own horizontal scroll bar — so a wide line moves only its code, never the
message's prose (at 900×600 a wide block scrolled the whole message before). It shows a Copy button while hovered
that copies the code exactly as written.

Streaming re-renders only what changed: the fences are found again in the whole text (cheap), segments whose text is
unchanged are kept, and a growing prose run re-renders only its tail after the last paragraph break (at most every
40 ms). Find (``find.py``) sees the message as one text — the segments' texts joined by newlines (``toPlainText``)
— and marks matches with ``mark_matches``.
"""

from __future__ import annotations

import math
import re
from typing import Iterator

from PySide6.QtCore import QRect, Qt, QTimer
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPalette, QPen, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QApplication, QFrame, QTextBrowser, QTextEdit, QToolButton, QWidget

from desktop_agent.ui import highlight
from desktop_agent.ui.conversation.column import Column
from desktop_agent.ui.highlight import PlainSpacesCopy, is_dark, mono_font

READING_CHARS = 96  # prose wraps at about this many characters, however wide the pane
GAP = 4  # between segments
_FENCE = re.compile(r"^```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:^```[ \t]*$|\Z)", re.S | re.M)


def _stable_boundary(text: str) -> int:
    """Index just after the last paragraph break that is not inside a code fence (0 if none)."""
    cut = text.rfind("\n\n")
    while cut > 0:
        head = text[:cut]
        if len(re.findall(r"^```", head, re.M)) % 2 == 0:
            return cut + 2
        cut = text.rfind("\n\n", 0, cut)
    return 0


def split_segments(text: str) -> list[tuple[str, str, str]]:
    """``(kind, text, lang)`` of each segment: ``prose`` runs (blank ones dropped) and ``code`` blocks (an unclosed
    fence is code to the end)."""
    out: list[tuple[str, str, str]] = []
    pos = 0
    for m in _FENCE.finditer(text):
        prose = text[pos:m.start()].strip("\n")
        if prose.strip():
            out.append(("prose", prose, ""))
        out.append(("code", m.group(2).rstrip("\n"), m.group(1)))
        pos = m.end()
    rest = text[pos:].strip("\n")
    if rest.strip():
        out.append(("prose", rest, ""))
    return out


class _Segment(PlainSpacesCopy, QTextBrowser):
    """What prose and code share: no frame, no vertical scrolling (the conversation scrolls), copy with plain
    spaces; a vertical wheel goes to the conversation."""

    kind = ""

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setOpenExternalLinks(True)
        self.viewport().setAutoFillBackground(False)
        self.source_text = ""  # the Markdown (prose) or code it shows (QTextBrowser.source() is its URL)

    def height_for(self, width: int) -> int:
        """The height the segment needs at ``width`` pixels."""
        raise NotImplementedError

    def wheelEvent(self, event) -> None:  # noqa: N802 - sideways in a wide code block; else the conversation's
        delta = event.angleDelta()
        if abs(delta.x()) > abs(delta.y()) and self.horizontalScrollBar().maximum() > 0:
            super().wheelEvent(event)
            return
        event.ignore()


class _Prose(_Segment):
    """A run of Markdown prose at reading width, streamed: the part before its last paragraph break is rendered
    once and stays; only the tail after it is replaced."""

    kind = "prose"

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setObjectName("markdownProse")
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.document().setDocumentMargin(0)
        self._stable_len = 0  # characters of source rendered for good
        self._stable_pos = 0  # document position where that part ends
        self.viewport().setMouseTracking(True)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 - the pointer is on prose: no code block's Copy shows
        super().mouseMoveEvent(event)
        block = self.parentWidget()
        if block is not None:
            for view in block.findChildren(CodeView):
                view.show_copy(False)

    def set_source(self, text: str) -> None:
        if text == self.source_text:
            return
        doc = self.document()
        if not text.startswith(self.source_text[:self._stable_len]) or len(text) < self._stable_len:
            doc.clear()  # replaced, not appended: start over
            self._stable_len, self._stable_pos = 0, 0
        self.source_text = text
        cut = text.rfind("\n\n")
        boundary = cut + 2 if cut > 0 else 0
        cursor = QTextCursor(doc)
        cursor.setPosition(self._stable_pos)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        if boundary > self._stable_len:
            self._insert(cursor, text[self._stable_len:boundary])
            cursor.movePosition(QTextCursor.MoveOperation.End)
            self._stable_len, self._stable_pos = boundary, cursor.position()
        self._insert(cursor, text[self._stable_len:])

    def _insert(self, cursor: QTextCursor, text: str) -> None:
        if not text.strip():
            return
        if cursor.position() > 0:
            cursor.insertBlock()
        cursor.insertMarkdown(text.strip("\n"))

    def height_for(self, width: int) -> int:
        doc = self.document()
        if self.lineWrapColumnOrWidth() != width or self.lineWrapMode() != QTextBrowser.LineWrapMode.FixedPixelWidth:
            self.setLineWrapMode(QTextBrowser.LineWrapMode.FixedPixelWidth)
            self.setLineWrapColumnOrWidth(width)
        if doc.textWidth() != width:
            doc.setTextWidth(width)
        return int(math.ceil(doc.size().height())) + 2


class CodeView(_Segment):
    """One code block: highlighted, never wrapped, scrolling sideways inside itself; a Copy button while hovered."""

    kind = "code"
    PAD = 8

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setObjectName("codeBlock")
        self.setAccessibleName(self.tr("Code block"))
        self.setLineWrapMode(QTextBrowser.LineWrapMode.NoWrap)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.document().setDocumentMargin(self.PAD)
        self.viewport().setAutoFillBackground(True)
        self.lang = ""
        self._dark: bool | None = None
        self._copy_button: QToolButton | None = None  # made on the first hover
        self.setMouseTracking(True)

    def set_code(self, code: str, lang: str) -> None:
        dark = is_dark(self)
        if code == self.source_text and lang == self.lang and dark == self._dark:
            return
        self.source_text, self.lang, self._dark = code, lang, dark
        c = highlight.colors(dark)
        pal = self.viewport().palette()
        pal.setColor(QPalette.ColorRole.Base, QColor(c.code_bg))
        pal.setColor(QPalette.ColorRole.Window, QColor(c.code_bg))
        self.viewport().setPalette(pal)
        self.setHtml(highlight.highlight_code_html(code, lang, dark, mono_font().family()))
        block = self.document().begin()
        while block.isValid():  # lines keep their shape: the block scrolls sideways instead
            fmt = block.blockFormat()
            fmt.setNonBreakableLines(True)
            QTextCursor(block).setBlockFormat(fmt)
            block = block.next()

    def overflows(self, width: int) -> bool:
        return self.document().idealWidth() > width - 2 * self.frameWidth() + 0.5

    def height_for(self, width: int) -> int:
        h = int(math.ceil(self.document().size().height()))
        bar = self.horizontalScrollBar().sizeHint().height() if self.overflows(width) else 0
        return h + bar + 2 * self.frameWidth()

    # ----- copying -----------------------------------------------------------------------------
    @property
    def copy_button(self) -> QToolButton:
        if self._copy_button is None:
            button = QToolButton(self)
            button.setObjectName("copyCodeButton")
            button.setText(self.tr("Copy"))
            button.setToolTip(self.tr("Copy this code block"))
            button.setAccessibleName(self.tr("Copy code"))
            button.setAutoRaise(True)
            button.setCursor(Qt.CursorShape.PointingHandCursor)
            button.hide()
            button.clicked.connect(self._copy)
            self._copy_button = button
        return self._copy_button

    def _copy(self) -> None:
        QApplication.clipboard().setText(self.source_text)
        self.copy_button.setText(self.tr("Copied"))

    def show_copy(self, on: bool) -> None:
        if not on:
            if self._copy_button is not None:
                self._copy_button.hide()
            return
        button = self.copy_button
        button.setText(self.tr("Copy"))
        hint = button.sizeHint()
        button.setGeometry(self.width() - hint.width() - 4, 4, hint.width(), hint.height())
        button.show()
        button.raise_()

    def enterEvent(self, event) -> None:  # noqa: N802
        super().enterEvent(event)
        self.show_copy(True)

    def leaveEvent(self, event) -> None:  # noqa: N802
        super().leaveEvent(event)
        if self._copy_button is None or not self._copy_button.underMouse():
            self.show_copy(False)


class MarkdownBlock(QWidget):
    """Model text: prose segments and code blocks stacked at reading width; grows with its text.

    ``code_blocks``: ``(start, end, code)`` of each code block, offsets in ``toPlainText()``."""

    def __init__(self, column: Column, parent: QWidget | None = None):
        super().__init__(parent)
        self.column = column
        self.text = ""
        self.closed = False
        self.segments: list[_Segment] = []
        self.setObjectName("markdownBlock")
        self.setAccessibleName(self.tr("Agent message"))
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(40)
        self._timer.timeout.connect(self.render_text)
        self._rendered_len = -1
        self._width = 0

    # ----- text --------------------------------------------------------------------------------
    def append_text(self, chunk: str) -> None:
        self.set_text(self.text + chunk)

    def set_text(self, text: str) -> None:
        """The block's whole text so far (streaming): rendered at most every 40 ms."""
        if text == self.text:
            return
        self.text = text
        if not self._timer.isActive():
            self._timer.start()

    def flush(self) -> None:
        if self._timer.isActive():
            self._timer.stop()
        self.render_text()

    def render_text(self) -> None:
        """Render what changed: kept segments stay as they are; changed ones update, new ones are added."""
        if self._rendered_len == len(self.text):
            return
        self._rendered_len = len(self.text)
        parts = split_segments(self.text)
        for i, (kind, source, lang) in enumerate(parts):
            seg = self.segments[i] if i < len(self.segments) else None
            if seg is not None and seg.kind != kind:
                for old in self.segments[i:]:
                    old.deleteLater()
                del self.segments[i:]
                seg = None
            if seg is None:
                seg = _Prose(self) if kind == "prose" else CodeView(self)
                self.segments.append(seg)
                seg.show()
            if isinstance(seg, CodeView):
                seg.set_code(source, lang)
            elif isinstance(seg, _Prose):
                seg.set_source(source)
        for old in self.segments[len(parts):]:
            old.deleteLater()
        del self.segments[len(parts):]
        self._place(self.width())
        self.column.child_changed(self)

    # ----- layout ------------------------------------------------------------------------------
    def reading_width(self, w: int) -> int:
        return max(50, min(w, QFontMetrics(self.font()).averageCharWidth() * READING_CHARS))

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, w: int) -> int:  # noqa: N802
        width = self.reading_width(w)
        heights = [s.height_for(width - 2) + 2 if isinstance(s, CodeView) else s.height_for(width)
                   for s in self.segments]
        return sum(heights) + GAP * max(0, len(heights) - 1) + (0 if heights else 1)

    def _place(self, w: int) -> None:
        if w <= 0:
            return
        width = self.reading_width(w)
        y = 0
        for seg in self.segments:
            if isinstance(seg, CodeView):  # inside a 1 px frame (paintEvent)
                h = seg.height_for(width - 2)
                seg.setGeometry(1, y + 1, width - 2, h)
                y += h + 2 + GAP
            else:
                h = seg.height_for(width)
                seg.setGeometry(0, y, width, h)
                y += h + GAP

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._place(self.width())

    def paintEvent(self, event) -> None:  # noqa: N802 - a frame around each code block
        if not any(isinstance(s, CodeView) for s in self.segments):
            return
        c = highlight.colors(is_dark(self))
        p = QPainter(self)
        p.setPen(QPen(QColor(c.border), 1))
        for seg in self.segments:
            if isinstance(seg, CodeView):
                r: QRect = seg.geometry()
                p.drawRect(r.adjusted(-1, -1, 0, 0))
        p.end()

    # ----- reading it as one text (find, copy, tests) ------------------------------------------
    def code_views(self) -> list[CodeView]:
        return [s for s in self.segments if isinstance(s, CodeView)]

    def _offsets(self) -> Iterator[tuple[int, _Segment, str]]:
        at = 0
        for seg in self.segments:
            text = seg.toPlainText()
            yield at, seg, text
            at += len(text) + 1

    def toPlainText(self) -> str:  # noqa: N802 - as QTextEdit's
        return "\n".join(seg.toPlainText() for seg in self.segments)

    @property
    def code_blocks(self) -> list[tuple[int, int, str]]:
        return [(at, at + len(text), seg.source_text) for at, seg, text in self._offsets() if isinstance(seg, CodeView)]

    @property
    def copy_button(self) -> QToolButton:
        """The Copy button of the first code block (tests)."""
        return self.code_views()[0].copy_button

    def find_text(self, needle: str) -> bool:
        """Select the first occurrence of ``needle`` (case-insensitive), as QTextEdit.find does."""
        for seg in self.segments:
            seg.moveCursor(QTextCursor.MoveOperation.Start)
            if seg.find(needle):
                return True
        return False

    def mark_matches(self, matches: list[tuple[int, bool]], length: int, all_bg: QColor, cur_bg: QColor) -> None:
        """Mark each match (offset in ``toPlainText()``, current or not) in its segment."""
        spans = list(self._offsets())
        per: dict[int, list[QTextEdit.ExtraSelection]] = {}
        for at, is_cur in matches:
            for start, seg, text in spans:
                if start <= at < start + len(text) + 1:
                    sel = QTextEdit.ExtraSelection()
                    cur = QTextCursor(seg.document())
                    cur.setPosition(min(at - start, len(text)))
                    cur.setPosition(min(at - start + length, len(text)), QTextCursor.MoveMode.KeepAnchor)
                    sel.cursor = cur
                    fmt = QTextCharFormat()
                    fmt.setBackground(cur_bg if is_cur else all_bg)
                    sel.format = fmt
                    per.setdefault(id(seg), []).append(sel)
                    break
        for seg in self.segments:
            sels = per.get(id(seg), [])
            if sels or seg.extraSelections():
                seg.setExtraSelections(sels)

    def extraSelections(self) -> list[QTextEdit.ExtraSelection]:  # noqa: N802 - every segment's marks
        return [sel for seg in self.segments for sel in seg.extraSelections()]

    def top_of_offset(self, at: int) -> int:
        """The y (in this block) of the text at offset ``at`` of ``toPlainText()``."""
        for start, seg, text in self._offsets():
            if start <= at <= start + len(text):
                cur = QTextCursor(seg.document())
                cur.setPosition(min(at - start, len(text)))
                return seg.y() + seg.cursorRect(cur).top()
        return 0

    def selectAll(self) -> None:  # noqa: N802
        for seg in self.segments:
            seg.selectAll()

    def copy(self) -> None:
        """The selected text of every segment, joined, with plain spaces."""
        parts = [seg.textCursor().selection().toPlainText() for seg in self.segments if seg.textCursor().hasSelection()]
        QApplication.clipboard().setText("\n".join(parts).replace("\u00a0", " "))


__all__ = ["CodeView", "MarkdownBlock", "READING_CHARS", "split_segments"]
