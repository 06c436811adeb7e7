"""The conversation: user prompts, streamed Markdown, one card per tool call, thinking, banners.

Built for long sessions: an append-only column (``_Column``) positions its children itself with
cached heights, so appending a card or growing the last text block costs O(1) — no layout pass over
the history. Tool cards paint their one-line header themselves (no child widgets) and create the
result view only when expanded. Streaming text re-renders only the current block, at most every
40 ms.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import time
from typing import Any

from PySide6.QtCore import QCoreApplication, QMimeData, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor, QFont, QFontDatabase, QFontMetrics, QPainter, QPalette, QPen, QTextCursor, QTextFrameFormat,
)
from PySide6.QtWidgets import (
    QApplication, QFrame, QLabel, QPlainTextEdit, QScrollArea, QTextBrowser, QToolButton, QWidget,
)

from desktop_agent.ui import highlight, icons

MARGIN = 16
SPACING = 8
HEADER_H = 32
READING_CHARS = 96
_FENCE = re.compile(r"^```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:^```[ \t]*$|\Z)", re.S | re.M)


def is_dark(widget: QWidget | None = None) -> bool:
    """Whether the application palette is dark (widget palettes can be altered by style sheets)."""
    from PySide6.QtWidgets import QApplication

    return QApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


_MONO: list[QFont] = []


def is_fixed_pitch(font: QFont) -> bool:
    """Whether the font Qt actually uses for ``font`` is fixed-pitch: ``QFontInfo.fixedPitch()`` and,
    because some CJK fonts claim it while their Latin letters are proportional, equal advances."""
    from PySide6.QtGui import QFontInfo

    if not QFontInfo(font).fixedPitch():
        return False
    fm = QFontMetrics(font)
    return len({fm.horizontalAdvance(ch) for ch in "iMW .0"}) == 1


def mono_candidates() -> list[QFont]:
    """The code font's fallback chain: the system fixed font, then named monospace families, then
    whatever fontconfig gives the Monospace style hint."""
    system = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    out = [system]
    for family in highlight.MONO_FAMILIES:
        f = QFont(family)
        f.setPointSizeF(system.pointSizeF() if system.pointSizeF() > 0 else 10)
        out.append(f)
    hinted = QFont("Monospace")
    hinted.setStyleHint(QFont.StyleHint.Monospace)
    out.append(hinted)
    return out


def mono_font() -> QFont:
    """The code font (conversation code blocks, tool output, diffs in the dialog and the panel): the
    first of ``mono_candidates()`` that is really fixed-pitch, as the family Qt resolved it to (so the
    HTML's ``font-family`` names a concrete font, not an alias a locale can remap — under zh_CN
    "monospace" can resolve to a CJK font with proportional Latin letters). A fresh copy each call."""
    if not _MONO:
        from PySide6.QtGui import QFontInfo

        chosen = None
        for cand in mono_candidates():
            if is_fixed_pitch(cand):
                chosen = QFont(cand)
                chosen.setFamilies([QFontInfo(cand).family()])
                break
        if chosen is None:  # no fixed-pitch font installed at all: the best Qt can do
            chosen = mono_candidates()[-1]
        chosen.setStyleHint(QFont.StyleHint.Monospace)
        chosen.setFixedPitch(True)
        _MONO.append(chosen)
    return QFont(_MONO[0])


def rel_path(path: str, cwd: str | None) -> str:
    if cwd and path:
        try:
            rel = os.path.relpath(path, cwd)
            if not rel.startswith(".."):
                return rel
        except ValueError:
            pass
    return path


def key_argument(name: str, inp: dict[str, Any], cwd: str | None) -> str:
    """The one argument that says what a call does: a path relative to the folder, or the command."""
    for key in ("file_path", "path", "notebook_path"):
        if inp.get(key):
            arg = rel_path(str(inp[key]), cwd)
            if name in ("Grep", "Glob") and inp.get("pattern"):
                return str(inp["pattern"]) if arg in (".", "") else f"{inp['pattern']}  in {arg}"
            return arg
    for key in ("command", "pattern", "url", "query", "prompt", "description"):
        if inp.get(key):
            return str(inp[key]).replace("\n", " ⏎ ")
    return ""


def result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                parts.append(block.get("text") or (f"[{block.get('type')}]" if block.get("type") != "text" else ""))
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, indent=2, ensure_ascii=False)


def _plural(translated: str, n: int, one: str, many: str) -> str:
    """English fallback for Qt's "%n item(s)" plurals when no translation is loaded."""
    if "(s)" in translated:
        return f"{n} {one if n == 1 else many}"
    return translated


def short_summary(name: str, content: str, data: dict[str, Any] | None, is_error: bool) -> str:
    """A word or two for the collapsed card (✓ 12 lines, ✓ +1 −1, ✗ first line of the error)."""
    if is_error:
        first = re.sub(r"</?tool_use_error>", "", content).strip().splitlines()
        return first[0] if first else QCoreApplication.translate("ConversationView", "error")
    if data and (data.get("structuredPatch") is not None):
        added, removed = highlight.count_changes(highlight.normalize_hunks(data.get("structuredPatch")))
        if data.get("type") == "create" and not added:
            added = len(str(data.get("content", "")).splitlines())
        return f"+{added} \u2212{removed}"
    if name == "Read":
        lines = content.splitlines()
        if lines and re.fullmatch(r"\d+\t", lines[-1]):  # the numbered empty line after a final newline
            lines.pop()
        n = len(lines)
        return _plural(QCoreApplication.translate("ConversationView", "%n line(s)", None, n), n, "line", "lines")
    if name in ("Grep", "Glob"):
        m = re.match(r"Found (\d+) (file|match|line)", content)
        if m:
            n = int(m.group(1))
            if m.group(2) == "file":
                return _plural(QCoreApplication.translate("ConversationView", "%n file(s)", None, n), n, "file", "files")
            return _plural(QCoreApplication.translate("ConversationView", "%n match(es)", None, n), n, "match",
                           "matches")
        if content.startswith("No "):
            return QCoreApplication.translate("ConversationView", "no matches")
        n = len([x for x in content.splitlines() if x.strip()])
        return _plural(QCoreApplication.translate("ConversationView", "%n result(s)", None, n), n, "result", "results")
    if name == "Bash":
        lines = [x for x in content.splitlines() if x.strip()]
        if not lines or content.startswith("(Bash completed with no output"):
            return QCoreApplication.translate("ConversationView", "no output")
        n = len(lines)
        return _plural(QCoreApplication.translate("ConversationView", "%n line(s)", None, n), n, "line", "lines")
    return QCoreApplication.translate("ConversationView", "done")


class _Column(QWidget):
    """Children stacked vertically with cached heights; appending is O(1), no QLayout involved."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.items: list[QWidget] = []
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
        w._col_index = len(self.items)  # type: ignore[attr-defined]
        w._col_gap = gap  # type: ignore[attr-defined]
        width = self._content_width()
        h = self._measure(w, width)
        top = self._bottom + (gap if self.items else 0)
        self.items.append(w)
        self._tops.append(top)
        self._heights.append(h)
        w.setGeometry(MARGIN, top, width, h)
        w.show()
        self._bottom = top + h
        self.setFixedHeight(self._bottom + MARGIN)

    def child_changed(self, w: QWidget) -> None:
        """A child's height may have changed: re-measure it and move what follows."""
        i = getattr(w, "_col_index", None)
        if i is None or i >= len(self.items) or self.items[i] is not w:
            return
        h = self._measure(w, self._content_width())
        if h == self._heights[i]:
            return
        self._heights[i] = h
        w.resize(w.width(), h)
        self._relayout(i + 1)

    def _relayout(self, start: int) -> None:
        width = self._content_width()
        bottom = self._tops[start - 1] + self._heights[start - 1] if start > 0 else SPACING
        for j in range(start, len(self.items)):
            top = bottom + (self.items[j]._col_gap if j else 0)  # type: ignore[attr-defined]
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
        i = getattr(w, "_col_index", None)
        if i is None or i >= len(self.items) or self.items[i] is not w:
            return
        del self.items[i], self._tops[i], self._heights[i]
        for j in range(i, len(self.items)):
            self.items[j]._col_index = j  # type: ignore[attr-defined]
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
        self.items, self._tops, self._heights = [], [], []
        self._bottom = SPACING
        self.setFixedHeight(self._bottom + MARGIN)

    def top_of(self, w: QWidget) -> int:
        i = getattr(w, "_col_index", 0)
        return self._tops[i] if i < len(self._tops) else 0


class UserBlock(QLabel):
    """The user's prompt: a tinted block with a small "you" label."""

    def __init__(self, text: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.prompt = text
        self.setObjectName("userBlock")
        self.setContentsMargins(12, 8, 12, 8)
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setAccessibleName(self.tr("Your message"))
        self._render()

    def _render(self) -> None:
        dark = is_dark(self)
        c = highlight.colors(dark)
        muted = c.muted
        body = html.escape(self.prompt).replace("\n", "<br/>")
        you = getattr(self, "label", None) or self.tr("you")  # (tr() outside f-strings: lupdate misses them)
        self.setText(f'<span style="color:{muted}; font-size:small; font-weight:600">{you}</span>'
                     f'<div style="margin-top:4px">{body}</div>')

    def heightForWidth(self, w: int) -> int:  # noqa: N802
        return super().heightForWidth(w)

    def paintEvent(self, event) -> None:  # noqa: N802
        c = highlight.colors(is_dark(self))
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(QPen(QColor(c.border), 1))
        p.setBrush(QColor(c.code_bg))
        p.drawRoundedRect(QRect(0, 0, self.width() - 1, self.height() - 1), 6, 6)
        p.end()
        super().paintEvent(event)


def _stable_boundary(text: str) -> int:
    """Index just after the last paragraph break that is not inside a code fence (0 if none)."""
    cut = text.rfind("\n\n")
    while cut > 0:
        head = text[:cut]
        if len(re.findall(r"^```", head, re.M)) % 2 == 0:
            return cut + 2
        cut = text.rfind("\n\n", 0, cut)
    return 0


class PlainSpacesCopy:
    """Mixin for text views of rendered code and diffs: a selection's plain text copies with plain
    spaces (the HTML rendering keeps indentation with non-breaking spaces, which break pasted code);
    the rich text copy is kept for rich editors."""

    def createMimeDataFromSelection(self) -> QMimeData:  # noqa: N802 - Qt naming
        # Qt's own object, edited: a QMimeData made in Python and handed to the clipboard is freed
        # twice at exit (a segfault seen here with PySide6 6.12).
        data = super().createMimeDataFromSelection()  # type: ignore[misc]
        data.setText(data.text().replace("\u00a0", " "))
        return data


class MarkdownBlock(PlainSpacesCopy, QTextBrowser):
    """Model text rendered as Markdown; code blocks highlighted with pygments. Grows with its text.

    A code block shows a Copy button at its top right while the mouse is over it; it copies the code
    exactly as the model wrote it. Copying a selection gives plain spaces (the rendering uses
    non-breaking ones to keep indentation)."""

    def __init__(self, column: _Column, parent: QWidget | None = None):
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
        self.text += chunk
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


class _Expandable(QWidget):
    """Base for cards with a painted one-line header and a lazily created body."""

    clicked = Signal(object)

    def __init__(self, column: _Column, parent: QWidget | None = None):
        super().__init__(parent)
        self.column = column
        self.expanded = False
        self.body: QPlainTextEdit | None = None
        self.selected = False
        self._hdr = None
        self._hdr_key: tuple | None = None
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    def body_text(self) -> str:
        return ""

    def body_is_error(self) -> bool:
        return False

    def set_expanded(self, on: bool) -> None:
        if on == self.expanded:
            return
        self.expanded = on
        if on and self.body is None:
            self.body = QPlainTextEdit(self)
            self.body.setReadOnly(True)
            self.body.setFont(mono_font())
            self.body.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            self.body.setFrameShape(QFrame.Shape.NoFrame)
            self.body.setAccessibleName(self.tr("Details"))
            self.refresh_body()
        if self.body is not None:
            self.body.setVisible(on)
        self._place_body()
        self.column.child_changed(self)
        self.update()

    def refresh_body(self) -> None:
        if self.body is None:
            return
        self.body.setPlainText(self.body_text())
        pal = self.body.palette()
        if self.body_is_error():
            pal.setColor(QPalette.ColorRole.Text, QColor(highlight.colors(is_dark(self)).error))
        self.body.setPalette(pal)
        self._place_body()
        self.column.child_changed(self)

    def _body_height(self) -> int:
        if self.body is None:
            return 0
        lines = min(self.body.blockCount(), 18)
        return lines * QFontMetrics(self.body.font()).lineSpacing() + 16

    def _place_body(self) -> None:
        if self.body is not None and self.expanded:
            self.body.setGeometry(28, HEADER_H, max(50, self.width() - 36), self._body_height())

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, w: int) -> int:  # noqa: N802
        return HEADER_H + (self._body_height() + 8 if self.expanded else 0)

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(400, self.heightForWidth(400))

    def resizeEvent(self, event) -> None:  # noqa: N802
        self._place_body()

    def mousePressEvent(self, event) -> None:  # noqa: N802
        if event.position().y() <= HEADER_H:
            if event.position().x() < 28:
                self.set_expanded(not self.expanded)
            self.clicked.emit(self)
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseDoubleClickEvent(self, event) -> None:  # noqa: N802
        if event.position().y() <= HEADER_H:
            self.set_expanded(not self.expanded)

    def keyPressEvent(self, event) -> None:  # noqa: N802
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            self.set_expanded(not self.expanded)
            self.clicked.emit(self)
            return
        super().keyPressEvent(event)

    def _cache_key(self) -> tuple:
        return (self.width(), self.expanded, self.selected, self.hasFocus(), is_dark(self))

    def paintEvent(self, event) -> None:  # noqa: N802
        """The one-line header is painted once into a pixmap and re-used until its content changes."""
        key = self._cache_key() + (self.devicePixelRatioF(),)
        if getattr(self, "_hdr_key", None) != key or self._hdr is None:
            from PySide6.QtGui import QPixmap

            dpr = self.devicePixelRatioF()
            px = QPixmap(int(self.width() * dpr), int(HEADER_H * dpr))
            px.setDevicePixelRatio(dpr)
            px.fill(Qt.GlobalColor.transparent)
            hp = QPainter(px)
            self.paint_header(hp)
            hp.end()
            self._hdr, self._hdr_key = px, key
        p = QPainter(self)
        if self.expanded:
            self._paint_body_frame(p)
        p.drawPixmap(0, 0, self._hdr)
        p.end()

    def update(self, *args) -> None:  # content changed: drop the cached header
        self._hdr = None
        super().update(*args)

    def _paint_body_frame(self, p: QPainter) -> None:
        c = highlight.colors(is_dark(self))
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(QPen(QColor(c.accent) if self.selected else QColor(c.border), 1.5 if self.selected else 1))
        p.setBrush(self.palette().color(QPalette.ColorRole.Base))
        p.drawRoundedRect(QRect(0, 0, self.width() - 1, self.height() - 1), 6, 6)

    def paint_header(self, p: QPainter) -> None:
        self._paint_frame(p)

    def _paint_frame(self, p: QPainter) -> None:
        pal = self.palette()
        dark = is_dark(self)
        c = highlight.colors(dark)
        rect = QRect(0, 0, self.width() - 1, (self.height() if not self.expanded else HEADER_H + 6) - 1)
        bg = pal.color(QPalette.ColorRole.Base)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(QPen(QColor(c.accent) if self.selected else QColor(c.border), 1.5 if self.selected else 1))
        p.setBrush(bg)
        p.drawRoundedRect(rect.adjusted(0, 0, 0, 0), 6, 6)
        if self.hasFocus():
            p.setPen(QPen(pal.color(QPalette.ColorRole.Highlight), 1.5))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRoundedRect(rect.adjusted(1, 1, -1, -1), 6, 6)
        chev = icons.pixmap("chev_down" if self.expanded else "chev_right", c.muted, 14)
        p.drawPixmap(8, (HEADER_H - 14) // 2, chev)

    def focusInEvent(self, e) -> None:  # noqa: N802
        self.update()
        super().focusInEvent(e)

    def focusOutEvent(self, e) -> None:  # noqa: N802
        self.update()
        super().focusOutEvent(e)


class ToolCard(_Expandable):
    """One tool call: icon, name, key argument, state (spinner → ✓ summary / ✗ error / ⏳ waiting)."""

    RUNNING, WAITING, DONE, ERROR, DENIED, CANCELLED = "running", "waiting", "done", "error", "denied", "cancelled"

    def __init__(self, tool_use_id: str, name: str, inp: dict[str, Any], cwd: str | None, column: _Column,
                 parent: QWidget | None = None):
        super().__init__(column, parent)
        self.tool_use_id = tool_use_id
        self.name = name
        self.input = inp
        self.arg = key_argument(name, inp, cwd)
        self.state = self.RUNNING
        self.summary = ""
        self.result = ""
        self.is_error = False
        self.spin = 0
        self.progress = ""
        self.started = time.monotonic()
        self.ended: float | None = None
        self.tail: list[str] = []  # a running command's last output lines, shown under the header
        self.setAccessibleName(f"{name} {self.arg}")
        self.setToolTip(self.arg)

    TAIL_LINES = 3

    def set_progress(self, data: Any) -> None:
        """A progress event: a running command's output so far (``bash_progress``) or a message."""
        if isinstance(data, dict) and "output" in data:
            text = str(data.get("output") or "").replace("\r\n", "\n").replace("\r", "\n")
            lines = [x.rstrip() for x in text.splitlines() if x.strip()]
            tail = [x[:400] for x in lines[-self.TAIL_LINES:]]
            if isinstance(data.get("elapsed_s"), (int, float)):
                self.started = min(self.started, time.monotonic() - float(data["elapsed_s"]))
            if tail != self.tail:
                self.tail = tail
                self.column.child_changed(self)
        else:
            text = data if isinstance(data, str) else str((data or {}).get("message") or "") \
                if isinstance(data, dict) else ""
            self.progress = text.strip().splitlines()[-1][:60] if text.strip() else ""
        self.update()

    def elapsed_text(self) -> str:
        secs = int((self.ended or time.monotonic()) - self.started)
        return f"{secs // 60}:{secs % 60:02d}" if secs >= 60 else f"{secs} s"

    def _tail_shown(self) -> bool:
        return bool(self.tail) and self.state == self.RUNNING and not self.expanded

    def _tail_height(self) -> int:
        if not self._tail_shown():
            return 0
        return len(self.tail) * QFontMetrics(mono_font()).lineSpacing() + 8

    def heightForWidth(self, w: int) -> int:  # noqa: N802
        return super().heightForWidth(w) + self._tail_height()

    def paintEvent(self, event) -> None:  # noqa: N802
        if not self._tail_shown():
            super().paintEvent(event)
            return
        p = QPainter(self)
        self._paint_body_frame(p)  # the frame around header and tail
        p.end()
        super().paintEvent(event)
        p = QPainter(self)
        c = highlight.colors(is_dark(self))
        mono = mono_font()
        mono.setPointSizeF(self.font().pointSizeF() * 0.9 if self.font().pointSizeF() > 0 else 9)
        p.setFont(mono)
        p.setPen(QColor(c.muted))
        fm = QFontMetrics(mono)
        y = HEADER_H + fm.ascent()
        for line in self.tail:
            p.drawText(28, y, fm.elidedText(line, Qt.TextElideMode.ElideRight, max(0, self.width() - 40)))
            y += fm.lineSpacing()
        p.end()

    def set_state(self, state: str, summary: str = "") -> None:
        had_tail = self._tail_shown()
        self.state, self.summary = state, summary
        if state not in (self.RUNNING, self.WAITING) and self.ended is None:
            self.ended = time.monotonic()
        self.setAccessibleDescription(f"{state} {summary}")
        if had_tail != self._tail_shown():
            self.column.child_changed(self)
        self.update()

    def finish(self, content: Any, is_error: bool, data: dict[str, Any] | None) -> None:
        self.result = result_text(content)
        self.is_error = is_error
        summary = short_summary(self.name, self.result, data, is_error)
        self.set_state(self.ERROR if is_error else self.DONE, summary)
        if self.body is not None:
            self.refresh_body()

    def body_text(self) -> str:
        inp = json.dumps(self.input, indent=2, ensure_ascii=False)
        out = self.result if self.state not in (self.RUNNING, self.WAITING) else self.tr("(running…)")
        limit = 200_000
        if len(out) > limit:
            out = out[:limit] + "\n" + self.tr("… {0} more characters").format(len(out) - limit)
        input_label, result_label = self.tr("Input"), self.tr("Result")
        return f"{input_label}\n{inp}\n\n{result_label}\n{out}"

    def body_is_error(self) -> bool:
        return self.is_error

    def paint_header(self, p: QPainter) -> None:
        self._paint_frame(p)
        c = highlight.colors(is_dark(self))
        pal = self.palette()
        text_color = pal.color(QPalette.ColorRole.Text)
        icon_name = icons.TOOL_ICON.get(self.name, "tool")
        p.drawPixmap(28, (HEADER_H - 16) // 2, icons.pixmap(icon_name, text_color.name(), 16))
        font = self.font()
        bold = QFont(font)
        bold.setWeight(QFont.Weight.DemiBold)
        fm_b = QFontMetrics(bold)
        x = 52
        p.setFont(bold)
        p.setPen(text_color)
        baseline = (HEADER_H + fm_b.ascent() - fm_b.descent()) // 2
        p.drawText(x, baseline, self.name)
        x += fm_b.horizontalAdvance(self.name) + 12
        # State on the right.
        state_w = self._paint_state(p, c, baseline)
        mono = mono_font()
        mono.setPointSizeF(font.pointSizeF() * 0.95 if font.pointSizeF() > 0 else 9)
        p.setFont(mono)
        p.setPen(QColor(c.muted))
        fm = QFontMetrics(mono)
        avail = self.width() - x - state_w - 16
        p.drawText(x, baseline, fm.elidedText(self.arg, Qt.TextElideMode.ElideMiddle, max(0, avail)))

    def _paint_state(self, p: QPainter, c: highlight.DiffColors, baseline: int) -> int:
        font = self.font()
        p.setFont(font)
        fm = QFontMetrics(font)
        right = self.width() - 12
        if self.state == self.RUNNING:
            label = self.progress or self.tr("running")
            if self.name == "Bash" or self.tail:
                label = f"{label} · {self.elapsed_text()}"
            w = fm.horizontalAdvance(label)
            p.setPen(QColor(c.muted))
            p.drawText(right - w, baseline, label)
            cx, cy, r = right - w - 14, HEADER_H // 2, 6
            pen = QPen(QColor(c.muted), 2)
            pen.setCapStyle(Qt.PenCapStyle.RoundCap)
            p.setPen(pen)
            p.drawArc(QRect(cx - r, cy - r, 2 * r, 2 * r), -self.spin * 16 * 30, 270 * 16)
            return w + 28
        if self.state == self.WAITING:
            label = self.tr("waiting for you")
            w = fm.horizontalAdvance(label)
            p.setPen(QColor(c.accent))
            p.drawText(right - w, baseline, label)
            p.drawPixmap(right - w - 20, (HEADER_H - 16) // 2, icons.pixmap("clock", c.accent, 16))
            return w + 24
        if self.state in (self.ERROR, self.DENIED, self.CANCELLED):
            color = c.error if self.state != self.CANCELLED else c.muted
            label = fm.elidedText(self.summary or self.state, Qt.TextElideMode.ElideRight, max(80, self.width() // 3))
            w = fm.horizontalAdvance(label)
            p.setPen(QColor(color))
            p.drawText(right - w, baseline, label)
            p.drawPixmap(right - w - 20, (HEADER_H - 16) // 2, icons.pixmap("x", color, 16))
            return w + 24
        label = self.summary
        w = fm.horizontalAdvance(label)
        p.setPen(QColor(c.muted))
        p.drawText(right - w, baseline, label)
        p.drawPixmap(right - w - 20, (HEADER_H - 16) // 2, icons.pixmap("check", c.added_fg, 16))
        return w + 24


class ThinkingCard(_Expandable):
    """The model's thinking, collapsed to "Thought for N s"."""

    def __init__(self, column: _Column, parent: QWidget | None = None):
        super().__init__(column, parent)
        self.text = ""
        self.started = time.monotonic()
        self.ended: float | None = None
        self.setAccessibleName(self.tr("Thinking"))

    def append_text(self, chunk: str) -> None:
        self.text += chunk

    def done(self) -> None:
        if self.ended is None:
            self.ended = time.monotonic()
            self.update()
            if self.body is not None:
                self.refresh_body()

    def body_text(self) -> str:
        return self.text

    def paint_header(self, p: QPainter) -> None:
        self._paint_frame(p)
        c = highlight.colors(is_dark(self))
        p.drawPixmap(28, (HEADER_H - 16) // 2, icons.pixmap("spark", c.muted, 16))
        fm = QFontMetrics(self.font())
        baseline = (HEADER_H + fm.ascent() - fm.descent()) // 2
        p.setPen(QColor(c.muted))
        if self.ended is None:
            label = self.tr("Thinking…")
        else:
            label = self.tr("Thought for {0} s").format(max(1, round(self.ended - self.started)))
        p.drawText(52, baseline, label)


class Banner(QLabel):
    """An error or notice: what happened and what the user can do (links: retry, settings)."""

    def __init__(self, kind: str, text: str, actions: list[tuple[str, str]] | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.kind = kind
        self.key: str | None = None
        self.text_plain = text
        self.actions = list(actions or [])
        self.setObjectName(f"banner_{kind}")
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        dark = is_dark(self)
        c = highlight.colors(dark)
        if kind == "error":
            bg, fg, border = (c.removed_bg, c.text, c.error)
            icon = "⚠"
        elif kind == "interrupted":
            bg, fg, border = ("transparent", c.muted, c.border)
            icon = "■"
        else:
            bg, fg, border = ("transparent", c.muted, c.border)
            icon = "ℹ"
        links = "  ".join(f'<a href="{href}">{html.escape(label)}</a>' for href, label in (actions or []))
        body = html.escape(text).replace("\n", "<br/>")
        self.setText(f"<b>{icon}</b>&nbsp; {body}" + (f"<br/>{links}" if links else ""))
        self.setStyleSheet(
            f"QLabel#{self.objectName()} {{ background: {bg}; color: {fg}; border: 1px solid {border}; "
            f"border-radius: 6px; padding: 8px; }}"
        )
        self.setAccessibleName(text)


class RetryCard(Banner):
    """The one card of a retried request, updated in place: the error, a live countdown to the next
    attempt, and ``Retry now`` / ``Cancel`` (links ``retry-now`` / ``retry-cancel``). Once the request
    goes through (or the turn ends) it says how it ended and the links go."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("notice", "", None, parent)
        self.setObjectName("retryCard")
        self.setStyleSheet(self.styleSheet().replace("QLabel#banner_notice", "QLabel#retryCard"))
        self.attempt = self.max_attempts = 0
        self.error = ""
        self.deadline = 0.0
        self.finished: str | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self._render)

    def waiting(self, attempt: int, max_attempts: int, delay_s: float, error: str) -> None:
        self.attempt, self.max_attempts, self.error = attempt, max_attempts, error
        self.deadline = time.monotonic() + max(0.0, delay_s)
        self.finished = None
        self._timer.start()
        self._render()

    def seconds_left(self) -> int:
        return max(0, math.ceil(self.deadline - time.monotonic()))

    def done(self, outcome: str) -> None:
        """``outcome``: "ok" (the request went through), "cancelled", "failed"."""
        if self.finished is not None:
            return
        self.finished = outcome
        self._timer.stop()
        self._render()

    def _render(self) -> None:
        c = highlight.colors(is_dark(self))
        err = html.escape(self.error)
        if self.finished is None:
            left = self.seconds_left()
            head = (self.tr("Retrying in {0} s (attempt {1} of {2})").format(left, self.attempt, self.max_attempts)
                    if left else self.tr("Retrying now (attempt {0} of {1})").format(self.attempt, self.max_attempts))
            links = (f'<a href="retry-now">{html.escape(self.tr("Retry now"))}</a>&nbsp;&nbsp;'
                     f'<a href="retry-cancel">{html.escape(self.tr("Cancel"))}</a>')
            self.setText(f"<b>↻</b>&nbsp; {html.escape(head)}<br/><span style='color:{c.muted}'>{err}</span>"
                         f"<br/>{links}")
            self.text_plain = f"{head}: {self.error}"
        else:
            tail = {"ok": self.tr("Went through after {0} retries."),
                    "cancelled": self.tr("Retrying cancelled after {0} retries."),
                    "failed": self.tr("Gave up after {0} retries.")}[self.finished].format(self.attempt)
            self.setText(f"<b>↻</b>&nbsp; {html.escape(tail)}<br/><span style='color:{c.muted}'>{err}</span>")
            self.text_plain = f"{tail} {self.error}"
        self.setAccessibleName(self.text_plain)
        col = self.parent()
        if isinstance(col, _Column):
            col.child_changed(self)


class ConversationView(QScrollArea):
    """The conversation pane. Feed it from the controller's signals; it never re-renders history."""

    card_selected = Signal(str)  # tool_use_id
    banner_action = Signal(str)  # "retry", "settings"

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("conversation")
        self.setAccessibleName(self.tr("Conversation"))
        self.setWidgetResizable(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.column = _Column()
        self.column.setObjectName("conversationColumn")
        # Opaque + static contents: scrolling and growing blit the pixels already painted and repaint only
        # what is new (2 widget paints per appended card instead of every visible one).
        self.column.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, True)
        self.column.setAttribute(Qt.WidgetAttribute.WA_StaticContents, True)
        self._apply_style()
        self.setWidget(self.column)
        self.cwd: str | None = None
        self.cards: dict[str, ToolCard] = {}
        self.banners: dict[str, Banner] = {}  # keyed banners (one per key)
        self._stop_at = float("inf")  # when the user pressed Stop in this turn
        self.retry_card: RetryCard | None = None
        self.current_text: MarkdownBlock | None = None
        self.current_thinking: ThinkingCard | None = None
        self.selected: ToolCard | None = None
        self._running: set[ToolCard] = set()
        self._stick = True
        self._spinner = QTimer(self)
        self._spinner.setInterval(80)
        self._spinner.timeout.connect(self._tick)
        self.verticalScrollBar().valueChanged.connect(self._on_scrolled)
        self.verticalScrollBar().rangeChanged.connect(self._on_range)
        self.empty_label: QLabel | None = None

    def _apply_style(self) -> None:
        """Blocks paint their own backgrounds: no style sheet here (one on the view would make every
        block's polish go through QStyleSheetStyle, ~0.7 ms each)."""
        self.column.setBackgroundRole(QPalette.ColorRole.Base)

    # ----- appending ---------------------------------------------------------------------------
    def _append(self, w: QWidget, gap: int = SPACING) -> None:
        self._hide_empty()
        self.column.append(w, gap)

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

    def close_text(self) -> None:
        if self.current_text is not None:
            self.current_text.flush()
            self.current_text.closed = True
        self.current_text = None
        if self.current_thinking is not None:
            self.current_thinking.done()
        self.current_thinking = None

    def add_user(self, prompt: str) -> UserBlock:
        self.close_text()
        block = UserBlock(prompt)
        self._append(block, gap=SPACING * 3 if self.column.items else SPACING)
        self._stick = True
        self._scroll_to_bottom_later()
        return block

    def append_text(self, chunk: str) -> None:
        if self.current_thinking is not None:
            self.current_thinking.done()
            self.current_thinking = None
        if self.current_text is None:
            self.current_text = MarkdownBlock(self.column)
            self._append(self.current_text)
        self.current_text.append_text(chunk)

    def append_thinking(self, chunk: str) -> None:
        if self.current_thinking is None:
            self.close_text()
            self.current_thinking = ThinkingCard(self.column)
            self.current_thinking.clicked.connect(lambda _c: None)
            self._append(self.current_thinking)
        self.current_thinking.append_text(chunk)

    def start_tool(self, tool_use_id: str, name: str, inp: dict[str, Any]) -> ToolCard:
        self.close_text()
        card = self.cards.get(tool_use_id)
        if card is not None:
            return card
        card = ToolCard(tool_use_id, name, inp, self.cwd, self.column)
        card.clicked.connect(self._card_clicked)
        self.cards[tool_use_id] = card
        self._append(card)
        self._running.add(card)
        if not self._spinner.isActive():
            self._spinner.start()
        return card

    def tool_waiting(self, tool_use_id: str, name: str = "", inp: dict[str, Any] | None = None) -> None:
        card = self.cards.get(tool_use_id) or self.start_tool(tool_use_id, name, inp or {})
        card.set_state(ToolCard.WAITING)

    def tool_resumed(self, tool_use_id: str, allowed: bool) -> None:
        card = self.cards.get(tool_use_id)
        if card is None:
            return
        if allowed:
            card.set_state(ToolCard.RUNNING)
        else:
            card.set_state(ToolCard.DENIED, self.tr("denied"))

    def finish_tool(self, tool_use_id: str, name: str, content: Any, is_error: bool,
                    data: dict[str, Any] | None = None) -> None:
        card = self.cards.get(tool_use_id) or self.start_tool(tool_use_id, name, {})
        denied = card.state == ToolCard.DENIED
        card.finish(content, is_error, data)
        if denied and is_error:
            card.set_state(ToolCard.DENIED, self.tr("denied"))
        elif is_error and time.monotonic() >= self._stop_at:
            card.set_state(ToolCard.CANCELLED, self.tr("stopped"))
        self._running.discard(card)

    def add_banner(self, kind: str, text: str, actions: list[tuple[str, str]] | None = None,
                   key: str | None = None) -> Banner:
        """A banner card. With ``key``, one banner per key: an earlier one of the same key is removed
        (the new one says what is true now), so set-up and error banners never pile up."""
        self.close_text()
        if key is not None:
            self.remove_banner(key)
        banner = Banner(kind, text, actions)
        banner.key = key
        banner.linkActivated.connect(self.banner_action.emit)
        self._append(banner)
        if key is not None:
            self.banners[key] = banner
        self._scroll_to_bottom_later()
        return banner

    def remove_banner(self, key: str) -> None:
        old = self.banners.pop(key, None)
        if old is not None:
            self.column.remove(old)

    def add_feedback(self, label: str, feedback: str) -> UserBlock:
        """The user's deny feedback, shown as their words (tinted "you" block with a label)."""
        self.close_text()
        block = UserBlock(feedback)
        block.label = label
        block._render()
        self._append(block)
        self._scroll_to_bottom_later()
        return block

    def show_retry(self, attempt: int, max_attempts: int, delay_s: float, error: str) -> RetryCard:
        """One retry card per request, updated in place by every further retry."""
        card = self.retry_card
        if card is None or card.finished is not None:
            self.close_text()
            card = RetryCard()
            card.linkActivated.connect(self.banner_action.emit)
            self._append(card)
            self.retry_card = card
            self._scroll_to_bottom_later()
        card.waiting(attempt, max_attempts, delay_s, error)
        return card

    def retry_over(self, outcome: str = "ok") -> None:
        if self.retry_card is not None:
            self.retry_card.done(outcome)
            self.retry_card = None

    def stop_requested(self) -> None:
        """Stop was pressed: calls that end with an error from now on were stopped, not failed."""
        self._stop_at = min(self._stop_at, time.monotonic())
        for card in self._running:
            if card.state == ToolCard.RUNNING:
                card.progress = self.tr("stopping")
                card.update()

    def end_turn(self, reason: str, error: str | None = None) -> None:
        self.close_text()
        self.retry_over("cancelled" if reason.startswith("aborted") else "failed" if reason == "model_error" else "ok")
        for card in list(self._running):
            if card.state in (ToolCard.RUNNING, ToolCard.WAITING):
                card.set_state(ToolCard.CANCELLED, self.tr("stopped") if reason.startswith("aborted")
                               else self.tr("interrupted"))
        self._running.clear()
        if reason.startswith("aborted"):
            for card in self.cards.values():  # a call cut short by Stop reads "stopped", not an error
                if card.state == ToolCard.ERROR and card.ended is not None and card.ended >= self._stop_at:
                    card.set_state(ToolCard.CANCELLED, self.tr("stopped"))
            self.add_banner("interrupted", self.tr("Interrupted by you. The transcript is intact; send a new "
                                                   "message to continue."))
        elif reason == "max_turns":
            self.add_banner("notice", self.tr("Stopped after the maximum number of turns."))
        elif reason in ("stop_hook_prevented", "hook_stopped", "prompt_blocked"):
            self.add_banner("notice", self.tr("A hook stopped this turn.") + (f" {error}" if error else ""))
        self._stop_at = float("inf")

    # ----- history -----------------------------------------------------------------------------
    @staticmethod
    def history_ops(entries: list[dict[str, Any]]) -> list[tuple]:
        """Transcript entries → display operations (cheap tuples; widgets are made only when shown)."""
        ops: list[tuple] = []
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

    def replay(self, ops: list[tuple], limit: int = 60) -> None:
        """Show the last ``limit`` operations of a resumed session; older ones load on request."""
        self.clear()
        self._history_ops = ops
        start = max(0, len(ops) - limit)
        if start:
            banner = self.add_banner("notice", self.tr("{0} earlier items are not shown.").format(start),
                                     [(f"history:{limit + 200}", self.tr("Show more"))])
            banner.linkActivated.disconnect()
            banner.linkActivated.connect(lambda href: self.replay(self._history_ops, int(href.split(":")[1])))
        names: dict[str, str] = {}
        for op in ops[start:]:
            kind = op[0]
            if kind == "user":
                self.add_user(op[1])
            elif kind == "text":
                self.append_text(op[1])
            elif kind == "tool":
                self.close_text()
                names[op[1]] = op[2]
                self.start_tool(op[1], op[2], op[3])
            elif kind == "result" and op[1] in self.cards:
                self.finish_tool(op[1], names.get(op[1], ""), op[2], op[3], op[4] if len(op) > 4 else None)
            elif kind == "notice":
                self.add_banner("interrupted", self.tr("Interrupted by you."))
        self.close_text()
        for card in list(self._running):  # a call without a result (crash, kill): not running any more
            card.set_state(ToolCard.CANCELLED, self.tr("no result"))
        self._running.clear()
        self._stick = True
        self._scroll_to_bottom_later()

    def clear(self) -> None:
        self.close_text()
        self.column.clear()
        self.cards.clear()
        self.banners.clear()
        self.retry_card = None
        self._running.clear()
        self.selected = None

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
                self.ensureVisible(0, self.column.top_of(self.selected) + HEADER_H // 2, 0, self.viewport().height() // 3)

    def _tick(self) -> None:
        if not self._running:
            self._spinner.stop()
            return
        top = self.verticalScrollBar().value()
        bottom = top + self.viewport().height()
        for card in self._running:
            if card.state == ToolCard.RUNNING:
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

    def find(self, needle: str, start_after: QWidget | None = None) -> QWidget | None:
        """Ctrl+F: the next item containing ``needle`` (case-insensitive); scrolls to it."""
        needle = needle.lower()
        items = self.column.items
        start = (getattr(start_after, "_col_index", -1) + 1) if start_after is not None else 0
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
                    w.find(needle)
                return w
        return None


    # ----- find bar ----------------------------------------------------------------------------
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
        from PySide6.QtGui import QTextCharFormat
        from PySide6.QtWidgets import QTextEdit

        dark = is_dark(self)
        all_bg, cur_bg = (QColor("#5a4a00"), QColor("#b36b00")) if dark else (QColor("#fff3a3"), QColor("#ffb454"))
        by_block: dict[int, list[tuple[int, bool]]] = {}
        for i, (w, at) in enumerate(matches):
            if isinstance(w, MarkdownBlock):
                by_block.setdefault(id(w), []).append((at, i == current))
        for w in self.column.items:
            if not isinstance(w, MarkdownBlock):
                continue
            sels = []
            for at, is_cur in by_block.get(id(w), []):
                sel = QTextEdit.ExtraSelection()
                cur = QTextCursor(w.document())
                cur.setPosition(at)
                cur.setPosition(at + len(needle), QTextCursor.MoveMode.KeepAnchor)
                sel.cursor = cur
                fmt = QTextCharFormat()
                fmt.setBackground(cur_bg if is_cur else all_bg)
                sel.format = fmt
                sels.append(sel)
            if sels or w.extraSelections():
                w.setExtraSelections(sels)
        if 0 <= current < len(matches):
            w = matches[current][0]
            if isinstance(w, ToolCard):
                self.select_card(w.tool_use_id)
            self._stick = False
            y = self.column.top_of(w)
            if isinstance(w, MarkdownBlock):
                cur = QTextCursor(w.document())
                cur.setPosition(matches[current][1])
                y += w.cursorRect(cur).top()
            self.ensureVisible(0, y, 0, 64)
