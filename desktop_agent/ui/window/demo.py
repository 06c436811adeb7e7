"""The offline tour's sample project and prompts (``desktop-agent --demo``; the window is
``main_window.start_tour_window``, the scripted model ``client.tour``).

The sample project is embedded here (so it ships in any wheel or bundle) and copied to a fresh temp
folder; the prompt box is pre-filled with the next of ``TOUR_PROMPTS``, so Enter is all the tour needs.
"""

from __future__ import annotations

import os
import tempfile
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


def prepare_demo_project(base: str | None = None) -> str:
    """Copy the sample project into a new temp folder and return its path."""
    folder = tempfile.mkdtemp(prefix="desktop-agent-tour-", dir=base)
    for name, content in DEMO_FILES.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8", newline="\n") as fh:
            fh.write(content)
    return folder
