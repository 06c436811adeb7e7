"""The offline tour (``desktop-agent --demo``): the real window and engine, a scripted model, a sample project.

The sample project is embedded here (so it ships in any wheel or bundle) and copied to a fresh temp
folder; the scripted model plays the design documents' example — read ``app.ts``, propose
``value = 2`` (the dialog asks), then a multi-file change (edit ``util.ts`` and ``app.ts``, create
``app.test.ts``). Replies adapt to what the user decided, and the prompt box is pre-filled with
the next step, so Enter is all the tour needs.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Callable

DEMO_FILES: dict[str, str] = {
    "app.ts": (
        'import { greet } from "./util";\n\n'
        "export const value = 1;\n\n"
        "export function main(): void {\n"
        '  console.log(greet("tour"), value);\n'
        "}\n"
    ),
    "util.ts": (
        "export function greet(name: string): string {\n"
        "  return `Hello, ${name}!`;\n"
        "}\n"
    ),
    "package.json": '{\n  "name": "tour-sample",\n  "version": "1.0.0",\n  "private": true,\n'
                    '  "scripts": { "test": "node --test" }\n}\n',
    "README.md": "# Tour sample\n\nA tiny TypeScript project for Desktop Agent's offline tour. The tour works on a\n"
                 "copy in a temporary folder, so nothing here changes.\n",
}
TOUR_PROMPTS = [
    "Change value to 2",
    "Add a double() helper to util.ts, use it in app.ts, and add a test",
]
END_TEXT = ("That's the end of the scripted tour. To work on your own code, add an API key in "
            "**Edit ▸ Settings…** (Ctrl+,) and open a folder with **File ▸ Open Folder…** (Ctrl+O).")


def prepare_demo_project(base: str | None = None) -> str:
    """Copy the sample project into a new temp folder and return its path."""
    folder = tempfile.mkdtemp(prefix="desktop-agent-tour-", dir=base)
    for name, content in DEMO_FILES.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8", newline="\n") as fh:
            fh.write(content)
    return folder


def _last_results_failed(request: Any) -> bool:
    """Whether the newest tool_result in the request is an error (the user denied the edit)."""
    for msg in reversed(request.messages):
        content = (msg.get("message") or msg).get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            if results:
                return any(b.get("is_error") for b in results)
    return False


def tour_steps(folder: str) -> list[Callable[[Any], Any]]:
    """One function per model request: request → Reply (so replies follow the user's decisions)."""
    from desktop_agent.model.scripted import reply, text, tool_use

    app = os.path.join(folder, "app.ts")
    util = os.path.join(folder, "util.ts")
    test = os.path.join(folder, "app.test.ts")
    d = 0.015

    def read_app(_req: Any) -> Any:
        return reply(text("I'll look at `app.ts` first."), tool_use("Read", {"file_path": app}, id="toolu_tour_read"),
                     delay=d)

    def edit_value(_req: Any) -> Any:
        return reply(text("`value` is declared on line 3. I'll change it to `2`."),
                     tool_use("Edit", {"file_path": app, "old_string": "export const value = 1;",
                                       "new_string": "export const value = 2;"}, id="toolu_tour_edit"), delay=d)

    def done_value(req: Any) -> Any:
        if _last_results_failed(req):
            return reply(text("Understood — I left `app.ts` unchanged. Tell me what you'd like instead."), delay=d)
        return reply(text("Changed `value` to **2** in `app.ts`. The diff is in the *Changes* panel on the right.\n\n"
                          "Next, try a change that touches several files."), delay=d)

    def read_util(_req: Any) -> Any:
        return reply(text("Let me read `util.ts` before changing it."),
                     tool_use("Read", {"file_path": util}, id="toolu_tour_read2"), delay=d)

    def multi_edit(_req: Any) -> Any:
        return reply(
            text("I'll add the helper, use it in `app.ts`, and create a small test."),
            tool_use("Edit", {"file_path": util,
                              "old_string": "  return `Hello, ${name}!`;\n}\n",
                              "new_string": "  return `Hello, ${name}!`;\n}\n\nexport function double(n: number): number {\n"
                                            "  return n * 2;\n}\n"}, id="toolu_tour_util"),
            tool_use("Edit", {"file_path": app, "old_string": 'import { greet } from "./util";',
                              "new_string": 'import { double, greet } from "./util";'}, id="toolu_tour_import"),
            tool_use("Edit", {"file_path": app, "old_string": '  console.log(greet("tour"), value);',
                              "new_string": '  console.log(greet("tour"), double(value));'}, id="toolu_tour_use"),
            tool_use("Write", {"file_path": test, "content":
                               'import { test } from "node:test";\nimport assert from "node:assert/strict";\n'
                               'import { double } from "./util";\n\ntest("double", () => {\n'
                               "  assert.equal(double(2), 4);\n});\n"}, id="toolu_tour_write"),
            delay=d)

    def done_multi(req: Any) -> Any:
        return reply(text(
            "Done. `util.ts` now exports `double()`:\n\n```ts\nexport function double(n: number): number {\n"
            "  return n * 2;\n}\n```\n\n`app.ts` logs `double(value)`, and `app.test.ts` checks it. Every change is "
            "listed in the *Changes* panel, grouped by turn — rejected ones stay visible there.\n\n" + END_TEXT),
            delay=d)

    return [read_app, edit_value, done_value, read_util, multi_edit, done_multi]


def tour_client(folder: str) -> Any:
    """A ScriptedModelClient that plays the tour, then answers anything else with a closing note."""
    from desktop_agent.model.scripted import ScriptedModelClient, reply, text

    steps = tour_steps(folder)

    class TourClient(ScriptedModelClient):
        def _next(self, request: Any, kind: str) -> Any:  # type: ignore[override]
            self.requests.append(request)
            self.kinds.append(kind)
            if self.position < len(steps):
                step = steps[self.position](request)
                self.position += 1
                return step
            return reply(text(END_TEXT), delay=0.01)

    return TourClient([], chunk_size=6)


def start_tour_window(show: bool = True) -> Any:
    """Open a tour window (its own MainWindow) on a fresh copy of the sample project."""
    from desktop_agent.ui.window.main_window import MainWindow

    folder = prepare_demo_project()
    win = MainWindow(demo=True, client_factory=lambda: tour_client(folder),
                     session_kwargs={"trusted": True})
    win.tour_action.setVisible(True)
    win.tour_label.setVisible(True)
    prompts = list(TOUR_PROMPTS)

    def prefill() -> None:
        if prompts and not win.prompt.toPlainText():
            win.prompt.setPlainText(prompts.pop(0))
            win.prompt.moveCursor(win.prompt.textCursor().MoveOperation.End)

    def opened(_f: str) -> None:
        from PySide6.QtCore import QCoreApplication

        win.show_model(QCoreApplication.translate("MainWindow", "scripted (offline tour)"), enabled=False)
        prefill()

    win.folder_opened.connect(opened)
    win.controller.turn_finished.connect(lambda _e: prefill())
    if show:
        win.show()
    win.open_folder_soon(folder)
    return win
