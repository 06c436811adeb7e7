"""One dialog at a time under a real window manager (Xvfb + Openbox, the xcb platform): with the person at the
window, answering the first of two queued questions shows the second as the active window — built after the focus
came back, so it is not taken for a window in the background (no taskbar alert, no notification, no showing
without activation). Offscreen Qt activates every window it shows and cannot see this.

This process's Qt is offscreen, so the case runs in a child pytest on its own X display; skipped where Xvfb or
Openbox is missing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time

import pytest
from PySide6.QtCore import Qt

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.ui.flow import open_and_send, wait_dialog, wait_for

CASE_ENV = "DESKTOP_AGENT_WM_CASE"


def _start_display() -> tuple[subprocess.Popen, str]:
    read, write = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    number = b""
    while not number.endswith(b"\n"):
        chunk = os.read(read, 1)
        if not chunk:
            break
        number += chunk
    os.close(read)
    if not number.strip():
        xvfb.kill()
        pytest.fail("Xvfb did not start")
    return xvfb, f":{number.decode().strip()}"


def test_the_next_dialog_is_the_active_window_under_openbox(tmp_path):
    if not (shutil.which("Xvfb") and shutil.which("openbox")):
        pytest.skip("needs Xvfb and Openbox (apt-get install xvfb openbox)")
    xvfb, display = _start_display()
    env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb", **{CASE_ENV: "1"})
    wm = subprocess.Popen(["openbox"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)  # openbox takes the display
        assert wm.poll() is None, "openbox exited"
        child = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                                "-p", "no:hypothesispytest",  # nothing imported lazily beside worker threads
                                f"{__file__}::test_case_under_the_window_manager"],
                               env=env, capture_output=True, text=True, timeout=120)
    finally:
        wm.terminate()
        xvfb.terminate()
        wm.wait(5)
        xvfb.wait(5)
    assert child.returncode == 0 and "1 passed" in child.stdout, child.stdout[-4000:] + child.stderr[-2000:]


def test_case_under_the_window_manager(qtbot, qloop, fake, make_window, workdir, tmp_path):
    if os.environ.get(CASE_ENV) != "1":
        pytest.skip("runs in the child of test_the_next_dialog_is_the_active_window_under_openbox")
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("a.txt", "b.txt"):
        (outside / name).write_text(name + "\n")
    fake.script([reply(text("Reading."), *[tool_use("Read", {"file_path": str(outside / n)}, id=f"toolu_{n[0]}")
                                           for n in ("a.txt", "b.txt")]),
                 reply(text("Done."))])
    win = make_window()
    notes: list[str] = []
    win.controller.notifier = lambda title, body: notes.append(body)
    shown_inactive = []
    win.controller.dialog_opened.connect(
        lambda d: shown_inactive.append(d.testAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)))

    async def scenario():
        win.activateWindow()
        await wait_for(win.isActiveWindow, 5, "the window active under the window manager")
        task = await open_and_send(qtbot, win, workdir, "Read both")
        first = await wait_dialog(win)
        await wait_for(first.isActiveWindow, 5, "the first dialog active")
        await wait_for(lambda: len(win.controller.questions) == 2, what="the second question queued")
        assert first.waiting_label.text() == "1 more waiting"
        qtbot.mouseClick(first.allow_button, Qt.MouseButton.LeftButton)
        second = await wait_for(lambda: win.controller.current_dialog if win.controller.current_dialog is not None
                                and win.controller.current_dialog is not first
                                and win.controller.current_dialog.isVisible() else None, 5, "the second dialog")
        await wait_for(second.isActiveWindow, 2, "the second dialog active")
        assert not first.isVisible()
        qtbot.mouseClick(second.allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 10)

    qloop.run_until_complete(scenario())
    assert shown_inactive == [False, False]  # both shown as the person's active window
    assert notes == []  # the person was at the window: nothing called them
    fake.assert_done()
