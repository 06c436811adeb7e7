"""How the window names the permission modes (``MODES``, translated where shown; the Bypass and Don't ask badges of
the toolbar and the window title). The question before bypassPermissions is entered is ``ui.dialogs.bypass``
(``confirm_bypass``); the modes themselves and their rules are ``ui.modes`` (no Qt).
"""

from __future__ import annotations

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication

# Labels are marked for lupdate with QT_TRANSLATE_NOOP and translated where shown (mode_label()). The marker
# returns its text unchanged, typed ``object``: str() gives it back its type.
MODES: list[tuple[str, str]] = [
    ("default", str(QT_TRANSLATE_NOOP("Modes", "Default"))),
    ("acceptEdits", str(QT_TRANSLATE_NOOP("Modes", "Accept edits"))),
    ("plan", str(QT_TRANSLATE_NOOP("Modes", "Plan"))),
    ("bypassPermissions", str(QT_TRANSLATE_NOOP("Modes", "Bypass"))),
    ("dontAsk", str(QT_TRANSLATE_NOOP("Modes", "Don't ask — deny anything not allowed"))),
]


def mode_label(label: str) -> str:
    return QCoreApplication.translate("Modes", label)


def bypass_badge_text() -> str:
    return QCoreApplication.translate("Modes", "Bypass — nothing asks")


def dont_ask_badge_text() -> str:
    return QCoreApplication.translate("Modes", "Don't ask — denies anything not allowed")
