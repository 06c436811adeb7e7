"""The conversation's cards: the user's prompt, tool calls (with a running command's live output),
thinking, banners and the retry card.

Each renders one item of the presenter's view-model (``presenter.py``) and is told ``sync()`` when it
changed. Tool and thinking cards paint their one-line header themselves (cached in a pixmap, no child
widgets) and create the result view only when expanded.
"""

from __future__ import annotations

import html
import math
import time
from typing import Generic, TypeVar

from PySide6.QtCore import QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor, QFont, QFontMetrics, QPainter, QPalette, QPen, QPixmap, QTextBlockFormat, QTextCharFormat, QTextCursor,
    QTextOption,
)
from PySide6.QtWidgets import QFrame, QLabel, QPlainTextEdit, QTextBrowser, QWidget

from desktop_agent.ui import highlight, icons
from desktop_agent.ui.conversation.column import Column
from desktop_agent.ui.conversation.presenter import TAIL_LINES, BannerKind, RetryItem, ThinkingItem, ToolItem
from desktop_agent.ui.conversation.tool_fields import display_tool_name, exit_line, input_fields
from desktop_agent.ui.highlight import is_dark, mono_font

HEADER_H = 32
_Body = TypeVar("_Body", QPlainTextEdit, QTextBrowser)  # a card's expanded body: plain text, or fields and a result


class UserBlock(QLabel):
    """The user's prompt: a tinted block with a small "you" label."""

    def __init__(self, text: str, label: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.prompt = text
        self.label = label  # deny feedback: "You denied Edit and told the agent:" instead of "you"
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
        you = self.label or self.tr("you")  # (tr() outside f-strings: lupdate misses them)
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


class _Expandable(QWidget, Generic[_Body]):
    """Base for cards with a painted one-line header and a lazily created body (``_make_body``, filled by
    ``refresh_body``, ``_body_height`` high)."""

    clicked = Signal(object)

    def __init__(self, column: Column, parent: QWidget | None = None):
        super().__init__(parent)
        self.column = column
        self.expanded = False
        self.body: _Body | None = None
        self.selected = False
        self._hdr: QPixmap | None = None
        self._hdr_key: tuple | None = None
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    def body_text(self) -> str:
        return ""

    def body_is_error(self) -> bool:
        return False

    def _on_body_refresh(self) -> None:
        pass

    def set_expanded(self, on: bool) -> None:
        if on == self.expanded:
            return
        self.expanded = on
        if on and self.body is None:
            self.body = self._make_body()
            self.refresh_body()
        if self.body is not None:
            self.body.setVisible(on)
        self._place_body()
        self.column.child_changed(self)
        self.update()

    def _make_body(self) -> _Body:
        raise NotImplementedError

    def refresh_body(self) -> None:
        """Fill the body (if made) with what the card shows now."""
        raise NotImplementedError

    def _body_height(self) -> int:
        raise NotImplementedError

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
        if self._hdr_key != key or self._hdr is None:
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


class ToolCard(_Expandable[QTextBrowser]):
    """One tool call: icon, name, key argument, state (spinner → ✓ summary / ✗ error / ⏳ waiting).

    It renders its ``ToolItem`` (the presenter's): ``sync()`` after the item changed. A running
    command's last output lines show under the header."""

    RUNNING, WAITING, DONE, ERROR, DENIED, CANCELLED = "running", "waiting", "done", "error", "denied", "cancelled"
    TAIL_LINES = TAIL_LINES

    def __init__(self, item: ToolItem, column: Column, parent: QWidget | None = None):
        super().__init__(column, parent)
        self.item = item
        self.spin = 0
        self._described: tuple[str, str] = (item.state, item.summary)
        self._body_for: tuple[str, str] = (item.state, item.result)
        self.display_name = display_tool_name(item.name)  # mcp__demo__echo reads "demo · echo"
        self.setAccessibleName(f"{self.display_name} {item.arg}")
        self.setToolTip(item.arg)

    # the item's fields, read-only here (the presenter changes them)
    tool_use_id = property(lambda self: self.item.tool_use_id)
    name = property(lambda self: self.item.name)
    input = property(lambda self: self.item.input)
    arg = property(lambda self: self.item.arg)
    state = property(lambda self: self.item.state)
    summary = property(lambda self: self.item.summary)
    result = property(lambda self: self.item.result)
    is_error = property(lambda self: self.item.is_error)
    progress = property(lambda self: self.item.progress)
    tail = property(lambda self: self.item.tail)
    started = property(lambda self: self.item.started)
    ended = property(lambda self: self.item.ended)

    def sync(self) -> None:
        """The item changed: re-measure (the tail comes and goes), refresh an open body, repaint."""
        item = self.item
        if (item.state, item.summary) != self._described:
            self._described = (item.state, item.summary)
            self.setAccessibleDescription(f"{item.state} {item.summary}")
        if self.body is not None and (item.state, item.result) != self._body_for:
            self.refresh_body()
        self.column.child_changed(self)
        self.update()

    def elapsed_text(self) -> str:
        return self.item.elapsed_text(time.monotonic())

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

    RESULT_LIMIT = 200_000  # characters of a result shown (the rest is counted)

    def _make_body(self) -> QTextBrowser:
        """The expanded body: the input as fields and the result, wrapped, scrolling inside the card."""
        body = QTextBrowser(self)
        body.setObjectName("toolBody")
        body.setFrameShape(QFrame.Shape.NoFrame)
        body.setOpenLinks(False)
        body.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        body.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        body.setAccessibleName(self.tr("Details"))
        body.document().setDocumentMargin(4)
        return body

    def body_text(self) -> str:
        """The body as plain text: ``Input``, a ``key: value`` line per field, ``Result``, the exit line and output."""
        self._fill_body_document(None)
        return self._plain

    def refresh_body(self) -> None:
        if self.body is None:
            return
        self._on_body_refresh()
        self._fill_body_document(self.body)
        self._place_body()
        self.column.child_changed(self)

    def _fill_body_document(self, body: QTextBrowser | None) -> None:
        c = highlight.colors(is_dark(self))
        mono = mono_font()
        plain: list[str] = []
        cursor = QTextCursor(body.document()) if body is not None else None
        if body is not None:
            body.document().clear()
            cursor = QTextCursor(body.document())
        heading, key_fmt, value_fmt, error_fmt = (QTextCharFormat() for _ in range(4))
        heading.setFontWeight(QFont.Weight.DemiBold)
        heading.setForeground(QColor(c.muted))
        key_fmt.setForeground(QColor(c.muted))
        for fmt in (value_fmt, error_fmt):
            fmt.setFontFamilies([mono.family()])
            fmt.setFontFixedPitch(True)
        value_fmt.setForeground(self.palette().color(QPalette.ColorRole.Text))
        error_fmt.setForeground(QColor(c.error))
        error_fmt.setFontWeight(QFont.Weight.DemiBold)
        plain_block, indented = QTextBlockFormat(), QTextBlockFormat()
        indented.setLeftMargin(16)
        gap = QTextBlockFormat()
        gap.setTopMargin(8)
        first = [True]

        def block(fmt: QTextBlockFormat = plain_block) -> None:
            if cursor is None:
                return
            if first[0]:
                cursor.setBlockFormat(fmt)
                first[0] = False
            else:
                cursor.insertBlock(fmt)

        def put(text: str, fmt: QTextCharFormat) -> None:
            if cursor is not None:
                cursor.insertText(text, fmt)

        input_label, result_label = self.tr("Input"), self.tr("Result")
        block()
        put(input_label, heading)
        plain.append(input_label)
        for f in input_fields(self.input):
            block()
            put(f"{f.key}: ", key_fmt)
            if f.block:
                block(indented)
            put(f.text, value_fmt)
            plain.append(f"{f.key}: {f.text}")
        block(gap)
        put(result_label, heading)
        plain.append(result_label)
        if self.state in (self.RUNNING, self.WAITING):
            running = self.tr("(running…)")
            block()
            put(running, key_fmt)
            plain.append(running)
        else:
            out = self.result
            line, rest = exit_line(out, self.is_error)
            if line is not None:
                block()
                put(line, error_fmt)  # the failure, in the error colour; the card itself stays as it is
                plain.append(line)
                out = rest
            if len(out) > self.RESULT_LIMIT:
                out = out[:self.RESULT_LIMIT] + "\n" + self.tr("… {0} more characters").format(
                    len(out) - self.RESULT_LIMIT)
            if out:
                block()
                put(out, value_fmt)
                plain.append(out)
        self._plain = "\n".join(plain)
        if body is not None:
            body.verticalScrollBar().setValue(0)

    def _body_height(self) -> int:
        if self.body is None:
            return 0
        doc = self.body.document()
        width = max(50, self.width() - 36)
        if self.body.width() != width:  # the document is laid out at the body's own viewport width
            self.body.resize(width, max(self.body.height(), 50))
        cap = 18 * QFontMetrics(mono_font()).lineSpacing() + 16
        return min(cap, int(math.ceil(doc.size().height())) + 4)

    def body_is_error(self) -> bool:
        return False  # the exit line says it; the rest of the card keeps its colours

    def _on_body_refresh(self) -> None:
        self._body_for = (self.item.state, self.item.result)

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
        p.drawText(x, baseline, self.display_name)
        x += fm_b.horizontalAdvance(self.display_name) + 12
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


class ThinkingCard(_Expandable[QPlainTextEdit]):
    """The model's thinking, collapsed to "Thought for N s"; renders its ``ThinkingItem``."""

    def __init__(self, item: ThinkingItem, column: Column, parent: QWidget | None = None):
        super().__init__(column, parent)
        self.item = item
        self._ended = item.ended
        self.setAccessibleName(self.tr("Thinking"))

    text = property(lambda self: self.item.text)
    started = property(lambda self: self.item.started)
    ended = property(lambda self: self.item.ended)

    def sync(self) -> None:
        if self.item.ended != self._ended:  # done: the header says for how long
            self._ended = self.item.ended
            self.update()
            if self.body is not None:
                self.refresh_body()

    def body_text(self) -> str:
        return self.text

    def _make_body(self) -> QPlainTextEdit:
        """The expanded body: the thinking as plain text, not wrapped."""
        body = QPlainTextEdit(self)
        body.setReadOnly(True)
        body.setFont(mono_font())
        body.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        body.setFrameShape(QFrame.Shape.NoFrame)
        body.setAccessibleName(self.tr("Details"))
        return body

    def refresh_body(self) -> None:
        if self.body is None:
            return
        self._on_body_refresh()
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

    def __init__(self, kind: BannerKind, text: str, actions: list[tuple[str, str]] | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.kind = kind
        self.key: str | None = None  # set by the view for a keyed banner
        self.text_plain = text
        self.links = list(actions or [])  # (href, label) of each link (QWidget.actions() is its QActions)
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
        anchors = "  ".join(f'<a href="{href}">{html.escape(label)}</a>' for href, label in self.links)
        body = html.escape(text).replace("\n", "<br/>")
        self.setText(f"<b>{icon}</b>&nbsp; {body}" + (f"<br/>{anchors}" if anchors else ""))
        self.setStyleSheet(
            f"QLabel#{self.objectName()} {{ background: {bg}; color: {fg}; border: 1px solid {border}; "
            f"border-radius: 6px; padding: 8px; }}"
        )
        self.setAccessibleName(text)


class RetryCard(Banner):
    """The one card of a retried request, updated in place: the error, a live countdown to the next
    attempt, and ``Retry now`` / ``Cancel`` (links ``retry-now`` / ``retry-cancel``). Once the request
    goes through (or the turn ends) it says how it ended and the links go."""

    def __init__(self, item: RetryItem, parent: QWidget | None = None):
        super().__init__("notice", "", None, parent)
        self.setObjectName("retryCard")
        self.setStyleSheet(self.styleSheet().replace("QLabel#banner_notice", "QLabel#retryCard"))
        self.item = item
        self._timer = QTimer(self)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self._render)

    attempt = property(lambda self: self.item.attempt)
    max_attempts = property(lambda self: self.item.max_attempts)
    error = property(lambda self: self.item.error)
    deadline = property(lambda self: self.item.deadline)
    finished = property(lambda self: self.item.finished)

    def sync(self) -> None:
        """Waiting: a live countdown (every 250 ms); finished: how it ended, the links gone."""
        if self.finished is None:
            self._timer.start()
        else:
            self._timer.stop()
        self._render()

    def seconds_left(self) -> int:
        return self.item.seconds_left(time.monotonic())

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
        if isinstance(col, Column):
            col.child_changed(self)
