"""The phone page and the window answer the same question (issue 26, "Done means": the desktop dialog for the same
question closes). A real MainWindow on the fake Anthropic server; the model asks for one Edit of five hunks; the
window's per-hunk permission dialog opens. Settings → "Answer from my phone" starts the page on the window's host
inbox; a headless chromium at a phone-sized viewport pairs through the QR's URL, the window's focus-safe pairing
dialog shows the verification code the page shows and is clicked; on the phone one hunk is rejected and the rest
allowed. The file on disk ends exactly as answered, the model is told which hunk was not written, the window's
dialog closes and the host's inbox is empty. Every Selenium call runs in ``asyncio.to_thread`` so the qasync loop —
the host, the phone server, the window — keeps running."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from PySide6.QtCore import Qt

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.host.remote.browser import missing, phone_browser
from tests.host.remote.browser import wait as _poll  # on a worker thread
from tests.ui.flow import ORIGINAL, READ, changed_text, open_and_send, result_text, tool_results, wait_dialog, wait_for

pytestmark = pytest.mark.skipif(bool(missing()), reason=f"needs {' '.join(missing())}")



def test_phone_answers_the_window_question_and_the_window_dialog_closes(qtbot, qloop, fake, make_window, workdir,
                                                                       tmp_path, keep_app_running):
    from selenium.webdriver.common.by import By

    from desktop_agent.ui.dialogs.phone import PairingConfirmDialog

    path = workdir / "lines.txt"
    path.write_text(ORIGINAL)
    edit = {"file_path": str(path), "old_string": ORIGINAL[ORIGINAL.index("line 5\n"):ORIGINAL.index("line 54")],
            "new_string": changed_text()[changed_text().index("line 5 "):changed_text().index("line 54")]}
    fake.script([READ(path), reply(text("Five changes."), tool_use("Edit", edit, id="toolu_e")),
                 reply(text("Understood."))])
    win = make_window()
    browser: list[Any] = []

    async def scenario() -> None:
        task = await open_and_send(qtbot, win, workdir, "Change five lines")
        dlg = await wait_dialog(win, 20)
        assert dlg.per_hunk and len(dlg.diff_view.hunks) == 5
        inbox = win.controller.client.host.inbox
        (question,) = inbox.pending()
        assert question.session_id == win.controller.session.session_id

        settings = win.show_settings()
        settings.phone.switch.setChecked(True)
        server = await wait_for(lambda: getattr(win, "phone_server", None), 15, "the phone page")
        assert server.inbox is inbox  # the page is a client of the window's own host inbox
        url = server.pairing_url()
        driver = await asyncio.to_thread(phone_browser, server.ident.spki_sha256_b64, tmp_path / "profile",
                                       address=server.host)
        browser.append(driver)

        def start_pairing() -> None:
            driver.get(url)
            _poll(lambda: driver.find_element(By.ID, "pair-button").is_displayed(), what="the pair view")
            name = driver.find_element(By.ID, "device-name")
            name.clear()
            name.send_keys("Pixel 8")
            driver.find_element(By.ID, "pair-button").click()

        await asyncio.to_thread(start_pairing)
        code = await asyncio.to_thread(_poll, lambda: driver.find_element(By.ID, "verify-code").text, 10,
                                       "the verification code")
        confirm = await wait_for(lambda: next((d for d in win.findChildren(PairingConfirmDialog) if d.isVisible()),
                                              None), 10, "the window's pairing dialog")
        assert confirm.code.text() == code  # the same code on both sides
        assert win.controller.current_dialog is dlg  # pairing does not take the question's place
        await asyncio.sleep(0.05)
        qtbot.mouseClick(confirm.yes_button, Qt.MouseButton.LeftButton)
        await asyncio.to_thread(_poll, lambda: driver.find_element(By.TAG_NAME, "body").get_attribute("data-live")
                                == "1", 10, "the live inbox")

        item_css = f"li.question[data-request-id='{question.request_id}']"

        def answer_on_phone() -> str:
            item = _poll(lambda: driver.find_element(By.CSS_SELECTOR, item_css), 5, "the question on the page")
            item.click()
            hunks = _poll(lambda: driver.find_elements(By.CSS_SELECTOR, "#q-hunks section.hunk"), 5, "the hunks")
            assert len(hunks) == 5
            toggle = driver.find_element(By.CSS_SELECTOR, "button.hunk-toggle[data-hunk='1']")
            toggle.click()  # the second hunk (line 17) rejected
            allow = driver.find_element(By.ID, "allow")
            _poll(allow.is_enabled, 3, "Allow to take taps")
            label = allow.text
            allow.click()
            return label

        assert await asyncio.to_thread(answer_on_phone) == "Allow 4 of 5 hunks"
        await asyncio.wait_for(task, 20)
        await wait_for(lambda: win.controller.current_dialog is None, 10, "the window's dialog to close")
        assert not dlg.isVisible()
        assert inbox.pending() == []
        assert not await asyncio.to_thread(lambda: driver.find_elements(By.CSS_SELECTOR, item_css))
        settings.phone.switch.setChecked(False)
        await wait_for(lambda: getattr(win, "phone_server", None) is None, 10, "the page to stop")
        settings.close()

    try:
        qloop.run_until_complete(scenario())
    finally:
        for driver in browser:
            driver.quit()
    assert path.read_text() == changed_text(keep=(5, 29, 41, 53))  # exactly as answered on the phone
    msg = result_text(tool_results(fake, 2)[0])
    assert "The user rejected 1 of 5 hunks (lines 14\u201320)" in msg and "NOT written" in msg
    fake.assert_done()
