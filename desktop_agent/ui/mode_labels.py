"""How the window names the permission modes (``MODES``, translated where shown; the bypass badge) and the one
question before bypassPermissions is entered (``confirm_bypass``: the toolbar, the menu, Settings and the command
line ask it). The modes themselves and their rules are ``ui.modes`` (no Qt).
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication
from PySide6.QtWidgets import QMessageBox, QWidget

# Labels are marked for lupdate with QT_TRANSLATE_NOOP and translated where shown (mode_label()).
MODES: list[tuple[str, str]] = [
    ("default", QT_TRANSLATE_NOOP("Modes", "Default")),
    ("acceptEdits", QT_TRANSLATE_NOOP("Modes", "Accept edits")),
    ("plan", QT_TRANSLATE_NOOP("Modes", "Plan")),
    ("bypassPermissions", QT_TRANSLATE_NOOP("Modes", "Bypass")),
    ("dontAsk", QT_TRANSLATE_NOOP("Modes", "Don't ask")),
]


def mode_label(label: str) -> str:
    return QCoreApplication.translate("Modes", label)


def bypass_badge_text() -> str:
    return QCoreApplication.translate("Modes", "Bypass — nothing asks")


def confirm_bypass(parent: QWidget | None, done: Callable[[bool], None]) -> QMessageBox:
    """The one question before bypassPermissions is entered (toolbar, menu, Settings, command line).
    Opened with ``open()``; ``done(True)`` only for the explicit "Turn on" button — Esc, Cancel and
    closing the box keep the old mode. Cancel is the default button."""
    tr = lambda text: QCoreApplication.translate("Modes", text)  # noqa: E731
    box = QMessageBox(parent)
    box.setObjectName("bypassConfirm")
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle(tr("Turn on Bypass permissions?"))
    box.setText(tr("Bypass permissions: every tool runs without asking — edits, commands, reads outside the "
                   "folder. Deny rules still apply. Turn it on?"))
    yes = box.addButton(tr("Turn on &Bypass"), QMessageBox.ButtonRole.AcceptRole)
    yes.setObjectName("bypassYes")
    no = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(no)
    box.setEscapeButton(no)
    box.yes_button, box.no_button = yes, no  # type: ignore[attr-defined]
    box.finished.connect(lambda _r: done(box.clickedButton() is yes))
    box.open()
    return box
