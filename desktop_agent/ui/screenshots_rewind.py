"""Screenshots of rewind (issue 25): the checkpoint markers under two prompts of a finished conversation
(``13-rewind-markers``) and the dry-run dialog of "Rewind…" (``14-rewind-dry-run``), its numbers from a real
checkpoint store over a real git repository in which Bash-like changes were made and the person edited a file since.

Alone: ``python -m desktop_agent.ui.screenshots_rewind OUTDIR [light|dark …]`` (under Xvfb for a real window
manager, or offscreen).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any, Callable

from desktop_agent.ui.screenshots_kit import isolate_home, settle


_PLAN_SCRIPT = r"""
import json, os, subprocess, sys, tempfile
from desktop_agent.session.checkpoints import CheckpointStore

folder = tempfile.mkdtemp(prefix="rewind-shot-")
env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
env.update(GIT_AUTHOR_NAME="s", GIT_AUTHOR_EMAIL="s@s", GIT_COMMITTER_NAME="s", GIT_COMMITTER_EMAIL="s@s")

def sh(cmd):
    subprocess.run(["bash", "-c", cmd], cwd=folder, env=env, check=True, capture_output=True)

sh("git init -q && mkdir -p src tests && printf 'export function parse(s) {\\n  return s;\\n}\\n' > src/date.ts"
   " && printf 'test(1)\\n' > tests/date.test.ts && printf '# dates\\n' > README.md && git add -A"
   " && git commit -qm init")
store = CheckpointStore.open(folder)
store.snapshot("turn", message_id="m1")
sh("sed -i 's/return s;/return isoWeek(s);/' src/date.ts && printf 'export const isoWeek = (d) => 1;\\n'"
   " > src/week.ts && rm tests/date.test.ts && mkdir -p tests/fixtures && echo '{}' > tests/fixtures/w.json"
   " && printf 'one\\ntwo\\n' >> README.md")
store.snapshot("tool")
m1 = store.diff_stats(store.checkpoint_for("m1"), store.tip())
store.snapshot("turn", message_id="m2")
sh("printf 'export const isoWeek = (d) => Math.ceil(d / 7);\\n' > src/week.ts")
store.snapshot("tool")
m2 = store.diff_stats(store.checkpoint_for("m2"), store.tip())
sh("printf '# dates (edited by you)\\none\\ntwo\\n' > README.md")  # the person, after the turn
plan = store.plan("refs/da/msg/m1")
print(json.dumps({"plan": {"files": [{"path": f.path, "action": f.action, "insertions": f.insertions,
                                      "deletions": f.deletions} for f in plan.files],
                           "conflicts": plan.conflicts, "insertions": plan.insertions, "deletions": plan.deletions},
                  "markers": {"m1": m1, "m2": m2}}))
"""


def _real_plan() -> tuple[dict[str, Any], dict[str, Any]]:
    """A dry run computed by the real store in a child process (the window links no engine module): a repository,
    a snapshot, the agent's commands, a later edit of the person."""
    import json

    out = subprocess.run([sys.executable, "-c", _PLAN_SCRIPT], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return data["plan"], data["markers"]


async def shoot_rewind(save: Callable[[Any, str], None], size: tuple[int, int] = (1280, 800)) -> None:
    from desktop_agent.core import events as ev
    from desktop_agent.ui.dialogs.rewind import RewindDialog
    from desktop_agent.ui.window.main_window import MainWindow

    plan, markers = await asyncio.get_running_loop().run_in_executor(None, _real_plan)
    win = MainWindow()
    win.resize(*size)
    win.show()
    c = win.controller
    win.toolbar.show_model("claude-sonnet-4-5")
    prompts = [("m1", "Use the ISO week in parseDate and drop the old test."),
               ("m2", "Make isoWeek compute the real week.")]
    for i, (mid, prompt) in enumerate(prompts, 1):
        c.turn_index = i
        c.user_prompt.emit(prompt)
        block = win.conversation.last_user_block
        c.handle_event(ev.RequestStarted(turn=1, model="claude-sonnet-4-5"))
        c.handle_event(ev.ToolCallStarted(tool_use_id=f"b{i}", name="Bash", input={"command": "npm test"}))
        c.handle_event(ev.ToolCallFinished(tool_use_id=f"b{i}", name="Bash", content="Tests: 4 passed"))
        c.handle_event(ev.TextDelta(index=0, text=f"Done with step {i}."))
        c.handle_event(ev.TurnFinished(reason="completed"))
        files, ins, dels = markers[mid]
        win.conversation.add_checkpoint_marker(mid, files, ins, dels, under=block)
    await settle(400)
    save(win.grab().toImage(), "13-rewind-markers")
    dialog = RewindDialog(plan, prompts[0][1], parent=win)
    dialog.open()
    await settle(900)  # past the safety delay: the buttons as the person sees them once ready
    save(dialog.grab().toImage(), "14-rewind-dry-run")
    dialog.close_silently()
    win.close()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    outdir = os.path.abspath(argv[0] if argv else "screenshots")
    themes = argv[1:] or ["light", "dark"]
    os.makedirs(outdir, exist_ok=True)
    isolate_home()
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
            loop.run_until_complete(shoot_rewind(save_as(theme)))
    for path in saved:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
