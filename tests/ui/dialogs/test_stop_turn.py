"""The "Stop the running turn?" question (ui/dialogs/stop_turn.py): an AwaitableDialog[bool] whose every way out
but a click on Stop keeps the turn running — keys typed into it (Enter, Space, letters, Alt+S) cannot stop it."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt

from desktop_agent.ui.dialogs.stop_turn import StopTurnDialog


def _dialog(parent):
    return StopTurnDialog("Fix the login bug", "~/proj", "running Bash", "a new session starts", parent)


@pytest.mark.parametrize("how, expected", [
    ("stop", True), ("cancel", False), ("escape", False), ("close", False), ("enter", False), ("space", False),
    ("letters", None), ("alt-s", None)])
def test_only_a_click_on_stop_stops(qtbot, qloop, parent, how, expected):
    dlg = _dialog(parent)
    said: list[bool] = []
    dlg.decided.connect(said.append)

    async def scenario():
        task = asyncio.ensure_future(dlg.ask())
        await asyncio.sleep(0.05)
        assert dlg.isVisible() and dlg.windowModality() == Qt.WindowModality.WindowModal
        assert dlg.focusWidget() is dlg.cancel_button and dlg.cancel_button.isDefault()
        if how == "stop":
            qtbot.mouseClick(dlg.stop_button, Qt.MouseButton.LeftButton)
        elif how == "cancel":
            qtbot.mouseClick(dlg.cancel_button, Qt.MouseButton.LeftButton)
        elif how == "escape":
            qtbot.keyClick(dlg, Qt.Key.Key_Escape)
        elif how == "enter":
            qtbot.keyClick(dlg.focusWidget(), Qt.Key.Key_Return)
        elif how == "space":
            qtbot.keyClick(dlg.focusWidget(), Qt.Key.Key_Space)
        elif how == "letters":
            qtbot.keyClicks(dlg.focusWidget(), "stopturnST")  # (a space would press the focused Cancel)
        elif how == "alt-s":
            qtbot.keyClick(dlg.focusWidget(), Qt.Key.Key_S, Qt.KeyboardModifier.AltModifier)
        else:
            dlg.close()
        await asyncio.sleep(0.05)
        if expected is None:
            assert dlg.isVisible() and not task.done()
            dlg.close_silently()
            return None
        return await asyncio.wait_for(task, 2)

    assert qloop.run_until_complete(scenario()) == expected
    assert said == ([] if expected is None else [expected]) and not dlg.isVisible()


def test_it_names_the_session_what_it_does_and_what_follows(qtbot, parent):
    dlg = _dialog(parent)
    text = dlg.message.text()
    assert dlg.windowTitle() == "Stop the running turn?"
    for part in ("Fix the login bug", "~/proj", "Right now it is running Bash.", "a new session starts",
                 "the conversation so far is kept", "Cancel keeps it running"):
        assert part in text
    assert "&" not in dlg.stop_button.text()  # no mnemonic
    assert StopTurnDialog("<b>x</b>", "~/p", "thinking", "y", parent).message.text().count("&lt;b&gt;") == 1
