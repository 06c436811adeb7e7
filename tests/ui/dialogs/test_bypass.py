"""The Bypass confirmation (ui/dialogs/bypass.py), alone, as an attacker types at it (issue 21): it replaced a
``QMessageBox`` whose "Turn on &Bypass" a bare ``b`` clicked. No mnemonic, Cancel has the focus, Enter and Space
never turn Bypass on, keys typed before it is ready go nowhere; only a click on the button after the safety delay
answers True."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from desktop_agent.ui.dialogs.bypass import BypassDialog

ATTACK_KEYS = (Qt.Key.Key_B, Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter)


@pytest.fixture
def box(qtbot, parent):
    dlg = BypassDialog(parent)
    dlg.safety_delay_ms = 700
    answers: list[bool] = []
    dlg.decided.connect(answers.append)
    dlg.open()
    qtbot.waitUntil(dlg.isActiveWindow)
    dlg.answers = answers  # type: ignore[attr-defined]
    return dlg


def _attack(qtbot, dlg):
    for key in ATTACK_KEYS:
        for target in (dlg, dlg.no_button, dlg.yes_button, dlg.message):
            qtbot.keyClick(target, key)
            qtbot.keyClick(target, key, Qt.KeyboardModifier.AltModifier)


def test_it_says_what_bypass_means_with_no_mnemonic_and_cancel_focused(box):
    assert box.windowTitle() == "Turn on Bypass permissions?"
    assert "every tool runs without asking" in box.text() and "Deny rules still apply" in box.text()
    assert "&" not in box.yes_button.text() and "&" not in box.no_button.text()
    assert box.focusWidget() is box.no_button
    assert not box.yes_button.isDefault() and not box.yes_button.autoDefault() and not box.no_button.isDefault()


def test_b_space_and_return_never_turn_it_on_before_or_after_the_delay(qtbot, box):
    _attack(qtbot, box)  # before the delay
    qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)
    assert box.answers == [] and box.isVisible()
    for focus in (box.yes_button, box.message, box.no_button):  # after it, with the focus anywhere
        qtbot.waitUntil(box.is_ready, timeout=3000)
        focus.setFocus()
        _attack(qtbot, box)
        assert True not in box.answers
    assert box.answers in ([], [False])  # Space on the focused Cancel may cancel; nothing turned it on
    if box.answers:
        return
    qtbot.waitUntil(box.is_ready, timeout=3000)
    qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)
    assert box.answers == [True] and not box.isVisible()


def test_only_a_click_after_the_delay_answers_true(qtbot, box):
    qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)  # within the delay
    assert box.answers == []
    qtbot.waitUntil(box.is_ready, timeout=3000)
    qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)
    assert box.answers == [True]


@pytest.mark.parametrize("way", ["escape", "cancel", "close"])
def test_every_other_way_out_keeps_bypass_off(qtbot, box, way):
    qtbot.waitUntil(box.is_ready, timeout=3000)
    if way == "escape":
        qtbot.keyClick(box, Qt.Key.Key_Escape)
    elif way == "cancel":
        qtbot.mouseClick(box.no_button, Qt.MouseButton.LeftButton)
    else:
        box.close()
    assert box.answers == [False] and not box.isVisible()


def test_it_ships_in_chinese(qtbot, qapp, parent):
    from PySide6.QtCore import QTranslator

    from desktop_agent.resources import translation_path
    from desktop_agent.ui.mode_labels import MODES, dont_ask_badge_text, mode_label

    translator = QTranslator()
    assert translator.load(str(translation_path("zh_CN")))
    qapp.installTranslator(translator)
    try:
        dlg = BypassDialog(parent)
        assert dlg.windowTitle() == "开启“绕过权限”？" and dlg.yes_button.text() == "开启绕过"
        assert "拒绝规则仍然生效" in dlg.text() and dlg.no_button.text() == "取消  Esc"
        assert mode_label(dict(MODES)["dontAsk"]) == "不询问——拒绝一切未被允许的操作"
        assert dont_ask_badge_text() == "不询问——拒绝一切未被允许的操作"
    finally:
        qapp.removeTranslator(translator)
