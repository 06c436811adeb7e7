"""The window's look: the shipped light/dark style sheet over the system (or a forced) palette (``apply_theme``),
re-applied when the system palette flips (``ThemeWatcher``)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

EXTRA_QSS = """
QLabel#paneTitle, QLabel#liveTitle, QLabel#inboxTitle { font-weight: 600; }
QPlainTextEdit#promptEdit { padding: 4px 8px; }
QTextBrowser#changesView { border: none; background: palette(base); }
QScrollArea#conversation, QWidget#conversationColumn { background: palette(base); border: none; }
QListWidget#sessionList, QListWidget#liveSessions, QListWidget#inboxList { background: palette(window); }
QListWidget#sessionList::item, QListWidget#liveSessions::item, QListWidget#inboxList::item { padding: 6px 8px; }
QToolBar#mainToolbar { spacing: 8px; padding: 4px 8px; border: none; }
QLabel#errorText { color: #cf222e; }
"""


def is_dark_palette(app: QApplication) -> bool:
    return app.palette().color(QPalette.ColorRole.Window).lightness() < 128


def apply_theme(app: QApplication, theme: str = "system") -> None:
    """The shipped light/dark style sheet on top of the system palette (or a forced palette)."""
    dark = is_dark_palette(app) if theme not in ("light", "dark") else theme == "dark"
    name = "dark" if dark else "light"
    if theme in ("light", "dark") and dark != is_dark_palette(app):
        try:
            from PySide6.QtGui import QColor

            from desktop_agent.resources import theme_palette

            pal_colors = theme_palette(name)
            pal = QPalette()
            roles = {"window": QPalette.ColorRole.Window, "window_text": QPalette.ColorRole.WindowText,
                     "base": QPalette.ColorRole.Base, "alternate_base": QPalette.ColorRole.AlternateBase,
                     "text": QPalette.ColorRole.Text, "button": QPalette.ColorRole.Button,
                     "button_text": QPalette.ColorRole.ButtonText, "highlight": QPalette.ColorRole.Highlight,
                     "highlighted_text": QPalette.ColorRole.HighlightedText, "link": QPalette.ColorRole.Link,
                     "tool_tip_base": QPalette.ColorRole.ToolTipBase, "tool_tip_text": QPalette.ColorRole.ToolTipText,
                     "placeholder_text": QPalette.ColorRole.PlaceholderText}
            for key, role in roles.items():
                if key in pal_colors:
                    pal.setColor(role, QColor(pal_colors[key]))
            app.setPalette(pal)
        except Exception:
            pass
    qss = ""
    try:
        from desktop_agent.resources import theme_sheet

        qss = theme_sheet(name)
    except Exception:
        pass
    app.setStyleSheet(qss + EXTRA_QSS)


class ThemeWatcher(QObject):
    """Re-applies the light/dark style sheet when the system palette flips while the app runs."""

    def __init__(self, app: QApplication, theme: str):
        super().__init__(app)
        self.app, self.theme, self.dark = app, theme, is_dark_palette(app)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.ApplicationPaletteChange and self.theme == "system":
            dark = is_dark_palette(self.app)
            if dark != self.dark:
                self.dark = dark
                apply_theme(self.app, "system")
        return False
