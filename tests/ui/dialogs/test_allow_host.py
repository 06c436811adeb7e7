"""The "Allow this host for the session" confirmation (ui/dialogs/allow_host.py, issue 27): it names the host,
Cancel has the focus, no key answers yes, a click before the safety delay does nothing, Escape is no."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from desktop_agent.ui.dialogs.allow_host import AllowHostDialog


@pytest.fixture
def box(qtbot, parent):
    dlg = AllowHostDialog("evil.example", parent)
    dlg.safety_delay_ms = 500
    answers: list[bool] = []
    dlg.decided.connect(answers.append)
    dlg.open()
    qtbot.waitUntil(dlg.isActiveWindow)
    dlg.answers = answers  # type: ignore[attr-defined]
    return dlg


def test_allow_host_names_the_host_and_no_key_answers_yes(qtbot, box):
    assert "evil.example" in box.text() and box.windowTitle() == "Allow this host for the session?"
    assert box.focusWidget() is box.no_button and "&" not in box.yes_button.text()
    qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)  # before the delay: nothing
    assert box.answers == []
    qtbot.waitUntil(box.is_ready, timeout=3000)
    box.yes_button.setFocus()
    for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space, Qt.Key.Key_A):
        qtbot.keyClick(box, key)
    assert True not in box.answers
    qtbot.waitUntil(box.is_ready, timeout=3000)
    qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)
    assert box.answers == [True]


def test_escape_is_no(qtbot, box):
    qtbot.waitUntil(box.is_ready, timeout=3000)
    qtbot.keyClick(box, Qt.Key.Key_Escape)
    assert box.answers == [False]
