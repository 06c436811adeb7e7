"""Model text as Markdown: ``MarkdownBlock``, a text view that grows with its text.

Streaming re-renders only the tail after the last stable paragraph break (outside a code fence), at
most every 40 ms. Code blocks are highlighted with pygments (``ui/highlight.py``), never wrap (they
scroll sideways) and show a Copy button while hovered that copies the code exactly as written.
"""

from __future__ import annotations

import math
import re

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QFontMetrics, QTextCursor, QTextFrameFormat
from PySide6.QtWidgets import QApplication, QFrame, QTextBrowser, QToolButton, QWidget

from desktop_agent.ui import highlight
from desktop_agent.ui.conversation.column import Column
from desktop_agent.ui.highlight import PlainSpacesCopy, is_dark, mono_font

READING_CHARS = 96  # prose wraps at about this many characters, however wide the pane
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


class MarkdownBlock(PlainSpacesCopy, QTextBrowser):
    """Model text rendered as Markdown; code blocks highlighted with pygments. Grows with its text.

    A code block shows a Copy button at its top right while the mouse is over it; it copies the code
    exactly as the model wrote it. Copying a selection gives plain spaces (the rendering uses
    non-breaking ones to keep indentation)."""

    def __init__(self, column: Column, parent: QWidget | None = None):
        super().__init__(parent)
        self.column = column
        self.text = ""
        self.closed = False
        self.setObjectName("markdownBlock")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)  # wide code blocks
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setOpenExternalLinks(True)
        self.setAccessibleName(self.tr("Agent message"))
        self.viewport().setAutoFillBackground(False)
        self.document().setDocumentMargin(0)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(40)
        self._timer.timeout.connect(self.render)
        self._mono = mono_font()
        self._rendered_len = -1
        self._stable_len = 0  # characters of self.text rendered for good
        self._stable_pos = 0  # document position where that part ends
        self.code_blocks: list[tuple[int, int, str]] = []  # (first, last document position, code)
        self.viewport().setMouseTracking(True)
        self._copy_button: QToolButton | None = None  # made on the first hover of a code block
        self._hovered: tuple[int, int, str] | None = None

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
        self.render()

    def render(self) -> None:
        """Render what changed. Text before the last paragraph break (outside a code fence) is final
        and stays in the document; only the tail after it is replaced, so a long streamed answer costs
        O(tail) per frame instead of O(message)."""
        if self._rendered_len == len(self.text):
            return
        self._rendered_len = len(self.text)
        dark = is_dark(self)
        c = highlight.colors(dark)
        doc = self.document()
        boundary = _stable_boundary(self.text)
        cursor = QTextCursor(doc)
        if boundary < self._stable_len:  # text was replaced (not appended): start over
            doc.clear()
            self._stable_len, self._stable_pos = 0, 0
        # drop the old tail (and its code blocks)
        self.code_blocks = [b for b in self.code_blocks if b[1] < self._stable_pos]
        self._hover_code(None)
        cursor.setPosition(self._stable_pos)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        if boundary > self._stable_len:
            self._insert_segment(cursor, self.text[self._stable_len:boundary], dark, c, self._stable_pos > 0)
            cursor.movePosition(QTextCursor.MoveOperation.End)
            self._stable_len, self._stable_pos = boundary, cursor.position()
        self._insert_segment(cursor, self.text[self._stable_len:], dark, c, self._stable_pos > 0)
        self.column.child_changed(self)

    def _insert_segment(self, cursor: QTextCursor, text: str, dark: bool, c: highlight.DiffColors,
                        separate: bool) -> None:
        pos = 0
        first = not separate
        after_code = False
        for m in _FENCE.finditer(text):
            prose = text[pos:m.start()]
            if prose.strip():
                if not first and not after_code:
                    cursor.insertBlock()
                cursor.insertMarkdown(prose.strip("\n"))
                first = False
            self._insert_code(cursor, m.group(2), m.group(1), dark, c)
            first, after_code = False, True
            pos = m.end()
        rest = text[pos:]
        if rest.strip():
            if not first and not after_code:
                cursor.insertBlock()
            cursor.insertMarkdown(rest.strip("\n"))

    def _insert_code(self, cursor: QTextCursor, code: str, lang: str, dark: bool, c: highlight.DiffColors) -> None:
        fmt = QTextFrameFormat()
        fmt.setBackground(QColor(c.code_bg))
        fmt.setPadding(8)
        fmt.setTopMargin(4)
        fmt.setBottomMargin(4)
        fmt.setBorder(1)
        fmt.setBorderBrush(QColor(c.border))
        fmt.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
        frame = cursor.insertFrame(fmt)
        cursor.insertHtml(highlight.highlight_code_html(code, lang, dark, self._mono.family()))
        # Code never wraps: its lines keep their shape and the block scrolls sideways instead.
        block = frame.firstCursorPosition().block()
        while block.isValid() and block.position() <= frame.lastPosition():
            bf = block.blockFormat()
            bf.setNonBreakableLines(True)
            QTextCursor(block).setBlockFormat(bf)
            block = block.next()
        self.code_blocks.append((frame.firstPosition(), frame.lastPosition(), code.rstrip("\n")))
        cursor.movePosition(QTextCursor.MoveOperation.End)

    # ----- copying -----------------------------------------------------------------------------
    @property
    def copy_button(self) -> QToolButton:
        if self._copy_button is None:
            button = QToolButton(self.viewport())
            button.setObjectName("copyCodeButton")
            button.setText(self.tr("Copy"))
            button.setToolTip(self.tr("Copy this code block"))
            button.setAccessibleName(self.tr("Copy code"))
            button.setAutoRaise(True)
            button.setCursor(Qt.CursorShape.PointingHandCursor)
            button.hide()
            button.clicked.connect(self._copy_hovered)
            self._copy_button = button
        return self._copy_button
    def code_block_at(self, pos) -> tuple[int, int, str] | None:
        """The code block under a viewport point, if any."""
        at = self.cursorForPosition(pos).position()
        for block in self.code_blocks:
            if block[0] <= at <= block[1]:
                return block
        return None

    def _hover_code(self, block: tuple[int, int, str] | None) -> None:
        if block == self._hovered:
            return
        self._hovered = block
        if block is None:
            if self._copy_button is not None:
                self._copy_button.hide()
            return
        self.copy_button.setText(self.tr("Copy"))
        cursor = QTextCursor(self.document())
        cursor.setPosition(block[0])
        rect = self.document().documentLayout().frameBoundingRect(cursor.currentFrame())
        rect.translate(-self.horizontalScrollBar().value(), -self.verticalScrollBar().value())
        hint = self.copy_button.sizeHint()
        self.copy_button.setGeometry(int(rect.right()) - hint.width() - 4, int(rect.top()) + 4, hint.width(),
                                     hint.height())
        self.copy_button.show()
        self.copy_button.raise_()

    def _copy_hovered(self) -> None:
        if self._hovered is not None:
            QApplication.clipboard().setText(self._hovered[2])
            self.copy_button.setText(self.tr("Copied"))

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        super().mouseMoveEvent(event)
        self._hover_code(self.code_block_at(event.position().toPoint()))

    def leaveEvent(self, event) -> None:  # noqa: N802
        super().leaveEvent(event)
        if self._copy_button is None or not self._copy_button.underMouse():
            self._hover_code(None)


    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, w: int) -> int:  # noqa: N802
        doc = self.document()
        width = max(50, min(w, QFontMetrics(self.font()).averageCharWidth() * READING_CHARS))
        if self.lineWrapColumnOrWidth() != width or self.lineWrapMode() != QTextBrowser.LineWrapMode.FixedPixelWidth:
            self.setLineWrapMode(QTextBrowser.LineWrapMode.FixedPixelWidth)
            self.setLineWrapColumnOrWidth(width)
        if doc.textWidth() != width:
            doc.setTextWidth(width)
        extra = self.horizontalScrollBar().sizeHint().height() if doc.size().width() > w + 1 else 0  # its bar
        return int(math.ceil(doc.size().height())) + 2 + extra

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)

    def wheelEvent(self, event) -> None:  # noqa: N802 - vertical: the conversation; sideways: a wide code block
        delta = event.angleDelta()
        if abs(delta.x()) > abs(delta.y()) and self.horizontalScrollBar().maximum() > 0:
            super().wheelEvent(event)
            return
        event.ignore()
