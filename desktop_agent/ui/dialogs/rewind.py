""""Rewind…": the dry run of going back to just before a user message, and the choice of what to rewind.

It shows every file the restore would change with its +/− and what happens to it (restored, deleted, created,
merged with your later edit, permissions, folder), then the files you changed since that the restore leaves as
they are (conflicts). Three answers besides Cancel: **Restore files** (the folder only), **Rewind conversation**
(a new session forked from just before the message; the original stays), **Both**. A snapshot is taken before any
restore, so "Undo restore" in the banner afterwards puts every byte back.

Focus-safe like every approval (``SafetyDelay``): no button is default or reacts to Enter, the action buttons
never react to Space, and nothing answers until the dialog has been active for the safety delay with no key and no
click. An ``AwaitableDialog[RewindChoice | None]``: closing it (Escape, Cancel, the title bar) is None.
"""

from __future__ import annotations

import html
from typing import Any, Literal

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from desktop_agent.ui.dialogs.base import AwaitableDialog, GuardButton, SafetyDelay
from desktop_agent.ui.dialogs.permission import PermissionDialog

RewindChoice = Literal["files", "conversation", "both"]


class RewindDialog(SafetyDelay, AwaitableDialog["RewindChoice | None"]):
    safety_delay_ms: int | None = None  # None: the permission dialog's delay

    def __init__(self, plan: dict[str, Any], prompt: str = "", parent: QWidget | None = None):
        super().__init__(parent)
        self._init_delay()
        self.setObjectName("rewindDialog")
        self.plan = plan
        self.setWindowTitle(self.tr("Rewind to before this message?"))
        self.setAccessibleName(self.windowTitle())
        self.setMinimumWidth(560)
        root = QVBoxLayout(self)
        root.setContentsMargins(16, 16, 16, 16)
        root.setSpacing(8)
        files = list(plan.get("files") or [])
        conflicts = list(plan.get("conflicts") or [])
        shown = prompt if len(prompt) <= 80 else prompt[:79] + "…"
        if files:
            head = self.tr("Restoring files changes {0} files (+{1} \u2212{2}) back to how they were just before "
                           "this message.").format(len(files), f"{int(plan.get('insertions') or 0):,}",
                                                   f"{int(plan.get('deletions') or 0):,}")
        else:
            head = self.tr("The files are already as they were just before this message.")
        label = self.tr("Message:")
        self.message = QLabel(f"<b>{html.escape(head)}</b>"
                              + (f"<br/>{html.escape(label)} <i>{html.escape(shown)}</i>" if shown else ""))
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.RichText)
        self.message.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # the neutral widget that has the focus
        root.addWidget(self.message)
        self.files = QListWidget()
        self.files.setObjectName("rewindFiles")
        self.files.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        for f in files:
            item = QListWidgetItem(f"{self._action(str(f.get('action')))}  {f.get('path')}   "
                                   f"+{int(f.get('insertions') or 0):,} \u2212{int(f.get('deletions') or 0):,}")
            self.files.addItem(item)
        self.files.setMaximumHeight(220)
        self.files.setVisible(bool(files))
        root.addWidget(self.files)
        self.conflicts = QLabel()
        self.conflicts.setObjectName("rewindConflicts")
        self.conflicts.setWordWrap(True)
        if conflicts:
            names = ", ".join(html.escape(c) for c in conflicts[:20]) + (" …" if len(conflicts) > 20 else "")
            self.conflicts.setText(html.escape(self.tr(
                "Not restored, since you have changed the same lines since ({0}); they stay as you left them:")
                .format(len(conflicts))) + f" <b>{names}</b>")
        self.conflicts.setVisible(bool(conflicts))
        root.addWidget(self.conflicts)
        note = QLabel(self.tr("Your later edits to other parts of a file are kept. \"Undo restore\" puts every "
                              "byte back. Rewinding the conversation opens a copy from before this message; the "
                              "original stays."))
        note.setWordWrap(True)
        note.setObjectName("rewindNote")
        root.addWidget(note)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.cancel_button = GuardButton(self.tr("&Cancel  Esc"), self.input_ready)
        self.cancel_button.clicked.connect(lambda: self._guarded(self.reject))
        self.files_button = GuardButton(self.tr("Restore &files"), self.input_ready, no_space=True)
        self.files_button.setObjectName("rewindFilesButton")
        self.files_button.clicked.connect(lambda: self._guarded(lambda: self._choose("files")))
        self.files_button.setEnabled(bool(files))
        self.conversation_button = GuardButton(self.tr("Rewind c&onversation"), self.input_ready, no_space=True)
        self.conversation_button.setObjectName("rewindConversationButton")
        self.conversation_button.clicked.connect(lambda: self._guarded(lambda: self._choose("conversation")))
        self.both_button = GuardButton(self.tr("&Both"), self.input_ready, no_space=True)
        self.both_button.setObjectName("rewindBothButton")
        self.both_button.clicked.connect(lambda: self._guarded(lambda: self._choose("both")))
        self.both_button.setEnabled(bool(files))
        for b in (self.cancel_button, self.conversation_button, self.files_button, self.both_button):
            b.setMinimumHeight(32)
            b.setAutoDefault(False)
            buttons.addWidget(b)
        root.addLayout(buttons)
        self.message.setFocus()

    def _action(self, action: str) -> str:
        return {"restore": self.tr("restore"), "delete": self.tr("delete"), "create": self.tr("create"),
                "merge": self.tr("merge"), "mode": self.tr("permissions"), "mkdir": self.tr("folder"),
                "rmdir": self.tr("remove folder"), "link": self.tr("hard link")}.get(action, action)

    # ----- the safety delay ------------------------------------------------------------------
    def delay_ms(self) -> int:
        return PermissionDialog.safety_delay_ms if self.safety_delay_ms is None else self.safety_delay_ms

    def fill_button(self) -> GuardButton:
        return self.files_button if self.files_button.isEnabled() else self.conversation_button

    # ----- answers ---------------------------------------------------------------------------
    def closed_value(self) -> RewindChoice | None:
        return None

    def _choose(self, choice: RewindChoice) -> None:
        self._resolve(choice, True)

    def accept(self) -> None:  # never by a default button
        pass

    def keyPressEvent(self, event) -> None:  # noqa: N802
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            event.accept()
            if key == Qt.Key.Key_Space and self.focusWidget() is self.cancel_button and self.input_ready():
                self.reject()
            return
        if key == Qt.Key.Key_Escape:
            event.accept()
            self.reject()
            return
        super().keyPressEvent(event)


__all__ = ["RewindChoice", "RewindDialog"]
