"""What the screenshot scripts share (``screenshots`` and ``screenshots_changes``): a throwaway HOME, waiting
for a condition or for Qt to paint, and a turn in flight fed through the window's controller.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time


def isolate_home() -> None:
    home = tempfile.mkdtemp(prefix="desktop-agent-shots-")
    for var, sub in (("HOME", ""), ("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                     ("XDG_STATE_HOME", ".local/state")):
        os.environ[var] = os.path.join(home, sub) if sub else home
    os.environ.pop("ANTHROPIC_API_KEY", None)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


async def until(cond, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError("screenshot scenario timed out")
        await asyncio.sleep(0.02)
    return cond()


async def settle(ms: int = 150) -> None:
    """Let Qt paint and lay out. Never processEvents() inside a coroutine: the qasync loop runs Qt's
    events itself, and a nested pass would re-enter other asyncio tasks."""
    await asyncio.sleep(ms / 1000)


def populate_streaming(win, folder: str) -> None:
    """A turn in flight, fed through the controller as the engine would (deterministic for the picture)."""
    from desktop_agent.core import events as ev

    c = win.controller
    win.folder = folder
    win.conversation.cwd = folder
    win.diff_panel.cwd = folder
    win.toolbar.show_model("claude-sonnet-4-5")
    c.turn_index = 1
    c.user_prompt.emit("Why does `npm test` fail on the date parser? Fix it.")
    c.handle_event(ev.RequestStarted(turn=1, model="claude-sonnet-4-5"))
    c.handle_event(ev.TextDelta(index=0, text="Let me find the parser and the failing test."))
    c.handle_event(ev.ToolCallStarted(tool_use_id="t1", name="Grep", input={"pattern": "parseDate", "path": folder}))
    c.handle_event(ev.ToolCallFinished(tool_use_id="t1", name="Grep", content="Found 3 files\nsrc/date.ts\n"
                                       "src/date.test.ts\nsrc/app.ts"))
    c.handle_event(ev.ToolCallStarted(tool_use_id="t2", name="Read", input={"file_path": f"{folder}/src/date.ts"}))
    c.handle_event(ev.ToolCallFinished(tool_use_id="t2", name="Read", content="\n".join(f"{i}\tline" for i in range(1, 43))))
    c.handle_event(ev.ToolCallStarted(tool_use_id="t3", name="Bash", input={"command": "npm test -- src/date.test.ts"}))
    c.handle_event(ev.ToolCallFinished(tool_use_id="t3", name="Bash", is_error=True,
                                       content="Exit code 1\nFAIL src/date.test.ts\n  ✕ parses ISO week dates"))
    c.handle_event(ev.RequestStarted(turn=2, model="claude-sonnet-4-5"))
    c.handle_event(ev.TextDelta(index=0, text=(
        "The test fails because `parseDate` reads the **week number** with `getDay()` instead of the ISO week. "
        "Here is the fix I'll make:\n\n```ts\nexport function isoWeek(d: Date): number {\n"
        "  const t = new Date(Date.UTC(d.getFullYear(), d.getMonth(), d.getDate()));\n"
        "  t.setUTCDate(t.getUTCDate() + 4 - (t.getUTCDay() || 7));\n"
        "  return Math.ceil(((t.getTime() - Date.UTC(t.getUTCFullYear(), 0, 1)) / 864e5 + 1) / 7);\n}\n```\n\n"
        "Then `parseDate` calls `isoWeek` for the `W` token")))
    c.handle_event(ev.ToolCallStarted(tool_use_id="t4", name="Bash", input={"command": "npx tsc --noEmit -p ."}))
    c.handle_event(ev.ToolCallProgress(tool_use_id="t4", data={
        "type": "bash_progress", "elapsed_s": 4.2,
        "output": "src/date.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.\n"
                  "src/date.ts(31,18): error TS2554: Expected 1 arguments, but got 2.\n"
                  "Checking src/app.ts …\n"}))
    c.handle_event(ev.Usage(input_tokens=11800, output_tokens=640, session_tokens=12440, session_cost_usd=0.0451))
    win.conversation.close_text()
    c._set_status("tool", "Bash")
