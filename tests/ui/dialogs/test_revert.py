"""The revert confirmation (ui/dialogs/revert.py) under the shared second line (``SafetyDelay``, issue 21): it
reverts only after it has been the active window for the delay with no key and no click — typing straight through,
Return, Space and its mnemonic never revert; a click on Revert after a quiet delay does."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QWidget

from desktop_agent.ui.dialogs.revert import RevertDialog


def _open(qtbot, parent):
    dlg = RevertDialog("a.py", 1, 2, False, parent)
    dlg.safety_delay_ms = 700
    answers: list[bool] = []
    dlg.decided.connect(answers.append)
    dlg.open()
    qtbot.waitUntil(dlg.isActiveWindow)
    return dlg, answers


def test_typing_through_never_reverts(qtbot, parent):
    dlg, answers = _open(qtbot, parent)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.5:
        for key in (Qt.Key.Key_R, Qt.Key.Key_Return, Qt.Key.Key_Space):
            qtbot.keyClick(dlg, key)
            qtbot.keyClick(dlg.revert_button, key)
        qtbot.keyClick(dlg, Qt.Key.Key_R, Qt.KeyboardModifier.AltModifier)  # its mnemonic
        qtbot.mouseClick(dlg.revert_button, Qt.MouseButton.LeftButton)
        assert not dlg.is_ready()
        qtbot.wait(200)
    assert answers == [] and dlg.isVisible()
    qtbot.waitUntil(dlg.is_ready, timeout=3000)
    qtbot.mouseClick(dlg.revert_button, Qt.MouseButton.LeftButton)
    assert answers == [True]


def test_deactivated_it_starts_over(qtbot, parent):
    other = QWidget()
    qtbot.addWidget(other)
    other.show()
    dlg, answers = _open(qtbot, parent)
    qtbot.waitUntil(dlg.is_ready, timeout=3000)
    other.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is other)
    assert not dlg.is_ready()
    dlg.activateWindow()
    qtbot.waitUntil(dlg.isActiveWindow)
    qtbot.mouseClick(dlg.revert_button, Qt.MouseButton.LeftButton)  # just activated: the wait runs again
    assert answers == []
    qtbot.waitUntil(dlg.is_ready, timeout=3000)
    qtbot.keyClick(dlg, Qt.Key.Key_Escape)
    assert answers == [False]
