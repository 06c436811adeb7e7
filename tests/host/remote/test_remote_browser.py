"""The phone page in a real browser (headless chromium at a phone-sized viewport): pair with the QR's URL, the
desktop confirms the verification code the page shows, a question appears within a second, the whole patch is
shown highlighted, one hunk rejected and the rest allowed — the Edit tool writes exactly that. Also: the page runs
under its strict CSP with no violation, and a question answered elsewhere vanishes from the page."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.core.permission import PermissionReply
from desktop_agent.host.inbox import Inbox
from desktop_agent.host.remote.server import PairingPrompt, RemoteServer
from tests.host.questions import FIVE_HUNKS_OLD, bash_request, five_hunk_edit, start_edit
from tests.host.remote.browser import LoopThread, missing, phone_browser, wait

pytestmark = pytest.mark.skipif(bool(missing()), reason=f"needs {' '.join(missing())}")




class Desktop:
    """The desktop's side: an Inbox, the server, and a confirm that waits for the test to check the code."""

    def __init__(self, tmp_path: Path) -> None:
        self.loop = LoopThread()
        self.inbox = Inbox()
        self.prompts: list[PairingPrompt] = []
        self.answer_confirm: asyncio.Future[bool] | None = None

        async def confirm(prompt: PairingPrompt) -> bool:
            self.prompts.append(prompt)
            self.answer_confirm = asyncio.get_running_loop().create_future()
            return await self.answer_confirm

        async def make() -> RemoteServer:
            server = RemoteServer(self.inbox, tmp_path / "state", host="127.0.0.1", confirm=confirm)
            await server.start()
            return server

        self.server: RemoteServer = self.loop.run(make())

    def confirm(self, yes: bool) -> None:
        fut = wait(lambda: self.answer_confirm, what="the confirm dialog")
        self.loop.loop.call_soon_threadsafe(fut.set_result, yes)

    def close(self) -> None:
        self.loop.run(self.server.stop())
        self.loop.close()


@pytest.fixture
def desktop(tmp_path: Path):
    d = Desktop(tmp_path)
    yield d
    d.close()


@pytest.fixture
def browser(desktop: Desktop, tmp_path: Path):
    driver = phone_browser(desktop.server.ident.spki_sha256_b64, tmp_path / "profile")
    yield driver
    driver.quit()


def pair(desktop: Desktop, browser: Any) -> str:
    from selenium.webdriver.common.by import By

    url = desktop.server.pairing_url()
    browser.get(url)
    assert "#pair=" not in browser.current_url  # the code left the address bar at once
    wait(lambda: browser.find_element(By.ID, "pair-button").is_displayed(), what="the pair view")
    name = browser.find_element(By.ID, "device-name")
    name.clear()
    name.send_keys("Pixel 8")
    browser.find_element(By.ID, "pair-button").click()
    code = wait(lambda: browser.find_element(By.ID, "verify-code").text, what="the verification code")
    prompt = wait(lambda: desktop.prompts and desktop.prompts[-1], what="the desktop's prompt")
    assert prompt.device_name == "Pixel 8" and prompt.verification == code  # the same code on both sides
    desktop.confirm(True)
    wait(lambda: browser.find_element(By.TAG_NAME, "body").get_attribute("data-live") == "1", what="live inbox")
    return code


KEY_PROBE = """
const done = arguments[arguments.length - 1];
const open = indexedDB.open("desktop-agent", 1);
open.onsuccess = () => {
  const get = open.result.transaction("keys", "readonly").objectStore("keys").get("device");
  get.onsuccess = async () => {
    const key = get.result;
    if (!key) { done("none"); return; }
    try { await crypto.subtle.exportKey("raw", key); done("exported"); }
    catch (e) { done("kept:" + key.type + ":" + key.extractable + ":" + key.usages.join(",")); }
  };
};
open.onerror = () => done("error");
"""


def csp_violations(browser: Any) -> list[str]:
    return [e["message"] for e in browser.get_log("browser")
            if "Content Security Policy" in e["message"] or "Refused to" in e["message"]]


def test_pair_see_the_patch_reject_one_hunk_allow_the_rest(desktop: Desktop, browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    pair(desktop, browser)
    # the device key never leaves the browser's key store: not in localStorage, not exportable by a script
    assert browser.execute_async_script(KEY_PROBE) == "kept:secret:false:sign"
    assert "key" not in (browser.execute_script("return localStorage.getItem('desktop-agent-device')") or "")
    work = tmp_path / "work"
    work.mkdir()
    target = work / "numbers.py"
    target.write_text(FIVE_HUNKS_OLD)
    old, new = five_hunk_edit()

    asked_at = time.monotonic()
    task, q = desktop.loop.run(start_edit(work, desktop.inbox, target, old, new))
    item = wait(lambda: browser.find_element(By.CSS_SELECTOR, f"li.question[data-request-id='{q.request_id}']"),
                what="the question on the page")
    appeared = time.monotonic() - asked_at
    assert appeared <= 1.0, appeared
    assert "numbers.py" in item.text and "+5" in item.text and "\u22125" in item.text
    item.click()
    hunks = wait(lambda: browser.find_elements(By.CSS_SELECTOR, "#q-hunks section.hunk"), what="the hunks")
    assert len(hunks) == 5
    patch_text = browser.find_element(By.ID, "q-hunks").text
    for n in (6, 18, 30, 42, 54):  # the whole patch, every change
        assert f"LINE {n} changed" in patch_text and f"line {n}" in patch_text
    # highlighted: Pygments token spans inside the code lines
    assert browser.find_elements(By.CSS_SELECTOR, "#q-hunks .line .code span")
    assert "always" not in browser.find_element(By.ID, "question-view").text.lower()

    toggle = browser.find_element(By.CSS_SELECTOR, "button.hunk-toggle[data-hunk='1']")
    toggle.click()
    assert "Rejected" in toggle.text
    allow = browser.find_element(By.ID, "allow")
    wait(allow.is_enabled, 3, "Allow to take taps")  # armed a moment after the question opened
    assert allow.text == "Allow 4 of 5 hunks"
    shots = Path(os.environ.get("DESKTOP_AGENT_SHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(shots / "phone-question.png"))
    allow.click()

    out = desktop.loop.run(asyncio.wait_for(task, 10))
    assert not out.is_error, out.block
    expected = FIVE_HUNKS_OLD
    for n in (6, 30, 42, 54):
        expected = expected.replace(f"line {n}\n", f"LINE {n} changed\n")
    assert target.read_text() == expected  # the file ends exactly as answered
    reply: PermissionReply = q.future.result()
    assert reply.rejected_hunks == [(15, 21)] and reply.total_hunks == 5
    wait(lambda: browser.find_element(By.ID, "inbox-view").is_displayed(), what="back to the inbox")
    assert [d["name"] for d in desktop.server.list_devices()] == ["Pixel 8"]
    assert csp_violations(browser) == []


def test_a_question_answered_on_the_desktop_vanishes_from_the_page(desktop: Desktop, browser: Any,
                                                                     tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    pair(desktop, browser)

    async def ask() -> Any:
        return desktop.inbox.ask("sess-2", bash_request("git push --force origin main"), title="release")

    q = desktop.loop.run(ask())
    wait(lambda: browser.find_element(By.CSS_SELECTOR, f"li.question[data-request-id='{q.request_id}']"))
    # a double tap: the second lands where Allow appears — it answers nothing
    browser.execute_script("document.querySelector(arguments[0]).click(); document.getElementById('allow').click();",
                           f"li.question[data-request-id='{q.request_id}']")
    time.sleep(0.3)
    assert not q.future.done()
    assert browser.find_element(By.ID, "q-command").text == "git push --force origin main"
    assert browser.find_element(By.ID, "allow").text == "Allow once"
    shots = Path(os.environ.get("DESKTOP_AGENT_SHOTS", tmp_path))
    browser.save_screenshot(str(shots / "phone-command.png"))

    async def answer_on_desktop() -> str:
        return desktop.inbox.answer(*q.key, PermissionReply(behavior="deny", message="User denied via UI"),
                                    source="window")

    assert desktop.loop.run(answer_on_desktop()) == "ok"
    wait(lambda: "Answered on the desktop" in browser.find_element(By.ID, "status").text, what="the note")
    assert not browser.find_elements(By.CSS_SELECTOR, f"li.question[data-request-id='{q.request_id}']")


def test_revoking_the_device_unpairs_the_open_page(desktop: Desktop, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    pair(desktop, browser)
    (device,) = desktop.server.list_devices()
    assert desktop.loop.run(desktop.server.revoke(str(device["id"])))
    wait(lambda: browser.find_element(By.ID, "unpaired-view").is_displayed(), 3, "the unpaired view")
    assert browser.execute_script("return localStorage.getItem('desktop-agent-device')") is None
    wait(lambda: browser.execute_async_script(KEY_PROBE) == "none", 3, "the key deleted")


