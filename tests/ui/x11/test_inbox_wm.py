"""A question of a session out of view, under a real window manager (issue 24): Xvfb, Openbox or IceWM, xterm as
the other application, the real app as a subprocess (``QT_QPA_PLATFORM=xcb``) on the fake Anthropic server.

Two sessions in one window: the first asks for an Edit while the second is in view. While the person types into
xterm, no permission dialog opens at all (the question waits in the inbox) and the focus never leaves xterm. Then
the person turns to the window and presses Ctrl+I (Next Waiting Question): the first session comes into view with
its dialog; Return pressed at once allows nothing (the safety delay), Return after it writes the file — in the
first session's folder only.
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.ui.flow import edit
from tests.ui.x11.test_focus_wm import _app
from tests.ui.x11.xsession import XSession, missing

BEFORE, AFTER = "export const value = 1", "export const value = 2"


@pytest.mark.parametrize("wm", ["openbox", "icewm"])
def test_an_out_of_view_question_opens_no_dialog_and_ctrl_i_brings_it_up(wm, tmp_path):
    lacking = missing(wm)
    if lacking:
        pytest.skip(f"needs a real X server and window manager: apt-get install {' '.join(lacking)}")
    folder = tmp_path / "work"
    folder.mkdir()
    target = folder / "app.ts"
    target.write_text(BEFORE)
    gate = threading.Event()
    log = tmp_path / "app.log"
    with FakeAnthropic(chunk_size=5) as fake, XSession(wm, tmp_path) as x:
        fake.script_for("first:", [reply(tool_use("Read", {"file_path": str(target)}, id="toolu_read"),
                                         check=lambda body: gate.wait(30) or None),
                                   edit(target, BEFORE, AFTER), reply(text("Done."))])
        fake.script_for("second:", [reply(text("Nothing to change here."))])
        app = _app(x, fake, folder, log)

        def alive() -> None:
            assert app.poll() is None, f"the app exited ({app.returncode}):\n{log.read_text()[-3000:]}"

        main = x.wait(lambda: alive() or (x.windows(folder.name, app.pid) or [""])[0], 30, "the app's window")
        time.sleep(1.0)  # the folder's session opens
        x.activate(main)
        x.wait(lambda: x.focus() == main, 5, "the app's window to have the focus")
        x.type("first: change value to 2", 10)
        x.key("Return")
        x.wait(lambda: alive() or fake.requests, 15, "the first prompt to reach the model")
        x.key("ctrl+n")  # a second session beside the first, in view
        time.sleep(1.5)
        x.type("second: look around", 10)
        x.key("Return")
        x.wait(lambda: alive() or len(fake.requests) >= 2, 15, "the second prompt to reach the model")

        xterm = x.start_xterm()  # the person goes on in another application
        x.start_typing()
        time.sleep(0.6)
        gate.set()  # the first session's Read, then its Edit: a question out of view
        x.wait(lambda: alive() or len(fake.requests) >= 3, 15, "the first session's Edit")
        focus_seen = set()
        dialogs = set()
        started = time.monotonic()
        while time.monotonic() - started < 2.5:
            focus_seen.add((x.focus(), x.active()))
            dialogs.update(x.windows("Allow Edit", app.pid))
            time.sleep(0.1)
        x.stop_typing()
        alive()
        assert not dialogs, "a question of a session out of view opened a dialog"
        assert focus_seen == {(xterm, xterm)}, f"the focus left xterm ({xterm}): {focus_seen}"
        assert target.read_text() == BEFORE

        x.activate(main)  # the person turns to the window and asks for the waiting question
        x.wait(lambda: x.focus() == main, 5, "the app's window to have the focus")
        x.key("ctrl+i")
        dialog = x.wait(lambda: alive() or (x.windows("Allow Edit", app.pid) or [""])[0], 10, "the dialog")
        x.key("Return")  # at once: the safety delay has not run
        time.sleep(0.4)
        assert target.read_text() == BEFORE, "Return right after the dialog came up allowed the Edit"
        time.sleep(1.2)
        x.activate(dialog)
        time.sleep(1.0)  # quiet for the delay
        x.key("Return")
        x.wait(lambda: target.read_text() == AFTER, 10, "Return after the delay to allow the Edit")
        x.wait(lambda: not x.windows("Allow Edit", app.pid), 5, "the dialog to close")
        app.terminate()
