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
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, Generator, Hashable

from PySide6.QtCore import QObject, QTimer, Signal

from desktop_agent.ui import highlight

INLINE_LINES = 300
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
