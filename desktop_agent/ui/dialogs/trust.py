"""The one-time trust question for a folder whose files (``.claude/settings.json``, ``.claude/settings.local.json``,
``.mcp.json``) grant permissions, run hooks or start MCP servers.

It names only the files that exist and what trusting would let run: each hook command (with its event), each MCP
server's command line (or URL), the apiKeyHelper command, and the permissions granted — from the ``TrustDetails``
the caller read off the Qt thread (``client.trust_details``), in monospace and in full, scrolled when long.

An ``AwaitableDialog[TrustChoice]`` laid out as the question box it replaces (the question icon, the
question in bold, what trusting means, three buttons): ``"trust"`` (Trust folder, the default button),
``"untrusted"`` (Open without trusting) or ``"cancel"`` — Cancel, Escape and closing it (its "no": the
folder is not opened). The caller records the trust; this dialog only asks. Its texts keep the
``MainWindow`` translation context they were translated in.
"""

from __future__ import annotations

import html
from typing import Any, Literal

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import (
    QDialogButtonBox, QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QStyle, QVBoxLayout, QWidget,
)

from desktop_agent.ui.dialogs.base import AwaitableDialog

TrustChoice = Literal["trust", "untrusted", "cancel"]


class TrustDialog(AwaitableDialog[TrustChoice]):
    """Ask whether to trust ``folder`` (shown as given, e.g. ``~/proj``)."""

    def __init__(self, folder: str, parent: QWidget | None = None, details: Any = None):
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
        self.details = QLabel(self._intro(details))
        self.details.setWordWrap(True)
        texts.addWidget(self.details)
        self.what_runs = QLabel(self._listing(details))
        self.what_runs.setObjectName("trustListing")
        self.what_runs.setTextFormat(Qt.TextFormat.RichText)
        self.what_runs.setWordWrap(True)
        self.what_runs.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.what_runs.setAccessibleName(QCoreApplication.translate("MainWindow", "What would run"))
        scroll = QScrollArea()
        scroll.setObjectName("trustListingScroll")
        scroll.setWidget(self.what_runs)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMaximumHeight(320)
        scroll.setVisible(bool(self.what_runs.text()))
        texts.addWidget(scroll)
        self.outro = QLabel(QCoreApplication.translate(
            "MainWindow", "Trusting the folder lets these run and apply. Without trust none of them does; the "
                          "folder's deny and ask rules apply either way."))
        self.outro.setWordWrap(True)
        texts.addWidget(self.outro)
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

    @staticmethod
    def _intro(details: Any) -> str:
        files = list(getattr(details, "files", None) or [])
        if not files:
            return QCoreApplication.translate(
                "MainWindow", "Its settings grant permissions, run hooks or start MCP servers.")
        return QCoreApplication.translate(
            "MainWindow", "Its {0} would run these commands and grant these permissions:").format(
            QCoreApplication.translate("MainWindow", " and ").join(files))

    @staticmethod
    def _listing(details: Any) -> str:
        """The commands and grants, one per line: a bold heading per kind, the commands in monospace and in full."""
        if details is None:
            return ""
        translate = QCoreApplication.translate
        sections: list[tuple[str, list[str]]] = [
            (translate("MainWindow", "Hooks"), [f"{html.escape(event)}: <code>{html.escape(cmd)}</code>"
                                         for event, cmd in details.hooks]),
            (translate("MainWindow", "MCP servers (start with the first message)"),
             [f"{html.escape(name)}: <code>{html.escape(line)}</code>" for name, line in details.servers]),
            (translate("MainWindow", "API key helper"), [f"<code>{html.escape(c)}</code>" for c in details.helpers]),
            (translate("MainWindow", "Permissions"), [html.escape(g) for g in details.grants]),
        ]
        parts = [f"<p style='margin:6px 0 2px 0'><b>{html.escape(head)}</b></p>"
                 + "".join(f"<div style='margin-left:12px; white-space:pre-wrap'>{row}</div>" for row in rows)
                 for head, rows in sections if rows]
        return "".join(parts)

    def closed_value(self) -> TrustChoice:
        return "cancel"

    def buttons(self) -> list[QPushButton]:
        """Its buttons in order: Trust folder, Open without trusting, Cancel."""
        return [self.trust_button, self.untrusted_button, self.cancel_button]


__all__ = ["TrustChoice", "TrustDialog"]
