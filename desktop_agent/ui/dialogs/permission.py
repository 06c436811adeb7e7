"""The modal permission dialog: shows exactly what a tool wants to do and answers the engine's ``ask``.

An ``AwaitableDialog[PermissionReply]`` (dialogs/base.py): opened window-modal, never through a nested
event loop; the controller awaits its ``answer()`` and ``decided`` carries the same reply, exactly once.
Closing it denies (with the feedback typed). Deny is Escape,
Allow for session names the exact rule it adds. "✎ Edit" lets the user change the proposed text
(Edit's ``new_string``, Write's ``content``, Bash's ``command``); the reply then carries
``updated_input``.

Focus-safe (UI-GUIDE): it never takes the focus from another application (``AwaitableDialog.open``:
shown without activation while its window is not active; the controller raises the taskbar alert and
the notification); no button has focus or is default (the diff has the focus); the three buttons
answer only once it has been the active window for ``safety_delay_ms`` with no key and no click
(``SafetyDelay``: every key or click restarts the wait, a fill runs across Allow, keys typed before
it was first ready go nowhere); Space never presses Allow; Enter allows only then.

The whole patch: ``HunkDiffView`` (diff_render) shows every line of any change, with a hunk
navigator (``[``/``]``, Alt+↑/↓, "hunk 7 of 41", +/− per hunk) and the totals on Allow. For Edit and
Write each hunk has an accept/reject toggle; Allow then replies with an ``updated_input`` that
writes only the accepted hunks, and ``rejected_hunks`` (original line ranges) for the tool_result —
computed with the tools' own code through ``client.proposals`` (the UI does not import tools).
"""

from __future__ import annotations

import html
import json
import os
from typing import Any, Literal

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QToolButton, QVBoxLayout, QWidget

from desktop_agent.client.proposals import accepted_hunks_input, edited_file
from desktop_agent.core.permission import PermissionReply, PermissionRequest, PermissionUpdate
from desktop_agent.ui import highlight
from desktop_agent.ui.changes.render import HunkDiffView
from desktop_agent.ui.conversation.summary import rel_path
from desktop_agent.ui.highlight import is_dark, mono_font
from desktop_agent.ui.dialogs.base import SAFETY_DELAY_MS, AwaitableDialog, GuardButton, SafetyDelay
from desktop_agent.util.diff import hunk_old_range, structured_patch

USER_DENIED = "User denied via UI"
EDITABLE_FIELD = {"Edit": "new_string", "Write": "content", "Bash": "command", "MultiEdit": None}
HUNK_TOOLS = ("Edit", "Write")  # a decision per hunk


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


class PermissionDialog(SafetyDelay, AwaitableDialog[PermissionReply]):
    """Ask the user about one tool call: an ``AwaitableDialog[PermissionReply]`` (``await dialog.ask()``,
    or ``answer()``; ``decided`` carries the reply exactly once). Closing it denies (``closed_value``)."""

    safety_delay_ms = SAFETY_DELAY_MS  # the buttons' inert time after the dialog appears or is activated again

    def __init__(self, request: PermissionRequest, parent: QWidget | None = None):
        super().__init__(parent)
        self.request = request
        self._init_delay()
        self.setObjectName("permissionDialog")
        self.setAccessibleName(self.tr("Permission request"))

        tool = request.tool_name
        target = target_of(request)
        short = os.path.basename(target) if (request.file_path or request.input.get("file_path")) else target
        if len(short) > 60:
            short = short[:57] + "…"  # the window title only; the body shows it in full
        self.setWindowTitle(self.tr("Allow {0}: {1}?").format(tool, short) if short
                            else self.tr("Allow {0}?").format(tool))
        self._field = EDITABLE_FIELD.get(tool)
        mono = mono_font()

        root = QVBoxLayout(self)
        root.setContentsMargins(16, 16, 16, 16)
        root.setSpacing(8)

        # Heading: tool + target, working dir on the right.
        head = QHBoxLayout()
        head.setSpacing(8)
        self.title_label = QLabel(
            f"<b>{_esc(tool)}</b>&nbsp;&nbsp;<span style='font-family:monospace'>{_esc(target)}</span>")
        self.title_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.title_label.setWordWrap(True)
        head.addWidget(self.title_label, 1)
        self.cwd_label = QLabel(self.tr("in {0}").format(_home(request.cwd)))
        self.cwd_label.setObjectName("muted")
        self.cwd_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        head.addWidget(self.cwd_label, 0, Qt.AlignmentFlag.AlignTop)
        root.addLayout(head)
        self.waiting_label = QLabel()  # "2 more waiting": the window's other queued questions (set_waiting)
        self.waiting_label.setObjectName("waitingLabel")
        self.waiting_label.setVisible(False)
        root.addWidget(self.waiting_label)

        reason = self._reason(request)
        self.reason_label = QLabel(self.tr("Why: {0}").format(reason) if reason else "")
        self.reason_label.setObjectName("muted")
        self.reason_label.setWordWrap(True)
        self.reason_label.setVisible(bool(reason))
        root.addWidget(self.reason_label)
        self.computed_label = QLabel(self.tr("The executor sent no patch: this one is computed here, from the proposed "
                                             "input and the file on disk.") if request.computed_here else "")
        self.computed_label.setObjectName("muted")
        self.computed_label.setWordWrap(True)
        self.computed_label.setVisible(bool(request.computed_here))
        root.addWidget(self.computed_label)
        if request.description:
            desc = QLabel(request.description)
            desc.setWordWrap(True)
            root.addWidget(desc)

        # The patch (Edit/Write): every line of it, in a virtualised view filled in slices, with a
        # hunk navigator and, for Edit and Write, a decision per hunk.
        self.diff_view: HunkDiffView | None = None
        self.hunk_label: QLabel | None = None
        self._hunks = self._initial_hunks()
        self.per_hunk = bool(self._hunks) and tool in HUNK_TOOLS and "file_path" in request.input \
            and (tool == "Write" or request.original_file is not None)
        if self._hunks is not None:
            nav = QHBoxLayout()
            nav.setSpacing(4)
            self.prev_hunk_button = QToolButton()
            self.prev_hunk_button.setText("\u25b2")
            self.prev_hunk_button.setToolTip(self.tr("Previous hunk  ([ or Alt+\u2191)"))
            self.prev_hunk_button.setAutoRaise(True)
            self.next_hunk_button = QToolButton()
            self.next_hunk_button.setText("\u25bc")
            self.next_hunk_button.setToolTip(self.tr("Next hunk  (] or Alt+\u2193)"))
            self.next_hunk_button.setAutoRaise(True)
            self.hunk_label = QLabel()
            self.hunk_label.setObjectName("hunkLabel")
            hint = QLabel(self.tr("[ ] move between hunks \u00b7 X accepts or rejects a hunk") if self.per_hunk
                          else self.tr("[ ] move between hunks"))
            hint.setObjectName("muted")
            for w in (self.prev_hunk_button, self.next_hunk_button, self.hunk_label):
                nav.addWidget(w)
            nav.addStretch(1)
            nav.addWidget(hint)
            root.addLayout(nav)
            self.diff_view = HunkDiffView(toggles=self.per_hunk)
            self.diff_view.setObjectName("diffView")
            self.diff_view.setAccessibleName(self.tr("Proposed change"))
            self.diff_view.setFont(mono)
            self.diff_view.current_changed.connect(lambda _i: self._update_hunk_ui())
            self.diff_view.hunk_toggled.connect(lambda _i, _on: self._update_hunk_ui())
            self.prev_hunk_button.clicked.connect(self.diff_view.previous_hunk)
            self.next_hunk_button.clicked.connect(self.diff_view.next_hunk)
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

        # Buttons: Deny (Esc) · Allow for session · Allow (Enter). None is default or has focus.
        buttons = QHBoxLayout()
        buttons.setSpacing(8)
        buttons.addStretch(1)
        self.deny_button = GuardButton(self.tr("&Deny  Esc"), self.input_ready)
        self.deny_button.setObjectName("denyButton")
        self.deny_button.clicked.connect(lambda: self._guarded(self.reject))
        # "Allow for session" adds the narrow rules; a mode switch is only ever its own explicit choice
        self.session_updates = [u for u in request.suggestions if u.type != "setMode"]
        self.mode_updates = [u for u in request.suggestions if u.type == "setMode" and u.mode]
        self.session_rules = [describe_update(u) for u in self.session_updates]
        self.allow_session_button = GuardButton(self.tr("Allow for &session"), self.input_ready, no_space=True)
        self.allow_session_button.setEnabled(bool(self.session_updates))
        self.allow_session_button.clicked.connect(lambda: self._guarded(self._allow_session))
        self.allow_mode_button: GuardButton | None = None
        if self.mode_updates:  # no mnemonic: switching the whole session takes a deliberate click
            self.allow_mode_button = GuardButton(
                self.tr("Allow, then {0} for the session").format(self.mode_updates[0].mode), self.input_ready,
                no_space=True)
            self.allow_mode_button.setObjectName("allowModeButton")
            self.allow_mode_button.setToolTip(self.tr("Allow this call and switch the whole session to {0}").format(
                "; ".join(describe_update(u) for u in self.mode_updates)))
            self.allow_mode_button.clicked.connect(lambda: self._guarded(self._allow_mode))
        self.allow_button = GuardButton(self.tr("&Allow  ⏎"), self.input_ready, no_space=True)
        self.allow_button.setObjectName("allowButton")
        self.allow_button.clicked.connect(lambda: self._guarded(self._allow))
        for b in (self.deny_button, self.allow_mode_button, self.allow_session_button, self.allow_button):
            if b is None:
                continue
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
        if self.diff_view is not None:
            self.diff_view.set_hunks(self._hunks or [], request.file_path or request.input.get("file_path"),
                                     is_dark(self))
        self._update_hunk_ui()
        # Focus on a neutral widget, never a button: the diff, the command, or the full input.
        neutral = self.diff_view or self.command_view or self.input_view
        neutral.setFocus()

    def set_waiting(self, n: int) -> None:
        """How many more questions wait behind this one (0: the label hides)."""
        self.waiting_label.setText(self.tr("%n more waiting", "", n) if n > 0 else "")
        self.waiting_label.setStyleSheet(f"color: {highlight.colors(is_dark(self)).accent}; font-weight: 600;")
        self.waiting_label.setVisible(n > 0)

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
        """The patch of the Edit with ``new_string``, computed as the tool computes it."""
        req = self.request
        old = req.original_file or ""
        return hunks_from_texts(old, edited_file(old, dict(req.input, new_string=new_string)))

    def _render_diff(self, hunks: list[dict[str, Any]]) -> None:
        """Show ``hunks`` (every hunk accepted again: the decisions were about the previous patch)."""
        assert self.diff_view is not None
        self._hunks = hunks
        self.diff_view.set_hunks(hunks, self.request.file_path or self.request.input.get("file_path"), is_dark(self))
        self._update_hunk_ui()

    def _update_hunk_ui(self) -> None:
        """The navigator's "hunk 7 of 41 +12 −3" and the totals on Allow."""
        view = self.diff_view
        if view is None or self.hunk_label is None:
            return
        hunks = view.hunks
        self.prev_hunk_button.setEnabled(len(hunks) > 1)
        self.next_hunk_button.setEnabled(len(hunks) > 1)
        if not hunks:
            self.hunk_label.setText(self.tr("no textual change"))
            return
        c = highlight.colors(is_dark(self))
        plus, minus = view.counts[view.current]
        state = "" if view.accepted[view.current] else " \u00b7 " + self.tr("rejected")
        self.hunk_label.setText(
            self.tr("hunk {0} of {1}").format(view.current + 1, len(hunks))
            + f"&nbsp;&nbsp;<span style='color:{c.added_fg}'>+{plus:,}</span>"
            f"&nbsp;<span style='color:{c.removed_fg}'>\u2212{minus:,}</span>{state}")
        n, taken = len(hunks), sum(view.accepted)
        if taken < n:
            text = self.tr("&Allow {0} of {1} hunks").format(taken, n)
        elif n > 1:
            added = sum(a for a, _ in view.counts)
            removed = sum(r for _, r in view.counts)
            text = self.tr("&Allow {0} hunks (+{1} \u2212{2})").format(n, f"{added:,}", f"{removed:,}")
        else:
            text = self.tr("&Allow")
        self.allow_button.setText(text + "  \u23ce")
        self.allow_button.setEnabled(taken > 0)
        self.allow_session_button.setEnabled(bool(self.session_updates) and taken > 0)
        if self.allow_mode_button is not None:
            self.allow_mode_button.setEnabled(taken > 0)
        self.allow_button.setToolTip(self.tr("Every hunk is rejected: nothing would be written. Deny instead.")
                                     if taken == 0 else "")

    def _update_preview(self) -> None:
        if self.editor is None or self.diff_view is None:
            return
        text = self.editor.toPlainText()
        req = self.request
        if req.tool_name == "Edit" and req.original_file is not None:
            self._render_diff(self._edit_hunks(text))
        elif req.tool_name == "Write":
            self._render_diff(hunks_from_texts(req.original_file or "", text))

    def _toggle_input(self, on: bool) -> None:
        if on and self.input_view.document().isEmpty():
            self.input_view.setPlainText(json.dumps(self.request.input, indent=2, ensure_ascii=False))
        self.input_view.setVisible(on)
        self.input_toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)

    def _toggle_editor(self, on: bool) -> None:
        if self.editor is None or self._field is None:  # the editor is made only for a tool with a field
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

    def hunk_decisions(self) -> list[bool] | None:
        """Accepted or not, per hunk shown; None when the dialog offers no decision per hunk."""
        if not self.per_hunk or self.diff_view is None or not self.diff_view.hunks:
            return None
        return list(self.diff_view.accepted)

    def _allow_reply(self, **extra: Any) -> PermissionReply:
        """Allow, with the user's edit and only the accepted hunks."""
        edited = self.edited_input()
        decisions = self.hunk_decisions()
        if decisions is None or self.diff_view is None or all(decisions):  # decisions: there is a diff view
            return PermissionReply(behavior="allow", updated_input=edited, **extra)
        req = self.request
        base = edited or dict(req.input)
        hunks = self.diff_view.hunks
        tool: Literal["Edit", "Write"] = "Edit" if req.tool_name == "Edit" else "Write"  # per_hunk: only these two
        updated = accepted_hunks_input(tool, req.original_file, base, hunks, decisions)
        rejected = [hunk_old_range(h) for h, take in zip(hunks, decisions) if not take]
        return PermissionReply(behavior="allow", updated_input=updated, rejected_hunks=rejected,
                               total_hunks=len(hunks), **extra)

    # ----- the safety delay (SafetyDelay) ------------------------------------------------------
    def delay_ms(self) -> int:
        return self.safety_delay_ms

    def fill_button(self) -> GuardButton:
        return self.allow_button

    def closed_value(self) -> PermissionReply:
        """Closing it (Esc, the close button, Deny) denies, with the feedback typed."""
        feedback = self.feedback.text().strip() or None
        return PermissionReply(behavior="deny", message=USER_DENIED, feedback=feedback)

    def _allow(self) -> None:
        if not self.allow_button.isEnabled():
            return
        self._resolve(self._allow_reply(), True)

    def _allow_session(self) -> None:
        if not self.allow_session_button.isEnabled():
            return
        self._resolve(self._allow_reply(updated_permissions=list(self.session_updates)), True)

    def _allow_mode(self) -> None:
        if self.allow_mode_button is None or not self.allow_mode_button.isEnabled():
            return
        self._resolve(self._allow_reply(updated_permissions=list(self.mode_updates)), True)

    def accept(self) -> None:
        self._guarded(self._allow)

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt naming
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Escape, Qt.Key.Key_Space):
            event.accept()
            if not self.input_ready():
                return  # not active, or a key or click within the delay: Enter goes nowhere
            focus = self.focusWidget()
            if key == Qt.Key.Key_Escape:
                self.reject()
            elif key == Qt.Key.Key_Space:
                if focus is self.deny_button:
                    self.reject()
            elif self.feedback.hasFocus() and self.feedback.text():
                self.reject()  # Enter in the feedback box: deny with this feedback
            elif focus is self.deny_button:
                self.reject()
            elif focus is self.allow_session_button:
                self._allow_session()
            else:
                self._allow()
            return
        if event.matches(QKeySequence.StandardKey.Copy) and self.diff_view is not None and self.diff_view.hasFocus():
            self.diff_view.copy()
            return
        if self.diff_view is not None and key in (Qt.Key.Key_BracketLeft, Qt.Key.Key_BracketRight):
            self.diff_view.keyPressEvent(event)  # the navigator's keys work from anywhere in the dialog
            return
        super().keyPressEvent(event)


def _esc(text: str) -> str:
    return html.escape(str(text))


def _home(path: str) -> str:
    home = os.path.expanduser("~")
    if path and home and home != "/" and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home):]
    return path


__all__ = ["PermissionDialog", "hunks_from_texts", "describe_update", "target_of", "is_dark",
           "mono_font"]
