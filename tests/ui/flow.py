"""The steps the end-to-end UI tests share: scripted model replies (``READ``, ``edit``), waiting on the qasync loop
(``wait_for``, ``wait_dialog``), typing a prompt into the real window (``open_and_send``), reading what the model was
sent back (``tool_results``, ``result_text``), the 60-line file with five changed lines the per-hunk tests use
(``ORIGINAL``, ``CHANGED``, ``changed_text``, ``reject_hunks_2_and_4_then_allow``), and a transcript of n Read rounds to replay (``transcript_entries``)."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from tests.fakes.anthropic_server import reply, text, tool_use

READ = lambda path, id="toolu_read": reply(tool_use("Read", {"file_path": str(path)}, id=id))  # noqa: E731


def edit(path, old, new, id="toolu_edit"):
    return reply(text("Changing it."), tool_use("Edit", {"file_path": str(path), "old_string": old, "new_string": new},
                                                 id=id))


async def wait_for(cond, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def open_and_send(qtbot, win, folder, prompt):
    assert await win.folders.open_folder(str(folder))
    assert win.prompt.hasFocus() or win.focusWidget() is win.prompt
    qtbot.keyClicks(win.prompt, prompt)
    qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
    assert win.prompt.toPlainText() == ""
    return win.controller._task


async def wait_dialog(win, timeout=10.0):
    return await wait_for(lambda: win.controller.current_dialog if win.controller.current_dialog is not None
                          and win.controller.current_dialog.isVisible() else None, timeout, "permission dialog")


def tool_results(fake, n):
    """tool_result blocks in the n-th request's last user message."""
    last = fake.request_messages(n)[-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block):
    content = block.get("content")
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content)
    return str(content)


ORIGINAL = "".join(f"line {i}\n" for i in range(1, 61))
CHANGED = (5, 17, 29, 41, 53)


def changed_text(keep=CHANGED) -> str:
    return "".join(f"line {i} changed\n" if i in keep else f"line {i}\n" for i in range(1, 61))


def reject_hunks_2_and_4_then_allow(qtbot, dlg) -> None:
    """In the dialog of the five-hunk change: ``]`` and X reject hunk 2, X on hunk 4 (lines 17 and 41 are not
    written), then Allow — which reads "Allow 3 of 5 hunks"."""
    view = dlg.diff_view
    qtbot.keyClick(view, Qt.Key.Key_BracketRight)
    qtbot.keyClick(view, Qt.Key.Key_X)
    view.go_to(3)
    qtbot.keyClick(view, Qt.Key.Key_X)
    assert dlg.allow_button.text().replace("&", "").startswith("Allow 3 of 5 hunks")
    qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)


def transcript_entries(n: int) -> list[dict[str, Any]]:
    """A transcript of ``n`` rounds: a prompt ``q<i>``, the reply ``a<i>`` with a Read ``t<i>``, its result."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        out.append({"type": "user", "message": {"role": "user", "content": f"q{i}"}})
        out.append({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": f"a{i}"}, {"type": "tool_use", "id": f"t{i}", "name": "Read",
                                                 "input": {"file_path": "/w/x"}}]}})
        out.append({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "1\tx"}]}})
    return out


def git_repo(root: Path, files: dict[str, str]) -> Path:
    """A git repository ``root/repo`` with ``files`` in one commit on ``main`` (the worktree-session tests)."""
    repo = root / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "T")
    for name, content in files.items():
        (repo / name).write_text(content)
    git("add", ".")
    git("commit", "-q", "-m", "base")
    return repo
