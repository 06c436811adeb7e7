"""The changes panel: the widget that shows the session's change log (``log.ChangeLog``, built from the
permission and tool events without widgets), newest first, grouped by turn and file.

A change is *pending* (proposed), *applied*, *failed*, *rejected* (denied; it stays visible) or
*reverted*. Unified diffs with old/new line numbers, GitHub-like colours and syntax highlighting by
file type. A file the change created is marked ``new``.

Nothing is cut. A change of at most ``log.INLINE_LINES`` diff lines opens in place (a click
on its row folds it); a bigger one starts folded and opens in full in the panel's change page
(``detail.ChangeDetail``: the virtualised ``HunkDiffView``, filled in slices, so even a
20,000-line change never stalls the window) — "show all", with a hunk navigator.

A partly allowed change (the user rejected some hunks in the permission dialog) shows both kinds:
the proposed patch from the request, each hunk marked accepted or "rejected: not written" (struck
through, muted), matched by the original line ranges of the tool result's ``rejectedHunks`` of
``totalHunks``; after a resume (no request) the written hunks and a line naming the rejected ranges.

Actions per change (``actions``): open in editor, copy patch, revert this change, and on a reverted one
Redo (re-apply it) instead of Revert. Both have their own focus-safe confirmation (``dialogs.revert``), are
refused with a sentence when the file is not as they expect (nothing written), and run their file I/O and
their transcript record (a ``change-revert`` line through the session's recorder, which also has the model
told with the next prompt) on a worker thread (``util.threads.in_thread``): nothing of it on the Qt thread.
When the session checkpoints, both go through its checkpoint restore (``reverter``, set by the window): the
change's file back to the snapshot before the call, three-way against what the person edited since (kept, or a
conflict and nothing written), a snapshot first — Redo is that restore undone; the panel's own write is only for
a call the store holds no snapshot of.
After a resume ``apply_records`` marks the changes the transcript's records reverted, and the window renders the
log in slices of turns (``render_log(slices=…)``: the same document, filled between other events). Selecting a change
tells the conversation which card to show.
"""

from __future__ import annotations

import asyncio
import html
import logging
import os
import time
from typing import Any, Awaitable, Callable

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QTextCursor, QTextDocument, QTextOption
from PySide6.QtWidgets import (
    QApplication, QFrame, QHBoxLayout, QLabel, QStackedWidget, QTextBrowser, QVBoxLayout, QWidget,
)

from desktop_agent.core.permission import PermissionRequest
from desktop_agent.ui import highlight
from desktop_agent.ui.changes.actions import (
    RevertPlan, RevertRefused, Undone, absolute_path, change_record, file_state, open_in_editor, redo_file,
    restored_change, revert_blocker, revert_file, revert_plan, unified_patch,
)
from desktop_agent.ui.changes.detail import ChangeDetail
from desktop_agent.ui.changes.log import APPLIED, FAILED, PENDING, REJECTED, REVERTED, Change, ChangeLog
from desktop_agent.ui.changes.render import renderer
from desktop_agent.ui.conversation.summary import rel_path
from desktop_agent.ui.highlight import PlainSpacesCopy, is_dark, mono_font
from desktop_agent.ui.dialogs.revert import RevertDialog
from desktop_agent.util.diff import format_line_ranges
from desktop_agent.util.threads import in_thread

log = logging.getLogger(__name__)

class _ChangesView(PlainSpacesCopy, QTextBrowser):
    """The panel's document: copies with plain spaces."""


class DiffPanel(QWidget):
    """Right-hand pane. Feed it the controller's permission and tool events."""

    change_selected = Signal(str)  # tool_use_id
    change_reverted = Signal(str)  # tool_use_id, once the file is written back
    change_redone = Signal(str)  # tool_use_id, once a reverted change is re-applied

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("diffPanel")
        self.setAccessibleName(self.tr("Changes"))
        self.cwd: str | None = None
        self.log = ChangeLog()
        self.selected_id: int | None = None
        # Where a revert or redo is recorded: called on a worker thread with the transcript entry (the window
        # sets it to its session's). None: it cannot be recorded, and the note says so.
        self.recorder: Callable[[dict[str, Any]], Any] | None = None
        # The session's checkpoint restore (the window sets it): ``reverter(action, tool_use_id, path, restore_id)``
        # reverts one change ("revert") or undoes such a revert ("redo"), answering the restore's result, or {} when
        # the store holds no snapshot of that call (the panel then writes the file itself, as before checkpoints)
        self.reverter: Callable[[str, str, str, str | None], Awaitable[dict[str, Any]]] | None = None
        self.revert_dialog: RevertDialog | None = None
        self._tasks: set[asyncio.Future] = set()
        self._dark: bool | None = None  # the palette last rendered
        self._waiting: set[Any] = set()  # diffs being rendered in the background
        self._render_gen = 0  # renders so far: a sliced one stops when another replaced it
        renderer().ready.connect(self._on_diff_ready)

        root = QVBoxLayout(self)
        root.setContentsMargins(0, 0, 0, 0)
        root.setSpacing(0)
        head = QHBoxLayout()
        head.setContentsMargins(16, 8, 16, 8)
        self.title = QLabel()
        self.title.setObjectName("paneTitle")
        head.addWidget(self.title, 1)
        self.counts_label = QLabel()
        self.counts_label.setObjectName("muted")
        head.addWidget(self.counts_label)
        root.addLayout(head)
        line = QFrame()
        line.setFrameShape(QFrame.Shape.HLine)
        line.setObjectName("separator")
        root.addWidget(line)
        self.pages = QStackedWidget()
        self.view = _ChangesView()
        self.view.setObjectName("diffView")
        self.view.setAccessibleName(self.tr("Diffs of the session"))
        self.view.setFrameShape(QFrame.Shape.NoFrame)
        self.view.setOpenLinks(False)
        # Long diff lines wrap inside the pane (it never scrolls sideways, even at 900 px); the detail page's
        # virtual view keeps them on one line each
        self.view.setLineWrapMode(QTextBrowser.LineWrapMode.WidgetWidth)
        self.view.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.view.anchorClicked.connect(self._on_anchor)
        self.view.document().setDocumentMargin(12)
        self.pages.addWidget(self.view)
        self.detail = ChangeDetail()
        self.detail.back.connect(self.show_list)
        self.detail.action.connect(self._on_detail_action)
        self.pages.addWidget(self.detail)
        root.addWidget(self.pages, 1)
        self._mono = mono_font()
        self.render_log()

    # ----- feeding (the change log) --------------------------------------------------------------
    @property
    def changes(self) -> list[Change]:
        return self.log.changes

    @property
    def by_tool(self) -> dict[str, Change]:
        return self.log.by_tool

    def on_permission_requested(self, request: PermissionRequest, turn: int) -> Change | None:
        change = self.log.on_permission_requested(request, turn)
        if change is not None:
            self.render_log()
        return change

    def on_permission_resolved(self, tool_use_id: str, allowed: bool, user_modified: bool = False) -> None:
        if self.log.on_permission_resolved(tool_use_id, allowed, user_modified) is not None:
            self.render_log()

    def on_tool_finished(self, tool_use_id: str, name: str, is_error: bool, data: dict[str, Any] | None,
                         turn: int, content: Any = None) -> Change | None:
        change = self.log.on_tool_finished(tool_use_id, name, is_error, data, turn, content)
        if change is not None:
            self.render_log()
        return change

    def apply_records(self, entries: list[dict[str, Any]]) -> int:
        """A resumed transcript's reverts and redos (``change-revert`` lines), replayed onto the log."""
        n = self.log.apply_records(entries, self.cwd)
        if n:
            self.render_log()
        return n

    def clear(self) -> None:
        self.log.clear()
        self._waiting.clear()
        self.selected_id = None
        self.show_list()
        self.render_log()

    # ----- selection ---------------------------------------------------------------------------
    def select_tool(self, tool_use_id: str, expand: bool = True) -> bool:
        """Highlight the change of a tool call and scroll to it; ``expand=False`` when the window
        follows the turn by itself (a big change the user has not opened stays folded). Expanding
        a big change opens it in full on the change page."""
        change = self.by_tool.get(tool_use_id)
        if change is None:
            return False
        self.selected_id = change.id
        if expand and change.big:
            self.open_change(change)
            return True
        if expand:
            change.collapsed = False
        self.render_log()
        self.view.scrollToAnchor(f"c{change.id}")
        return True

    def change_by_id(self, cid: int) -> Change | None:
        return self.log.change_by_id(cid)

    def _on_anchor(self, url: QUrl) -> None:
        text = url.toString()
        verb, _, rest = text.partition(":")
        if not rest.isdigit():
            return
        change = self.change_by_id(int(rest))
        if change is None:
            return
        if verb == "toggle":
            self.selected_id = change.id
            if change.big:
                self.open_change(change)
            else:
                change.collapsed = not change.collapsed
                self.render_log()
                self.view.scrollToAnchor(f"c{change.id}")
            self.change_selected.emit(change.tool_use_id)
        elif verb == "show":
            self.selected_id = change.id
            self.open_change(change)
            self.change_selected.emit(change.tool_use_id)
        elif verb in ("open", "copy", "revert", "redo"):
            self.run_action(change, verb)

    # ----- the change page ("show all") ---------------------------------------------------------
    def open_change(self, change: Change) -> None:
        """Show every line of ``change`` on the change page (virtualised, filled in slices)."""
        hunks, accepted = change.review()
        self.pages.setCurrentWidget(self.detail)
        self.detail.show_change(change.id, self._detail_title(change), hunks,
                                self._abs(change), accepted, self._can_revert(change), self._can_redo(change))

    def show_list(self) -> None:
        if self.pages.currentWidget() is not self.view:
            self.pages.setCurrentWidget(self.view)
            self.render_log()
            if self.selected_id is not None:
                self.view.scrollToAnchor(f"c{self.selected_id}")

    def showing_detail(self) -> Change | None:
        if self.pages.currentWidget() is self.detail and self.detail.change_id is not None:
            return self.change_by_id(self.detail.change_id)
        return None

    def _on_detail_action(self, verb: str) -> None:
        change = self.showing_detail()
        if change is not None:
            self.run_action(change, verb)

    def _detail_title(self, change: Change) -> str:
        c = highlight.colors(is_dark(self))
        rel = rel_path(change.file_path, self.cwd)
        added, removed = change.counts
        return (f"<b>{html.escape(rel)}</b>{self._new_badge(change, c)}&nbsp;&nbsp;"
                f"<span style='color:{c.added_fg}'>+{added:,}</span>&nbsp;"
                f"<span style='color:{c.removed_fg}'>\u2212{removed:,}</span>&nbsp;&nbsp;"
                f"{self._status_html(change, c)}{self._note_html(change, c, inline=True)}")

    # ----- actions -----------------------------------------------------------------------------
    def _abs(self, change: Change) -> str:
        return absolute_path(change.file_path, self.cwd)

    def _plan(self, change: Change) -> RevertPlan | str:
        return revert_plan(change.tool, change.data, change.hunks, self.cwd)

    def _can_revert(self, change: Change) -> bool:
        return change.status == APPLIED and not change.busy and revert_blocker(change.tool, change.data) is None

    def _can_redo(self, change: Change) -> bool:
        return change.status == REVERTED and change.undo is not None and not change.busy \
            and revert_blocker(change.tool, change.data) is None

    def patch_text(self, change: Change) -> str:
        """The change as unified-diff text: what was written (or, pending, what is proposed)."""
        return unified_patch(change.hunks, rel_path(change.file_path, self.cwd), change.new_file)

    def run_action(self, change: Change, verb: str) -> None:
        self.selected_id = change.id
        if verb == "open":
            if not open_in_editor(self._abs(change)):
                self._set_note(change, self.tr("No application could open {0}.").format(self._abs(change)))
        elif verb == "copy":
            QApplication.clipboard().setText(self.patch_text(change))
            self._set_note(change, self.tr("Patch copied ({0} lines).").format(
                f"{self.patch_text(change).count(chr(10)):,}"), error=False)
        elif verb == "revert":
            self.ask_revert(change)
        elif verb == "redo":
            self.ask_redo(change)

    def _set_note(self, change: Change, text: str, error: bool = True) -> None:
        change.note, change.note_is_error = text, error
        self._refresh(change)

    def _refresh(self, change: Change) -> None:
        self.render_log()
        if self.showing_detail() is change:
            self.detail.set_title(self._detail_title(change), self._can_revert(change), self._can_redo(change))

    def ask_revert(self, change: Change) -> RevertDialog | None:
        """The confirmation; Revert then writes the original back on a worker thread."""
        if not self._can_revert(change):
            return None
        return self._confirm(change, "revert")

    def ask_redo(self, change: Change) -> RevertDialog | None:
        """The confirmation; Redo then re-applies the reverted change on a worker thread."""
        if not self._can_redo(change):
            return None
        return self._confirm(change, "redo")

    def _confirm(self, change: Change, action: str) -> RevertDialog | None:
        plan = self._plan(change)
        if not isinstance(plan, RevertPlan):
            self._set_note(change, plan)
            return None
        added, removed = change.counts
        dlg = RevertDialog(os.path.basename(change.file_path), added, removed, plan.original is None,
                           self.window(), redo=action == "redo")
        dlg.decided.connect(lambda yes: self._start(change, plan, action) if yes else None)
        dlg.finished.connect(dlg.deleteLater)
        self.revert_dialog = dlg
        dlg.open()
        return dlg

    def _start(self, change: Change, plan: RevertPlan, action: str) -> None:
        change.busy = True
        busy = self.tr("Reverting…") if action == "revert" else self.tr("Re-applying…")
        self._set_note(change, busy, error=False)
        task = asyncio.ensure_future(self._run(change, plan, action))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _restore(self, change: Change, plan: RevertPlan, action: str) -> tuple[Undone, str, bool] | None:
        """The revert or redo through the session's checkpoint restore (three-way: the person's later edits are
        kept, or it is refused with ``RevertRefused`` and nothing is written; a snapshot first, so a revert can be
        redone byte for byte): what it did, its restore id and whether the person's later edits were merged. None when it does not apply (no restore, or no
        snapshot of that call): the panel's own write then."""
        reverter, undo = self.reverter, change.undo or {}
        restore_id = undo.get("restoreId") if action == "redo" else None
        if reverter is None or (action == "redo" and not isinstance(restore_id, str)):
            return None
        before = await in_thread(lambda: file_state(plan.path))
        answer = await reverter(action, change.tool_use_id, plan.path, restore_id)
        if not answer:
            return None
        after = await in_thread(lambda: file_state(plan.path))
        return (restored_change(action, plan.path, answer, before, after), str(answer.get("restoreId") or ""),
                bool(answer.get("merged")))

    async def _run(self, change: Change, plan: RevertPlan, action: str) -> None:
        """The file I/O and the record, on a worker thread; then the change's new state, here."""
        recorder, undo, counts, hunks = self.recorder, change.undo, change.counts, change.hunks
        refused: RevertRefused | None = None
        try:
            restored = await self._restore(change, plan, action)
        except RevertRefused as exc:
            restored, refused = None, exc
        except Exception as exc:  # the host refused or failed: said, nothing of the panel's own written
            change.busy = False
            failed = self.tr("Could not revert: {0}") if action == "revert" else self.tr("Could not re-apply: {0}")
            self._set_note(change, failed.format(str(exc)))
            return

        def work() -> tuple[Undone, dict[str, Any], bool]:
            if refused is not None:
                raise refused
            if restored is not None:
                done, restore_id, _merged = restored
            else:
                done, restore_id = (revert_file(plan) if action == "revert" else redo_file(plan, undo or {})), ""
            entry = change_record(action, change.tool, change.tool_use_id, plan.path, counts, hunks, done)
            if restore_id and action == "revert":
                entry["restoreId"] = restore_id  # its Redo undoes this restore (checkpoints)
            try:
                if recorder is None:
                    raise RuntimeError("no session to record the change in")
                recorder(entry)
                return done, entry, True
            except Exception:  # the file is written either way; say the record is missing
                log.exception("could not record the %s", action)
                return done, entry, False

        not_done = self.tr("Not reverted: {0}") if action == "revert" else self.tr("Not re-applied: {0}")
        failed = self.tr("Could not revert: {0}") if action == "revert" else self.tr("Could not re-apply: {0}")
        try:
            done, entry, recorded = await in_thread(work)
        except RevertRefused as exc:
            change.busy = False
            self._set_note(change, not_done.format(str(exc)))
            return
        except OSError as exc:
            change.busy = False
            self._set_note(change, failed.format(exc.strerror or str(exc)))
            return
        change.busy = False
        if action == "revert":
            change.status, change.undo = REVERTED, entry
            note = self.tr("Deleted the file this change created.") if done.outcome == "deleted" else \
                self.tr("Reverted: the file is as it was before this change.")
            if restored is not None and restored[2]:
                note = self.tr("Reverted this change; your later edits in the file were kept.")
        else:
            change.status, change.undo = APPLIED, None
            note = self.tr("Re-applied: the file holds this change again.")
            if restored is not None and restored[2]:
                note = self.tr("Re-applied this change; your later edits in the file were kept.")
        if recorded:
            note += " " + self.tr("The agent is told with your next message.")
        else:
            note += " " + self.tr("(It could not be recorded in the transcript.)")
        self._set_note(change, note, error=False)
        (self.change_reverted if action == "revert" else self.change_redone).emit(change.tool_use_id)

    # ----- rendering ---------------------------------------------------------------------------
    def render_log(self, slices: int = 0) -> None:
        """The whole log into the view. ``slices``: the document is filled that many turns (a heading and its
        changes) at a time, one turn of the loop each — a resumed session's hundreds of changes never hold the
        Qt thread in one ``setHtml`` (~0.4 ms a change); the newest, at the top, come first. A later render
        replaces what is left of it."""
        self._render_gen += 1
        dark = is_dark(self)
        c = highlight.colors(dark)
        total = len(self.changes)
        self.title.setText(self.tr("Changes ({0})").format(total) if total else self.tr("Changes"))
        added, removed = self.log.live_counts()
        self.counts_label.setText(
            f"<span style='color:{c.added_fg}'>+{added}</span> "
            f"<span style='color:{c.removed_fg}'>\u2212{removed}</span>" if total else "")
        if not self.changes:
            # tr() outside f-strings: pyside6-lupdate does not look inside them.
            line1 = html.escape(self.tr("No changes yet."))
            line2 = html.escape(self.tr("Every edit the agent proposes shows up here as a diff,"))
            line3 = html.escape(self.tr("before anything is written to disk."))
            self.view.setHtml(f"<div style='color:{c.muted}; margin-top:24px' align='center'>"
                              f"{line1}<br/><br/>{line2}<br/>{line3}</div>")
            return
        scroll = self.view.verticalScrollBar().value()
        parts: list[str] = []  # one per turn: its heading, then its changes
        for turn, group in self.log.by_turn():
            stamp = time.strftime("%H:%M", time.localtime(group[-1].created))
            heading = html.escape(self.tr("TURN {0}").format(turn))
            parts.append(
                f"<p style='color:{c.muted}; font-size:small; margin-top:12px; margin-bottom:4px'>"
                f"<b>{heading}</b> · {stamp}</p>" + "".join(self._change_html(change, dark, c) for change in group))
        if slices <= 0 or len(parts) <= slices:
            self.view.setHtml("".join(parts))
            self.view.verticalScrollBar().setValue(scroll)
            return
        self.view.setHtml("".join(parts[:slices]))
        self.view.verticalScrollBar().setValue(scroll)
        self._append_later(parts[slices:], slices, self._render_gen)

    def _append_later(self, parts: list[str], slices: int, gen: int) -> None:
        def step() -> None:
            if gen != self._render_gen:
                return  # rendered again since
            cursor = QTextCursor(self.view.document())
            cursor.movePosition(QTextCursor.MoveOperation.End)
            if cursor.block().length() > 1:  # the heading starts a block of its own, as in one setHtml
                cursor.insertBlock()
            start = cursor.position()
            cursor.insertHtml("".join(parts[:slices]))
            first = QTextDocument()  # insertHtml merges the heading into the last block: its own format back
            first.setHtml(parts[0][:parts[0].find("</p>") + 4])  # the heading alone
            fix = QTextCursor(self.view.document())
            fix.setPosition(start)
            fix.setBlockFormat(first.firstBlock().blockFormat())
            if len(parts) > slices:
                self._append_later(parts[slices:], slices, gen)

        QTimer.singleShot(0, step)

    def _status_html(self, change: Change, c: highlight.DiffColors) -> str:
        label, color, mark = {
            PENDING: (self.tr("pending"), c.accent, "●"),
            APPLIED: (self.tr("applied"), c.added_fg, "✓"),
            REJECTED: (self.tr("rejected"), c.error, "✗"),
            FAILED: (self.tr("failed"), c.error, "✗"),
            REVERTED: (self.tr("reverted"), c.muted, "↶"),
        }[change.status]
        extra = " · " + html.escape(self.tr("edited by you")) if change.user_modified else ""
        if change.rejected:
            total = change.total_hunks or len(change.rejected)
            extra += " · " + html.escape(self.tr("{0} of {1} hunks rejected").format(len(change.rejected), total))
        return f"<span style='color:{color}'>{mark} {html.escape(label)}</span>{extra}"

    def _new_badge(self, change: Change, c: highlight.DiffColors) -> str:
        if not change.new_file:
            return ""
        return (f"&nbsp;<span style='color:{c.added_fg}; background-color:{c.added_bg}; font-size:small'>"
                f"&nbsp;" + html.escape(self.tr("new")) + "&nbsp;</span>")

    def _note_html(self, change: Change, c: highlight.DiffColors, inline: bool = False) -> str:
        if not change.note:
            return ""
        color = c.error if change.note_is_error else c.muted
        if inline:
            return f"<br/><span style='color:{color}'>{html.escape(change.note)}</span>"
        return f"<p style='color:{color}; margin:4px 8px'>{html.escape(change.note)}</p>"

    def _actions_html(self, change: Change, c: highlight.DiffColors) -> str:
        links = []
        style = f"color:{c.accent}; text-decoration:none"
        if change.big:
            links.append(f"<a href='show:{change.id}' style='{style}'>"
                         + html.escape(self.tr("Show all {0} lines").format(f"{change.line_count:,}")) + "</a>")
        if change.status != REJECTED and os.path.exists(self._abs(change)):
            label = html.escape(self.tr("Open in editor"))
            links.append(f"<a href='open:{change.id}' style='{style}'>{label}</a>")
        if change.hunks:
            links.append(f"<a href='copy:{change.id}' style='{style}'>" + html.escape(self.tr("Copy patch")) + "</a>")
        if self._can_revert(change):
            links.append(f"<a href='revert:{change.id}' style='{style}'>" + html.escape(self.tr("Revert…")) + "</a>")
        elif self._can_redo(change):
            links.append(f"<a href='redo:{change.id}' style='{style}'>" + html.escape(self.tr("Redo…")) + "</a>")
        if not links:
            return ""
        return (f"<p style='margin:2px 8px 4px 8px; font-size:small'>"
                + "&nbsp;&nbsp;·&nbsp;&nbsp;".join(links) + "</p>")

    def _change_html(self, change: Change, dark: bool, c: highlight.DiffColors) -> str:
        rel = rel_path(change.file_path, self.cwd)
        folder, name = os.path.split(rel)
        added, removed = change.counts
        selected = change.id == self.selected_id
        bg = ("#272115" if dark else "#fff8c5") if selected else "transparent"
        border = c.accent if selected else c.border
        arrow = "▸" if change.collapsed or change.big else "▾"
        name_style = "text-decoration:line-through" if change.status in (REJECTED, REVERTED) else ""
        folder_html = f"&nbsp;&nbsp;<span style='color:{c.muted}'>{html.escape(folder)}/</span>" if folder else ""
        head = (
            f"<a name='c{change.id}'></a>"
            f"<table width='100%' cellspacing='0' cellpadding='6' style='background-color:{bg}; "
            f"border-top:1px solid {border}'><tr>"
            f"<td><a href='toggle:{change.id}' style='text-decoration:none; color:{c.text}'>{arrow} "
            f"<b style='{name_style}'>{html.escape(name)}</b></a>"
            f"{self._new_badge(change, c)}{folder_html}"
            f"&nbsp;&nbsp;<span style='color:{c.added_fg}'>+{added}</span>&nbsp;"
            f"<span style='color:{c.removed_fg}'>\u2212{removed}</span></td>"
            f"<td align='right'>{self._status_html(change, c)}</td></tr></table>"
        )
        head += self._actions_html(change, c) + self._note_html(change, c)
        if change.collapsed or change.big:
            return head
        hunks, accepted = change.review()
        if not hunks:
            body = f"<p style='color:{c.muted}'>" + html.escape(self.tr("(no textual change)")) + "</p>"
        elif accepted is not None:
            body = "".join(self._reviewed_hunk_html(change, i, h, ok, dark, c)
                           for i, (h, ok) in enumerate(zip(hunks, accepted)))
        else:
            body = self._diff_body(change, hunks, dark, c)
            if change.rejected:  # after a resume: the rejected hunks' text is not in the transcript
                total = change.total_hunks or len(change.rejected)
                body += (f"<p style='color:{c.muted}; margin:4px 8px'>" + html.escape(
                    self.tr("{0} of {1} hunks rejected ({2}): not written").format(
                        len(change.rejected), total, format_line_ranges(change.rejected))) + "</p>")
        return head + body + "<p style='margin:0'></p>"

    def _diff_body(self, change: Change, hunks: list[dict[str, Any]], dark: bool, c: highlight.DiffColors) -> str:
        key, body = renderer().html(hunks, change.file_path, dark, self._mono.family())
        if body is None:
            self._waiting.add(key)
            lines = highlight.diff_line_count(hunks)
            body = (f"<p style='color:{c.muted}; margin:4px 8px'>"
                    + html.escape(self.tr("Rendering the diff ({0} lines)…").format(f"{lines:,}")) + "</p>")
        return body

    def _reviewed_hunk_html(self, change: Change, i: int, hunk: dict[str, Any], accepted: bool, dark: bool,
                            c: highlight.DiffColors) -> str:
        n = len(change.proposed or [])
        where = html.escape(self.tr("hunk {0} of {1}").format(i + 1, n))
        if accepted:
            label = (f"<p style='margin:4px 0 0 0; font-size:small; color:{c.added_fg}'>&nbsp;✓ {where} · "
                     + html.escape(self.tr("accepted")) + "</p>")
            return label + self._diff_body(change, [hunk], dark, c)
        label = (f"<p style='margin:4px 0 0 0; font-size:small; color:{c.error}'>&nbsp;✗ {where} · "
                 + html.escape(self.tr("rejected: not written")) + "</p>")
        return label + self._rejected_hunk_html(hunk, c)

    def _rejected_hunk_html(self, hunk: dict[str, Any], c: highlight.DiffColors) -> str:
        """A rejected hunk: the gutter and the text, muted, its +/- lines struck through."""
        top = max(hunk["oldStart"] + hunk["oldLines"], hunk["newStart"] + hunk["newLines"], 1)
        w = len(str(top))
        blank = "&nbsp;" * w

        def num(n: int | None) -> str:
            return blank if n is None else f"{n:>{w}}".replace(" ", "&nbsp;")

        header = f"@@ -{hunk['oldStart']},{hunk['oldLines']} +{hunk['newStart']},{hunk['newLines']} @@"
        rows = [f"<p style='margin:0; padding:2px 0; white-space:pre; background-color:{c.code_bg}; "
                f"color:{c.muted}'>&nbsp;{blank}&nbsp;&nbsp;{blank}&nbsp;&nbsp;&nbsp;{html.escape(header)}</p>"]
        old_no, new_no = hunk["oldStart"], hunk["newStart"]
        for line in hunk["lines"]:
            sign, code = line[:1], html.escape(line[1:])
            strike = ""
            if sign == "+":
                old, new, mark, strike = None, new_no, "+", "; text-decoration:line-through"
                new_no += 1
            elif sign == "-":
                old, new, mark, strike = old_no, None, "\u2212", "; text-decoration:line-through"
                old_no += 1
            elif sign == "\\":
                old, new, mark, code = None, None, "&nbsp;", html.escape(line)
            else:
                old, new, mark = old_no, new_no, "&nbsp;"
                old_no += 1
                new_no += 1
            rows.append(f"<p style='margin:0; white-space:pre-wrap; color:{c.muted}; background-color:{c.code_bg}'>"
                        f"<span style='color:{c.gutter_fg}'>&nbsp;{num(old)}&nbsp;&nbsp;{num(new)}&nbsp;</span>"
                        f"&nbsp;{mark}&nbsp;<span style='{strike[2:]}'>{code}</span></p>")
        return f"<div style=\"font-family:'{self._mono.family()}'\">" + "".join(rows) + "</div>"

    def _on_diff_ready(self, key: Any) -> None:
        if key in self._waiting:
            self._waiting.discard(key)
            self.render_log()

    def changeEvent(self, event) -> None:  # noqa: N802 - re-render when the palette flips light/dark
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and self._dark != is_dark(self):
            self._dark = is_dark(self)
            self.detail.view.set_dark(self._dark)
            self.render_log()

    def text_content(self) -> str:
        return self.view.toPlainText()


__all__ = ["DiffPanel", "Change", "PENDING", "APPLIED", "REJECTED", "FAILED", "REVERTED"]
