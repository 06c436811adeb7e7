"""Screenshots of many sessions in one window (issue 24), offscreen or under Xvfb:
``.venv/bin/python bench/screenshots_sessions.py OUTDIR [light|dark …]``.

Four real sessions against the fake Anthropic server, on a small git repository: two in worktrees waiting for an
Edit's approval, one streaming a long answer, one done. 20-sessions-inbox (the sidebar's inbox and Running list with
their states, the streaming session in view) and 21-sessions-dialog (one answered from the inbox: its session in
view, its dialog up). A throwaway HOME keeps real keys and settings out.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _repo() -> Path:
    repo = Path(tempfile.mkdtemp(prefix="sessions-shots-")) / "greeter"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.com"], ["config", "user.name", "T"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    (repo / "app.py").write_text("def greet(name):\n    return 'Hello, ' + name\n\nRETRIES = 1\n")
    (repo / "README.md").write_text("# greeter\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "base"], check=True)
    return repo


async def shoot(outdir: str, theme: str) -> list[str]:
    from PySide6.QtWidgets import QApplication

    import tests.fakes.anthropic_server as fa
    from desktop_agent.client import review as client_review
    from desktop_agent.model.anthropic_client import AnthropicClient
    from desktop_agent.ui.screenshots import H, W, _composite
    from desktop_agent.ui.screenshots_kit import settle as _settle, until as _until
    from desktop_agent.ui.style import apply_theme
    from desktop_agent.ui.window.main_window import MainWindow

    apply_theme(QApplication.instance(), theme)
    repo = _repo()
    saved: list[str] = []
    with fa.FakeAnthropic(chunk_size=9, validate=False) as fake:
        trees = [await client_review.new_worktree(str(repo), name) for name in ("f-string", "retries")]
        fake.script_for("Use an f-string", [
            fa.reply(fa.tool_use("Read", {"file_path": f"{trees[0].path}/app.py"}, id="toolu_r1")),
            fa.reply(fa.text("I'll switch `greet` to an f-string."), fa.tool_use("Edit", {
                "file_path": f"{trees[0].path}/app.py", "old_string": "return 'Hello, ' + name",
                "new_string": "return f'Hello, {name}!'"}, id="toolu_e1")),
            fa.reply(fa.text("Done."))])
        fake.script_for("Raise the retries", [
            fa.reply(fa.tool_use("Read", {"file_path": f"{trees[1].path}/app.py"}, id="toolu_r2")),
            fa.reply(fa.text("Raising RETRIES to 3."), fa.tool_use("Edit", {
                "file_path": f"{trees[1].path}/app.py", "old_string": "RETRIES = 1", "new_string": "RETRIES = 3"},
                id="toolu_e2")),
            fa.reply(fa.text("Done."))])
        fake.script_for("Summarise the README", [fa.reply(fa.text("The README only names the project."))])
        fake.script_for("Explain the design", [fa.reply(fa.text(
            "The project is a single module. `greet` builds the greeting and `RETRIES` sets how often the caller "
            "retries a failed send; " * 12), delay=0.15)])
        win = MainWindow(client_factory=lambda: AnthropicClient("shots-key", fake.base_url, max_retries=0),
                         session_kwargs={"trusted": True})
        win.resize(W, H)
        win.show()
        for folder, prompt in ((str(repo), "Summarise the README"), (trees[0].path, "Use an f-string in greet"),
                               (trees[1].path, "Raise the retries to 3"), (str(repo), "Explain the design")):
            assert await win.folders.open_folder(folder)
            win.send(prompt)
            await _until(lambda: win.controller.busy or win.controller.turn_index > 0, 30)
            if prompt.startswith("Summarise"):
                await _until(lambda: not win.controller.busy, 30)
        await _until(lambda: win.sessions_pane.inbox.count() == 2, 30)
        await _settle(1500)
        path = os.path.join(outdir, f"20-sessions-inbox-{theme}.png")
        win.grab().toImage().save(path)
        saved.append(path)
        row = win.sessions_pane.inbox_rows[0]
        win.answer_from_inbox(row.key, row.ref)
        await _until(lambda: win.controller.current_dialog is not None and win.controller.current_dialog.isVisible(),
                     30)
        await _settle(600)
        path = os.path.join(outdir, f"21-sessions-dialog-{theme}.png")
        _composite(win, win.controller.current_dialog).save(path)
        saved.append(path)
        for live in list(win.lives):
            if live.controller.busy:
                live.controller.stop()
        await asyncio.sleep(0.5)
        for live in list(win.lives):
            await live.controller.end_session("prompt_input_exit", timeout=15)
        win.close()
    return saved


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    outdir = os.path.abspath(argv[0] if argv else "screenshots")
    themes = argv[1:] or ["light", "dark"]
    os.makedirs(outdir, exist_ok=True)
    from desktop_agent.ui.screenshots_kit import isolate_home as _isolate_home

    _isolate_home()
    for k in [k for k in os.environ if k.startswith(("ANTHROPIC_", "CLAUDE_"))]:
        del os.environ[k]
    from desktop_agent.ui.main import make_app, make_loop

    app = make_app()
    loop = make_loop(app)
    asyncio.set_event_loop(loop)
    saved: list[str] = []
    with loop:
        for theme in themes:
            saved += loop.run_until_complete(shoot(outdir, theme))
    for path in saved:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
