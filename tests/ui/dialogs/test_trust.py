"""The trust question (ui/dialogs/trust.py): an AwaitableDialog of "trust" / "untrusted" / "cancel"."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt

from desktop_agent.ui.dialogs.trust import TrustDialog



@pytest.mark.parametrize("how, expected", [("trust", "trust"), ("untrusted", "untrusted"), ("cancel", "cancel"),
                                           ("escape", "cancel"), ("close", "cancel"), ("enter", "trust")])
def test_each_way_out_answers_once(qtbot, qloop, parent, how, expected):
    dlg = TrustDialog("~/proj", parent)
    said: list[str] = []
    dlg.decided.connect(said.append)

    async def scenario() -> str:
        task = asyncio.ensure_future(dlg.ask())
        await asyncio.sleep(0.05)
        assert dlg.isVisible() and dlg.windowModality() == Qt.WindowModality.WindowModal
        if how in ("trust", "untrusted", "cancel"):
            button = {"trust": dlg.trust_button, "untrusted": dlg.untrusted_button, "cancel": dlg.cancel_button}[how]
            qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
        elif how == "escape":
            qtbot.keyClick(dlg, Qt.Key.Key_Escape)
        elif how == "enter":
            qtbot.keyClick(dlg, Qt.Key.Key_Return)  # Trust folder is the default button, as it was
        else:
            dlg.close()
        return await asyncio.wait_for(task, 2)

    assert qloop.run_until_complete(scenario()) == expected
    assert said == [expected] and not dlg.isVisible()


def test_it_names_the_folder_and_what_trusting_means(qtbot):
    dlg = TrustDialog("~/a<b>")
    qtbot.addWidget(dlg)
    assert dlg.windowTitle() == "Trust this folder?"
    assert "~/a&lt;b&gt;" in dlg.question.text() and "settings" in dlg.details.text()
    assert ".claude/settings.json" not in dlg.details.text()  # no file is named that the caller did not find
    assert "Trust" in dlg.trust_button.text() and dlg.trust_button.isDefault()
