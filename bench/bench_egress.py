"""Benchmark (issue 27): what the egress proxy costs a sandboxed command.

1. A 100 MB download from a local server (``socket.sendfile``, loopback): ``curl -o /dev/null`` in the sandbox
   sharing the host's network and fetching ``127.0.0.1`` directly (the baseline: the old ``allowedDomains``
   behaviour), against the same curl in the session's network namespace through the proxy — plain HTTP
   forwarding and a CONNECT tunnel (``curl -p``); and, as the floor any relay has on loopback, the direct download
   through a host-side ``socat`` relay (C, 1 MB buffer). Interleaved, median of ``--runs``. Target: ratio ≤ 1.05
   (to direct; and the tunnel against socat).
2. The start-up of a sandboxed ``true`` (``plan_launch`` + the run) with the proxy on (``allowedDomains``
   non-empty: ``nsenter`` into the session's namespace, the proxy variables) against the same with no network,
   interleaved. Target: ≤ +10 ms.

    .venv/bin/python bench/bench_egress.py [--runs 15] [--mb 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import report, result  # noqa: E402
from desktop_agent.core.context import ToolUseContext  # noqa: E402
from desktop_agent.permissions import sandbox  # noqa: E402
from desktop_agent.permissions.context import PermissionContext  # noqa: E402
from desktop_agent.permissions.egress import EgressProxy, EgressRules, proxy_env  # noqa: E402
from desktop_agent.permissions.sandbox_launch import BubblewrapSandbox  # noqa: E402
from desktop_agent.permissions.sandbox_policy import base_flags  # noqa: E402
from desktop_agent.permissions.settings import SettingsSource  # noqa: E402
from desktop_agent.tools.bash.process import shell_path  # noqa: E402


def file_server(path: str) -> int:
    size = os.path.getsize(path)
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)

    def one(conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n".encode())
            with open(path, "rb") as fh:
                conn.sendfile(fh)

    def serve() -> None:
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1]


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"failed: {argv[-1]}: {proc.stderr.decode()[-300:]}")
    return elapsed


def download(runs: int, mb: int) -> list[dict]:
    bwrap = sandbox.probe().bwrap or "bwrap"
    tmp = tempfile.mkdtemp(prefix="bench-egress-")
    big = os.path.join(tmp, "big.bin")
    with open(big, "wb") as fh:
        fh.write(os.urandom(1 << 20) * mb)
    port = file_server(big)
    proxy = EgressProxy(EgressRules.from_lists(["big.test"]), hosts={"big.test": "127.0.0.1"}, bwrap=bwrap)
    proxy.start()
    box = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--share-net", "--cap-drop",
           "ALL", "--die-with-parent", "--"]
    curl = ["curl", "-s", "-f", "-o", "/dev/null"]
    direct = [bwrap, *box, *curl, f"http://127.0.0.1:{port}/big"]
    forward = [*proxy.launch_prefix(), bwrap, *box, *curl, f"http://big.test:{port}/big"]
    tunnel = [*proxy.launch_prefix(), bwrap, *box, *curl, "-p", f"http://big.test:{port}/big"]
    env = dict(os.environ)
    penv = proxy_env(env)
    relay = None
    if shutil.which("socat"):  # the floor: a C relay (1 MB buffer) terminating TCP once, as any proxy must
        rport = free_port()
        relay = subprocess.Popen(["socat", "-b", str(1 << 20), f"TCP-LISTEN:{rport},fork,reuseaddr,bind=127.0.0.1",
                                  f"TCP:127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
    via_socat = [bwrap, *box, *curl, f"http://127.0.0.1:{rport}/big"] if relay else None
    for argv, e in ((direct, env), (forward, penv), (tunnel, penv)):  # warm-up
        run(argv, e)
    d, f, t, c = [], [], [], []
    for _ in range(runs):
        d.append(run(direct, env))
        f.append(run(forward, penv))
        t.append(run(tunnel, penv))
        if via_socat:
            c.append(run(via_socat, env))
    proxy.close()
    if relay is not None:
        relay.kill()
        relay.wait()
    os.unlink(big)
    items = []
    if c:
        print(f"{mb} MB download through a socat relay (the floor of any relay here): "
              f"{statistics.median(c) * 1000:.1f} ms, ratio {statistics.median(c) / statistics.median(d):.3f}")
        items.append(result(f"egress proxy: {mb} MB local download, CONNECT tunnel (ratio to a socat relay)", t,
                            unit="s", target=1.05, kind="ratio", baseline=c))
    for name, samples in (("HTTP forward", f), ("CONNECT tunnel", t)):
        ratio = statistics.median(samples) / statistics.median(d)
        print(f"{mb} MB download, {name}: direct {statistics.median(d) * 1000:.1f} ms "
              f"({mb / statistics.median(d):.0f} MB/s), through the proxy {statistics.median(samples) * 1000:.1f} ms "
              f"({mb / statistics.median(samples):.0f} MB/s), ratio {ratio:.3f} (median of {runs})")
        items.append(result(f"egress proxy: {mb} MB local download, {name} (ratio to direct)", samples,
                            unit="s", target=1.05, kind="ratio", baseline=d))
    return items


def startup(runs: int) -> dict:
    root = tempfile.mkdtemp(prefix="bench-egress-start-")
    argv = [shell_path(), "-c", "true"]
    env = dict(os.environ)

    def ctx_with(net: dict | None) -> ToolUseContext:
        pc = PermissionContext(root, mode="bypassPermissions")
        if net is not None:
            pc.flag_source = SettingsSource("flagSettings", None, {"sandbox": {"network": net}}, root)
        ctx = ToolUseContext(cwd=root, permission_context=pc, session_id="bench")
        ctx.sandbox = BubblewrapSandbox()
        return ctx

    off, on = ctx_with(None), ctx_with({"allowedDomains": ["example.com"]})
    assert off.sandbox is not None and on.sandbox is not None

    def once(ctx: ToolUseContext) -> float:
        assert ctx.sandbox is not None
        t0 = time.perf_counter()
        plan = ctx.sandbox.plan_launch(argv, root, env, ctx, command="true")
        subprocess.run(plan.argv, cwd=root, env=plan.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        return time.perf_counter() - t0

    plan_on = on.sandbox.plan_launch(argv, root, env, on, command="true")
    assert "nsenter" in plan_on.argv[0] and plan_on.env.get("HTTP_PROXY"), plan_on.argv[:3]
    for _ in range(3):
        once(off)
        once(on)
    a, b = [], []
    for _ in range(runs):
        a.append(once(off))
        b.append(once(on))
    added = (statistics.median(b) - statistics.median(a)) * 1000
    print(f"sandboxed `true`: no network {statistics.median(a) * 1000:.2f} ms, proxy on "
          f"{statistics.median(b) * 1000:.2f} ms, added {added:.2f} ms (median of {runs}; the proxy's one-time start "
          "is not in it)")
    item = result("egress proxy: added start-up of a sandboxed command", [y - x for y, x in zip(sorted(b), sorted(a))],
                  unit="ms", target=10.0, scale=1000, baseline=a)
    item["median"] = added
    item["passed"] = added <= 10.0
    assert isinstance(on.sandbox, BubblewrapSandbox)
    on.sandbox.close()
    return item


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--mb", type=int, default=100)
    args = ap.parse_args()
    if not sandbox.probe().ok:
        print(f"sandbox not available: {sandbox.probe().detail}")
        return
    assert base_flags(True)[-1] == "--share-net"
    items = download(args.runs, args.mb)
    items.append(startup(max(args.runs, 30)))
    report(items)


if __name__ == "__main__":
    main()
