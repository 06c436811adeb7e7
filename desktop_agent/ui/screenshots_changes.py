"""Screenshots of the changes panel (issue 13): a partly allowed change (3 of 5 hunks accepted, the
other two struck through, "rejected: not written"), a new file marked ``new``, the actions row, and a
20,000-line change opened in full on the change page with its hunk navigator.

Called by ``screenshots._shoot`` for each theme (``11-changes-partial``, ``12-changes-show-all``);
alone: ``python -m desktop_agent.ui.screenshots_changes OUTDIR [light|dark …]``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any, Callable

from desktop_agent.ui.screenshots_kit import isolate_home, populate_streaming, settle


async def shoot_changes(folder: str, save: Callable[[Any, str], None], size: tuple[int, int] = (1280, 800)) -> None:
    from desktop_agent.core.permission import DecisionReason, PermissionRequest
    from desktop_agent.util.diff import hunk_old_range, structured_patch
    from desktop_agent.ui.window.main_window import MainWindow

    win = MainWindow()
    win.resize(*size)
    win.show()
    populate_streaming(win, folder)
    panel = win.diff_panel
    panel.cwd = folder

    # A new file (turn 1), then a partly allowed Write (turn 2): 2 of its 5 hunks rejected.
    new_path = os.path.join(folder, "src", "retry.py")
    content = "def backoff(attempt):\n    return min(30, 2 ** attempt)\n"
    panel.on_tool_finished("shot_new", "Write", False, {
        "type": "create", "filePath": new_path, "content": content, "originalFile": None,
        "structuredPatch": structured_patch("", content)}, turn=1)
    path = os.path.join(folder, "src", "steps.py")
    old = "".join(f"def step_{i}(ctx):\n    return ctx.run({i})\n\n" for i in range(40))
    new = old
    for i in (2, 10, 18, 26, 34):
        new = new.replace(f"    return ctx.run({i})\n",
                          f"    ctx.log('step {i}')\n    return ctx.run({i}, retry=True)\n")
    proposed = structured_patch(old, new)
    req = PermissionRequest(tool_name="Write", tool_use_id="shot_partial", cwd=folder, file_path=path,
                            input={"file_path": path, "content": new}, original_file=old, structured_patch=proposed,
                            decision_reason=DecisionReason(type="mode", mode="default"))
    panel.on_permission_requested(req, turn=2)
    panel.on_permission_resolved("shot_partial", True, True)
    written = old
    for i in (2, 18, 34):
        written = written.replace(f"    return ctx.run({i})\n",
                                  f"    ctx.log('step {i}')\n    return ctx.run({i}, retry=True)\n")
    panel.on_tool_finished("shot_partial", "Write", False, {
        "type": "update", "filePath": path, "content": written, "originalFile": old,
        "structuredPatch": structured_patch(old, written), "userModified": True,
        "rejectedHunks": [list(hunk_old_range(proposed[1])), list(hunk_old_range(proposed[3]))], "totalHunks": 5},
        turn=2)
    # A 20,000-line generated file (turn 3): folded, "Show all 20,000 lines".
    big_path = os.path.join(folder, "src", "handlers.py")
    big = "".join(f"def handler_{i}(event):\n    return dispatch(event, {i})\n" for i in range(10_000))
    panel.on_tool_finished("shot_big", "Write", False, {
        "type": "create", "filePath": big_path, "content": big, "originalFile": None,
        "structuredPatch": structured_patch("", big)}, turn=3)
    panel.select_tool("shot_partial")
    await settle(400)
    save(win.grab().toImage(), "11-changes-partial")

    panel.select_tool("shot_big")  # opens it in full on the change page
    panel.detail.view.finish_loading()
    panel.detail.view.go_to(0)
    bar = panel.detail.view.verticalScrollBar()
    bar.setValue(bar.maximum() - 30)  # near the end: every line is there
    await settle(400)
    save(win.grab().toImage(), "12-changes-show-all")
    win.close()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    outdir = os.path.abspath(argv[0] if argv else "screenshots")
    themes = argv[1:] or ["light", "dark"]
    os.makedirs(outdir, exist_ok=True)
    isolate_home()
    from desktop_agent.ui.window.demo import prepare_demo_project
    from desktop_agent.ui.main import install_translator, make_app, make_loop
    from desktop_agent.ui.style import apply_theme

    app = make_app()
    if os.environ.get("DESKTOP_AGENT_UI_LANGUAGE"):
        install_translator(app, os.environ["DESKTOP_AGENT_UI_LANGUAGE"])
    loop = make_loop(app)
    asyncio.set_event_loop(loop)
    saved: list[str] = []

    def save_as(theme: str) -> Callable[[Any, str], None]:
        def save(img: Any, name: str) -> None:
            path = os.path.join(outdir, f"{name}-{theme}.png")
            img.save(path)
            saved.append(path)
        return save

    with loop:
        for theme in themes:
            apply_theme(app, theme)
            loop.run_until_complete(shoot_changes(prepare_demo_project(), save_as(theme)))
    for path in saved:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
