"""``desktop-agent host``: the background host that keeps sessions running when the window closes.

- ``desktop-agent host`` starts it detached (stdio to its log) and returns once its socket answers (or says that
  one is already running);
- ``--foreground`` runs it in this process (debugging: the log goes to stderr too; what a systemd unit runs);
- ``--status`` says whether it runs: pid, socket, uptime, clients, sessions, pending questions (``--json``: one
  JSON object; exit 3 when it does not run);
- ``--stop`` stops it gracefully (its sessions end cleanly, their transcripts valid) and waits until it is gone.

``host`` is a subcommand only as the first argument (``desktop-agent ./host`` opens a folder named host); the
reference agent's flags are not affected.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

HOST_USAGE = """Usage: desktop-agent host [--foreground]   start the background host (keeps sessions running
                                            when the window closes)
       desktop-agent host --status [--json] is it running: pid, socket, sessions, pending questions
       desktop-agent host --stop            end its sessions cleanly and stop it

  --foreground   run in this terminal (logs to stderr as well as the log file)
"""


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _err(text: str) -> None:
    sys.stderr.write(f"desktop-agent: {text}\n")
    sys.stderr.flush()


def main(argv: list[str]) -> int:
    flags = set()
    for arg in argv:
        if arg in ("--foreground", "--stop", "--status", "--json", "--help", "-h"):
            flags.add(arg)
        else:
            _err(f"host: unknown argument '{arg}' (see desktop-agent host --help)")
            return 2
    if flags & {"--help", "-h"}:
        sys.stdout.write(HOST_USAGE)
        return 0
    actions = flags & {"--foreground", "--stop", "--status"}
    if len(actions) > 1:
        _err("host: --foreground, --status and --stop go one at a time")
        return 2
    if "--json" in flags and "--status" not in flags:
        _err("host: --json goes with --status")
        return 2
    from desktop_agent.host import daemon
    from desktop_agent.host.runtime import UnsafeDirectory, host_paths

    paths = host_paths()
    try:
        if "--status" in flags:
            return _status(daemon.control_request("status", paths=paths), as_json="--json" in flags,
                           socket_path=str(paths.socket), log_path=str(paths.log))
        if "--stop" in flags:
            pid = daemon.stop_host(paths=paths)
            _say("The background host is not running." if pid is None else f"The background host (pid {pid}) "
                 f"stopped; its sessions ended cleanly.")
            return 0
        if "--foreground" in flags:
            return daemon.run_foreground(daemon.default_service, paths=paths)
        status = daemon.start_background(paths=paths)
    except daemon.HostUnavailable as exc:
        _err(str(exc))
        return 1
    except UnsafeDirectory as exc:
        _err(str(exc))
        return 1
    if status.get("started"):
        _say(f"The background host started (pid {status.get('pid')}) on {status.get('socket')}; "
             f"its log: {status.get('log')}")
    else:
        _say(f"The background host is already running (pid {status.get('pid')}) on {status.get('socket')}.")
    return 0


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    d, rest = divmod(seconds, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    if d:
        return f"{d}d {h}h {m}m"
    if h:
        return f"{h}h {m}m"
    if m:
        return f"{m}m {s}s"
    return f"{s}s"


def _status(reply: dict[str, Any] | None, *, as_json: bool, socket_path: str, log_path: str) -> int:
    if reply is None:
        if as_json:
            _say(json.dumps({"running": False, "socket": socket_path, "log": log_path}))
        else:
            _say(f"The background host is not running (socket {socket_path}; log {log_path}).")
        return 3
    sessions = reply.get("sessions") or []
    pending = reply.get("pending") or []
    if as_json:
        _say(json.dumps({"running": True, **{k: v for k, v in reply.items() if k != "ok"}}))
        return 0
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(reply.get("started_at") or 0)))
    lines = [
        f"The background host is running (pid {reply.get('pid')}).",
        f"  socket:   {reply.get('socket')}",
        f"  log:      {reply.get('log')}",
        f"  up:       {_duration(float(reply.get('uptime_s') or 0))} (since {started})",
        f"  clients:  {reply.get('clients', 0)} attached",
        f"  sessions: {len(sessions)}",
    ]
    for s in sessions:
        state = s.get("state") or ("running" if s.get("busy") else "idle")
        lines.append(f"    {s.get('session_id', '?')}  {state}  {s.get('cwd', '')}".rstrip())
    lines.append(f"  pending questions: {len(pending)}")
    now = time.time()
    for q in pending:
        waited = _duration(max(0.0, now - float(q.get("asked_at") or now)))
        what = q.get("summary") or q.get("tool_name") or ""
        lines.append(f"    {q.get('session_id', '?')}  {q.get('tool_name', '?')}  {what}  (waiting {waited})"
                     if what != q.get("tool_name") else
                     f"    {q.get('session_id', '?')}  {what}  (waiting {waited})")
    if reply.get("error"):
        lines.append(f"  error: {reply['error']}")
    _say("\n".join(lines))
    return 0
