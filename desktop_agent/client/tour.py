"""The offline tour's scripted model (``SessionOptions(script="tour")``, in process only): it plays the design
documents' example on the tour's sample project (``ui.window.demo``) — read ``app.ts``, propose ``value = 2``
(the dialog asks), then a multi-file change — and its replies follow what the user decided.
"""

from __future__ import annotations

import os
from typing import Any, Callable

END_TEXT = ("That's the end of the scripted tour. To work on your own code, add an API key in "
            "**Edit ▸ Settings…** (Ctrl+,) and open a folder with **File ▸ Open Folder…** (Ctrl+O).")


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
                              "new_string": "  return `Hello, ${name}!`;\n}\n\n"
                                            "export function double(n: number): number {\n"
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
        def _next(self, request: Any, kind: str) -> Any:
            self.requests.append(request)
            self.kinds.append(kind)
            if self.position < len(steps):
                step = steps[self.position](request)
                self.position += 1
                return step
            return reply(text(END_TEXT), delay=0.01)

    return TourClient([], chunk_size=6)
