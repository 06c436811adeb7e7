"""One change in full, inside the changes panel ("show all"): every line of it in the virtualised
``HunkDiffView`` (filled in slices, coloured where seen), so a 20,000-line change opens without a
stall, with the hunk navigator (``[``/``]``, Alt+↑/↓, "hunk 7 of 41") and the change's actions.

``ReviewedDiffView`` shows decisions already made: the hunks the user rejected in the permission
dialog keep their ``[✗]`` mark, struck through and muted with "(rejected: not written)"; nothing can
be toggled here.
"""

from __future__ import annotations

import html
import os
from typing import Any, Generator

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from desktop_agent.ui.highlight import is_dark, mono_font
from desktop_agent.ui.changes.render import HunkDiffView


class ReviewedDiffView(HunkDiffView):
    """A ``HunkDiffView`` whose accept/reject marks are read-only (shown only when some hunk was
    rejected), filled in slices of at most ``SLICE_LINES`` lines: the panel shares the Qt thread
    with a running turn, and a 2,000-line insert into a big document took 25–35 ms on a loaded box."""

    SLICE_LINES = 1000

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, toggles=False)

    def show_change(self, hunks: list[dict[str, Any]], file_path: str | None, dark: bool,
                    accepted: list[bool] | None = None) -> None:
        self.toggles = accepted is not None and not all(accepted)
        self.set_hunks(hunks, file_path, dark, accepted)

    def _chunks(self) -> Generator[str, None, None]:
        for chunk in super()._chunks():
            if chunk.count("\n") < self.SLICE_LINES:
                yield chunk
                continue
            lines = chunk.split("\n")
            for i in range(0, len(lines), self.SLICE_LINES):
                yield "\n".join(lines[i:i + self.SLICE_LINES])

    def toggle(self, i: int | None = None) -> None:  # the decisions are history
        return

    def set_accepted(self, i: int, on: bool) -> None:
        return


class ChangeDetail(QWidget):
    """Header (back, the file, its counts and status), the navigator and actions, the whole diff."""

    back = Signal()
    action = Signal(str)  # "open", "copy", "revert", "redo"

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("changeDetail")
        self.change_id: int | None = None
        root = QVBoxLayout(self)
        root.setContentsMargins(8, 4, 8, 0)
        root.setSpacing(4)
        top = QHBoxLayout()
        top.setSpacing(8)
        self.back_button = QToolButton()
        self.back_button.setText(self.tr("\u2190 All changes"))
        self.back_button.setAutoRaise(True)
        self.back_button.setToolTip(self.tr("Back to the list of changes (Esc)"))
        self.back_button.clicked.connect(self.back.emit)
        top.addWidget(self.back_button)
        self.title = QLabel()
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top.addWidget(self.title, 1)
        root.addLayout(top)
        nav = QHBoxLayout()
        nav.setSpacing(4)
        self.prev_button = QToolButton()
        self.prev_button.setText("\u25b2")
        self.prev_button.setAutoRaise(True)
        self.prev_button.setToolTip(self.tr("Previous hunk  ([ or Alt+\u2191)"))
        self.next_button = QToolButton()
        self.next_button.setText("\u25bc")
        self.next_button.setAutoRaise(True)
        self.next_button.setToolTip(self.tr("Next hunk  (] or Alt+\u2193)"))
        self.hunk_label = QLabel()
        self.hunk_label.setObjectName("hunkLabel")
        for w in (self.prev_button, self.next_button, self.hunk_label):
            nav.addWidget(w)
        nav.addStretch(1)
        self.buttons: dict[str, QToolButton] = {}
        for key, text in (("open", self.tr("Open in editor")), ("copy", self.tr("Copy patch")),
                          ("revert", self.tr("Revert\u2026")), ("redo", self.tr("Redo\u2026"))):
            b = QToolButton()
            b.setText(text)
            b.setAutoRaise(True)
            b.clicked.connect(lambda _=False, k=key: self.action.emit(k))
            self.buttons[key] = b
            nav.addWidget(b)
        self.buttons["redo"].setVisible(False)  # in Revert's place on a reverted change
        root.addLayout(nav)
        self.view = ReviewedDiffView()
        self.view.setObjectName("changeDiffView")
        self.view.setAccessibleName(self.tr("The whole change"))
        self.view.setFont(mono_font())
        self.view.setFrameShape(ReviewedDiffView.Shape.NoFrame)
        self.view.current_changed.connect(lambda _i: self._update_label())
        self.prev_button.clicked.connect(self.view.previous_hunk)
        self.next_button.clicked.connect(self.view.next_hunk)
        root.addWidget(self.view, 1)

    def show_change(self, change_id: int, title_html: str, hunks: list[dict[str, Any]], file_path: str,
                    accepted: list[bool] | None, can_revert: bool, can_redo: bool = False) -> None:
        same = change_id == self.change_id and self.view.hunks is hunks
        self.change_id = change_id
        self.set_title(title_html, can_revert, can_redo)
        self.buttons["open"].setEnabled(os.path.exists(file_path))
        if not same:
            self.view.show_change(hunks, file_path, is_dark(self), accepted)
        self._update_label()
        self.view.setFocus()

    def set_title(self, title_html: str, can_revert: bool, can_redo: bool = False) -> None:
        """The header, and Revert — or, on a reverted change that can be re-applied, Redo in its place."""
        self.title.setText(title_html)
        self.buttons["revert"].setVisible(not can_redo)
        self.buttons["revert"].setEnabled(can_revert)
        self.buttons["redo"].setVisible(can_redo)
        self.buttons["redo"].setEnabled(can_redo)

    def _update_label(self) -> None:
        v = self.view
        if not v.hunks:
            self.hunk_label.setText(self.tr("no textual change"))
            return
        plus, minus = v.counts[v.current]
        state = " \u00b7 " + self.tr("rejected: not written") if v.toggles and not v.accepted[v.current] else ""
        where = self.tr("hunk {0} of {1}").format(v.current + 1, len(v.hunks))
        self.hunk_label.setText(html.escape(f"{where}   +{plus} \u2212{minus}{state}"))

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Esc goes back to the list
        if event.key() == Qt.Key.Key_Escape:
            event.accept()
            self.back.emit()
            return
        if event.key() in (Qt.Key.Key_BracketLeft, Qt.Key.Key_BracketRight):
            self.view.keyPressEvent(event)
            return
        super().keyPressEvent(event)


__all__ = ["ChangeDetail", "ReviewedDiffView"]
