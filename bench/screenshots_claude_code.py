"""Screenshots of a Claude Code session in the window (``--executor claude``), offscreen:
``.venv/bin/python bench/screenshots_claude_code.py OUTDIR [light|dark …]``.

Claude Code (``REFERENCE_CLAUDE`` or ``bench/reference_setup.sh``) runs against the fake Anthropic server on a
small project: 15-claude-code-dialog (the permission dialog with the patch computed here, over the window) and
16-claude-code-changes (the changes panel after three allowed changes and one denied, fed from Claude Code's
``tool_use_result``). A throwaway HOME keeps real keys and settings out.
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

APP = """import { loadConfig } from "./config";

export function greet(name: string): string {
  return "Hello, " + name;
}

export function total(items: number[]): number {
  let sum = 0;
  for (let i = 0; i < items.length; i++) {
    sum += items[i];
  }
  return sum;
}

export const value = 1;
"""
CONFIG = """export function loadConfig() {
  return { retries: 1, verbose: false };
}
"""


def find_claude() -> str:
    if os.environ.get("REFERENCE_CLAUDE"):
        return os.environ["REFERENCE_CLAUDE"]
    p = subprocess.run([str(ROOT / "bench" / "reference_setup.sh")], capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"reference_setup.sh failed: {p.stderr[-800:]}")
    return p.stdout.strip().splitlines()[-1]


async def shoot(outdir: str, theme: str, claude: str) -> list[str]:
    from PySide6.QtWidgets import QApplication

    import tests.fakes.anthropic_server as fa
    from desktop_agent.ui.style import apply_theme
    from desktop_agent.ui.window.main_window import MainWindow
    from desktop_agent.ui.screenshots import H, W, _composite, _settle, _until

    apply_theme(QApplication.instance(), theme)
    ws = Path(tempfile.mkdtemp(prefix="cc-shots-")) / "greeter"
    (ws / "src").mkdir(parents=True)
    app_ts, cfg_ts = ws / "src" / "app.ts", ws / "src" / "config.ts"
    app_ts.write_text(APP)
    cfg_ts.write_text(CONFIG)

    class Fake(fa.FakeAnthropic):
        def next_step(self, record):  # side calls (no tools offered) get a short text
            if "Edit" not in {t.get("name") for t in record.body.get("tools") or []}:
                return fa.reply(fa.text("Side call."))
            return super().next_step(record)

    def edit(path, old, new, id, say):
        return fa.reply(fa.text(say), fa.tool_use("Edit", {"file_path": str(path), "old_string": old,
                                                           "new_string": new}, id=id))

    saved: list[str] = []
    with Fake(chunk_size=9, validate=False) as fake:
        os.environ.update(ANTHROPIC_API_KEY="shots-key", ANTHROPIC_BASE_URL=fake.base_url, DISABLE_TELEMETRY="1",
                          DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1", CLAUDE_CODE_MAX_RETRIES="0",
                          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
        fake.script([
            edit(app_ts, "  let sum = 0;\n  for (let i = 0; i < items.length; i++) {\n    sum += items[i];\n  }\n"
                         "  return sum;", "  return items.reduce((sum, n) => sum + n, 0);", "toolu_cc_total",
                 "I'll simplify `total` with `reduce`."),
            edit(app_ts, 'return "Hello, " + name;', "return `Hello, ${name}!`;", "toolu_cc_greet",
                 "And use a template literal in `greet`."),
            edit(cfg_ts, "retries: 1, verbose: false", "retries: 3, verbose: false", "toolu_cc_cfg",
                 "Raising the retries."),
            edit(app_ts, "export const value = 1;", "export const value = 2;", "toolu_cc_value",
                 "Bumping `value`."),
            fa.reply(fa.text("Done: `total` uses `reduce`, `greet` a template literal, retries are 3. "
                             "I left `value` at 1 as you asked.")),
        ])
        win = MainWindow(executor="claude", executor_path=claude)
        win.resize(W, H)
        win.show()
        assert await win.folders.open_folder(str(ws))
        win.send("Tidy up src/app.ts and raise the retries")
        await _until(lambda: win.controller.current_dialog is not None and win.controller.current_dialog.isVisible(),
                     60)
        await _settle(400)
        path = os.path.join(outdir, f"15-claude-code-dialog-{theme}.png")
        _composite(win, win.controller.current_dialog).save(path)
        saved.append(path)
        decisions = ["allow", "allow", "allow", "deny"]
        while win.controller.busy:
            dlg = win.controller.current_dialog
            if dlg is not None and dlg.isVisible():
                await _until(dlg.is_ready)
                choice = decisions.pop(0) if decisions else "allow"
                if choice == "deny":
                    dlg.feedback.setText("keep value at 1")
                {"allow": dlg.allow_button, "deny": dlg.deny_button}[choice].click()
                await _settle(50)
            await asyncio.sleep(0.02)
        win.diff_panel.view.verticalScrollBar().setValue(0)
        await _settle(500)
        path = os.path.join(outdir, f"16-claude-code-changes-{theme}.png")
        win.grab().toImage().save(path)
        saved.append(path)
        await win.controller.end_session("prompt_input_exit", timeout=15)
        win.close()
    return saved


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    outdir = os.path.abspath(argv[0] if argv else "screenshots")
    themes = argv[1:] or ["light", "dark"]
    os.makedirs(outdir, exist_ok=True)
    claude = find_claude()
    from desktop_agent.ui.screenshots import _isolate_home

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
            saved += loop.run_until_complete(shoot(outdir, theme, claude))
    for path in saved:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
