"""``DiffRenderer``: diff HTML for the permission dialog and the changes panel, memoised, and built
in slices between other events when it is big.

Highlighting a diff is pure Python (pygments, ~0.2 ms a line on a 2-core box): a 4,000-line change
held the Qt thread for 0.9 s before the dialog could open. A diff of at most ``INLINE_LINES`` lines
is rendered at once (the common case: the dialog opens with its diff); a bigger one is built by
``highlight.diff_html_steps`` in slices of about ``SLICE_S`` on the Qt thread, the caller shows a
placeholder, and ``ready(key)`` says when the HTML is in the memo. Slices, not a worker thread: the
work holds the GIL either way, and a worker thread starved the Qt thread of it (a 180 ms stall
measured with one), where slices leave the loop free between them. The dialog and the panel ask
for the same patch within milliseconds of each other, so one memo serves both.

``HunkDiffView`` is the whole patch at any size, for the permission dialog (and the changes panel's
"show all"): a QPlainTextEdit of plain text — the gutter, the mark and the code of each line —
filled ``CHUNK_LINES`` at a time between other events (one ``setPlainText`` of 20,000 lines held
the Qt thread 58 ms here; 2,000-line inserts take ~10 ms each), coloured only where it is seen:
the blocks in the viewport get their formats (``QTextLayout.setFormats``, the way a
QSyntaxHighlighter does it, but a QSyntaxHighlighter formats every block of the document) and a
line-wide background is painted behind them. Each hunk can carry an accept/reject toggle.
"""

from __future__ import annotations

import bisect
import concurrent.futures
import time
from collections import OrderedDict
from functools import lru_cache
from typing import Any, Generator, Hashable

from pygments.token import Token
from PySide6.QtCore import QObject, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QKeySequence, QPainter, QTextCharFormat, QTextCursor, QTextLayout
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from desktop_agent.ui import highlight
from desktop_agent.ui.changes.log import INLINE_LINES
from desktop_agent.ui.highlight import PlainSpacesCopy

SLICE_S = 0.008
MEMO_SIZE = 32  # a capped 1,000-line diff is ~0.4 MB of HTML


def diff_key(hunks: list[dict[str, Any]], file_path: str | None, dark: bool, font_family: str) -> Hashable:
    """What the HTML depends on (the hunks by content, not identity)."""
    return (file_path, dark, font_family,
            tuple((h["oldStart"], h["oldLines"], h["newStart"], h["newLines"], tuple(h["lines"])) for h in hunks))


class DiffRenderer(QObject):
    """One per application (``renderer()``); lives on the Qt thread."""

    ready = Signal(object)  # the key whose HTML is now in the memo

    def __init__(self) -> None:
        super().__init__()
        self._memo: OrderedDict[Hashable, str] = OrderedDict()
        self._jobs: OrderedDict[Hashable, Generator[None, None, str]] = OrderedDict()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._slice)
        self.slices = 0  # slices run so far (tests, benchmarks)

    def html(self, hunks: list[dict[str, Any]], file_path: str | None, dark: bool,
             font_family: str) -> tuple[Hashable, str | None]:
        """``(key, html)``; ``html`` is None while a big diff is being built (then ``ready(key)``)."""
        key = diff_key(hunks, file_path, dark, font_family)
        done = self._memo.get(key)
        if done is not None:
            self._memo.move_to_end(key)
            return key, done
        if highlight.diff_line_count(hunks) <= INLINE_LINES:
            done = highlight.diff_html(hunks, file_path, dark, font_family)
            self._remember(key, done)
            return key, done
        if key not in self._jobs:
            self._jobs[key] = highlight.diff_html_steps(hunks, file_path, dark, font_family, every=200)
            self._timer.start()
        return key, None

    def _slice(self) -> None:
        """Advance the oldest job for about ``SLICE_S``; come back on the next turn of the loop."""
        if not self._jobs:
            return
        self.slices += 1
        key, job = next(iter(self._jobs.items()))
        deadline = time.perf_counter() + SLICE_S
        try:
            while time.perf_counter() < deadline:
                next(job)
        except StopIteration as stop:
            del self._jobs[key]
            self._remember(key, stop.value)
            # On the next turn of the loop: the views' setHtml (~50 ms for 1,000 lines) is a slice
            # of its own, not added to this one.
            QTimer.singleShot(0, lambda: self.ready.emit(key))
        except Exception as exc:  # shown instead of the diff; never a placeholder forever
            del self._jobs[key]
            self._remember(key, f"<p>Could not render this diff: {type(exc).__name__}: {exc}</p>")
            self.ready.emit(key)
        if self._jobs:
            self._timer.start()

    def _remember(self, key: Hashable, out: str) -> None:
        self._memo[key] = out
        self._memo.move_to_end(key)
        while len(self._memo) > MEMO_SIZE:
            self._memo.popitem(last=False)


_RENDERER: DiffRenderer | None = None


def renderer() -> DiffRenderer:
    global _RENDERER
    if _RENDERER is None:
        _RENDERER = DiffRenderer()
    return _RENDERER



# ---------------------------------------------------------------- the whole patch, virtualised

CTX, ADD, DEL, HEAD, META = 0, 1, 2, 3, 4
ACCEPT_MARK, REJECT_MARK = "[\u2713] ", "[\u2717] "
CHUNK_LINES = 2000  # lines inserted per slice (about 10 ms here)
FIRST_CHUNK = 400   # the first slice is small: the first hunk shows at once


@lru_cache(maxsize=4096)
def _token_format(ttype: Any, dark: bool) -> QTextCharFormat | None:
    st = highlight._style(dark).style_for_token(ttype)
    if not st.get("color") and not st.get("bold") and not st.get("italic"):
        return None
    fmt = QTextCharFormat()
    if st.get("color"):
        fmt.setForeground(QColor("#" + st["color"]))
    if st.get("bold"):
        fmt.setFontWeight(QFont.Weight.DemiBold)
    if st.get("italic"):
        fmt.setFontItalic(True)
    return fmt


_LEXER_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_LEXER_JOBS: dict[Any, concurrent.futures.Future] = {}


def lexer_soon(file_path: str | None) -> Any | None:
    """The pygments lexer for ``file_path`` if it is built, else None and it is being built on a
    worker thread: compiling a lexer's regexes (Python's, the first time) held the Qt thread ~100 ms."""
    global _LEXER_POOL
    name = (file_path or "").rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    loader = highlight._BY_EXT.get(ext, highlight._text)
    job = _LEXER_JOBS.get(loader)
    if job is None:
        if _LEXER_POOL is None:
            _LEXER_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="lexer")
        job = _LEXER_JOBS[loader] = _LEXER_POOL.submit(highlight._cached_lexer, loader)
    if not job.done():
        return None
    return job.result() if job.exception() is None else highlight._cached_lexer(highlight._text)


_KIND_OF_SIGN = bytes.maketrans(b" +-\\?", bytes([CTX, ADD, DEL, META, CTX]))


def hunk_signs(hunk: dict[str, Any]) -> str:
    """The first character of each line (" " for an empty one): +/- counts and kinds from C loops."""
    return "".join([x[:1] or " " for x in hunk["lines"]])


def hunk_counts(hunk: dict[str, Any], signs: str | None = None) -> tuple[int, int]:
    signs = hunk_signs(hunk) if signs is None else signs
    return signs.count("+"), signs.count("-")


class HunkDiffView(PlainSpacesCopy, QPlainTextEdit):
    """A unified diff of any size, one hunk header per hunk, with a current hunk and (``toggles``)
    an accept/reject mark per hunk: a click on ``[✓]``, or ``x`` on the current hunk. ``[``/``]`` and
    Alt+↑/↓ move between hunks. Space does nothing here (it must never approve anything)."""

    hunk_toggled = Signal(int, bool)  # index, accepted
    current_changed = Signal(int)
    loaded = Signal()  # every line is in

    def __init__(self, parent: QWidget | None = None, toggles: bool = False):
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                     | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.setUndoRedoEnabled(False)
        self.toggles = toggles
        self.hunks: list[dict[str, Any]] = []
        self.accepted: list[bool] = []
        self.counts: list[tuple[int, int]] = []
        self.headers: list[int] = []  # block number of each hunk's header
        self.current = 0
        self._kinds = bytearray()
        self._done = bytearray()  # blocks whose formats are set
        self._lexer: Any = None
        self._path: str | None = None
        self._lexer_timer = QTimer(self)  # polls for a lexer being built on a worker thread
        self._lexer_timer.setInterval(40)
        self._lexer_timer.timeout.connect(self._check_lexer)
        self._dark = False
        self._width = 1
        self._job: Generator[str, None, None] | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._slice)
        self._format_timer = QTimer(self)
        self._format_timer.setSingleShot(True)
        self._format_timer.setInterval(0)
        self._format_timer.timeout.connect(self._format_visible)
        self.updateRequest.connect(lambda *_: self._format_timer.start())
        self.cursorPositionChanged.connect(self._follow_cursor)
        self.inserted = 0  # lines in the document so far
        self.total_lines = 0

    # ----- content ---------------------------------------------------------------------------
    def set_hunks(self, hunks: list[dict[str, Any]], file_path: str | None, dark: bool,
                  accepted: list[bool] | None = None) -> None:
        """Show ``hunks``; a small diff at once, a big one ``CHUNK_LINES`` per turn of the loop."""
        self._timer.stop()
        self.hunks = hunks
        self.accepted = list(accepted) if accepted is not None else [True] * len(hunks)
        signs = [hunk_signs(h) for h in hunks]
        self.counts = [hunk_counts(h, sg) for h, sg in zip(hunks, signs)]
        self._path = file_path
        self._lexer = lexer_soon(file_path)
        if self._lexer is None:
            self._lexer_timer.start()
        self._dark = dark
        top = max([h["oldStart"] + h["oldLines"] for h in hunks] + [h["newStart"] + h["newLines"] for h in hunks]
                  + [1])
        self._width = len(str(top))
        self.headers = []
        kinds = bytearray()
        for sg in signs:
            self.headers.append(len(kinds))
            kinds.append(HEAD)
            kinds.extend(sg.encode("ascii", "replace").translate(_KIND_OF_SIGN))
        self._kinds = kinds
        self._done = bytearray(len(kinds))
        self.total_lines = len(kinds)
        self.current = 0
        self.inserted = 0
        self.document().clear()
        if not hunks:
            self.setPlainText(self.tr("(no textual change)"))
            self._kinds = bytearray(1)
            self._done = bytearray(1)
            self.loaded.emit()
            return
        self._job = self._chunks()
        if self.total_lines <= CHUNK_LINES:
            self._slice()
        else:
            self._slice()  # the first hunk now; the rest between other events
        self._format_timer.start()

    def header_text(self, i: int) -> str:
        h = self.hunks[i]
        mark = (ACCEPT_MARK if self.accepted[i] else REJECT_MARK) if self.toggles else ""
        plus, minus = self.counts[i]
        tail = "   " + self.tr("(rejected: not written)") if self.toggles and not self.accepted[i] else ""
        where = self.tr("hunk {0} of {1}").format(i + 1, len(self.hunks))
        return (f"{mark}@@ -{h['oldStart']},{h['oldLines']} +{h['newStart']},{h['newLines']} @@   {where}   "
                f"+{plus} \u2212{minus}{tail}")

    def _chunks(self) -> Generator[str, None, None]:
        w = self._width
        blank = " " * w
        out: list[str] = []
        want = FIRST_CHUNK
        for i, h in enumerate(self.hunks):
            out.append(self.header_text(i))
            old_no, new_no = h["oldStart"], h["newStart"]
            for line in h["lines"]:
                sign = line[:1]
                if sign == "+":
                    out.append(f" {blank}  {new_no:>{w}}  + {line[1:]}")
                    new_no += 1
                elif sign == "-":
                    out.append(f" {old_no:>{w}}  {blank}  \u2212 {line[1:]}")
                    old_no += 1
                elif sign == "\\":
                    out.append(f" {blank}  {blank}    {line}")
                else:
                    out.append(f" {old_no:>{w}}  {new_no:>{w}}    {line[1:]}")
                    old_no += 1
                    new_no += 1
                if len(out) >= want:
                    yield "\n".join(out)
                    out = []
                    want = CHUNK_LINES
        if out:
            yield "\n".join(out)

    def _slice(self) -> None:
        if self._job is None:
            return
        try:
            chunk = next(self._job)
        except StopIteration:
            self._job = None
            self.loaded.emit()
            return
        bar = self.verticalScrollBar().value()
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(("\n" if self.inserted else "") + chunk)
        self.inserted = self.document().blockCount()
        if self.inserted == 1 or bar == 0:
            self.verticalScrollBar().setValue(bar)
        if self.inserted >= self.total_lines:
            self._job = None
            self.moveCursor(QTextCursor.MoveOperation.Start)
            self.loaded.emit()
        else:
            self._timer.start()
        self._format_timer.start()

    def _check_lexer(self) -> None:
        lexer = lexer_soon(self._path)
        if lexer is not None:
            self._lexer_timer.stop()
            self._lexer = lexer
            self._done = bytearray(len(self._done))  # highlight what is on screen now
            self._format_visible()

    def is_loaded(self) -> bool:
        return self._job is None

    def finish_loading(self) -> None:
        """Insert what is left at once (tests, the screenshot tool)."""
        while self._job is not None:
            self._slice()
            self._timer.stop()

    # ----- hunks -----------------------------------------------------------------------------
    def hunk_of_block(self, n: int) -> int:
        return max(0, bisect.bisect_right(self.headers, n) - 1)

    def go_to(self, i: int) -> None:
        if not self.hunks:
            return
        i = max(0, min(i, len(self.hunks) - 1))
        header = self.headers[i]
        if header < self.document().blockCount():
            block = self.document().findBlockByNumber(header)
            cursor = QTextCursor(block)
            self.setTextCursor(cursor)
            bar = self.verticalScrollBar()
            bar.setValue(header)  # the header at the top (NoWrap: one scroll step per block)
            if bar.value() != header:  # the range is adjusted on the next turn of the loop
                QTimer.singleShot(0, lambda: bar.setValue(header) if self.current == i else None)
        self._set_current(i)

    def next_hunk(self) -> None:
        self.go_to(self.current + 1)

    def previous_hunk(self) -> None:
        self.go_to(self.current - 1)

    def _set_current(self, i: int) -> None:
        if i != self.current:
            self.current = i
            self.viewport().update()
            self.current_changed.emit(i)

    def _follow_cursor(self) -> None:
        if self.hunks:
            self._set_current(self.hunk_of_block(self.textCursor().blockNumber()))

    def set_accepted(self, i: int, on: bool) -> None:
        if not self.toggles or not (0 <= i < len(self.hunks)) or self.accepted[i] == on:
            return
        self.accepted[i] = on
        header = self.headers[i]
        end = self.headers[i + 1] if i + 1 < len(self.headers) else len(self._kinds)
        self._done[header:end] = bytes(end - header)  # re-format these when seen
        if header < self.document().blockCount():
            block = self.document().findBlockByNumber(header)
            cursor = QTextCursor(block)
            cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
            keep = self.textCursor().position()
            cursor.insertText(self.header_text(i))
            restore = self.textCursor()
            restore.setPosition(min(keep, self.document().characterCount() - 1))
            self.setTextCursor(restore)
        self._format_visible()
        self.viewport().update()
        self.hunk_toggled.emit(i, on)

    def toggle(self, i: int | None = None) -> None:
        i = self.current if i is None else i
        if 0 <= i < len(self.accepted):
            self.set_accepted(i, not self.accepted[i])

    # ----- look ------------------------------------------------------------------------------
    def set_dark(self, dark: bool) -> None:
        if dark != self._dark:
            self._dark = dark
            self._done = bytearray(len(self._done))
            self._format_visible()

    def _visible_blocks(self) -> Generator[Any, None, None]:
        block = self.firstVisibleBlock()
        offset = self.contentOffset()
        bottom = self.viewport().height()
        while block.isValid():
            geo = self.blockBoundingGeometry(block).translated(offset)
            if geo.top() > bottom:
                break
            yield block, geo
            block = block.next()

    def _format_visible(self) -> None:
        dirty = []
        for block, _ in self._visible_blocks():
            n = block.blockNumber()
            if n < len(self._done) and not self._done[n]:
                self._done[n] = 1
                block.layout().setFormats(self._formats(n, block.text()))
                dirty.append(block)
        for block in dirty:
            self.document().markContentsDirty(block.position(), block.length())

    def _formats(self, n: int, text: str) -> list[QTextLayout.FormatRange]:
        c = highlight.colors(self._dark)
        kind = self._kinds[n]
        rejected = self.toggles and bool(self.hunks) and not self.accepted[self.hunk_of_block(n)]
        ranges: list[QTextLayout.FormatRange] = []

        def add(start: int, length: int, fmt: QTextCharFormat) -> None:
            if length > 0:
                r = QTextLayout.FormatRange()
                r.start, r.length, r.format = start, length, fmt
                ranges.append(r)

        if kind == HEAD:
            fmt = QTextCharFormat()
            fmt.setForeground(QColor(c.hunk_fg))
            add(0, len(text), fmt)
            if self.toggles:
                mark = QTextCharFormat()
                mark.setForeground(QColor(c.error if rejected else c.added_fg))
                mark.setFontWeight(QFont.Weight.Bold)
                add(0, 3, mark)
            return ranges
        gutter = 2 * self._width + 5
        gfmt = QTextCharFormat()
        gfmt.setForeground(QColor(c.gutter_fg))
        add(0, gutter, gfmt)
        if kind in (ADD, DEL):
            sfmt = QTextCharFormat()
            sfmt.setForeground(QColor(c.added_fg if kind == ADD else c.removed_fg))
            add(gutter, 1, sfmt)
        if rejected:
            strike = QTextCharFormat()
            strike.setFontStrikeOut(kind in (ADD, DEL))
            strike.setForeground(QColor(c.muted))
            add(gutter, len(text) - gutter, strike)
            return ranges
        code = text[gutter + 2:]
        if code and kind != META and self._lexer is not None:
            pos = gutter + 2
            try:
                tokens = self._lexer.get_tokens_unprocessed(code)
                for start, ttype, value in tokens:
                    if ttype in Token.Text:
                        continue
                    token_fmt = _token_format(ttype, self._dark)
                    if token_fmt is not None:
                        add(pos + start, len(value), token_fmt)
            except Exception:  # a lexer failing on a fragment: plain text
                pass
        return ranges

    def paintEvent(self, event) -> None:  # noqa: N802 - line-wide backgrounds, then the text
        if self._kinds and self.hunks:
            c = highlight.colors(self._dark)
            painter = QPainter(self.viewport())
            width = self.viewport().width()
            gutter_px = self.fontMetrics().horizontalAdvance(" " * (2 * self._width + 4)) + self.contentOffset().x() \
                + self.document().documentMargin()
            for block, geo in self._visible_blocks():
                n = block.blockNumber()
                if n >= len(self._kinds):
                    break
                kind = self._kinds[n]
                hunk = self.hunk_of_block(n)
                rejected = self.toggles and not self.accepted[hunk]
                rect = QRectF(0, geo.top(), width, geo.height())
                if kind == HEAD:
                    painter.fillRect(rect, QColor(c.hunk_bg))
                    if hunk == self.current:
                        painter.fillRect(QRectF(0, geo.top(), 3, geo.height()), QColor(c.accent))
                elif kind in (ADD, DEL) and not rejected:
                    painter.fillRect(rect, QColor(c.added_bg if kind == ADD else c.removed_bg))
                    painter.fillRect(QRectF(0, geo.top(), gutter_px, geo.height()),
                                     QColor(c.added_gutter if kind == ADD else c.removed_gutter))
                elif rejected:
                    painter.fillRect(rect, QColor(c.code_bg))
            painter.end()
        super().paintEvent(event)

    # ----- input -----------------------------------------------------------------------------
    def mousePressEvent(self, event) -> None:  # noqa: N802 - a click on [✓] / [✗] toggles that hunk
        if self.toggles and self.hunks and event.button() == Qt.MouseButton.LeftButton:
            cursor = self.cursorForPosition(event.position().toPoint())
            n = cursor.blockNumber()
            if n < len(self._kinds) and self._kinds[n] == HEAD and cursor.positionInBlock() <= 3:
                i = self.hunk_of_block(n)
                self._set_current(i)
                self.toggle(i)
                event.accept()
                return
        super().mousePressEvent(event)

    def keyPressEvent(self, event) -> None:  # noqa: N802
        key, mods = event.key(), event.modifiers()
        alt = bool(mods & Qt.KeyboardModifier.AltModifier)
        if key == Qt.Key.Key_BracketRight or (alt and key == Qt.Key.Key_Down):
            self.next_hunk()
        elif key == Qt.Key.Key_BracketLeft or (alt and key == Qt.Key.Key_Up):
            self.previous_hunk()
        elif self.toggles and key == Qt.Key.Key_X and not (mods & ~Qt.KeyboardModifier.KeypadModifier
                                                           & ~Qt.KeyboardModifier.ShiftModifier):
            self.toggle()
        elif key == Qt.Key.Key_Space:
            event.accept()  # never passed on: Space must not reach a default button
        elif event.matches(QKeySequence.StandardKey.Copy):
            self.copy()
        else:
            super().keyPressEvent(event)
            return
        event.accept()
