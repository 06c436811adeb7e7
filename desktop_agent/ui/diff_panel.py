"""The changes panel: every change of the session, newest first, grouped by turn and file.

Each change comes from a tool's structured patch — from ``PermissionRequested`` before the write
(status *pending*) and from ``ToolCallFinished.data`` after it (*applied* or *failed*); a denied
proposal stays visible as *rejected*. Unified diffs with old/new line numbers, GitHub-like colours
and syntax highlighting by file type. Each file row collapses on click (a change of more than
``diff_render.INLINE_LINES`` diff lines starts collapsed; expanded, ``DiffRenderer`` builds it in
slices between other events); selecting a change tells the conversation which card to show.
"""

from __future__ import annotations

import html
import os
import time
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QUrl, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QTextBrowser, QVBoxLayout, QWidget

from desktop_agent.ui import highlight
from desktop_agent.ui.conversation_view import PlainSpacesCopy, is_dark, mono_font, rel_path
from desktop_agent.ui.diff_render import INLINE_LINES, renderer

PENDING, APPLIED, REJECTED, FAILED = "pending", "applied", "rejected", "failed"
FILE_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")


@dataclass
class Change:
    id: int
    tool_use_id: str
    tool: str
    turn: int
    file_path: str
    hunks: list[dict[str, Any]]
    status: str = PENDING
    created: float = field(default_factory=time.time)
    collapsed: bool = False
    user_modified: bool = False
    note: str = ""

    @property
    def counts(self) -> tuple[int, int]:
        # Cached per hunk list: the panel re-renders on every event of the turn, and counting a
        # 20,000-line change took ~5 ms each time.
        cached = self.__dict__.get("_counts")
        if cached is None or cached[0] is not self.hunks:
            cached = (self.hunks, highlight.count_changes(self.hunks))
            self.__dict__["_counts"] = cached
        return cached[1]


def hunks_from_data(data: dict[str, Any]) -> list[dict[str, Any]]:
    patch = data.get("structuredPatch", data.get("structured_patch"))
    hunks = highlight.normalize_hunks(patch)
    if not hunks and data.get("type") == "create" and data.get("content") is not None:
        hunks = highlight.hunks_for_new_file(str(data.get("content")))
    return hunks


def hunks_from_request(request: Any) -> list[dict[str, Any]]:
    hunks = highlight.normalize_hunks(request.structured_patch)
    if not hunks and request.tool_name == "Write" and "content" in request.input and not request.original_file:
        hunks = highlight.hunks_for_new_file(str(request.input["content"]))
    return hunks


class _ChangesView(PlainSpacesCopy, QTextBrowser):
    """The panel's document: copies with plain spaces."""


class DiffPanel(QWidget):
    """Right-hand pane. Feed it the controller's permission and tool events."""

    change_selected = Signal(str)  # tool_use_id

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("diffPanel")
        self.setAccessibleName(self.tr("Changes"))
        self.cwd: str | None = None
        self.changes: list[Change] = []
        self.by_tool: dict[str, Change] = {}
        self.selected_id: int | None = None
        self._next = 1
        self._waiting: set[Any] = set()  # diffs being rendered in the background
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
        self.view = _ChangesView()
        self.view.setObjectName("diffView")
        self.view.setAccessibleName(self.tr("Diffs of the session"))
        self.view.setFrameShape(QFrame.Shape.NoFrame)
        self.view.setOpenLinks(False)
        self.view.setLineWrapMode(QTextBrowser.LineWrapMode.NoWrap)
        self.view.anchorClicked.connect(self._on_anchor)
        self.view.document().setDocumentMargin(12)
        root.addWidget(self.view, 1)
        self._mono = mono_font()
        self.render()

    # ----- feeding -----------------------------------------------------------------------------
    def on_permission_requested(self, request: Any, turn: int) -> Change | None:
        path = request.file_path or request.input.get("file_path")
        if request.tool_name not in FILE_TOOLS or not path:
            return None
        change = self.by_tool.get(request.tool_use_id)
        hunks = hunks_from_request(request)
        if change is None:
            change = self._add(request.tool_use_id, request.tool_name, turn, str(path), hunks, PENDING)
        else:
            change.hunks, change.status = hunks, PENDING
        self.render()
        return change

    def on_permission_resolved(self, tool_use_id: str, allowed: bool, user_modified: bool = False) -> None:
        change = self.by_tool.get(tool_use_id)
        if change is None:
            return
        if not allowed:
            change.status = REJECTED
        change.user_modified = change.user_modified or user_modified
        self.render()

    def on_tool_finished(self, tool_use_id: str, name: str, is_error: bool, data: dict[str, Any] | None,
                         turn: int, content: Any = None) -> Change | None:
        change = self.by_tool.get(tool_use_id)
        if change is None and (name not in FILE_TOOLS or not data or is_error):
            return None
        if change is None:
            path = data.get("filePath") or data.get("file_path") or ""
            change = self._add(tool_use_id, name, turn, str(path), hunks_from_data(data), APPLIED)
        elif change.status == REJECTED:
            pass
        elif is_error:
            change.status = FAILED
            if isinstance(content, str):
                change.note = content.replace("<tool_use_error>", "").replace("</tool_use_error>", "").strip()
        else:
            change.status = APPLIED
            if data:
                hunks = hunks_from_data(data)
                if hunks:
                    change.hunks = hunks
                change.user_modified = bool(data.get("userModified", change.user_modified))
        self.render()
        return change

    def _add(self, tool_use_id: str, tool: str, turn: int, path: str, hunks: list[dict[str, Any]],
             status: str) -> Change:
        # A big change starts collapsed ("▸ big.py +500 −500"), as GitHub does with large diffs: the
        # dialog shows it while it is reviewed, and the panel re-renders on every event of the turn.
        change = Change(self._next, tool_use_id, tool, turn, path, hunks, status,
                        collapsed=highlight.diff_line_count(hunks) > INLINE_LINES)
        self._next += 1
        self.changes.append(change)
        self.by_tool[tool_use_id] = change
        return change

    def clear(self) -> None:
        self.changes.clear()
        self.by_tool.clear()
        self._waiting.clear()
        self.selected_id = None
        self.render()

    # ----- selection ---------------------------------------------------------------------------
    def select_tool(self, tool_use_id: str, expand: bool = True) -> bool:
        """Highlight the change of a tool call and scroll to it; ``expand=False`` when the window
        follows the turn by itself (a big change the user has not opened stays collapsed)."""
        change = self.by_tool.get(tool_use_id)
        if change is None:
            return False
        self.selected_id = change.id
        if expand:
            change.collapsed = False
        self.render()
        self.view.scrollToAnchor(f"c{change.id}")
        return True

    def _on_anchor(self, url: QUrl) -> None:
        text = url.toString()
        if text.startswith("toggle:"):
            cid = int(text.split(":", 1)[1])
            for change in self.changes:
                if change.id == cid:
                    change.collapsed = not change.collapsed
                    self.selected_id = cid
                    self.render()
                    self.view.scrollToAnchor(f"c{cid}")
                    self.change_selected.emit(change.tool_use_id)
                    break

    # ----- rendering ---------------------------------------------------------------------------
    def render(self) -> None:
        dark = is_dark(self)
        c = highlight.colors(dark)
        total = len(self.changes)
        self.title.setText(self.tr("Changes ({0})").format(total) if total else self.tr("Changes"))
        live = [ch for ch in self.changes if ch.status in (APPLIED, PENDING)]
        added = sum(ch.counts[0] for ch in live)
        removed = sum(ch.counts[1] for ch in live)
        self.counts_label.setText(
            f"<span style='color:{c.added_fg}'>+{added}</span> <span style='color:{c.removed_fg}'>\u2212{removed}</span>"
            if total else "")
        if not self.changes:
            # tr() outside f-strings: pyside6-lupdate does not look inside them.
            line1 = html.escape(self.tr("No changes yet."))
            line2 = html.escape(self.tr("Every edit the agent proposes shows up here as a diff,"))
            line3 = html.escape(self.tr("before anything is written to disk."))
            self.view.setHtml(f"<div style='color:{c.muted}; margin-top:24px' align='center'>"
                              f"{line1}<br/><br/>{line2}<br/>{line3}</div>")
            return
        scroll = self.view.verticalScrollBar().value()
        parts: list[str] = []
        turns: dict[int, list[Change]] = {}
        for change in self.changes:
            turns.setdefault(change.turn, []).append(change)
        for turn in sorted(turns, reverse=True):
            group = list(reversed(turns[turn]))
            stamp = time.strftime("%H:%M", time.localtime(group[-1].created))
            heading = html.escape(self.tr("TURN {0}").format(turn))
            parts.append(
                f"<p style='color:{c.muted}; font-size:small; margin-top:12px; margin-bottom:4px'>"
                f"<b>{heading}</b> · {stamp}</p>")
            for change in group:
                parts.append(self._change_html(change, dark, c))
        self.view.setHtml("".join(parts))
        self.view.verticalScrollBar().setValue(scroll)

    def _status_html(self, change: Change, c: highlight.DiffColors) -> str:
        label, color, mark = {
            PENDING: (self.tr("pending"), c.accent, "●"),
            APPLIED: (self.tr("applied"), c.added_fg, "✓"),
            REJECTED: (self.tr("rejected"), c.error, "✗"),
            FAILED: (self.tr("failed"), c.error, "✗"),
        }[change.status]
        extra = " · " + html.escape(self.tr("edited by you")) if change.user_modified else ""
        return f"<span style='color:{color}'>{mark} {html.escape(label)}</span>{extra}"

    def _change_html(self, change: Change, dark: bool, c: highlight.DiffColors) -> str:
        rel = rel_path(change.file_path, self.cwd)
        folder, name = os.path.split(rel)
        added, removed = change.counts
        selected = change.id == self.selected_id
        bg = ("#272115" if dark else "#fff8c5") if selected else "transparent"
        border = c.accent if selected else c.border
        arrow = "▸" if change.collapsed else "▾"
        name_style = "text-decoration:line-through" if change.status == REJECTED else ""
        folder_html = f"&nbsp;&nbsp;<span style='color:{c.muted}'>{html.escape(folder)}/</span>" if folder else ""
        head = (
            f"<a name='c{change.id}'></a>"
            f"<table width='100%' cellspacing='0' cellpadding='6' style='background-color:{bg}; "
            f"border-top:1px solid {border}'><tr>"
            f"<td><a href='toggle:{change.id}' style='text-decoration:none; color:{c.text}'>{arrow} "
            f"<b style='{name_style}'>{html.escape(name)}</b></a>"
            f"{folder_html}"
            f"&nbsp;&nbsp;<span style='color:{c.added_fg}'>+{added}</span>&nbsp;"
            f"<span style='color:{c.removed_fg}'>\u2212{removed}</span></td>"
            f"<td align='right'>{self._status_html(change, c)}</td></tr></table>"
        )
        if change.collapsed:
            return head
        note = ""
        if change.status == FAILED and change.note:
            note = f"<p style='color:{c.error}; margin:4px 8px'>{html.escape(change.note)}</p>"
        if not change.hunks:
            body = f"<p style='color:{c.muted}'>" + html.escape(self.tr("(no textual change)")) + "</p>"
        else:
            key, body = renderer().html(change.hunks, change.file_path, dark, self._mono.family())
            if body is None:
                self._waiting.add(key)
                lines = highlight.diff_line_count(change.hunks)
                body = (f"<p style='color:{c.muted}; margin:4px 8px'>"
                        + html.escape(self.tr("Rendering the diff ({0} lines)…").format(f"{lines:,}")) + "</p>")
        return head + note + body + "<p style='margin:0'></p>"

    def _on_diff_ready(self, key: Any) -> None:
        if key in self._waiting:
            self._waiting.discard(key)
            self.render()

    def changeEvent(self, event) -> None:  # noqa: N802 - re-render when the palette flips light/dark
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and getattr(self, "_dark", None) != is_dark(self):
            self._dark = is_dark(self)
            self.render()

    def text_content(self) -> str:
        return self.view.toPlainText()


__all__ = ["DiffPanel", "Change", "PENDING", "APPLIED", "REJECTED", "FAILED"]
