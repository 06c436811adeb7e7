"""The background host's fixtures: a private runtime directory and state directory per test (short paths: a Unix
socket path has at most 107 bytes), and the daemon run as a real process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINE_SERVICE = Path(__file__).with_name("line_service.py")


@dataclass
class HostEnv:
    base: Path
    env: dict[str, str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def run_dir(self) -> Path:
        return self.base / "run"

    @property
    def host_dir(self) -> Path:
        return self.run_dir / "desktop-agent"

    @property
    def socket(self) -> Path:
        return self.host_dir / "host.sock"

    @property
    def control(self) -> Path:
        return self.host_dir / "control.sock"

    @property
    def log(self) -> Path:
        return self.base / "state" / "host.log"

    @property
    def record(self) -> Path:
        return self.base / "record"

    def log_text(self) -> str:
        try:
            return self.log.read_text("utf-8")
        except FileNotFoundError:
            return ""

    def spawn(self, args: list[str], **kw: object) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(args, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                **kw)  # type: ignore[call-overload]
        self.procs.append(proc)
        return proc

    def line_host(self) -> subprocess.Popen[bytes]:
        """The daemon with the line service, in the foreground (a real process)."""
        return self.spawn([sys.executable, str(LINE_SERVICE), "--quiet"])

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "desktop_agent", "host", *args], env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def wait_status(self, timeout: float = 15.0) -> dict:
        from desktop_agent.host.daemon import control_request

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = control_request("status")
            if reply is not None:
                return reply
            if self.procs and all(p.poll() is not None for p in self.procs):
                err = self.procs[-1].communicate()[1]
                raise AssertionError(f"host exited {self.procs[-1].returncode}: {err.decode()[-2000:]} "
                                     f"{self.log_text()}")
            time.sleep(0.02)
        raise AssertionError(f"no host answered within {timeout} s; log: {self.log_text()}")


@pytest.fixture
def host_env(monkeypatch: pytest.MonkeyPatch):
    base = Path(tempfile.mkdtemp(prefix="da-host-"))
    (base / "run").mkdir(mode=0o700)
    env = dict(os.environ)
    env.update(XDG_RUNTIME_DIR=str(base / "run"), DESKTOP_AGENT_STATE_DIR=str(base / "state"),
               LINE_SERVICE_RECORD=str(base / "record"),
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]))
    for key in ("XDG_RUNTIME_DIR", "DESKTOP_AGENT_STATE_DIR", "LINE_SERVICE_RECORD"):
        monkeypatch.setenv(key, env[key])
    he = HostEnv(base=base, env=env)
    try:
        yield he
    finally:
        from desktop_agent.host.daemon import control_request

        for p in he.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in he.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        from desktop_agent.host.runtime import HostLock

        lock = HostLock(he.host_dir / "host.lock")  # a host started detached (not one of ours), found by its lock
        reply = control_request("status")
        if reply is not None and not str(reply.get("socket", "")).startswith(str(base)):
            reply = None  # never a host of another test or of this machine's user
        pid = lock.holder_pid() if lock.held_elsewhere() else (int(reply["pid"]) if reply is not None else None)
        if pid:
            try:
                os.kill(pid, signal.SIGTERM)
                for _ in range(200):
                    os.kill(pid, 0)
                    time.sleep(0.05)
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(base, ignore_errors=True)
