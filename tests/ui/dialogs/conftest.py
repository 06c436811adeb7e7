"""Fixtures shared by the dialog tests."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QWidget


@pytest.fixture
def parent(qtbot):
    """A shown window for the dialog (closing the app's last window would quit the loop)."""
    win = QWidget()
    qtbot.addWidget(win)
    win.show()
    return win
