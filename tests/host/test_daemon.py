"""The background host's doors, with real processes and real sockets: the peer uid (``SO_PEERCRED``) refuses
another user even when the file permissions would let them in; a stale socket file is replaced; a live one
means "already running"; two hosts started at once leave one running; ``--status`` and ``--stop``; a client
killed with SIGKILL leaves the host and its sessions running; an unsafe directory is never used."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from desktop_agent.host.daemon import HostUnavailable, control_request, start_background, stop_host
from desktop_agent.host.runtime import UnsafeDirectory, ensure_private_dir, host_paths, socket_answers
from tests.host.conftest import LINE_SERVICE, HostEnv


def _connect(path, timeout: float = 5.0) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(str(path))
    return s


def _lines(s: socket.socket, n: int) -> list[dict]:
    buf = b""
    while buf.count(b"\n") < n:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return [json.loads(x) for x in buf.splitlines()[:n]]


def test_paths_are_in_the_runtime_dir_and_the_state_dir(host_env: HostEnv):
    paths = host_paths()
    assert paths.socket == host_env.socket and paths.control == host_env.control
    assert paths.log == host_env.log


def test_runtime_dir_falls_back_to_a_private_tmp_dir_when_xdg_is_not_ours(host_env: HostEnv, monkeypatch):
    from desktop_agent.util import dirs

    fallback = f"/tmp/desktop-agent-{os.getuid()}"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert str(dirs.host_runtime_dir()) == fallback
    loose = host_env.base / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(loose))  # open to others: not a runtime dir by the XDG spec
    assert str(dirs.host_runtime_dir()) == fallback
    link = host_env.base / "link"
    link.symlink_to(host_env.run_dir)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(link))
    assert str(dirs.host_runtime_dir()) == fallback
    os.chown(loose, 65534, 65534)
    os.chmod(loose, 0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(loose))  # someone else's
    assert str(dirs.host_runtime_dir()) == fallback
    monkeypatch.setenv("XDG_RUNTIME_DIR", "relative/run")
    assert str(dirs.host_runtime_dir()) == fallback


def test_an_unsafe_directory_is_never_used(host_env: HostEnv):
    target = host_env.base / "elsewhere"
    target.mkdir(mode=0o700)
    host_env.host_dir.symlink_to(target)
    with pytest.raises(UnsafeDirectory, match="symlink"):
        ensure_private_dir(host_env.host_dir)
    host_env.host_dir.unlink()
    host_env.host_dir.mkdir(mode=0o700)
    os.chmod(host_env.host_dir, 0o773)
    with pytest.raises(UnsafeDirectory, match="writable by other users"):
        ensure_private_dir(host_env.host_dir)
    os.chmod(host_env.host_dir, 0o755)  # readable by others but never writable: tightened
    ensure_private_dir(host_env.host_dir)
    assert os.stat(host_env.host_dir).st_mode & 0o777 == 0o700
    os.chown(host_env.host_dir, 65534, 65534)
    with pytest.raises(UnsafeDirectory, match="belongs to uid 65534"):
        ensure_private_dir(host_env.host_dir)
    # and the host refuses to start there, saying why, binding nothing
    proc = host_env.line_host()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "belongs to uid 65534" in host_env.log_text()
    assert not host_env.socket.exists()


def test_the_host_serves_its_user_with_private_files(host_env: HostEnv):
    host_env.line_host()
    status = host_env.wait_status()
    assert status["socket"] == str(host_env.socket) and status["pid"] == host_env.procs[0].pid
    assert os.stat(host_env.host_dir).st_mode & 0o777 == 0o700
    for path in (host_env.socket, host_env.control):
        assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(host_env.log).st_mode & 0o777 == 0o600
    s = _connect(host_env.socket)
    s.sendall(b'{"open": "s1"}\n')
    hello, ok = _lines(s, 2)
    assert hello["pid"] == host_env.procs[0].pid and ok == {"ok": True, "pid": host_env.procs[0].pid}
    s.close()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"),
                    reason="needs root, setpriv (util-linux) and /usr/bin/python3 to connect as another uid")
def test_a_connection_from_another_uid_is_refused_by_the_peer_check(host_env: HostEnv):
    host_env.line_host()
    host_env.wait_status()
    # open every door the file system has, so that only SO_PEERCRED stands between nobody and the host
    for d in (host_env.base, host_env.run_dir, host_env.host_dir):
        os.chmod(d, 0o755)
    for path in (host_env.socket, host_env.control):
        os.chmod(path, 0o666)
    probe = (
        "import socket, sys\n"
        "out = []\n"
        "for path in sys.argv[1:]:\n"
        "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.settimeout(10)\n"
        "    s.connect(path)\n"  # succeeds: the permissions let us in
        "    try:\n"
        "        s.sendall(b'{\"op\": \"status\"}\\n{\"open\": \"intruder\"}\\n')\n"
        "        data = s.recv(65536)\n"
        "    except (ConnectionResetError, BrokenPipeError):\n"
        "        data = b''\n"
        "    out.append('connected:' + repr(data))\n"
        "print(' '.join(out))\n"
    )
    result = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3",
                             "-c", probe, str(host_env.socket), str(host_env.control)],
                            capture_output=True, text=True, timeout=30, cwd="/")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["connected:b''", "connected:b''"]  # in, and closed without a byte
    deadline = time.monotonic() + 5
    while host_env.log_text().count("from uid 65534") < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    for d in (host_env.base, host_env.run_dir, host_env.host_dir):
        os.chmod(d, 0o700)  # XDG_RUNTIME_DIR must be private again for this process to find the host there
    log = host_env.log_text()
    assert "refused a session connection from uid 65534" in log
    assert "refused a control connection from uid 65534" in log
    status = control_request("status")
    assert status is not None and status["refused"] == 2 and status["sessions"] == []  # nothing was opened
    s = _connect(host_env.socket)  # its own user still gets in
    assert _lines(s, 1)[0]["pid"] == host_env.procs[0].pid
    s.close()


def _stale_socket(path) -> None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()  # the file stays; nobody listens (a host killed with SIGKILL leaves this)


def test_a_stale_socket_file_does_not_stop_the_host_from_starting(host_env: HostEnv):
    ensure_private_dir(host_env.host_dir)
    _stale_socket(host_env.socket)
    _stale_socket(host_env.control)
    assert host_env.socket.exists() and not socket_answers(host_env.socket)
    host_env.line_host()
    status = host_env.wait_status()
    assert status["pid"] == host_env.procs[0].pid
    assert socket_answers(host_env.socket)
    assert f"replacing a stale {host_env.socket}" in host_env.log_text()


def test_a_host_killed_with_sigkill_is_replaced_by_the_next_start(host_env: HostEnv):
    first = host_env.line_host()
    host_env.wait_status()
    first.kill()
    first.wait()
    assert host_env.socket.exists() and not socket_answers(host_env.socket)  # stale now
    second = host_env.line_host()
    assert host_env.wait_status()["pid"] == second.pid


def test_a_live_socket_means_already_running(host_env: HostEnv):
    ensure_private_dir(host_env.host_dir)
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    squatter.bind(str(host_env.socket))
    squatter.listen(1)
    try:
        proc = host_env.line_host()
        proc.communicate(timeout=30)
        assert proc.returncode == 1
        assert "already running" in host_env.log_text()
        assert socket_answers(host_env.socket)  # left alone
    finally:
        squatter.close()


def test_two_hosts_started_at_once_leave_one_running(host_env: HostEnv):
    procs = [host_env.line_host() for _ in range(4)]
    status = host_env.wait_status()
    deadline = time.monotonic() + 30
    while sum(p.poll() is None for p in procs) > 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    codes = [p.poll() for p in procs]
    running = [p for p, c in zip(procs, codes) if c is None]
    assert len(running) == 1 and running[0].pid == status["pid"]
    assert sorted(c for c in codes if c is not None) == [1, 1, 1]
    for p in procs:
        if p is not running[0]:
            assert b"already running" in p.communicate()[1] or "already running" in host_env.log_text()


def test_two_starters_at_once_share_one_host(host_env: HostEnv):
    command = [sys.executable, str(LINE_SERVICE), "--quiet"]
    results: list[dict] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            results.append(start_background(command=command))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(results) == 3
    assert len({r["pid"] for r in results}) == 1
    assert sum(bool(r["started"]) for r in results) <= 1
    assert control_request("status")["pid"] == results[0]["pid"]


def test_status_and_stop_from_the_command_line(host_env: HostEnv):
    not_running = host_env.cli("--status")
    assert not_running.returncode == 3 and "not running" in not_running.stdout
    assert json.loads(host_env.cli("--status", "--json").stdout) == {
        "running": False, "socket": str(host_env.socket), "log": str(host_env.log)}
    proc = host_env.line_host()
    host_env.wait_status()
    s = _connect(host_env.socket)
    s.sendall(b'{"open": "s1"}\n{"open": "s2"}\n{"ask": ["s1", "r1"]}\n{"ask": ["s2", "r2"]}\n')
    _lines(s, 5)
    text = host_env.cli("--status")
    assert text.returncode == 0, text.stderr
    assert f"running (pid {proc.pid})" in text.stdout and str(host_env.socket) in text.stdout
    assert "sessions: 2" in text.stdout and "pending questions: 2" in text.stdout
    assert "clients:  1 attached" in text.stdout and "question r2" in text.stdout
    data = json.loads(host_env.cli("--status", "--json").stdout)
    assert data["running"] is True and data["pid"] == proc.pid and data["clients"] == 1
    assert [x["session_id"] for x in data["sessions"]] == ["s1", "s2"]
    assert {(q["session_id"], q["request_id"]) for q in data["pending"]} == {("s1", "r1"), ("s2", "r2")}
    assert data["uptime_s"] >= 0 and data["log"] == str(host_env.log)
    stopped = host_env.cli("--stop")
    assert stopped.returncode == 0, stopped.stderr
    assert f"(pid {proc.pid}) stopped" in stopped.stdout
    assert proc.poll() == 0  # gone by the time --stop returns, after a graceful stop
    assert host_env.record.read_text() == "ended s1\nended s2\n"  # the sessions were ended
    assert not host_env.socket.exists() and not host_env.control.exists()
    assert s.recv(100) == b""  # the client was closed
    again = host_env.cli("--stop")
    assert again.returncode == 0 and "not running" in again.stdout


def test_sigterm_stops_gracefully(host_env: HostEnv):
    proc = host_env.line_host()
    host_env.wait_status()
    s = _connect(host_env.socket)
    s.sendall(b'{"open": "kept"}\n')
    _lines(s, 2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    assert host_env.record.read_text() == "ended kept\n"
    assert not host_env.socket.exists()


def test_the_host_survives_a_client_killed_with_sigkill(host_env: HostEnv):
    host_env.line_host()
    host_env.wait_status()
    client_code = (
        "import socket, sys, time\n"
        "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
        "s.sendall(b'{\"open\": \"long\"}\\n{\"ask\": [\"long\", \"q1\"]}\\n')\n"
        "buf = b''\n"
        "while buf.count(b'\\n') < 3: buf += s.recv(4096)\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
    )
    client = subprocess.Popen([sys.executable, "-c", client_code, str(host_env.socket)], stdout=subprocess.PIPE)
    try:
        assert client.stdout is not None and client.stdout.readline() == b"ready\n"
        assert control_request("status")["clients"] == 1
        client.kill()
        client.wait()
    finally:
        if client.poll() is None:
            client.kill()
    deadline = time.monotonic() + 5
    while control_request("status")["clients"] and time.monotonic() < deadline:
        time.sleep(0.02)
    status = control_request("status")
    assert status["clients"] == 0
    assert [x["session_id"] for x in status["sessions"]] == ["long"]  # still there
    assert [q["request_id"] for q in status["pending"]] == ["q1"]
    assert host_env.procs[0].poll() is None


def test_start_background_names_the_log_when_the_host_cannot_start(host_env: HostEnv):
    with pytest.raises(HostUnavailable, match=f"exited at start \\(status 5\\). See its log: {host_env.log}"):
        start_background(command=[sys.executable, "-c", "import sys; sys.exit(5)"], timeout=10)
    with pytest.raises(HostUnavailable, match=f"did not answer within 1 s. See its log: {host_env.log}"):
        start_background(command=[sys.executable, "-c", "import time; time.sleep(30)"], timeout=1)


def test_start_background_detaches_the_host(host_env: HostEnv):
    status = start_background(command=[sys.executable, str(LINE_SERVICE), "--quiet"])
    assert status["started"] is True
    pid = status["pid"]
    assert os.getsid(pid) == pid  # its own session: a closed terminal or a killed window does not reach it
    assert start_background(command=[sys.executable, str(LINE_SERVICE)])["started"] is False
    assert stop_host() == pid
    assert control_request("status") is None
