"""The review view of a worktree session (UI-GUIDE: "Review view"): the session's whole change against its base —
file list on the left (+/−, new, deleted, renamed, mode, binary) with a checkbox per file, the same virtual diff
as the permission dialog (``ui.changes.render.HunkDiffView``) with a ✓/✗ per hunk on the right and a checkbox per
whole-file change (rename, mode, new or deleted file, binary content); buttons ``Apply 7 of 9 changes to the
folder``, ``Discard 2``, ``Keep in worktree``. Conflicts with the folder are listed in place and nothing is written
then. Loading, applying and discarding are git and disk work: ``client.review`` runs them on a worker thread, never
on the Qt thread; ``recorder`` (the session handle's ``record``) gets the review record there too, so the model is
told in its next message what was applied and what was discarded.
"""

from __future__ import annotations

import asyncio
import html
import logging
from typing import Any, Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QSplitter, QVBoxLayout, QWidget,
)

from desktop_agent.client import review as client_review
from desktop_agent.ui.changes.render import HunkDiffView
from desktop_agent.ui.highlight import is_dark, mono_font
from desktop_agent.util.threads import in_thread

log = logging.getLogger(__name__)


class ReviewView(QWidget):
    """One worktree session's change; ``load()`` first (a coroutine)."""

    outcome = Signal(bool, str)  # ok, the sentence (or the conflicts) shown
    closed = Signal()

    def __init__(self, folder: str, slug: str, recorder: Callable[[dict[str, Any]], None] | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("reviewView")
        self.folder, self.slug, self.recorder = folder, slug, recorder
        self.review: client_review.Review | None = None
        self.selected: set[tuple[int, int]] = set()
        self.current = -1
        self.busy = False
        self._tasks: set[asyncio.Future[Any]] = set()
        root = QVBoxLayout(self)
        root.setContentsMargins(8, 8, 8, 8)
        self.title = QLabel(self.tr("Loading the worktree's changes\u2026"))
        self.title.setObjectName("reviewTitle")
        root.addWidget(self.title)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.files = QListWidget()
        self.files.setObjectName("reviewFiles")
        self.files.setAccessibleName(self.tr("Changed files"))
        self.files.currentRowChanged.connect(self._show_file)
        self.files.itemChanged.connect(self._file_checked)
        split.addWidget(self.files)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        self.file_title = QLabel()
        self.file_title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        rl.addWidget(self.file_title)
        self.units_row = QHBoxLayout()
        rl.addLayout(self.units_row)
        self.unit_boxes: list[tuple[QCheckBox, int]] = []
        self.diff = HunkDiffView(toggles=True)
        self.diff.setObjectName("reviewDiff")
        self.diff.setAccessibleName(self.tr("The file's change"))
        self.diff.setFont(mono_font())
        self.diff.hunk_toggled.connect(self._hunk_toggled)
        rl.addWidget(self.diff, 1)
        split.addWidget(right)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 3)
        root.addWidget(split, 1)
        self.status = QLabel()
        self.status.setObjectName("reviewStatus")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        root.addWidget(self.status)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.keep_button = QPushButton(self.tr("Keep in worktree"))
        self.keep_button.clicked.connect(self._keep)
        self.discard_button = QPushButton(self.tr("Discard"))
        self.discard_button.clicked.connect(lambda: self._start("discard"))
        self.apply_button = QPushButton(self.tr("Apply to the folder"))
        self.apply_button.setObjectName("reviewApply")
        self.apply_button.clicked.connect(lambda: self._start("apply"))
        for b in (self.keep_button, self.discard_button, self.apply_button):
            buttons.addWidget(b)
        root.addLayout(buttons)
        self._update_buttons()

    # ----- loading ---------------------------------------------------------------------------
    async def load(self) -> None:
        """The change, read on a worker thread; every unit chosen to start with."""
        self.busy = True
        self._update_buttons()
        try:
            rv = await client_review.load_review(self.folder, self.slug)
        except client_review.WorktreeError as exc:
            self.busy = False
            self.title.setText(html.escape(self.tr("Cannot review {0}: {1}").format(self.slug, exc)))
            self._update_buttons()
            return
        self.busy = False
        self.show_review(rv)

    def show_review(self, rv: client_review.Review) -> None:
        self.review = rv
        self.selected = rv.all_units()
        n_files = len(rv.files)
        self.title.setText(self.tr("\u2387 {0} \u2014 {1} changed files, {2} changes").format(
            rv.branch, n_files, rv.unit_count) if n_files else self.tr("\u2387 {0} \u2014 nothing left to review")
            .format(rv.branch))
        self.files.blockSignals(True)
        self.files.clear()
        for fi, fc in enumerate(rv.files):
            item = QListWidgetItem(self._file_label(fc))
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setData(Qt.ItemDataRole.UserRole, fi)
            self.files.addItem(item)
        self.files.blockSignals(False)
        self._refresh_checks()
        self.current = -1
        if rv.files:
            self.files.setCurrentRow(0)
        else:
            self.diff.set_hunks([], None, is_dark(self))
            self.file_title.setText("")
        self._update_buttons()

    def _file_label(self, fc: client_review.FileChange) -> str:
        added, removed = fc.counts
        status = {"A": self.tr("new"), "D": self.tr("deleted"), "R": self.tr("renamed"),
                  "T": self.tr("type changed")}.get(fc.status, "")
        if fc.old_mode and fc.new_mode and fc.old_mode != fc.new_mode and fc.status != "T":
            status = ", ".join(x for x in (status, self.tr("mode")) if x)
        name = f"{fc.old_path} \u2192 {fc.new_path}" if fc.status == "R" else fc.path
        bits = [b for b in (status, self.tr("binary") if fc.binary else "") if b]
        counts = f"+{added} \u2212{removed}" if not fc.binary and (added or removed) else ""
        return "  ".join(x for x in (name, counts, f"({', '.join(bits)})" if bits else "") if x)

    # ----- one file --------------------------------------------------------------------------
    def _hunk_units(self, fi: int) -> list[int]:
        assert self.review is not None
        return [j for j, u in enumerate(self.review.files[fi].units) if u.kind == "hunk"]

    def _show_file(self, row: int) -> None:
        if self.review is None or not 0 <= row < len(self.review.files):
            return
        self.current = row
        fc = self.review.files[row]
        self.file_title.setText(html.escape(self._file_label(fc)))
        for box, _ in self.unit_boxes:
            self.units_row.removeWidget(box)
            box.deleteLater()
        self.unit_boxes = []
        labels = {"add": self.tr("Create this new file"), "delete": self.tr("Delete this file"),
                  "rename": self.tr("Rename {0} \u2192 {1}").format(fc.old_path, fc.new_path),
                  "mode": self.tr("Make it executable") if fc.new_mode == 0o100755 else self.tr("Make it not executable"),
                  "binary": self.tr("Replace the binary content ({0} \u2192 {1} bytes)").format(
                      len(fc.old or b""), len(fc.new or b"")),
                  "symlink": self.tr("Change the symbolic link")}
        for j, unit in enumerate(fc.units):
            if unit.kind == "hunk":
                continue
            box = QCheckBox(labels[unit.kind])
            box.setChecked((row, j) in self.selected)
            box.toggled.connect(lambda on, j=j: self._set_unit(self.current, j, on))
            self.units_row.addWidget(box)
            self.unit_boxes.append((box, j))
        hunk_units = self._hunk_units(row)
        self.diff.toggles = bool(hunk_units)
        accepted = [(row, j) in self.selected for j in hunk_units] if hunk_units else None
        self.diff.set_hunks(fc.hunks, fc.path, is_dark(self), accepted)

    def _hunk_toggled(self, i: int, on: bool) -> None:
        if self.review is None or self.current < 0:
            return
        units = self._hunk_units(self.current)
        if 0 <= i < len(units):
            self._set_unit(self.current, units[i], on, from_diff=True)

    def _set_unit(self, fi: int, j: int, on: bool, from_diff: bool = False) -> None:
        if on:
            self.selected.add((fi, j))
        else:
            self.selected.discard((fi, j))
        if not from_diff and fi == self.current and self.review is not None:
            units = self._hunk_units(fi)
            if j in units:
                self.diff.set_accepted(units.index(j), on)
        self._refresh_checks()
        self._update_buttons()

    def _file_checked(self, item: QListWidgetItem) -> None:
        if self.review is None:
            return
        fi = int(item.data(Qt.ItemDataRole.UserRole))
        on = item.checkState() != Qt.CheckState.Unchecked
        for j in range(len(self.review.files[fi].units)):
            if on:
                self.selected.add((fi, j))
            else:
                self.selected.discard((fi, j))
        if fi == self.current:
            self._show_file(fi)
        self._refresh_checks()
        self._update_buttons()

    def _refresh_checks(self) -> None:
        if self.review is None:
            return
        self.files.blockSignals(True)
        for fi, fc in enumerate(self.review.files):
            n = sum(1 for j in range(len(fc.units)) if (fi, j) in self.selected)
            state = Qt.CheckState.Checked if n == len(fc.units) else (
                Qt.CheckState.Unchecked if n == 0 else Qt.CheckState.PartiallyChecked)
            item = self.files.item(fi)
            if item is not None:
                item.setCheckState(state)
        self.files.blockSignals(False)

    # ----- actions ---------------------------------------------------------------------------
    def _update_buttons(self) -> None:
        total = self.review.unit_count if self.review else 0
        chosen = len(self.selected) if self.review else 0
        self.apply_button.setText(self.tr("Apply {0} of {1} changes to the folder").format(chosen, total))
        self.discard_button.setText(self.tr("Discard {0}").format(chosen))
        for b in (self.apply_button, self.discard_button):
            b.setEnabled(not self.busy and chosen > 0)
        self.keep_button.setEnabled(not self.busy)

    def _keep(self) -> None:
        self.closed.emit()

    def _start(self, action: str) -> None:
        if self.busy or self.review is None or not self.selected:
            return
        task = asyncio.ensure_future(self.run(action))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def run(self, action: str) -> bool:
        """Apply or discard the chosen units (worker thread), record the outcome for the model, reload."""
        assert self.review is not None
        rv, chosen, recorder = self.review, set(self.selected), self.recorder
        self.busy = True
        self._update_buttons()
        self.status.setText(self.tr("Applying\u2026") if action == "apply" else self.tr("Discarding\u2026"))
        try:
            if action == "apply":
                out = await client_review.apply_review(rv, chosen)
            else:
                out = await client_review.discard_review(rv, chosen)
            if out.ok and out.record is not None and recorder is not None:
                record = out.record
                try:
                    await in_thread(lambda: recorder(record))
                except Exception:  # the files are written either way; say the model was not told
                    log.exception("could not record the review")
                    out.sentence += " " + self.tr("(The session could not record this: the model was not told.)")
        except (client_review.WorktreeError, OSError) as exc:
            self.busy = False
            self.status.setText(html.escape(self.tr("Nothing was written: {0}").format(exc)))
            self._update_buttons()
            self.outcome.emit(False, str(exc))
            return False
        self.busy = False
        if not out.ok:
            lines = "".join(f"<li><b>{html.escape(c.path)}</b>: {html.escape(c.reason)}</li>" for c in out.conflicts)
            self.status.setText(self.tr("Conflicts with the folder \u2014 nothing was written:") + f"<ul>{lines}</ul>")
            self._update_buttons()
            self.outcome.emit(False, "; ".join(f"{c.path}: {c.reason}" for c in out.conflicts))
            return False
        self.status.setText(html.escape(out.sentence))
        self.outcome.emit(True, out.sentence)
        await self.load()
        return True


__all__ = ["ReviewView"]
