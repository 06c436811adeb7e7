"""The background host through the real window, on a real X server (Xvfb + Openbox), against the fake Messages API:

- a question pending → kill -9 the window → start it again → the question is shown again and answering it
  completes the turn (the file is written, the transcript pairs the call with its result);
- two windows attached to one session see the same question; the first answer wins and the other dialog closes;
- 5 pending questions across 3 sessions survive the window's kill -9 (the host lists them all; the window reopened
  on a folder asks its questions again).

The window runs with Settings ▸ "Keep sessions running when the window closes" on (settings.json), so it starts
``desktop-agent host`` on demand in a private ``XDG_RUNTIME_DIR``; the host is stopped by the fixture.
Skips, naming the Debian packages, when Xvfb, Openbox, xdotool, xterm or xprop are missing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desktop_agent.host.daemon import control_request
from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.host.conftest import HostEnv, host_env  # noqa: F401 - the fixture
from tests.ui.flow import edit
from tests.ui.x11.xsession import XSession, missing

ROOT = Path(__file__).resolve().parents[3]
BEFORE, AFTER = "export const value = 1", "export const value = 2"

pytestmark = pytest.mark.skipif(bool(missing("openbox")),
                                reason=f"needs a real X server and window manager: apt-get install "
                                       f"{' '.join(missing('openbox'))}")


@pytest.fixture
def desk(host_env: HostEnv, tmp_path):
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "desktop-agent"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"keep_sessions_running": True}))
    with FakeAnthropic(chunk_size=5) as fake, XSession("openbox", tmp_path) as x:
        env = dict(x.env, **{k: host_env.env[k] for k in ("XDG_RUNTIME_DIR", "DESKTOP_AGENT_STATE_DIR")},
                   QT_QPA_PLATFORM="xcb", PYTHONPATH=str(ROOT), ANTHROPIC_API_KEY="test-key",
                   ANTHROPIC_BASE_URL=fake.base_url, QT_LOGGING_RULES="*.debug=false")
        env.pop("LINE_SERVICE_RECORD", None)
        App.host_log = host_env.log
        yield x, fake, env, host_env


class App:
    host_log: Path | None = None

    def __init__(self, x: XSession, env: dict, folder: Path, log: Path):
        self.x, self.folder, self.log = x, folder, log
        self.proc = x.start([sys.executable, "-m", "desktop_agent", str(folder)], env=env, cwd=str(folder),
                            stdout=log.open("a"), stderr=subprocess.STDOUT)

    def alive(self) -> None:
        assert self.proc.poll() is None, f"the window exited ({self.proc.returncode}):\n{self.log.read_text()[-3000:]}"

    def window(self) -> str:
        return self.x.wait(lambda: self.alive() or (self.x.windows(self.folder.name, self.proc.pid) or [""])[0], 60,
                           "the app's window")

    def dialogs(self) -> list[str]:
        return self.x.windows("Allow Edit", self.proc.pid)

    def dialog(self, timeout: float = 30) -> str:
        try:
            return self.x.wait(lambda: self.alive() or (self.dialogs() or [""])[0], timeout, "the permission dialog")
        except AssertionError as exc:
            host = self.host_log.read_text()[-3000:] if self.host_log and self.host_log.exists() else "(no host log)"
            raise AssertionError(f"{exc}\nwindow log:\n{self.log.read_text()[-3000:]}\nhost log:\n{host}") from None

    def send(self, prompt: str) -> None:
        main = self.window()
        self.x.activate(main)
        self.x.wait(lambda: self.x.focus() == main, 5, "the window to have the focus")
        self.x.type(prompt, 10)
        self.x.key("Return")

    def allow(self, dialog: str) -> None:
        self.x.activate(dialog)
        time.sleep(1.3)  # the dialog's safety delay after it became active
        self.x.key("Return")

    def kill9(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


def _read(path: Path):
    return reply(tool_use("Read", {"file_path": str(path)}, id="toolu_read"))  # an Edit needs a Read first


def _folder(tmp: Path, name: str) -> Path:
    folder = tmp / name
    folder.mkdir()
    (folder / "app.ts").write_text(BEFORE)
    return folder


def _wait_host(predicate, timeout: float, what: str) -> dict:
    return XSession.wait(lambda: (lambda s: s if s is not None and predicate(s) else None)(control_request("status")),
                         timeout, what)


def _paired(transcript: str) -> tuple[list[str], list[str]]:
    entries = [json.loads(line) for line in Path(transcript).read_text().splitlines() if line.strip()]
    uses = [b["id"] for e in entries if e.get("type") == "assistant" for b in e["message"]["content"]
            if b.get("type") == "tool_use"]
    results = [b["tool_use_id"] for e in entries
               if e.get("type") == "user" and isinstance(e["message"]["content"], list)
               for b in e["message"]["content"] if b.get("type") == "tool_result"]
    return uses, results


def test_a_question_survives_kill_9_of_the_window_and_answering_it_completes_the_turn(desk, tmp_path):
    x, fake, env, host_env = desk
    folder = _folder(tmp_path, "work")
    target = folder / "app.ts"
    fake.script([_read(target), edit(target, BEFORE, AFTER), reply(text("Done."))])
    first = App(x, env, folder, tmp_path / "first.log")
    first.send("Change value to 2")
    first.dialog()
    status = _wait_host(lambda s: len(s["pending"]) == 1, 20, "the host's pending question")
    session_id = status["sessions"][0]["session_id"]
    first.kill9()
    time.sleep(0.5)
    status = _wait_host(lambda s: s["clients"] == 0, 10, "the window's connection to go")
    assert [q["session_id"] for q in status["pending"]] == [session_id]  # nothing lost
    assert target.read_text() == BEFORE

    second = App(x, env, folder, tmp_path / "second.log")
    dialog = second.dialog(60)  # the same question, asked again
    second.allow(dialog)
    x.wait(lambda: target.read_text() == AFTER, 20, "the answer to reach the host and the edit to be written")
    x.wait(lambda: not second.dialogs(), 10, "the dialog to close")
    status = _wait_host(lambda s: not s["pending"] and not s["sessions"][0]["busy"], 20, "the turn to complete")
    assert [s["session_id"] for s in status["sessions"]] == [session_id]
    uses, results = _paired(status["sessions"][0]["transcript_path"])
    assert uses == results == ["toolu_read", "toolu_edit"]
    fake.assert_done()


def test_two_windows_see_one_question_and_the_first_answer_wins(desk, tmp_path):
    x, fake, env, host_env = desk
    folder = _folder(tmp_path, "shared")
    target = folder / "app.ts"
    fake.script([_read(target), edit(target, BEFORE, AFTER), reply(text("Done."))])
    one = App(x, env, folder, tmp_path / "one.log")
    one.send("Change value to 2")
    one.dialog()
    _wait_host(lambda s: len(s["pending"]) == 1, 20, "the pending question")
    two = App(x, env, folder, tmp_path / "two.log")  # attaches to the running session
    dialog_two = two.dialog(60)
    _wait_host(lambda s: s["clients"] == 2, 10, "both windows attached")
    two.allow(dialog_two)
    x.wait(lambda: target.read_text() == AFTER, 20, "the second window's answer to be applied")
    x.wait(lambda: not one.dialogs(), 15, "the first window's dialog to close (answered elsewhere)")
    x.wait(lambda: not two.dialogs(), 10, "the answering window's dialog to close")
    _wait_host(lambda s: not s["pending"], 10, "no question left")
    x.wait(lambda: fake.unused == 0, 20, "the turn's last request (the edit's result goes back to the model)")
    one.alive()
    two.alive()
    fake.assert_done()


def test_questions_of_three_sessions_survive_kill_9_of_their_windows(desk, tmp_path):
    """Three windows, three folders, three sessions each waiting on a question; every window is killed with SIGKILL.
    The host keeps the three questions; a window reopened on each folder asks its question again, and answering it
    completes the turn — where the model then asks a second question (two of the sessions), that one is asked in the
    same window: five questions in all, none lost."""
    x, fake, env, host_env = desk
    folders = [_folder(tmp_path, f"proj{i}") for i in range(3)]
    apps = []
    for i, folder in enumerate(folders):
        target = folder / "app.ts"
        fake.script([_read(target), edit(target, BEFORE, AFTER, id=f"toolu_edit{i}")])  # played in request order
        app = App(x, env, folder, tmp_path / f"w{i}.log")
        app.send("Change value to 2")
        app.dialog(60)
        _wait_host(lambda s, n=i + 1: len(s["pending"]) == n, 20, f"{i + 1} pending questions")
        apps.append(app)
    status = control_request("status")
    sessions = {s["cwd"]: s["session_id"] for s in status["sessions"]}
    assert len(sessions) == 3
    for app in apps:
        app.kill9()
    status = _wait_host(lambda s: s["clients"] == 0, 10, "the windows' connections to go")
    assert sorted(q["session_id"] for q in status["pending"]) == sorted(sessions.values())
    for i, folder in enumerate(folders):
        target = folder / "app.ts"
        follow = [edit(target, AFTER, "export const value = 3", id=f"toolu_more{i}")] if i < 2 else []
        fake.script(follow or [reply(text("Done."))])  # what the answer leads to
        app = App(x, env, folder, tmp_path / f"again{i}.log")
        first_dialog = app.dialog(60)
        app.allow(first_dialog)
        x.wait(lambda: target.read_text() == AFTER or target.read_text().endswith("3"), 20, "the first edit")
        if follow:
            fake.script([reply(text("Done."))])
            nxt = x.wait(lambda: app.alive() or [d for d in app.dialogs() if d != first_dialog], 30,
                         "the session's next question, in the reopened window")
            app.allow(nxt[0])
            x.wait(lambda: target.read_text() == "export const value = 3", 20, "the second edit")
        sid = sessions[str(folder)]
        _wait_host(lambda s: not any(q["session_id"] == sid for q in s["pending"])
                   and not next(e for e in s["sessions"] if e["session_id"] == sid)["busy"], 20, "the turn to end")
        app.kill9()
    assert control_request("status")["pending"] == []
    fake.assert_done()
