"""Settings → "Answer from my phone" (ui/dialogs/phone.py) against a real phone page server on the window's qasync
loop: the QR, the focus-safe confirmation with the verification code the phone computed, the device listed, Revoke
refusing it at once."""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt

from desktop_agent.host.inbox import Inbox
from desktop_agent.host.remote.server import RemoteServer
from desktop_agent.host.remote.view import question_view
from desktop_agent.ui.dialogs.phone import PairingConfirmDialog, PhoneSection, confirm_pairing
from tests.host.questions import bash_request
from tests.host.remote.phone import Phone


@pytest.fixture
def box(qtbot, parent):
    dlg = PairingConfirmDialog("Pixel 8", "123 456", "192.0.2.7", parent)
    dlg.safety_delay_ms = 500
    answers: list[bool] = []
    dlg.decided.connect(answers.append)
    dlg.open()
    qtbot.waitUntil(dlg.isActiveWindow)
    dlg.answers = answers  # type: ignore[attr-defined]
    return dlg


def test_the_confirmation_shows_the_code_and_only_a_click_after_the_delay_pairs(qtbot, box):
    assert box.code.text() == "123 456" and "Pixel 8" in box.message.text()
    assert not box.yes_button.isDefault() and box.focusWidget() is box.no_button
    for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space, Qt.Key.Key_P):
        qtbot.keyClick(box, key)
        qtbot.keyClick(box.yes_button, key)
    qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)  # before the delay: nothing
    assert box.answers == [] and box.isVisible()
    qtbot.waitUntil(box.is_ready, timeout=3000)
    for key in (Qt.Key.Key_Return, Qt.Key.Key_Space):
        qtbot.keyClick(box, key)
    assert box.answers == []
    qtbot.waitUntil(box.is_ready, timeout=3000)
    qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)
    assert box.answers == [True]


@pytest.mark.parametrize("way", ["escape", "refuse", "close"])
def test_every_other_way_out_refuses(qtbot, box, way):
    qtbot.waitUntil(box.is_ready, timeout=3000)
    if way == "escape":
        qtbot.keyClick(box, Qt.Key.Key_Escape)
    elif way == "refuse":
        qtbot.mouseClick(box.no_button, Qt.MouseButton.LeftButton)
    else:
        box.close()
    assert box.answers == [False] and not box.isVisible()


def test_section_pairs_lists_and_revokes_with_a_real_server(qtbot, parent, qloop, tmp_path):
    from desktop_agent.ui.dialogs.permission import PermissionDialog

    inbox = Inbox()
    server = RemoteServer(inbox, tmp_path / "state", host="127.0.0.1", confirm=confirm_pairing(parent))
    qloop.run_until_complete(server.start())
    old_delay = PermissionDialog.safety_delay_ms
    PermissionDialog.safety_delay_ms = 0
    try:
        section = PhoneSection(server, enabled=True, parent=parent)
        section.show()
        assert section.pair_button.isEnabled()
        section.show_pairing()
        assert section.qr.isVisible() and not section.qr.pixmap().isNull() and section.qr.pixmap().width() > 100
        assert "5 minutes" in section.qr_hint.text()

        async def pair_and_click() -> Phone:
            phone = Phone(server, name="Pixel 8")
            await phone.__aenter__()
            url = server.pairing_url()
            pairing = asyncio.ensure_future(phone.pair(url))
            dialog = None
            for _ in range(500):
                dialog = parent.findChild(PairingConfirmDialog)
                if dialog is not None and dialog.isVisible():
                    break
                await asyncio.sleep(0.01)
            assert dialog is not None
            await asyncio.sleep(0.05)
            assert dialog.code.text() == phone.verification or not phone.verification
            qtbot.mouseClick(dialog.yes_button, Qt.MouseButton.LeftButton)
            await asyncio.wait_for(pairing, 10)
            assert dialog.code.text() == phone.verification  # the code the phone computed itself
            return phone

        phone = qloop.run_until_complete(pair_and_click())
        section.refresh()
        assert list(section.revoke_buttons) == [phone.device_id]
        (name,) = [w for w in section.devices_box.findChildren(type(section.qr)) if w.objectName() == "deviceName"]
        assert name.text() == "Pixel 8"
        qtbot.mouseClick(section.revoke_buttons[phone.device_id], Qt.MouseButton.LeftButton)

        async def after() -> tuple[int, dict]:
            for _ in range(200):
                if not server.list_devices():
                    break
                await asyncio.sleep(0.01)
            q = inbox.ask("s", bash_request("ls"))
            out = await phone.answer(question_view(q), "allow")
            await phone.__aexit__()
            return out

        status, _ = qloop.run_until_complete(after())
        assert status == 401 and server.list_devices() == []
        qtbot.waitUntil(lambda: not section.revoke_buttons, timeout=2000)
    finally:
        PermissionDialog.safety_delay_ms = old_delay
        qloop.run_until_complete(server.stop())
