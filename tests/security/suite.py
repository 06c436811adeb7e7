"""A security test module's own cases through the real CLI: ``run_module_cases`` runs a list of case dicts (the
``cases.py`` format) with the machinery of ``harness`` — grouped into CLI runs against one ``ScriptFake`` — and
returns case id -> (run, case). ``twin_modes`` makes the copies a case needs in each mode; ``unix_listener``
starts a Unix socket server process that logs every connection (the canary of the socket cases).
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.security import harness

MODES = {
    # id suffix: (mode, extra args, extra env)
    "bypass": ("bypassPermissions", [], {}),
    "default-allowed": ("default", ["--allowedTools", "Bash"], {}),
    "bypass@no-analysis": ("bypassPermissions", [], dict(harness.SKIP_ANALYSIS_ENV)),
    "default-allowed@no-analysis": ("default", ["--allowedTools", "Bash"], dict(harness.SKIP_ANALYSIS_ENV)),
}


def twin_modes(case: dict[str, Any], modes: list[str]) -> list[dict[str, Any]]:
    """One copy of ``case`` per mode of ``MODES`` (``id`` gets ``@mode``; env and args merged)."""
    out = []
    for name in modes:
        mode, args, env = MODES[name]
        twin = copy.deepcopy(case)
        twin["id"] = f"{case['id']}@{name}"
        twin["mode"] = mode
        twin["args"] = [*case.get("args", []), *args]
        twin["env"] = {**case.get("env", {}), **env}
        twin["no_analysis"] = "no-analysis" in name
        out.append(twin)
    return out


def case(cls: str, id: str, command: str, checks: list[tuple], **extra: Any) -> dict[str, Any]:
    c = {"cls": cls, "id": id, "tool": "Bash", "input": {"command": command}, "checks": checks,
         "mode": "bypassPermissions", "settings": None, "args": [], "env": {}, "variant": "plain",
         "project_settings": None, "expect_exit": None, "stdin": False}
    c.update(extra)
    return c


def run_module_cases(cases: list[dict[str, Any]], root: Path) -> dict[str, tuple[harness.Run, dict[str, Any]]]:
    runs = harness.group_runs(cases)
    with harness.ScriptFake() as fake:
        harness.execute_all(runs, root, fake, workers=int(os.environ.get("SECURITY_WORKERS") or 3))
    return {c["id"]: (run, c) for run in runs for c in run.cases}


LISTENER = r'''
import os, socket, sys, threading
log, ready, addrs = sys.argv[1], sys.argv[2], sys.argv[3:]
lock = threading.Lock()
def serve(srv, name):
    while True:
        conn, _ = srv.accept()
        conn.settimeout(2)
        try:
            data = conn.recv(200)
        except OSError:
            data = b""
        with lock, open(log, "ab") as fh:
            fh.write(name.encode() + b" " + (data or b"<connect>") + b"\n")
        conn.close()
for a in addrs:
    s = socket.socket(socket.AF_UNIX)
    s.bind("\0" + a[1:] if a.startswith("@") else a)
    s.listen(16)
    threading.Thread(target=serve, args=(s, a), daemon=True).start()
open(ready, "w").close()
threading.Event().wait()
'''


def unix_listener(log: Path, addrs: list[str], wrap: list[str] | None = None) -> subprocess.Popen:
    """A process listening on every address (a path, or ``@name`` abstract), appending ``<addr> <data>`` to
    ``log`` per connection. ``wrap``: a prefix (bubblewrap in a network namespace of its own)."""
    ready = log.with_suffix(".ready")
    proc = subprocess.Popen([*(wrap or []), sys.executable, "-c", LISTENER, str(log), str(ready), *addrs],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"listener did not start: {proc.stderr.read().decode() if proc.stderr else ''}")
        time.sleep(0.02)
    return proc


def logged(log: Path) -> str:
    try:
        return log.read_text(errors="replace")
    except OSError:
        return ""
