"""The front end's way to the background host (``client.host_link``): start on demand, wait for the socket, refuse
a socket not served by this user, and a clear error naming the log file."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from desktop_agent.client.host_link import HostUnavailable, connect_host, host_status, stop_host
from desktop_agent.host.runtime import ensure_private_dir
from tests.host.conftest import LINE_SERVICE, HostEnv

LINE_HOST = [sys.executable, str(LINE_SERVICE), "--quiet"]


def test_not_running_without_start(host_env: HostEnv):
    with pytest.raises(HostUnavailable, match="not running"):
        asyncio.run(connect_host(start=False))
    assert not host_env.host_dir.exists()  # start=False creates nothing
    assert asyncio.run(host_status()) is None


def test_connect_starts_the_host_on_demand_and_reuses_it(host_env: HostEnv):
    async def go() -> tuple[dict, dict, dict | None]:
        reader, writer = await connect_host(command=LINE_HOST)
        hello = json.loads(await reader.readline())
        writer.write(b'{"open": "from-window"}\n')
        await writer.drain()
        await reader.readline()
        writer.close()
        reader2, writer2 = await connect_host(command=[sys.executable, "-c", "raise SystemExit(9)"])  # not started
        hello2 = json.loads(await reader2.readline())
        writer2.close()
        return hello, hello2, await host_status()

    hello, hello2, status = asyncio.run(go())
    assert status is not None and hello["pid"] == hello2["pid"] == status["pid"]
    assert os.getsid(status["pid"]) == status["pid"]  # detached from this process's session
    assert [s["session_id"] for s in status["sessions"]] == ["from-window"]  # outlived its connection
    assert asyncio.run(stop_host()) == status["pid"]
    assert asyncio.run(host_status()) is None


def test_a_start_that_fails_names_the_log(host_env: HostEnv):
    with pytest.raises(HostUnavailable) as info:
        asyncio.run(connect_host(command=[sys.executable, "-c", "import sys; print('boom', file=sys.stderr); "
                                                               "sys.exit(4)"], timeout=10))
    assert f"See its log: {host_env.log}" in str(info.value)
    assert "boom" in host_env.log_text()  # the child's stderr went to the log
    with pytest.raises(HostUnavailable, match=r"did not answer within 1 s\. See its log: "):
        asyncio.run(connect_host(command=[sys.executable, "-c", "import time; time.sleep(20)"], timeout=1))


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"),
                    reason="needs root, setpriv and /usr/bin/python3 to serve a socket as another uid")
def test_a_socket_served_by_another_uid_is_never_spoken_to(host_env: HostEnv):
    ensure_private_dir(host_env.host_dir)
    drop = Path(tempfile.mkdtemp(prefix="da-drop-"))
    os.chmod(drop, 0o777)
    planted = drop / "host.sock"
    squatter = subprocess.Popen(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", "-c",
         "import socket, sys, time\n"
         "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4); print('up', flush=True)\n"
         "c, _ = s.accept(); print('accepted', flush=True); time.sleep(30)\n", str(planted)],
        stdout=subprocess.PIPE, cwd="/")
    try:
        assert squatter.stdout is not None and squatter.stdout.readline() == b"up\n"
        os.rename(planted, host_env.socket)  # as if it had been slipped into our directory
        with pytest.raises(HostUnavailable, match="served by uid 65534, not by this user"):
            asyncio.run(connect_host(start=False))
    finally:
        squatter.kill()
        squatter.wait()
        shutil.rmtree(drop, ignore_errors=True)


def test_connect_refuses_an_unsafe_directory(host_env: HostEnv):
    host_env.host_dir.mkdir(mode=0o700)
    os.chmod(host_env.host_dir, 0o777)
    with pytest.raises(HostUnavailable, match="writable by other users"):
        asyncio.run(connect_host(command=LINE_HOST))
    time.sleep(0.1)
    assert not host_env.socket.exists()  # nothing was started there
