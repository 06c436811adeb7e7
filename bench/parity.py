"""Parity of tool_result texts: the same scripted sessions through ``desktop-agent -p`` and the reference agent
(``claude -p`` from ``bench/reference_setup.sh``), against the fake Anthropic server; prints a diff per call.

Run by hand (not CI; the reference comes from npm)::

    .venv/bin/python bench/parity.py [--only SESSION] [--json OUT.json]

Each session is a list of tool calls, one per model turn, over a fresh copy of a small workspace per agent. A
``/v1/messages`` request offering ``Read`` or ``Bash`` is a main-loop request and gets step N, N being the
number of assistant messages it carries (so the reference's side calls — titles, quota probes — never eat a
step); any other request gets a short text. Texts are compared after the workspace path becomes ``$WS`` and a
list content becomes its joined text. Known deliberate deviations (SPEC App. A) show up as diffs and are
labelled ``(deviation)``. ``REFERENCE_CLAUDE=/path/to/claude`` skips the npm install.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable

from tests.fakes import anthropic_server as fa  # noqa: E402

FINAL = "Parity session done."
# Texts of deliberate deviations (SPEC App. A): the reference's Edit/Write suffix, its directory and empty-file
# texts, its name in the dontAsk text, Grep/Glob hidden behind Bash.
DEVIATIONS = ("(file state is current in your context", "EISDIR", "the contents are empty",
              "Claude Code is running in don't ask mode", "is not available in this session")

FILES = {
    "abc.txt": "alpha\nbeta\ngamma\n",
    "lines.txt": "".join(f"l{i}\n" for i in range(1, 6)),
    "app.ts": "export const value = 1",
    "notes.md": "# Notes\nTODO write docs\n",
    "src/a.py": "# TODO: fix a\n",
    "src/b.py": "# TODO: fix b\n# todo lower\n# TODO again\n",
    "dup.txt": "foo\nfoo\n",
}


def sessions(ws: str) -> dict[str, dict[str, Any]]:
    p = lambda rel: os.path.join(ws, rel)  # noqa: E731
    return {
        "read_edit_write": {"flags": [], "calls": [
            ("Read", {"file_path": p("abc.txt")}),
            ("Read", {"file_path": p("lines.txt"), "offset": 2, "limit": 2}),
            ("Read", {"file_path": p("lines.txt"), "offset": 2, "limit": 2}),
            ("Read", {"file_path": p("lines.txt"), "offset": 100}),
            ("Read", {"file_path": p("missing.txt")}),
            ("Edit", {"file_path": p("app.ts"), "old_string": "1", "new_string": "2"}),
            ("Read", {"file_path": p("app.ts")}),
            ("Edit", {"file_path": p("app.ts"), "old_string": "zeta", "new_string": "x"}),
            ("Edit", {"file_path": p("app.ts"), "old_string": "value", "new_string": "value"}),
            ("Edit", {"file_path": p("app.ts"), "old_string": "= 1", "new_string": "= 2"}),
            ("Read", {"file_path": p("dup.txt")}),
            ("Edit", {"file_path": p("dup.txt"), "old_string": "foo", "new_string": "bar"}),
            ("Edit", {"file_path": p("dup.txt"), "old_string": "foo", "new_string": "bar", "replace_all": True}),
            ("Write", {"file_path": p("new/dir/created.txt"), "content": "hi\n"}),
            ("Write", {"file_path": p("abc.txt"), "content": "over\n"}),
        ]},
        "search_and_bash": {"flags": [], "calls": [
            ("Grep", {"pattern": "TODO"}),
            ("Grep", {"pattern": "TODO", "output_mode": "content"}),
            ("Grep", {"pattern": "TODO", "output_mode": "count"}),
            ("Grep", {"pattern": "nothing-matches-this"}),
            ("Glob", {"pattern": "src/*.py"}),
            ("Glob", {"pattern": "*.nothing"}),
            ("Bash", {"command": "echo hi"}),
            ("Bash", {"command": "echo out; echo err >&2; exit 2"}),
            ("Bash", {"command": "true"}),
            ("Bash", {"command": "pwd"}),
        ]},
        "lookup_and_schema": {"flags": [], "calls": [
            ("Frobnicate", {"x": 1}),
            ("Read", {}),
            ("Read", {"file_path": p("abc.txt"), "bogus": 1}),
            ("Edit", {"file_path": p("app.ts"), "old_string": 1, "new_string": "x"}),
        ]},
        "permissions": {"flags": ["--disallowedTools", "Edit"], "skip": False, "calls": [
            ("Edit", {"file_path": p("app.ts"), "old_string": "1", "new_string": "2"}),
            ("Write", {"file_path": p("p.txt"), "content": "x"}),
            ("Read", {"file_path": "/etc/hostname"}),
            ("Bash", {"command": "touch made.txt"}),
        ]},
        "dont_ask": {"flags": ["--permission-mode", "dontAsk"], "skip": False, "calls": [
            ("Write", {"file_path": p("q.txt"), "content": "x"}),
        ]},
    }


class RoutedFake(fa.FakeAnthropic):
    """Main-loop requests get step N (N = assistant messages in the request); side calls a short text."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]):
        super().__init__(validate=False)
        self.calls = calls
        self.main: list[fa.RecordedRequest] = []

    def next_step(self, record: fa.RecordedRequest) -> fa.Reply | None:
        with self._lock:
            self.requests.append(record)
            names = {t.get("name") for t in record.body.get("tools") or []}
            if not names & {"Read", "Bash"}:
                return fa.reply(fa.text("Side call."))
            self.main.append(record)
            n = sum(1 for m in record.messages if m.get("role") == "assistant")
        if n < len(self.calls):
            name, inp = self.calls[n]
            return fa.reply(fa.tool_use(name, inp, id=f"toolu_parity_{n:02d}"))
        return fa.reply(fa.text(FINAL))

    def results(self) -> dict[str, tuple[str, bool]]:
        out: dict[str, tuple[str, bool]] = {}
        for record in self.main:
            for m in record.messages:
                for b in m.get("content") if isinstance(m.get("content"), list) else []:
                    if b.get("type") == "tool_result":
                        content = b.get("content")
                        if isinstance(content, list):
                            content = "\n".join(x.get("text", "") for x in content if isinstance(x, dict))
                        out[b["tool_use_id"]] = (str(content), bool(b.get("is_error")))
        return out


def make_ws(root: Path) -> Path:
    ws = Path(tempfile.mkdtemp(prefix="ws-", dir=root))
    for rel, content in FILES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(content)
    return ws


def env_for(home: Path, fake: RoutedFake) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_", "CLAUDE_"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "cfg"),
               ANTHROPIC_API_KEY="parity-key", ANTHROPIC_BASE_URL=fake.base_url, DISABLE_TELEMETRY="1",
               DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               CLAUDE_CODE_MAX_RETRIES="0", NO_COLOR="1", IS_SANDBOX="1", PYTHONPATH=str(ROOT))
    return env


def run_agent(argv0: list[str], session: dict[str, Any], work: Path, name: str) -> tuple[dict[str, Any], str]:
    ws = make_ws(work)
    calls = sessions(str(ws))[name]["calls"]
    flags = list(sessions(str(ws))[name]["flags"])
    if session.get("skip", True):
        flags += ["--dangerously-skip-permissions"]
    home = Path(tempfile.mkdtemp(prefix="home-", dir=work))
    with RoutedFake(calls) as fake:
        proc = subprocess.run([*argv0, "-p", "Run the parity session.", "--output-format", "json", *flags],
                              cwd=ws, env=env_for(home, fake), capture_output=True, text=True, timeout=300)
        results = fake.results()
    norm = {k: (re.sub(re.escape(str(ws)), "$WS", text), err) for k, (text, err) in results.items()}
    note = "" if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
    return {"calls": calls, "results": norm}, note


def find_reference() -> str:
    if os.environ.get("REFERENCE_CLAUDE"):
        return os.environ["REFERENCE_CLAUDE"]
    p = subprocess.run([str(HERE / "reference_setup.sh")], capture_output=True, text=True, timeout=900)
    if p.returncode != 0 or not p.stdout.strip():
        sys.exit(f"reference_setup.sh failed ({p.returncode}): {p.stderr.strip()[-800:]}")
    return p.stdout.strip().splitlines()[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    reference = find_reference()
    version = subprocess.run([reference, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"reference: {reference} ({version})")
    work = Path(tempfile.mkdtemp(prefix="parity-"))
    report: dict[str, Any] = {"reference_version": version, "sessions": {}}
    same = differ = 0
    try:
        for name, session in sessions("$WS").items():
            if args.only and name not in args.only:
                continue
            ours, ours_note = run_agent([PY, "-m", "desktop_agent"], session, work, name)
            ref, ref_note = run_agent([reference], session, work, name)
            print(f"\n== {name}" + (f"   [ours: {ours_note}]" if ours_note else "")
                  + (f"   [reference: {ref_note}]" if ref_note else ""))
            rows = []
            for i, (tool, inp) in enumerate(ours["calls"]):
                key = f"toolu_parity_{i:02d}"
                a, b = ours["results"].get(key), ref["results"].get(key)
                ok = a == b
                same += ok
                differ += not ok
                label = f"{i:02d} {tool} {json.dumps(inp)[:70]}"
                if ok:
                    print(f"  =  {label}")
                else:
                    dev = " (deviation)" if any(d in str(a) + str(b) for d in DEVIATIONS) else ""
                    print(f"  != {label}{dev}\n       ours: {a!r}\n       ref:  {b!r}")
                rows.append({"call": label, "same": ok, "ours": a, "reference": b})
            report["sessions"][name] = rows
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{same} of {same + differ} tool_results match the reference ({differ} differ)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
