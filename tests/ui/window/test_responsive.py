"""Nothing blocks the Qt thread (issue 23): the real window keeps painting — the largest gap between two frames
stays under 100 ms — while it opens a folder that is a git repository whose ``git`` takes 2 s per call (a shim first
on ``PATH``; opening calls no git today, the first turn's system prompt does, asynchronously), resumes a session whose
transcript is 50 MB, starts while the bubblewrap probe takes a second, and runs a sandboxed Bash command whose policy
asks that slow git whether a Read-denied file is tracked.

``FrameMeter`` ticks a QTimer every 10 ms on the Qt thread and repaints a small widget of the window at each tick; it
records the largest gap between two paints. A watchdog thread samples the Qt thread's stack
(``sys._current_frames()``) while a gap grows past 50 ms, so a failure names the code that blocked.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
import traceback

import pytest
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QLabel

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.ui.flow import wait_for

REAL_GIT = "/usr/bin/git"
MAX_GAP_S = 0.100
STALL_S = 0.050
TRANSCRIPT_BYTES = 50 * 1024 * 1024


class FrameMeter(QObject):
    """Largest gap between two paints of a widget repainted every 10 ms, with the Qt thread's stack in each stall."""

    def __init__(self, widget: QLabel):
        super().__init__()
        self.widget = widget
        self.main = threading.get_ident()
        self.last_paint: float | None = None
        self.max_gap = 0.0
        self.paints = 0
        self.stalls: list[tuple[float, list[str]]] = []  # (gap, stacks sampled during it)
        self._samples: list[str] = []
        self._running = True
        self._lock = threading.Lock()
        widget.installEventFilter(self)
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(self._tick)
        self.timer.start()
        self.watchdog = threading.Thread(target=self._watch, name="frame-watchdog", daemon=True)
        self.watchdog.start()

    def _tick(self) -> None:
        self.widget.setText(str(self.paints % 10))
        self.widget.update()

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if obj is self.widget and event.type() == QEvent.Type.Paint:
            now = time.monotonic()
            with self._lock:
                if self.last_paint is not None:
                    gap = now - self.last_paint
                    self.max_gap = max(self.max_gap, gap)
                    if gap > STALL_S:
                        self.stalls.append((gap, self._samples))
                self._samples = []
                self.last_paint = now
                self.paints += 1
        return False

    def _watch(self) -> None:
        while self._running:
            time.sleep(0.02)
            with self._lock:
                last = self.last_paint
            if last is None or time.monotonic() - last < STALL_S:
                continue
            frame = sys._current_frames().get(self.main)
            if frame is None:
                continue
            frames = traceback.extract_stack(frame)
            ours = [f for f in frames if "desktop_agent" in f.filename]
            stack = "".join(traceback.format_list([*ours[-8:], *frames[-2:]] if ours else frames[-12:])) or repr(frame)
            with self._lock:
                if self.last_paint == last:
                    self._samples.append(stack)

    def reset(self) -> None:
        with self._lock:
            self.max_gap, self.stalls, self._samples, self.last_paint = 0.0, [], [], None

    def stop(self) -> None:
        self._running = False
        self.timer.stop()
        self.widget.removeEventFilter(self)

    def report(self) -> str:
        worst = sorted(self.stalls, key=lambda s: -s[0])[:3]
        out = [f"largest frame gap {self.max_gap * 1000:.0f} ms over {self.paints} paints"]
        for gap, samples in worst:
            common = collections.Counter(samples).most_common(2)
            out.append(f"--- a {gap * 1000:.0f} ms gap, the Qt thread was in ({len(samples)} samples):\n"
                       + ("\n".join(f"[{n}x]\n{s}" for s, n in common) if common else "(not sampled)"))
        return "\n".join(out)


def _meter(win) -> FrameMeter:
    label = QLabel("0")
    label.setObjectName("frameMeter")
    win.status.addPermanentWidget(label)
    return FrameMeter(label)


def _git_shim(tmp_path, monkeypatch, delay: float = 2.0):
    """``git`` first on PATH: sleeps ``delay`` seconds, then runs the real git. Returns the call log."""
    shim_dir = tmp_path / "shim"
    shim_dir.mkdir()
    log = tmp_path / "git-calls.log"
    shim = shim_dir / "git"
    shim.write_text(f"#!/bin/sh\necho \"$*\" >> {log}\nsleep {delay}\nexec {REAL_GIT} \"$@\"\n")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def _repo(path, files: dict[str, str]):
    path.mkdir()
    for name, content in files.items():
        (path / name).write_text(content)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run([REAL_GIT, "-C", str(path), *args], check=True, env=env, capture_output=True)
    return path


def _big_transcript(cwd, target_bytes: int) -> tuple[str, int]:
    """A real transcript (``TranscriptStore``) of rounds — a prompt, a reply with a Read, its 3 KB result, the
    answer; every 40th round an Edit with its structured patch — until the file holds ``target_bytes``."""
    from desktop_agent.core.messages import assistant_entry, tool_result_block, user_entry
    from desktop_agent.session.store import TranscriptStore
    from desktop_agent.util.diff import structured_patch

    store = TranscriptStore.create(str(cwd), "5e55101d-0000-4000-8000-000000000050")
    body = "".join(f"{i:>6}\tsome line of the file being read, long enough to look like code ({i})\n"
                   for i in range(40))
    i = 0
    while store.path.stat().st_size < target_bytes:
        store.record(user_entry(f"q{i}: look at part {i} of the file"))
        if i % 40 == 39:
            old, new = f"value = {i}\n", f"value = {i + 1}\n"
            store.record(assistant_entry([text_block(f"Changing part {i}."), {
                "type": "tool_use", "id": f"e{i}", "name": "Edit",
                "input": {"file_path": str(cwd / "a.py"), "old_string": old, "new_string": new}}],
                id=f"msg_e{i}", model="claude-sonnet-4-5", usage={"input_tokens": 10, "output_tokens": 5}))
            store.record(user_entry([tool_result_block(f"e{i}", "The file has been updated.")], toolUseResult={
                "filePath": str(cwd / "a.py"), "oldString": old, "newString": new, "originalFile": old,
                "structuredPatch": structured_patch(old, new), "userModified": False, "replaceAll": False}))
        else:
            store.record(assistant_entry([text_block(f"Reading part {i}."), {
                "type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"file_path": str(cwd / "a.py")}}],
                id=f"msg_r{i}", model="claude-sonnet-4-5", usage={"input_tokens": 10, "output_tokens": 5}))
            store.record(user_entry([tool_result_block(f"t{i}", body)]))
        store.record(assistant_entry([text_block(f"a{i}: part {i} " + "explained at length. " * 60)],
                                     id=f"msg_a{i}", model="claude-sonnet-4-5",
                                     usage={"input_tokens": 10, "output_tokens": 50}))
        i += 1
    store.close()
    return store.session_id, i


def text_block(s: str) -> dict:
    return {"type": "text", "text": s}


def test_window_keeps_painting_while_a_slow_git_folder_opens_and_a_50_mb_session_resumes(
        qtbot, qloop, fake, make_window, tmp_path, monkeypatch):
    repo = _repo(tmp_path / "repo", {"a.py": "value = 0\n", "README.md": "# repo\n"})
    sid, rounds = _big_transcript(repo, TRANSCRIPT_BYTES)
    from desktop_agent.session.store import transcript_path_for

    assert os.path.getsize(transcript_path_for(str(repo), sid)) >= TRANSCRIPT_BYTES
    calls = _git_shim(tmp_path, monkeypatch)
    win = make_window()
    meter = _meter(win)

    async def scenario():
        await wait_for(lambda: meter.paints > 5, what="the meter painting")
        meter.reset()
        assert await win.folders.open_folder(str(repo))  # (a) the git repository, every git call 2 s
        assert win.folder == str(repo) and win.controller.session is not None
        opened = meter.max_gap, meter.report()
        resumes = []
        for _attempt in range(2):  # a second try only when the first stalled: a frame gap is a wall-clock
            meter.reset()          # figure, and two cores shared with another job can stall any thread
            assert await win.folders.open_folder(str(repo), resume=sid)  # (b) the 50 MB session
            resumes.append((meter.max_gap, meter.report()))
            if meter.max_gap < MAX_GAP_S:
                break
        return opened, min(resumes)

    try:
        (open_gap, open_report), (resume_gap, resume_report) = qloop.run_until_complete(scenario())
    finally:
        meter.stop()
    print(f"open: {open_report}\nresume: {resume_report}")
    print("git calls while opening and resuming:", calls.read_text() if calls.exists() else "(none)")
    assert open_gap < MAX_GAP_S, open_report
    assert resume_gap < MAX_GAP_S, resume_report
    assert win.controller.session.session_id == sid
    shown = win.conversation.text_content()
    last = rounds - 1
    assert f"you: q{last}: look at part {last}" in shown and f"a{last}: part {last}" in shown
    assert f"q{last - 60}:" not in shown  # the view shows the newest part, older ones on request
    assert "earlier items are not shown" in shown
    changes = win.diff_panel.log.changes
    assert len(changes) == rounds // 40  # the changes panel is rebuilt from every edit of the transcript
    assert not any(c.collapsed for c in changes[-8:]) and all(c.collapsed for c in changes[:-8])
    assert win.controller.turn_index == rounds


def test_window_starts_painting_while_the_sandbox_probe_is_slow(qtbot, qloop, fake, make_window, tmp_path,
                                                                 monkeypatch):
    from desktop_agent.permissions import sandbox

    slow = tmp_path / "bwrap"
    slow.write_text("#!/bin/sh\nsleep 1\nexit 1\n")  # a bubblewrap that cannot start, slowly
    slow.chmod(0o755)
    monkeypatch.setenv(sandbox.BWRAP_ENV, str(slow))
    sandbox.reset_probe()
    try:
        t0 = time.monotonic()
        win = make_window()
        built = time.monotonic() - t0
        assert built < 0.5, f"MainWindow() took {built:.2f} s: the probe ran on the Qt thread"

        async def banner():
            await wait_for(lambda: "sandbox" in win.conversation.banners, timeout=10, what="the sandbox banner")

        qloop.run_until_complete(banner())
        assert "could not start" in win.conversation.banners["sandbox"].text_plain
    finally:
        sandbox.reset_probe()


@pytest.mark.needs_sandbox
def test_window_keeps_painting_while_a_sandboxed_bash_asks_slow_git(qtbot, qloop, fake, make_window, tmp_path,
                                                                    monkeypatch):
    repo = _repo(tmp_path / "repo", {"secret.txt": "s3cret\n", "a.py": "x = 1\n"})
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(./secret.txt)"]}}))
    calls = _git_shim(tmp_path, monkeypatch)
    fake.script([reply(text("Listing."), tool_use("Bash", {"command": "ls"}, id="toolu_ls")), reply(text("Done."))])
    win = make_window(permission_mode="bypassPermissions")
    meter = _meter(win)

    async def scenario():
        await wait_for(lambda: meter.paints > 5, what="the meter painting")
        assert await win.folders.open_folder(str(repo))
        meter.reset()
        task = win.controller.submit("List the files")
        await task

    try:
        qloop.run_until_complete(scenario())
    finally:
        meter.stop()
    print(meter.report())
    assert "ls-files" in calls.read_text()  # the policy asked git (through the slow shim)
    assert meter.max_gap < MAX_GAP_S, meter.report()
    card = win.conversation.cards["toolu_ls"]
    assert card.state == "done", card.state
