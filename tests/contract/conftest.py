"""Fixtures of the contract suite: every scenario runs over the three transports of ``client.transports``:

- ``memory``: ``make_client("inprocess")`` — the host in this process, on the test's loop;
- ``unix``: a host in its own process (``host_process``) reached over a Unix socket (``client.session.SocketClient``);
  ``kill_host()`` is ``kill -9`` of that process;
- ``pipe``: ``make_client("process")`` — our CLI as an executor child.

All of them against the fake Anthropic API (``tests/fakes``), named by the environment the host inherits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

import pytest

from desktop_agent.client import SessionOptions, make_client
from desktop_agent.client.session import SocketClient
from tests.client.conftest import HOLD, ScriptedPrompter, fake, run_turn, ws  # noqa: F401 - fixtures

TRANSPORTS = ["memory", "unix", "pipe"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class HostProcess:
    """The unix transport's host: started on first use, killed (``SIGKILL``) at the end."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="da-host-", dir="/tmp")
        os.chmod(self.dir, 0o700)
        self.path = os.path.join(self.dir, "host.sock")
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> str:
        if self.proc is None or self.proc.poll() is not None:
            env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
            self.proc = subprocess.Popen([sys.executable, "-m", "tests.contract.host_process", self.path], cwd=ROOT,
                                         env=env, stdout=subprocess.PIPE, text=True)
            assert self.proc.stdout is not None
            line = self.proc.stdout.readline()
            assert line.strip() == "ready", f"the host did not start: {line!r}"
        return self.path

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def restart(self) -> None:
        self.kill()
        if os.path.exists(self.path):
            os.unlink(self.path)  # a dead host's socket file
        self.start()


@pytest.fixture
def host_process():
    hp = HostProcess()
    yield hp
    hp.kill()
    for name in os.listdir(hp.dir):
        os.unlink(os.path.join(hp.dir, name))
    os.rmdir(hp.dir)


@pytest.fixture
def open_handle(ws, host_process) -> Callable[..., Any]:  # noqa: F811
    handles: list[Any] = []

    async def _open(transport: str, prompter: Any = None, **kw: Any) -> Any:
        options = SessionOptions(prompter=prompter, **kw)
        if transport == "memory":
            client: Any = make_client("inprocess")
        elif transport == "unix":
            client = SocketClient(host_process.start())
        else:
            client = make_client("process")
        handle = await client.open(str(ws), options)
        handles.append(handle)
        return handle

    yield _open
    for h in handles:  # an executor a failing test left behind
        pid = h.state.pid
        if pid and h.state.alive and h.executor == "process":
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return False


__all__ = ["HOLD", "ScriptedPrompter", "TRANSPORTS", "run_turn"]
