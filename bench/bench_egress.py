"""Benchmark (issue 27): what the egress proxy costs a sandboxed command.

1. A 100 MB download from a local server (``socket.sendfile``, loopback): ``curl -o /dev/null`` in the sandbox
   sharing the host's network and fetching ``127.0.0.1`` directly (the baseline: the old ``allowedDomains``
   behaviour), against the same curl in the session's network namespace through the proxy — plain HTTP
   forwarding and a CONNECT tunnel (``curl -p``); and, as the floor any relay has on loopback, the direct download
   through a host-side ``socat`` relay (C, 1 MB buffer; when installed). Interleaved, median of ``--runs``. Target:
   ratio ≤ 1.05 (to direct; and the tunnel against socat). Each hop is also shown on its own: the proxy's relay
   with its listener on the host (no namespace, no nsenter), against a direct download outside bubblewrap.
2. The same tunnel while a Python thread keeps the session's process busy (as the window and the model stream
   do): the bytes are moved by the namespace helper, out of that process, so its GIL does not slow them.
3. The same download from a server paced at 1 Gbit/s (a fast real link): what the proxy costs when the network,
   not the loopback copy, sets the pace.
4. The start-up of a sandboxed ``true`` (``plan_launch`` + the run) with the proxy on (``allowedDomains``
   non-empty: ``nsenter`` into the session's namespace, the proxy variables) against the same with no network,
   interleaved. Target: ≤ +10 ms. And, printed, the proxy's one-time start (the first sandboxed command of a
   session pays it: the helper makes the namespace).

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
from desktop_agent.permissions.egress import (EgressProxy, EgressRules, Namespace, make_namespace,  # noqa: E402
                                              proxy_env)
from desktop_agent.permissions.sandbox_launch import BubblewrapSandbox  # noqa: E402
from desktop_agent.permissions.sandbox_policy import base_flags  # noqa: E402
from desktop_agent.permissions.settings import SettingsSource  # noqa: E402
from desktop_agent.tools.bash.process import shell_path  # noqa: E402


def file_server(path: str, rate: float = 0.0) -> int:
    """A one-file HTTP server on loopback; ``rate`` > 0: paced to that many bytes a second (1 MB sends)."""
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
            head, _, got = data.partition(b"\r\n\r\n")
            length = [int(ln.split(b":", 1)[1]) for ln in head.lower().split(b"\r\n") if ln.startswith(b"content-length:")]
            if length:  # an upload: read the body, answer with its size
                left, buf = length[0] - len(got), bytearray(1 << 20)
                while left > 0:
                    n = conn.recv_into(buf, min(left, len(buf)))
                    if not n:
                        return
                    left -= n
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n".encode())
            with open(path, "rb") as fh:
                if rate <= 0:
                    conn.sendfile(fh)
                    return
                t0, sent, step = time.perf_counter(), 0, 1 << 20
                while sent < size:
                    ahead = t0 + sent / rate - time.perf_counter()
                    if ahead > 0:
                        time.sleep(ahead)
                    sent += conn.sendfile(fh, sent, min(step, size - sent))

    def serve() -> None:
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1]


def server_process(path: str, rate: float = 0.0) -> tuple[subprocess.Popen[str], int]:
    """``file_server`` in a process of its own (its GIL is not the proxy's): the process and its port."""
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", path, str(rate)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


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


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def _host_side(proxy_bwrap: str) -> tuple[EgressProxy, int]:
    """A proxy whose listener is on the host (its helper still relays): the proxy's own hop, no namespace."""
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(64)
    lst.setblocking(False)

    def host_ns(bwrap: str) -> Namespace:
        ns = make_namespace(bwrap, port=free_port())
        ns.listener.close()
        ns.listener = lst
        return ns

    p = EgressProxy(EgressRules.from_lists(["big.test"]), hosts={"big.test": "127.0.0.1"}, bwrap=proxy_bwrap)
    p.make_ns = host_ns
    p.start()
    return p, lst.getsockname()[1]


class Busy:
    """A Python thread that keeps the GIL busy (as the window's thread and the model stream do)."""

    def __enter__(self) -> Busy:
        self.stop = False

        def spin() -> None:
            x = 0
            while not self.stop:
                for i in range(10_000):
                    x += i
        self.t = threading.Thread(target=spin, daemon=True)
        self.t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop = True
        self.t.join()


def download(runs: int, mb: int) -> list[dict]:
    bwrap = sandbox.probe().bwrap or "bwrap"
    tmp = tempfile.mkdtemp(prefix="bench-egress-")
    big = os.path.join(tmp, "big.bin")
    with open(big, "wb") as fh:
        fh.write(os.urandom(1 << 20) * mb)
    server, port = server_process(big)
    proxy = EgressProxy(EgressRules.from_lists(["big.test"]), hosts={"big.test": "127.0.0.1"}, bwrap=bwrap)
    proxy.start()
    hproxy, hport = _host_side(bwrap)
    box = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--share-net", "--cap-drop",
           "ALL", "--die-with-parent", "--"]
    curl = ["curl", "-s", "-f", "-o", "/dev/null"]
    direct = [bwrap, *box, *curl, f"http://127.0.0.1:{port}/big"]
    forward = [*proxy.launch_prefix(), bwrap, *box, *curl, f"http://big.test:{port}/big"]
    tunnel = [*proxy.launch_prefix(), bwrap, *box, *curl, "-p", f"http://big.test:{port}/big"]
    post = ["--data-binary", f"@{big}", "-H", "Content-Type: application/octet-stream", "-H", "Expect:"]
    up_direct = [bwrap, *box, *curl, *post, f"http://127.0.0.1:{port}/up"]
    up_forward = [*proxy.launch_prefix(), bwrap, *box, *curl, *post, f"http://big.test:{port}/up"]
    host_direct = [*curl, f"http://127.0.0.1:{port}/big"]
    host_tunnel = [*curl, "-p", "-x", f"http://127.0.0.1:{hport}", f"http://big.test:{port}/big"]
    env = dict(os.environ)
    penv = proxy_env(env)
    relay = None
    if shutil.which("socat"):  # the floor: a C relay (1 MB buffer) terminating TCP once, as any proxy must
        rport = free_port()
        relay = subprocess.Popen(["socat", "-b", str(1 << 20), f"TCP-LISTEN:{rport},fork,reuseaddr,bind=127.0.0.1",
                                  f"TCP:127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
    via_socat = [*curl, f"http://127.0.0.1:{rport}/big"] if relay else None
    for argv, e in ((direct, env), (forward, penv), (tunnel, penv), (host_direct, env), (host_tunnel, env),
                    (up_direct, env), (up_forward, penv)):
        run(argv, e)  # warm-up
    d, f, t, c, hd, ht, ud, uf = [], [], [], [], [], [], [], []
    for _ in range(runs):
        d.append(run(direct, env))
        f.append(run(forward, penv))
        t.append(run(tunnel, penv))
        ud.append(run(up_direct, env))
        uf.append(run(up_forward, penv))
        hd.append(run(host_direct, env))
        ht.append(run(host_tunnel, env))
        if via_socat:
            c.append(run(via_socat, env))
    # the same, with a busy Python thread here; and, for comparison, a proxy that copies in this process (its
    # relay switched off: the fallback when the helper is gone, and how the proxy moved bytes before)
    inproc = EgressProxy(EgressRules.from_lists(["big.test"]), hosts={"big.test": "127.0.0.1"}, bwrap=bwrap)
    inproc.start()
    inproc._relay_dead = True
    in_tunnel = [*inproc.launch_prefix(), bwrap, *box, *curl, "-p", f"http://big.test:{port}/big"]
    bd, bt, bi, bud, buf = [], [], [], [], []
    with Busy():
        for _ in range(max(3, runs // 2)):
            bd.append(run(direct, env))
            bt.append(run(tunnel, penv))
            bi.append(run(in_tunnel, penv))
            bud.append(run(up_direct, env))
            buf.append(run(up_forward, penv))
    inproc.close()
    # a paced server: a 1 Gbit/s link
    rate = 125e6
    slow_server, slow = server_process(big, rate=rate)
    sd, st = [], []
    slow_direct = [bwrap, *box, *curl, f"http://127.0.0.1:{slow}/big"]
    slow_tunnel = [*proxy.launch_prefix(), bwrap, *box, *curl, "-p", f"http://big.test:{slow}/big"]
    for _ in range(max(3, runs // 2)):
        sd.append(run(slow_direct, env))
        st.append(run(slow_tunnel, penv))
    proxy.close()
    hproxy.close()
    for proc in (server, slow_server):
        proc.kill()
        proc.wait()
    if relay is not None:
        relay.kill()
        relay.wait()
    os.unlink(big)
    items = []
    print(f"hops ({mb} MB, median of {runs}): outside bubblewrap, direct {_median(hd) * 1000:.1f} ms; through the "
          f"proxy's relay alone (listener on the host) {_median(ht) * 1000:.1f} ms, ratio "
          f"{_median(ht) / _median(hd):.3f}" + (f"; through socat {_median(c) * 1000:.1f} ms, ratio "
                                                  f"{_median(c) / _median(hd):.3f}" if c else "; socat not installed"))
    if c:
        items.append(result(f"egress proxy: {mb} MB local download, the proxy's hop alone (ratio to a socat relay)",
                            ht, unit="s", target=1.05, kind="ratio", baseline=c))
    for name, samples in (("HTTP forward", f), ("CONNECT tunnel", t)):
        ratio = _median(samples) / _median(d)
        print(f"{mb} MB download, {name}: direct {_median(d) * 1000:.1f} ms ({mb / _median(d):.0f} MB/s), through "
              f"the proxy {_median(samples) * 1000:.1f} ms ({mb / _median(samples):.0f} MB/s), ratio {ratio:.3f} "
              f"(median of {runs})")
        items.append(result(f"egress proxy: {mb} MB local download, {name} (ratio to direct)", samples,
                            unit="s", target=1.05, kind="ratio", baseline=d))
    print(f"{mb} MB upload (POST, Content-Length), HTTP forward: direct {_median(ud) * 1000:.1f} ms, through the "
          f"proxy {_median(uf) * 1000:.1f} ms, ratio {_median(uf) / _median(ud):.3f} (median of {runs})")
    items.append(result(f"egress proxy: {mb} MB local upload, HTTP forward POST (ratio to direct)", uf, unit="s",
                        target=1.05, kind="ratio", baseline=ud))
    print(f"{mb} MB download with a busy Python thread in the session's process: direct {_median(bd) * 1000:.1f} ms, "
          f"tunnel {_median(bt) * 1000:.1f} ms, ratio {_median(bt) / _median(bd):.3f}; copied in the session's "
          f"process instead of the helper: {_median(bi) * 1000:.1f} ms, ratio {_median(bi) / _median(bd):.3f}")
    items.append(result(f"egress proxy: {mb} MB local download, CONNECT tunnel, session process busy (ratio to "
                        "direct)", bt, unit="s", target=1.05, kind="ratio", baseline=bd))
    print(f"{mb} MB upload (POST) with a busy Python thread in the session's process: direct "
          f"{_median(bud) * 1000:.1f} ms, HTTP forward {_median(buf) * 1000:.1f} ms, ratio "
          f"{_median(buf) / _median(bud):.3f}")
    items.append(result(f"egress proxy: {mb} MB local upload, HTTP forward POST, session process busy (ratio to "
                        "direct)", buf, unit="s", target=1.05, kind="ratio", baseline=bud))
    print(f"{mb} MB download from a server paced at 1 Gbit/s: direct {_median(sd) * 1000:.1f} ms, tunnel "
          f"{_median(st) * 1000:.1f} ms, ratio {_median(st) / _median(sd):.3f}")
    items.append(result(f"egress proxy: {mb} MB download at 1 Gbit/s, CONNECT tunnel (ratio to direct)", st,
                        unit="s", target=1.05, kind="ratio", baseline=sd))
    return items


def proxy_start(runs: int) -> None:
    """The proxy's one-time start (namespace helper, thread), printed: the first sandboxed command pays it."""
    bwrap = sandbox.probe().bwrap or "bwrap"
    times = []
    for _ in range(runs):
        p = EgressProxy(EgressRules.from_lists(["x.test"]), bwrap=bwrap)
        t0 = time.perf_counter()
        p.start()
        times.append(time.perf_counter() - t0)
        p.close()
    print(f"the proxy's one-time start (once per session, on its first sandboxed command): median "
          f"{_median(times) * 1000:.1f} ms (min {min(times) * 1000:.1f}, of {runs})")


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
    ap.add_argument("--serve", nargs=2, metavar=("FILE", "RATE"), help=argparse.SUPPRESS)  # server_process
    args = ap.parse_args()
    if args.serve:
        print(file_server(args.serve[0], float(args.serve[1])), flush=True)
        threading.Event().wait()
    if not sandbox.probe().ok:
        print(f"sandbox not available: {sandbox.probe().detail}")
        return
    assert base_flags(True)[-1] == "--share-net"
    items = download(args.runs, args.mb)
    items.append(startup(max(args.runs, 30)))
    proxy_start(max(args.runs, 10))
    report(items)


if __name__ == "__main__":
    main()
