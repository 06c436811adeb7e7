"""Does an executor give up on an unanswered ``can_use_tool``? ``.venv/bin/python bench/bench_approval_wait.py
[--executor process|claude] [--hold SECONDS]`` (default: both, 600 s).

One Edit against the fake Anthropic server; the prompter leaves the question open for ``--hold`` seconds, then
allows. Prints whether the executor withdrew it (``control_cancel_request``: the ask is cancelled), after how
long, and whether the allow was still applied (the file changed). Claude Code comes from ``REFERENCE_CLAUDE`` or
``bench/reference_setup.sh``; its side calls (requests without tools) get a short text.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def find_claude() -> str:
    if os.environ.get("REFERENCE_CLAUDE"):
        return os.environ["REFERENCE_CLAUDE"]
    p = subprocess.run([str(ROOT / "bench" / "reference_setup.sh")], capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"reference_setup.sh failed: {p.stderr[-800:]}")
    return p.stdout.strip().splitlines()[-1]


async def measure(kind: str, hold: float) -> dict:
    import tests.fakes.anthropic_server as fa
    from desktop_agent.client import SessionOptions, make_client
    from desktop_agent.core.permission import PermissionReply

    work = Path(tempfile.mkdtemp(prefix="approval-wait-"))
    ws = work / "ws"
    ws.mkdir()
    app = ws / "app.ts"
    app.write_text("export const value = 1\n")
    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        os.environ[var] = str(work / var.lower())
    for k in [k for k in os.environ if k.startswith(("ANTHROPIC_", "CLAUDE_"))]:
        del os.environ[k]
    out: dict = {"executor": kind, "hold_s": hold, "withdrawn_after_s": None}

    class Holder:
        waits = True

        async def ask(self, request):
            t0 = time.monotonic()
            try:
                await asyncio.sleep(hold)
            except asyncio.CancelledError:
                out["withdrawn_after_s"] = round(time.monotonic() - t0, 1)
                raise
            return PermissionReply(behavior="allow")

    class Fake(fa.FakeAnthropic):
        def next_step(self, record):
            if not record.body.get("tools"):
                return fa.reply(fa.text("Side call."))
            return super().next_step(record)

    with Fake(validate=kind != "claude") as fake:
        os.environ.update(ANTHROPIC_API_KEY="wait-key", ANTHROPIC_BASE_URL=fake.base_url, DISABLE_TELEMETRY="1",
                          DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
        fake.script([fa.reply(fa.tool_use("Read", {"file_path": str(app)}, id="toolu_r")),
                     fa.reply(fa.tool_use("Edit", {"file_path": str(app), "old_string": "value = 1",
                                                   "new_string": "value = 2"}, id="toolu_e")),
                     fa.reply(fa.text("done"))])
        executable = find_claude() if kind == "claude" else None
        handle = await make_client(kind, executable).open(str(ws), SessionOptions(prompter=Holder()))  # type: ignore
        t0 = time.monotonic()
        async for _event in handle.submit("Change value to 2"):
            pass
        out["turn_s"] = round(time.monotonic() - t0, 1)
        out["applied"] = app.read_text() == "export const value = 2\n"
        await handle.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--executor", choices=["process", "claude"], action="append")
    ap.add_argument("--hold", type=float, default=600.0)
    args = ap.parse_args()
    for kind in args.executor or ["process", "claude"]:
        print(asyncio.run(measure(kind, args.hold)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
