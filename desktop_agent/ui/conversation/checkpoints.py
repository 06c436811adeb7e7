"""The checkpoint marker under a user message: what the turn it started changed in the folder
(``checkpoint · 4 files +38 −12``) and "Rewind…", which asks the window for the dry run of going back to just before
that message (UI-GUIDE "Checkpoints"). Only a view: the window (``ui.window.rewind``) fetches the numbers through the
client and opens the dialog.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

translate = QCoreApplication.translate


def marker_text(files: int, insertions: int, deletions: int) -> str:
    """``checkpoint · 4 files +38 −12`` (``checkpoint · no changes`` for a turn that changed nothing)."""
    if not files:
        return translate("CheckpointMarker", "checkpoint · no changes")
    noun = translate("CheckpointMarker", "1 file") if files == 1 else \
        translate("CheckpointMarker", "{0} files").format(files)
    head = translate("CheckpointMarker", "checkpoint")
    return f"{head} · {noun} +{insertions:,} \u2212{deletions:,}"


class CheckpointMarker(QFrame):
    """One thin row; ``rewind_requested(message_id)`` when "Rewind…" is pressed."""

    rewind_requested = Signal(str)

    def __init__(self, message_id: str, files: list[str], insertions: int, deletions: int,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("checkpointMarker")
        self.message_id = message_id
        self.files = list(files)
        self.insertions, self.deletions = insertions, deletions
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 0, 12, 0)
        row.setSpacing(8)
        self.label = QLabel(marker_text(len(files), insertions, deletions))
        self.label.setObjectName("checkpointLabel")
        shown = "\n".join(self.files[:20]) + (f"\n… (+{len(self.files) - 20})" if len(self.files) > 20 else "")
        self.label.setToolTip(shown)
        row.addWidget(self.label)
        row.addStretch(1)
        self.rewind_button = QToolButton()
        self.rewind_button.setText(self.tr("Rewind…"))
        self.rewind_button.setObjectName("rewindButton")
        self.rewind_button.setAutoRaise(True)
        self.rewind_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.rewind_button.setAccessibleName(self.tr("Rewind to before this message"))
        self.rewind_button.clicked.connect(lambda: self.rewind_requested.emit(self.message_id))
        row.addWidget(self.rewind_button)
        self.setStyleSheet("#checkpointLabel { color: palette(mid); font-size: 11px; }"
                           "#rewindButton { font-size: 11px; padding: 0 6px; margin: 0; }")
        self.rewind_button.setFixedHeight(20)
        self.setFixedHeight(24)


__all__ = ["CheckpointMarker", "marker_text"]
