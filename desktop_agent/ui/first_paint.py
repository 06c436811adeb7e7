"""After the first paint: ``after_first_paint(widgets, callback)`` calls ``callback`` once, on the loop, after the
first of ``widgets`` has painted. The window defers what the person does not see yet (the sandbox probe, which
builds the engine client and imports the sandbox) behind its first frame; ``ui.main`` times that frame for the
benchmarks (``DESKTOP_AGENT_EXIT_AFTER_PAINT``)."""

from __future__ import annotations

from typing import Callable, Iterable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget


class FirstPaint(QObject):
    """An event filter that calls ``on_paint`` (queued: after the paint returns) at the first Paint it sees."""

    def __init__(self, on_paint: Callable[[], object], parent: QObject | None = None):
        super().__init__(parent)
        self.on_paint = on_paint
        self.done = False

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802
        if not self.done and event.type() == QEvent.Type.Paint:
            self.done = True
            QTimer.singleShot(0, self.on_paint)
        return False


def after_first_paint(widgets: Iterable[QWidget], callback: Callable[[], object]) -> FirstPaint:
    """Watch ``widgets`` (the window and the widget that covers most of it); ``callback`` runs once."""
    widgets = list(widgets)

    def fire() -> None:
        for w in widgets:
            w.removeEventFilter(watch)
        callback()

    watch = FirstPaint(fire, widgets[0] if widgets else None)
    for w in widgets:
        w.installEventFilter(watch)
    return watch


__all__ = ["FirstPaint", "after_first_paint"]
