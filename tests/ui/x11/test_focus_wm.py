"""Focus that cannot be stolen, under real window managers (issue 21). Offscreen Qt activates every window it
shows, so this runs the real app on a real X server: Xvfb, Openbox or IceWM (both honour EWMH "do not focus on
map"), and xterm as the other application; under Fluxbox (which focuses a new transient anyway) the second line.

The person types into xterm (words, spaces, Return, in a loop, with ``xdotool``) while the app — a subprocess on
``QT_QPA_PLATFORM=xcb`` against the fake Anthropic server — gets an Edit request, and for 2.5 s after the permission
dialog appears. Then: the file is unchanged, xterm still has the focus (``getwindowfocus`` and the root's
``_NET_ACTIVE_WINDOW``) and got the keys. Then the dialog is activated and Return pressed at once → unchanged
(the safety delay); Space after the delay → unchanged (Space never allows); Return after the delay → written.

Skips, naming the Debian packages, when Xvfb, the window manager, xdotool, xterm or xprop are missing
(``scripts/bootstrap.sh`` installs them). ``DESKTOP_AGENT_FOCUS_SHOTS=DIR`` keeps a screenshot of the dialog over
xterm for each window manager there. ``DESKTOP_AGENT_FOCUS_RUNS=N`` repeats each run N times.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.ui.flow import edit
from tests.ui.x11.xsession import XSession, missing

ROOT = Path(__file__).resolve().parents[3]
RUNS = int(os.environ.get("DESKTOP_AGENT_FOCUS_RUNS", "1"))
BEFORE, AFTER = "export const value = 1", "export const value = 2"


def _app(session: XSession, fake: FakeAnthropic, folder: Path, log: Path) -> subprocess.Popen:
    env = dict(session.env, QT_QPA_PLATFORM="xcb", PYTHONPATH=str(ROOT), ANTHROPIC_API_KEY="test-key",
               ANTHROPIC_BASE_URL=fake.base_url, QT_LOGGING_RULES="*.debug=false")
    return session.start([sys.executable, "-m", "desktop_agent", str(folder)], env=env, cwd=str(folder),
                         stdout=log.open("w"), stderr=subprocess.STDOUT)


def _one_run(wm: str, tmp: Path, shot: Path | None, keeps_focus: bool = True) -> None:
    folder = tmp / "work"
    folder.mkdir()
    target = folder / "app.ts"
    target.write_text(BEFORE)
    gate = threading.Event()
    log = tmp / "app.log"
    with FakeAnthropic(chunk_size=5) as fake, XSession(wm, tmp) as x:
        fake.script([reply(tool_use("Read", {"file_path": str(target)}, id="toolu_read"),
                           check=lambda body: gate.wait(30) or None),
                     edit(target, BEFORE, AFTER), reply(text("Done."))])
        app = _app(x, fake, folder, log)

        def alive() -> None:
            assert app.poll() is None, f"the app exited ({app.returncode}):\n{log.read_text()[-3000:]}"

        main = x.wait(lambda: alive() or (x.windows(folder.name, app.pid) or [""])[0], 30, "the app's window")
        time.sleep(1.0)  # the folder's session opens
        x.activate(main)
        x.wait(lambda: x.focus() == main, 5, "the app's window to have the focus")
        x.type("Change value to 2", 10)
        x.key("Return")
        x.wait(lambda: alive() or fake.requests, 15, "the prompt to reach the model")

        xterm = x.start_xterm()  # the person goes on in another application
        x.start_typing()
        time.sleep(0.6)
        gate.set()  # the model's reply: a Read (allowed), then the Edit, while the typing goes on
        dialog = x.wait(lambda: alive() or (x.windows("Allow Edit", app.pid) or [""])[0], 15, "the permission dialog")
        shown_at = time.monotonic()
        lines_before = x.typed_lines()
        focus_seen = set()
        while time.monotonic() - shown_at < 2.5:
            focus_seen.add((x.focus(), x.active()))
            if shot is not None and time.monotonic() - shown_at > 1.2 and not shot.exists():
                x.screenshot(shot)
            time.sleep(0.1)
        x.stop_typing()
        time.sleep(0.3)
        alive()
        assert target.read_text() == BEFORE, "typing into another application answered the dialog"
        if keeps_focus:
            assert focus_seen == {(xterm, xterm)}, f"the focus left xterm ({xterm}) for {focus_seen} (dialog {dialog})"
            assert x.typed_lines() > lines_before + 3, "the typing did not reach xterm"
        else:  # the window manager gave the dialog the focus: the typing went into it, and answered nothing
            assert (dialog, dialog) in focus_seen, f"expected {wm} to focus the dialog ({dialog}): {focus_seen}"

        # The person turns to the dialog and presses Return at once: the delay has not run.
        x.activate(dialog)
        x.key("Return")
        time.sleep(0.4)
        assert x.active() == dialog and x.focus() == dialog
        assert target.read_text() == BEFORE, "Return right after activating the dialog allowed the Edit"
        time.sleep(1.0)  # the delay is over
        x.key("space")
        time.sleep(0.4)
        assert target.read_text() == BEFORE, "Space allowed the Edit"
        assert x.windows("Allow Edit", app.pid) == [dialog]
        time.sleep(1.0)  # quiet again for the delay
        x.key("Return")
        x.wait(lambda: target.read_text() == AFTER, 10, "Return after the delay to allow the Edit")
        x.wait(lambda: not x.windows("Allow Edit", app.pid), 5, "the dialog to close")


def _needs(wm: str) -> None:
    lacking = missing(wm)
    if lacking:
        pytest.skip(f"needs a real X server and window manager: apt-get install {' '.join(lacking)}")


@pytest.mark.parametrize("wm", ["openbox", "icewm"])
def test_a_dialog_never_takes_the_focus_and_typing_never_answers_it(wm, tmp_path):
    _needs(wm)
    shots = os.environ.get("DESKTOP_AGENT_FOCUS_SHOTS")
    for run in range(RUNS):
        tmp = tmp_path / f"run{run}"
        tmp.mkdir()
        shot = Path(shots) / f"{wm}-dialog-over-xterm-{run + 1}.png" if shots else None
        if shot is not None:
            shot.parent.mkdir(parents=True, exist_ok=True)
            shot.unlink(missing_ok=True)
        _one_run(wm, tmp, shot)


def test_where_the_window_manager_gives_it_the_focus_typing_still_never_answers_it(tmp_path):
    """Fluxbox focuses a new transient window even when it asks not to be (``_NET_WM_USER_TIME`` 0): the second
    line holds there — the person's typing lands in the dialog, every key restarts the wait and the keys go
    nowhere, so the file is unchanged; then the same Return / Space / Return steps."""
    _needs("fluxbox")
    shots = os.environ.get("DESKTOP_AGENT_FOCUS_SHOTS")
    for run in range(RUNS):
        tmp = tmp_path / f"run{run}"
        tmp.mkdir()
        shot = Path(shots) / f"fluxbox-dialog-focused-{run + 1}.png" if shots else None
        if shot is not None:
            shot.unlink(missing_ok=True)
        _one_run("fluxbox", tmp, shot, keeps_focus=False)
