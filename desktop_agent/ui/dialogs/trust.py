"""The one-time trust question for a folder whose ``.claude/settings.json`` grants permissions or runs hooks.

An ``AwaitableDialog[TrustChoice]`` laid out as the question box it replaces (the question icon, the
question in bold, what trusting means, three buttons): ``"trust"`` (Trust folder, the default button),
``"untrusted"`` (Open without trusting) or ``"cancel"`` — Cancel, Escape and closing it (its "no": the
folder is not opened). The caller records the trust; this dialog only asks. Its texts keep the
``MainWindow`` translation context they were translated in.
"""

from __future__ import annotations

import html
from typing import Literal

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import (
    QDialogButtonBox, QHBoxLayout, QLabel, QPushButton, QStyle, QVBoxLayout, QWidget,
)

from desktop_agent.ui.dialogs.base import AwaitableDialog

TrustChoice = Literal["trust", "untrusted", "cancel"]


class TrustDialog(AwaitableDialog[TrustChoice]):
    """Ask whether to trust ``folder`` (shown as given, e.g. ``~/proj``)."""

    def __init__(self, folder: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("trustDialog")
        self.setWindowTitle(QCoreApplication.translate("MainWindow", "Trust this folder?"))
        root = QVBoxLayout(self)
        row = QHBoxLayout()
        row.setSpacing(12)
        icon = QLabel()
        size = self.style().pixelMetric(QStyle.PixelMetric.PM_MessageBoxIconSize, None, self)
        icon.setPixmap(self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxQuestion, None, self)
                       .pixmap(size, size))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        row.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        texts = QVBoxLayout()
        question = QCoreApplication.translate("MainWindow", "<b>Do you trust the files in {0}?</b>")
        self.question = QLabel(question.format(html.escape(folder)))
        self.question.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.question.setWordWrap(True)
        texts.addWidget(self.question)
        self.details = QLabel(QCoreApplication.translate(
            "MainWindow",
            "Its .claude/settings.json grants permissions or runs hooks. Trusting the folder lets those allow "
            "rules apply; deny rules and hooks apply either way."))
        self.details.setWordWrap(True)
        texts.addWidget(self.details)
        row.addLayout(texts, 1)
        root.addLayout(row)
        self.button_box = QDialogButtonBox()
        trust = QCoreApplication.translate("MainWindow", "&Trust folder")
        untrusted = QCoreApplication.translate("MainWindow", "Open &without trusting")
        role = QDialogButtonBox.ButtonRole
        self.trust_button: QPushButton = self.button_box.addButton(trust, role.AcceptRole)
        self.untrusted_button: QPushButton = self.button_box.addButton(untrusted, role.RejectRole)
        self.cancel_button = self.button_box.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.trust_button.setDefault(True)
        self.trust_button.clicked.connect(lambda: self._resolve("trust", True))
        self.untrusted_button.clicked.connect(lambda: self._resolve("untrusted", True))
        self.cancel_button.clicked.connect(self.reject)
        root.addWidget(self.button_box)
        self.setMinimumWidth(420)

    def closed_value(self) -> TrustChoice:
        return "cancel"

    def buttons(self) -> list[QPushButton]:
        """Its buttons in order: Trust folder, Open without trusting, Cancel."""
        return [self.trust_button, self.untrusted_button, self.cancel_button]


__all__ = ["TrustChoice", "TrustDialog"]
