"""The modal permission dialog: shows exactly what a tool wants to do and answers the engine's ``ask``.

It is opened with ``open()`` (window-modal) and reports through the ``decided`` signal, which the
controller turns into the result of an awaited Future — no nested event loop. Allow is the default
button (Enter), Deny is Escape, Allow for session names the exact rule it adds. "✎ Edit" lets the
user change the proposed text (Edit's ``new_string``, Write's ``content``, Bash's ``command``);
the reply then carries ``updated_input``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QDialog, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton, QToolButton,
    QVBoxLayout, QWidget,
)

from desktop_agent.permissions.types import PermissionReply, PermissionRequest, PermissionUpdate
from desktop_agent.tools.patch import structured_patch
from desktop_agent.ui import highlight
from desktop_agent.ui.conversation_view import PlainSpacesCopy, is_dark, mono_font, rel_path
from desktop_agent.ui.diff_render import renderer

USER_DENIED = "User denied via UI"
EDITABLE_FIELD = {"Edit": "new_string", "Write": "content", "Bash": "command", "MultiEdit": None}


def describe_update(update: PermissionUpdate) -> str:
    if update.type in ("addRules", "replaceRules") and update.rules:
        return ", ".join(str(rule) for rule in update.rules)
    if update.type == "setMode" and update.mode:
        return f"mode {update.mode}"
    if update.type == "addDirectories" and update.directories:
        return ", ".join(update.directories)
    return update.type


def hunks_from_texts(old: str, new: str) -> list[dict[str, Any]]:
    """Structured-patch hunks for the live preview of an edited proposal — the engine's own
    ``structured_patch``, so the preview has exactly the shape of the patch the tool reports."""
    return [dict(h) for h in structured_patch(old, new)]


def target_of(request: PermissionRequest) -> str:
    inp = request.input
    path = request.file_path or inp.get("file_path") or inp.get("path") or inp.get("notebook_path")
    if path:
        return rel_path(str(path), request.cwd)
    if inp.get("command"):
        return str(inp["command"])
    if inp.get("pattern"):
        return str(inp["pattern"])
    return ""


class PermissionDialog(QDialog):
    """Ask the user about one tool call. ``decided`` carries the ``PermissionReply`` exactly once."""

    decided = Signal(object)

    def __init__(self, request: PermissionRequest, parent: QWidget | None = None):
        super().__init__(parent)
        self.request = request
        self._answered = False
        self._silent = False
        self.setModal(True)
        self.setWindowModality(Qt.WindowModality.WindowModal if parent is not None else Qt.WindowModality.ApplicationModal)
        self.setObjectName("permissionDialog")
        self.setAccessibleName(self.tr("Permission request"))
        if parent is not None and not parent.isActiveWindow():
            self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)

        tool = request.tool_name
        target = target_of(request)
        short = os.path.basename(target) if (request.file_path or request.input.get("file_path")) else target
        if len(short) > 60:
            short = short[:57] + "…"  # the window title only; the body shows it in full
        self.setWindowTitle(self.tr("Allow {0}: {1}?").format(tool, short) if short else self.tr("Allow {0}?").format(tool))
        self._field = EDITABLE_FIELD.get(tool)
        mono = mono_font()

        root = QVBoxLayout(self)
        root.setContentsMargins(16, 16, 16, 16)
        root.setSpacing(8)

        # Heading: tool + target, working dir on the right.
        head = QHBoxLayout()
        head.setSpacing(8)
        self.title_label = QLabel(f"<b>{_esc(tool)}</b>&nbsp;&nbsp;<span style='font-family:monospace'>{_esc(target)}</span>")
        self.title_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.title_label.setWordWrap(True)
        head.addWidget(self.title_label, 1)
        self.cwd_label = QLabel(self.tr("in {0}").format(_home(request.cwd)))
        self.cwd_label.setObjectName("muted")
        self.cwd_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        head.addWidget(self.cwd_label, 0, Qt.AlignmentFlag.AlignTop)
        root.addLayout(head)

        reason = self._reason(request)
        self.reason_label = QLabel(self.tr("Why: {0}").format(reason) if reason else "")
        self.reason_label.setObjectName("muted")
        self.reason_label.setWordWrap(True)
        self.reason_label.setVisible(bool(reason))
        root.addWidget(self.reason_label)
        if request.description:
            desc = QLabel(request.description)
            desc.setWordWrap(True)
            root.addWidget(desc)

        # The patch (Edit/Write) — highlighted, line numbers in the gutter.
        # A QPlainTextEdit, not a QTextBrowser: its line-by-line layout is made for large documents,
        # and filling it with a 1,000-line diff took 38 ms here against 51 ms for a QTextBrowser.
        self.diff_view: QPlainTextEdit | None = None
        self._diff_key: Any = None  # the big diff the view waits for (DiffRenderer.ready)
        self._diff_hunks: list[dict[str, Any]] = []
        renderer().ready.connect(self._on_diff_ready)
        self._hunks = self._initial_hunks()
        if self._hunks is not None:
            self.diff_view = _DiffView()
            self.diff_view.setObjectName("diffView")
            self.diff_view.setAccessibleName(self.tr("Proposed change"))
            self.diff_view.setReadOnly(True)
            self.diff_view.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                                   | Qt.TextInteractionFlag.TextSelectableByKeyboard)
            self.diff_view.setFont(mono)
            self.diff_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            self._render_diff(self._hunks)
            root.addWidget(self.diff_view, 3)

        # Bash: the full command and its parsed sub-commands.
        self.command_view: QPlainTextEdit | None = None
        if tool == "Bash" or "command" in request.input:
            self.command_view = QPlainTextEdit(str(request.input.get("command", "")))
            self.command_view.setReadOnly(True)
            self.command_view.setFont(mono)
            self.command_view.setAccessibleName(self.tr("Command"))
            self.command_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
            lines = max(1, str(request.input.get("command", "")).count("\n") + 1)
            self.command_view.setMinimumHeight(min(200, 24 + lines * mono.pointSize() * 2))
            root.addWidget(self.command_view, 1)
            if request.subcommands and len(request.subcommands) > 1:
                parts = QLabel(self.tr("Sub-commands:") + "<br/>" + "<br/>".join(
                    f"&nbsp;&nbsp;• <code>{_esc(s)}</code>" for s in request.subcommands))
                parts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
                parts.setWordWrap(True)
                root.addWidget(parts)

        # Full input, never truncated: shown for other tools, one click away for Edit/Write/Bash.
        # The full input and the editor are filled when first shown: a 50,000-line Write is ~3 MB
        # of text, and laying it out in hidden widgets cost the Qt thread ~100 ms per widget.
        self.input_view = QPlainTextEdit()
        self.input_view.setReadOnly(True)
        self.input_view.setFont(mono)
        self.input_view.setAccessibleName(self.tr("Full tool input"))
        self.input_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        secondary = self.diff_view is not None or self.command_view is not None
        self.input_toggle = QToolButton()
        self.input_toggle.setText(self.tr("Full input"))
        self.input_toggle.setCheckable(True)
        self.input_toggle.setChecked(not secondary)
        self.input_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.input_toggle.setArrowType(Qt.ArrowType.DownArrow if not secondary else Qt.ArrowType.RightArrow)
        self.input_toggle.setAutoRaise(True)
        self.input_toggle.toggled.connect(self._toggle_input)
        self.input_view.setVisible(not secondary)
        if not secondary:
            self._toggle_input(True)

        # Editable proposal.
        self.editor: QPlainTextEdit | None = None
        self._editor_filled = False
        self.edit_button: QToolButton | None = None
        tools_row = QHBoxLayout()
        tools_row.setSpacing(8)
        tools_row.addWidget(self.input_toggle)
        tools_row.addStretch(1)
        if self._field and self._field in request.input:
            self.edit_button = QToolButton()
            self.edit_button.setText(self.tr("✎ Edit"))
            self.edit_button.setCheckable(True)
            self.edit_button.setToolTip(self.tr("Edit the proposed text before allowing it"))
            self.edit_button.setAccessibleName(self.tr("Edit the proposal"))
            self.edit_button.toggled.connect(self._toggle_editor)
            tools_row.addWidget(self.edit_button)
            self.editor = QPlainTextEdit()
            self.editor.setFont(mono)
            self.editor.setAccessibleName(self.tr("Proposed text"))
            self.editor.setVisible(False)
            self._preview_timer = QTimer(self)
            self._preview_timer.setSingleShot(True)
            self._preview_timer.setInterval(150)
            self._preview_timer.timeout.connect(self._update_preview)
            self.editor.textChanged.connect(self._preview_timer.start)
        root.addLayout(tools_row)
        root.addWidget(self.input_view, 2)
        if self.editor is not None:
            root.addWidget(self.editor, 2)

        self.feedback = QLineEdit()
        self.feedback.setPlaceholderText(self.tr("Feedback for the agent if you deny (optional)"))
        self.feedback.setAccessibleName(self.tr("Feedback for the agent"))
        self.feedback.setClearButtonEnabled(True)
        root.addWidget(self.feedback)

        # Buttons: Deny (Esc) · Allow for session · Allow (default, Enter).
        buttons = QHBoxLayout()
        buttons.setSpacing(8)
        buttons.addStretch(1)
        self.deny_button = QPushButton(self.tr("&Deny  Esc"))
        self.deny_button.setObjectName("denyButton")
        self.deny_button.setAutoDefault(False)
        self.deny_button.clicked.connect(self.reject)
        self.session_rules = [describe_update(u) for u in request.suggestions]
        self.allow_session_button = QPushButton(self.tr("Allow for &session"))
        self.allow_session_button.setAutoDefault(False)
        self.allow_session_button.setEnabled(bool(request.suggestions))
        self.allow_session_button.clicked.connect(self._allow_session)
        self.allow_button = QPushButton(self.tr("&Allow  ⏎"))
        self.allow_button.setObjectName("allowButton")
        self.allow_button.setDefault(True)
        self.allow_button.setAutoDefault(True)
        self.allow_button.clicked.connect(self._allow)
        for b in (self.deny_button, self.allow_session_button, self.allow_button):
            b.setMinimumHeight(32)
            buttons.addWidget(b)
        root.addLayout(buttons)
        self.rule_label = QLabel(
            self.tr("Allow for session adds: {0}").format("; ".join(self.session_rules)) if self.session_rules
            else self.tr("No session rule is available for this request.")
        )
        self.rule_label.setObjectName("muted")
        self.rule_label.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.rule_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.rule_label.setWordWrap(True)
        root.addWidget(self.rule_label)
        if self.session_rules:
            self.allow_session_button.setToolTip(self.rule_label.text())

        self._size_to_content(parent)
        self.allow_button.setFocus()

    # ----- content ---------------------------------------------------------------------------
    def _reason(self, request: PermissionRequest) -> str:
        """Which mode or rule (and settings file) made it ask, as a sentence."""
        r = request.decision_reason
        if r is not None and r.type == "mode" and r.mode:
            names = {"default": self.tr("Default"), "acceptEdits": self.tr("Accept edits"), "plan": self.tr("Plan"),
                     "bypassPermissions": self.tr("Bypass"), "dontAsk": self.tr("Don't ask")}
            return self.tr("{0} mode asks before this, and no rule allows it").format(names.get(r.mode, r.mode))
        if r is not None and r.type == "rule" and r.rule is not None:
            return self.tr("the {0} rule {1} asks for this").format(r.rule.behavior, r.describe().split(" ", 1)[-1])
        return request.reason_text or request.message

    def _initial_hunks(self) -> list[dict[str, Any]] | None:
        req = self.request
        if req.structured_patch is not None:
            hunks = highlight.normalize_hunks(req.structured_patch)
            if hunks:
                return hunks
        if req.tool_name == "Write" and "content" in req.input:
            if req.original_file:
                return hunks_from_texts(req.original_file, str(req.input["content"]))
            return highlight.hunks_for_new_file(str(req.input["content"]))
        if req.tool_name == "Edit" and req.original_file is not None and "old_string" in req.input:
            return self._edit_hunks(str(req.input.get("new_string", "")))
        if req.structured_patch is not None:
            return []
        return None

    def _edit_hunks(self, new_string: str) -> list[dict[str, Any]]:
        req = self.request
        old = req.original_file or ""
        old_string = str(req.input.get("old_string", ""))
        if req.input.get("replace_all"):
            new = old.replace(old_string, new_string)
        elif old_string:
            new = old.replace(old_string, new_string, 1)
        else:
            new = new_string
        return hunks_from_texts(old, new)

    def _render_diff(self, hunks: list[dict[str, Any]]) -> None:
        """The diff now, or a placeholder while ``DiffRenderer`` builds a big one in slices."""
        assert self.diff_view is not None
        self._diff_key = None
        if not hunks:
            self.diff_view.setPlainText(self.tr("(no textual change)"))
            return
        path = self.request.file_path or self.request.input.get("file_path")
        key, out = renderer().html(hunks, path, is_dark(self), self.diff_view.font().family())
        if out is not None:
            self.diff_view.document().setHtml(out)
            return
        self._diff_key, self._diff_hunks = key, hunks
        lines = highlight.diff_line_count(hunks)
        self.diff_view.setPlainText(self.tr("Rendering the diff ({0} lines)…").format(f"{lines:,}"))

    def _on_diff_ready(self, key: Any) -> None:
        if key is not None and key == self._diff_key and self.diff_view is not None:
            self._render_diff(self._diff_hunks)  # a memo hit now

    def _update_preview(self) -> None:
        if self.editor is None or self.diff_view is None:
            return
        text = self.editor.toPlainText()
        req = self.request
        if req.tool_name == "Edit" and req.original_file is not None:
            self._render_diff(self._edit_hunks(text))
        elif req.tool_name == "Write":
            self._render_diff(hunks_from_texts(req.original_file, text) if req.original_file
                              else highlight.hunks_for_new_file(text))

    def _toggle_input(self, on: bool) -> None:
        if on and self.input_view.document().isEmpty():
            self.input_view.setPlainText(json.dumps(self.request.input, indent=2, ensure_ascii=False))
        self.input_view.setVisible(on)
        self.input_toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)

    def _toggle_editor(self, on: bool) -> None:
        if self.editor is None:
            return
        if on and not self._editor_filled:
            self._editor_filled = True
            self.editor.blockSignals(True)  # filling it is not an edit: no preview re-render
            self.editor.setPlainText(str(self.request.input.get(self._field, "")))
            self.editor.blockSignals(False)
        self.editor.setVisible(on)
        if on:
            self.editor.setFocus()

    def _size_to_content(self, parent: QWidget | None) -> None:
        lines = sum(len(h["lines"]) + 1 for h in (self._hunks or []))
        lh = self.fontMetrics().height() + 2
        want_h = 260 + min(lines, 40) * lh + (120 if self.command_view is not None else 0) \
            + (200 if self.diff_view is None and self.command_view is None else 0)
        want_w = 720
        if parent is not None and parent.width() > 0:
            want_w = min(max(want_w, int(parent.width() * 0.6)), int(parent.width() * 0.8))
            want_h = min(want_h, int(parent.height() * 0.8))
        self.resize(want_w, max(want_h, 320))

    # ----- answers ---------------------------------------------------------------------------
    def edited_input(self) -> dict[str, Any] | None:
        """The input with the user's edit applied, or None when the proposal was not changed."""
        if self.editor is None or self._field is None or self.edit_button is None or not self.edit_button.isChecked():
            return None
        text = self.editor.toPlainText()
        if text == str(self.request.input.get(self._field, "")):
            return None
        updated = dict(self.request.input)
        updated[self._field] = text
        return updated

    def _finish(self, reply: PermissionReply, accepted: bool) -> None:
        if self._answered:
            return
        self._answered = True
        self.decided.emit(reply)
        if accepted:
            super().accept()
        else:
            super().reject()

    def _allow(self) -> None:
        self._finish(PermissionReply(behavior="allow", updated_input=self.edited_input()), True)

    def _allow_session(self) -> None:
        self._finish(PermissionReply(behavior="allow", updated_input=self.edited_input(),
                                     updated_permissions=list(self.request.suggestions)), True)

    def accept(self) -> None:  # Enter on the default button ends up here too
        self._allow()

    def reject(self) -> None:  # Esc, the close button, the Deny button
        if self._silent:
            super().reject()
            return
        feedback = self.feedback.text().strip() or None
        self._finish(PermissionReply(behavior="deny", message=USER_DENIED, feedback=feedback), False)

    def close_silently(self) -> None:
        """Close without answering (the turn was interrupted, or the answer is already in)."""
        self._silent = True
        self._answered = True
        if self.isVisible():
            super().reject()

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt naming
        # Enter in the feedback box means "deny with this feedback"; elsewhere the default button.
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.feedback.hasFocus() and self.feedback.text():
            self.reject()
            return
        if event.matches(QKeySequence.StandardKey.Copy) and self.diff_view is not None and self.diff_view.hasFocus():
            self.diff_view.copy()
            return
        super().keyPressEvent(event)


class _DiffView(PlainSpacesCopy, QPlainTextEdit):
    """The dialog's diff: copies with plain spaces."""


def _esc(text: str) -> str:
    import html

    return html.escape(str(text))


def _home(path: str) -> str:
    home = os.path.expanduser("~")
    if path and home and home != "/" and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home):]
    return path


__all__ = ["PermissionDialog", "hunks_from_texts", "describe_update", "target_of", "is_dark",
           "mono_font"]
