"""The confirmation before the changes panel reverts a change (or, ``redo=True``, re-applies one it reverted):
what will happen, in one sentence, and two buttons — Cancel (Escape) and Revert (Redo).

The permission dialog's focus-safe rules (``SafetyDelay``): no button is default or reacts to Enter;
Revert never reacts to Space; both buttons answer only once the dialog has been the active window
for the safety delay (the permission dialog's, 0.7 s) with no key and no click — a fill runs across
Revert meanwhile, keys typed before it was first ready go nowhere — so a click or a keystroke meant
for something else cannot revert. An ``AwaitableDialog[bool]``: opened
window-modal (``open()`` or ``await ask()``), ``decided(bool)`` says the answer exactly once; closing it
is False.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from desktop_agent.ui.dialogs.base import AwaitableDialog, GuardButton, SafetyDelay
from desktop_agent.ui.dialogs.permission import PermissionDialog


class RevertDialog(SafetyDelay, AwaitableDialog[bool]):
    safety_delay_ms: int | None = None  # None: the permission dialog's delay

    def __init__(self, name: str, added: int, removed: int, new_file: bool, parent: QWidget | None = None,
                 redo: bool = False):
        super().__init__(parent)
        self._init_delay()
        self.setObjectName("revertDialog")
        self.redo = redo
        self.setWindowTitle(self.tr("Re-apply the change to {0}?").format(name) if redo else
                            self.tr("Revert the change to {0}?").format(name))
        self.setAccessibleName(self.windowTitle())
        root = QVBoxLayout(self)
        root.setContentsMargins(16, 16, 16, 16)
        root.setSpacing(8)
        if redo and new_file:
            what = self.tr("This creates {0} again, as this change wrote it.").format(name)
        elif redo:
            what = self.tr("This writes this change into {0} again (+{1} \u2212{2}).").format(
                name, f"{added:,}", f"{removed:,}")
        elif new_file:
            what = self.tr("This deletes {0}, which this change created.").format(name)
        else:
            what = self.tr("This writes {0} back as it was before this change (+{1} \u2212{2} undone).").format(
                name, f"{added:,}", f"{removed:,}")
        safe = self.tr("If the file changed since the revert, nothing is written and you are told why.") if redo \
            else self.tr("If the file changed since, nothing is written and you are told why.")
        self.message = QLabel(f"<b>{html.escape(what)}</b><br/>{html.escape(safe)}")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # the neutral widget that has the focus
        root.addWidget(self.message)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.cancel_button = GuardButton(self.tr("&Cancel  Esc"), self.input_ready)
        self.cancel_button.clicked.connect(lambda: self._guarded(self.reject))
        self.revert_button = GuardButton(self.tr("Re&do") if redo else self.tr("&Revert"), self.input_ready,
                                         no_space=True)
        self.revert_button.setObjectName("revertButton")
        self.revert_button.clicked.connect(lambda: self._guarded(self._revert))
        for b in (self.cancel_button, self.revert_button):
            b.setMinimumHeight(32)
            buttons.addWidget(b)
        root.addLayout(buttons)
        self.message.setFocus()

    # ----- the safety delay ------------------------------------------------------------------
    def delay_ms(self) -> int:
        return PermissionDialog.safety_delay_ms if self.safety_delay_ms is None else self.safety_delay_ms

    def fill_button(self) -> GuardButton:
        return self.revert_button

    # ----- answers ---------------------------------------------------------------------------
    def closed_value(self) -> bool:
        return False  # Esc, the close button, Cancel

    def _revert(self) -> None:
        self._resolve(True, True)

    def accept(self) -> None:  # never by a default button: only the Revert button's click
        pass

    def keyPressEvent(self, event) -> None:  # noqa: N802
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            event.accept()
            if key == Qt.Key.Key_Space and self.focusWidget() is self.cancel_button and self.input_ready():
                self.reject()
            return  # Enter reverts nothing; Space only cancels
        if key == Qt.Key.Key_Escape:
            event.accept()
            self.reject()
            return
        super().keyPressEvent(event)


__all__ = ["RevertDialog"]
