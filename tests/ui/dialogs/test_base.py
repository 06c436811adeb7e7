"""AwaitableDialog[T] (ui/dialogs/base.py): the modal is the awaitable — one answer, typed, exactly once;
closing is its "no"; it never answers on a timeout; a withdrawn question cancels the awaiting caller."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton, QVBoxLayout, QWidget

from desktop_agent.ui.dialogs.base import AwaitableDialog


class Choice(AwaitableDialog[str]):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        self.yes = QPushButton("yes")
        self.yes.clicked.connect(lambda: self._resolve("yes", True))
        layout.addWidget(self.yes)

    def closed_value(self) -> str:
        return "no"



def test_ask_returns_the_answer_once_and_decided_says_it_once(qtbot, qloop, parent):
    dlg = Choice(parent)
    said: list[str] = []
    dlg.decided.connect(said.append)

    async def scenario() -> str:
        task = asyncio.ensure_future(dlg.ask())
        await asyncio.sleep(0.05)
        assert dlg.isVisible() and dlg.isModal() and not task.done()
        qtbot.mouseClick(dlg.yes, Qt.MouseButton.LeftButton)
        dlg.reject()  # a later close changes nothing
        dlg._resolve("again")
        return await asyncio.wait_for(task, 2)

    assert qloop.run_until_complete(scenario()) == "yes"
    assert said == ["yes"] and dlg.answered and not dlg.isVisible()
    assert dlg.answer().result() == "yes"  # the Future stays the answer


@pytest.mark.parametrize("close", ["reject", "escape", "close"])
def test_closing_answers_its_no(qtbot, qloop, parent, close):
    dlg = Choice(parent)

    async def scenario() -> str:
        future = dlg.answer()
        dlg.open()
        await asyncio.sleep(0.05)
        if close == "reject":
            dlg.reject()
        elif close == "escape":
            qtbot.keyClick(dlg, Qt.Key.Key_Escape)
        else:
            dlg.close()
        return await asyncio.wait_for(future, 2)

    assert qloop.run_until_complete(scenario()) == "no"


def test_it_never_answers_on_a_timeout(qtbot, qloop, parent):
    dlg = Choice(parent)

    async def scenario() -> bool:
        task = asyncio.ensure_future(dlg.ask())
        done, _ = await asyncio.wait({task}, timeout=0.5)
        dlg.close_silently()
        await asyncio.sleep(0)
        return bool(done)

    assert qloop.run_until_complete(scenario()) is False


def test_a_withdrawn_question_cancels_the_caller_and_answers_nothing(qtbot, qloop, parent):
    dlg = Choice(parent)
    said: list[str] = []
    dlg.decided.connect(said.append)

    async def scenario() -> asyncio.Future[str]:
        future = dlg.answer()
        dlg.open()
        await asyncio.sleep(0.05)
        dlg.close_silently()
        dlg.reject()
        await asyncio.sleep(0)
        return future

    future = qloop.run_until_complete(scenario())
    assert future.cancelled() and said == [] and not dlg.isVisible()


def test_an_answer_given_before_anyone_awaits_is_kept(qtbot, qloop, parent):
    dlg = Choice(parent)
    dlg.open()
    dlg.reject()

    async def scenario() -> str:
        return await dlg.answer()

    assert qloop.run_until_complete(scenario()) == "no"


def test_window_modal_over_its_parent(qtbot, parent):
    dlg = Choice(parent)
    assert dlg.isModal() and dlg.windowModality() == Qt.WindowModality.WindowModal
    alone = Choice()
    qtbot.addWidget(alone)
    assert alone.windowModality() == Qt.WindowModality.ApplicationModal
