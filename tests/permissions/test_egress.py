"""permissions/egress.py in the process: the rules as the settings spell them, and the proxy itself against local
servers — clients speak to it inside a real network namespace of its own (bubblewrap through ``nsenter``), so
every case crosses the same boundary a sandboxed shell does. (The whole path through the CLI:
tests/security/test_egress.py.)"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import threading
import time

import pytest

from desktop_agent.permissions import egress
from desktop_agent.permissions.egress import EgressProxy, EgressRules, parse_rule, proxy_env
from desktop_agent.permissions.sandbox import probe


# --------------------------------------------------------------------------------------------------- rules


def test_rules_as_the_reference_spells_them():
    r = EgressRules.from_lists(["example.com", "*.npmjs.org", "localhost:8080", "127.0.0.1:5432", "[::1]:9000",
                                "api.github.com:443"], ["evil.npmjs.org"])
    assert r.decide("example.com", 443).decision == "allow"
    assert r.decide("EXAMPLE.com.", 80).decision == "allow"  # case and the root dot
    assert r.decide("www.example.com", 443).decision == "deny"  # exact only
    assert r.decide("registry.npmjs.org", 443).rule == "allowedDomains: *.npmjs.org"
    assert r.decide("npmjs.org", 443).decision == "deny"  # strict subdomains
    assert r.decide("evilnpmjs.org", 443).decision == "deny"
    v = r.decide("evil.npmjs.org", 443)
    assert v.decision == "deny" and v.rule == "deniedDomains: evil.npmjs.org"  # deny wins
    assert r.decide("localhost", 8080).decision == "allow" and r.decide("localhost", 8081).decision == "deny"
    assert r.decide("localhost", 8080).loopback_ok
    assert r.decide("127.0.0.1", 5432).decision == "allow" and r.decide("127.0.0.1", 22).decision == "deny"
    assert r.decide("::1", 9000).decision == "allow" and r.decide("[::1]", 9000).decision == "allow"
    assert r.decide("api.github.com", 443).decision == "allow" and r.decide("api.github.com", 22).decision == "deny"
    assert r.decide("127.1", 5432).decision == "deny"  # not a canonical literal, and no name rule matches it
    assert r.decide("exa mple.com", 443).decision == "deny" and r.decide("a%b", 1).decision == "deny"
    assert r.decide("example.com", 0).decision == "deny"


def test_too_broad_and_malformed_entries_are_refused_with_a_warning():
    r = EgressRules.from_lists(["*", "*.com", "https://example.com/", "exa*mple.com", "::1", "ok.example.com",
                                "host:99999"], ["*"])
    assert [x.raw for x in r.allowed] == ["ok.example.com"]
    assert len(r.warnings) == 6
    assert r.decide("ok.example.com", 443).rule == "deniedDomains: *"  # '*' is fine as a deny
    assert EgressRules.from_lists(["*"]).empty  # nothing valid: no network at all
    assert isinstance(parse_rule("*.x", "allow"), str)
    assert not isinstance(parse_rule("*.a.b", "allow"), str)


def test_an_ip_literal_never_matches_a_wildcard():
    r = EgressRules.from_lists(["*.0.0.1", "*.example.com"])
    assert r.decide("127.0.0.1", 80).decision == "deny"


def test_proxy_env_exports_what_each_tool_reads():
    env = proxy_env({"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "a.b", "GIT_CONFIG_VALUE_0": "c",
                     "GIT_CONFIG_KEY_1": "d.e", "GIT_CONFIG_VALUE_1": "f", "JAVA_TOOL_OPTIONS": "-Xmx1g",
                     egress.UNSAFE_HOSTS_ENV: "{}", "NO_PROXY": "localhost"})
    url = "http://127.0.0.1:3128"
    for k in ("HTTP_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "npm_config_proxy", "npm_config_https_proxy",
              "PIP_PROXY", "CARGO_HTTP_PROXY", "GRPC_PROXY"):
        assert env[k] == url, k
    assert env["NO_PROXY"] == env["no_proxy"] == ""
    assert env["GIT_CONFIG_COUNT"] == "3" and env["GIT_CONFIG_KEY_2"] == "http.proxy" and env["GIT_CONFIG_VALUE_2"] == url
    assert env["JAVA_TOOL_OPTIONS"].startswith("-Xmx1g ") and "-Dhttps.proxyPort=3128" in env["JAVA_TOOL_OPTIONS"]
    assert "-Dhttp.nonProxyHosts= " in env["JAVA_TOOL_OPTIONS"]
    assert egress.UNSAFE_HOSTS_ENV not in env


def test_the_test_switch_is_read_at_import_only(monkeypatch):
    """Set after the module was imported (as a settings ``env`` block or ``update_environment_variables`` would
    be), the resolver override does nothing."""
    monkeypatch.setenv(egress.UNSAFE_HOSTS_ENV, json.dumps({"pypi.org": "10.9.9.9"}))
    assert EgressProxy(EgressRules.from_lists(["pypi.org"])).hosts == egress._unsafe_hosts(egress._HOSTS_AT_START)
    assert "pypi.org" not in EgressProxy(EgressRules.from_lists(["pypi.org"])).hosts


# --------------------------------------------------------------------------------------------------- the proxy


class _Hits(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[str] = []

    def log_message(self, *a):
        pass

    def _answer(self, body: bytes = b"") -> None:
        self.seen.append(f"{self.command} {self.path} host={self.headers.get('Host')} body={body!r}")
        out = f"hit {self.path} {len(body)}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def do_GET(self):
        self._answer()

    def do_POST(self):
        if self.headers.get("Transfer-Encoding") == "chunked":
            body = b""
            while True:
                n = int(self.rfile.readline().strip(), 16)
                if n == 0:
                    self.rfile.readline()
                    break
                body += self.rfile.read(n)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(body)


@pytest.fixture(scope="module")
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hits)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def proxy(server, tmp_path):
    if not probe().ok:
        pytest.skip("bubblewrap cannot start here")

    async def resolver(name, port):  # a "real" DNS answer pointing at the host's loopback (rebinding)
        return {"rebind.example.com": ["127.0.0.1"]}.get(name, [])

    p = EgressProxy(EgressRules.from_lists(["ok.test", "*.example.com", f"localhost:{server}"], ["no.example.com"]),
                    session_id="s1", log_path=str(tmp_path / "egress" / "s1.jsonl"),
                    hosts={"ok.test": "127.0.0.1", "bad.test": "127.0.0.1"}, bwrap=probe().bwrap or "bwrap",
                    resolver=resolver)
    p.start()
    yield p
    p.close()


def inside(p: EgressProxy, script: str) -> str:
    """Run python ``script`` in the proxy's network namespace (as a sandboxed shell is)."""
    argv = [*p.launch_prefix(), probe().bwrap or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--unshare-all", "--share-net", "--cap-drop", "ALL", "--die-with-parent", "--", "/usr/bin/python3", "-c",
            script]
    proc = subprocess.run(argv, capture_output=True, timeout=30, env=proxy_env(dict(os.environ)))
    return proc.stdout.decode() + proc.stderr.decode()


RAW = """
import socket, sys
c = socket.create_connection(("127.0.0.1", 3128), timeout=5)
c.sendall({data!r})
out = b""
while True:
    d = c.recv(65536)
    if not d:
        break
    out += d
print(out.decode("latin-1"))
"""


@pytest.mark.needs_sandbox
def test_http_forward_chunked_body_and_log(proxy, server):
    _Hits.seen.clear()
    req = (f"POST http://ok.test:{server}/up HTTP/1.1\r\nHost: ok.test\r\nTransfer-Encoding: chunked\r\n"
           "Proxy-Connection: keep-alive\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n").encode()
    out = inside(proxy, RAW.format(data=req))
    assert "hit /up 11" in out, out
    assert _Hits.seen[-1].startswith(f"POST /up host=ok.test:{server} body=b'hello world'")
    with open(proxy.log_path) as fh:
        lines = [json.loads(x) for x in fh]
    rec = lines[-1]
    assert rec["host"] == "ok.test" and rec["decision"] == "allow" and rec["proto"] == "http" and rec["session"] == "s1"
    assert rec["up"] > len(req) - 60 and rec["down"] > 0 and rec["rule"] == "allowedDomains: ok.test"
    assert proxy.records[-1].host == "ok.test"


@pytest.mark.needs_sandbox
def test_dns_rebinding_to_the_host_loopback_is_refused(proxy, server):
    _Hits.seen.clear()
    out = inside(proxy, RAW.format(data=f"CONNECT rebind.example.com:{server} HTTP/1.1\r\n\r\n".encode()))
    assert "403 Forbidden" in out and "the host's own address" in out, out
    assert not _Hits.seen
    assert proxy.records[-1].decision == "deny" and "127.0.0.1" in proxy.records[-1].rule


@pytest.mark.needs_sandbox
def test_socks5_udp_associate_and_bind_are_refused(proxy, server):
    script = ("import socket, struct\nfor cmd in (2, 3):\n    c = socket.create_connection(('127.0.0.1', 3128), 5)\n"
              "    c.sendall(b'\\x05\\x01\\x00'); c.recv(2)\n"
              "    c.sendall(b'\\x05' + bytes([cmd]) + b'\\x00\\x01\\x7f\\x00\\x00\\x01' + struct.pack('>H', 53))\n"
              "    print('reply', c.recv(10)[1])")
    out = inside(proxy, script)
    assert out.count("reply 7") == 2, out
    assert [r.rule for r in list(proxy.records)[-2:]] == ["SOCKS5 command 2 is not supported (CONNECT only)",
                                                         "SOCKS5 command 3 is not supported (CONNECT only)"]


@pytest.mark.needs_sandbox
def test_session_grant_and_rule_change_count_at_the_next_request(proxy, server):
    req = f"GET http://bad.test:{server}/g HTTP/1.1\r\nHost: bad.test\r\n\r\n".encode()
    assert "403 Forbidden" in inside(proxy, RAW.format(data=req))
    proxy.allow_for_session("bad.test")
    assert "hit /g" in inside(proxy, RAW.format(data=req))
    proxy.set_rules(EgressRules.from_lists(["ok.test"], ["bad.test"]))  # deny wins over the session grant
    assert "403 Forbidden" in inside(proxy, RAW.format(data=req))


@pytest.mark.needs_sandbox
def test_the_namespace_has_no_route_out(proxy, server):
    script = ("import socket\nfor addr in [('127.0.0.1', %d), ('192.0.2.1', 80), ('1.1.1.1', 53)]:\n"
              "    try:\n        socket.create_connection(addr, 2); print('OPEN', addr)\n"
              "    except OSError as e:\n        print('closed', e.__class__.__name__)\n" % server)
    out = inside(proxy, script)
    assert "OPEN" not in out and out.count("closed") == 3, out


def test_a_failing_namespace_fails_closed(tmp_path):
    p = EgressProxy(EgressRules.from_lists(["ok.test"]), bwrap=str(tmp_path / "no-bwrap"))
    with pytest.raises(OSError):
        p.start()
    with pytest.raises(OSError):
        p.launch_prefix()


BLOB = bytes(range(256)) * 4096 * 8  # 8 MiB


@pytest.fixture(scope="module")
def blob_server():
    """GET anything: 8 MiB of known bytes (Content-Length), then close."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)

    def one(c: socket.socket) -> None:
        with c:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = c.recv(4096)
                if not chunk:
                    return
                data += chunk
            c.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {len(BLOB)}\r\nConnection: close\r\n\r\n".encode() + BLOB)

    def serve() -> None:
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=one, args=(c,), daemon=True).start()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    try:
        srv.shutdown(socket.SHUT_RDWR)  # wakes the accept
    except OSError:
        pass
    srv.close()
    t.join(5)


DOWNLOAD = """
import hashlib, urllib.request
for url in {urls!r}:
    data = urllib.request.urlopen(url, timeout=20).read()
    print(len(data), hashlib.sha256(data).hexdigest())
"""


@pytest.mark.needs_sandbox
def test_the_helper_moves_the_bytes_and_a_dead_helper_falls_back_here(proxy, blob_server, monkeypatch):
    """Bytes are moved by the helper's relay (never by a copy in this process) and counted in the log; when the
    helper dies, the next connections are copied here, byte for byte."""
    local: list[int] = []
    real = egress.copy_fds

    def counted(sfd: int, dfd: int, **kw: int) -> int:
        n = real(sfd, dfd, **kw)
        local.append(n)
        return n

    monkeypatch.setattr(egress, "copy_fds", counted)
    want = f"{len(BLOB)} {__import__('hashlib').sha256(BLOB).hexdigest()}"
    url = f"http://ok.test:{blob_server}/blob"
    # plain forward (ok.test via HTTP_PROXY) and a CONNECT tunnel (the same name through http.client's set_tunnel)
    tunnel = ("import hashlib, http.client\nc = http.client.HTTPConnection('127.0.0.1', 3128, timeout=20)\n"
              f"c.set_tunnel('ok.test', {blob_server})\nc.request('GET', '/blob')\nd = c.getresponse().read()\n"
              "print(len(d), hashlib.sha256(d).hexdigest())")
    out = inside(proxy, DOWNLOAD.format(urls=[url]) + tunnel)
    assert out.count(want) == 2, out
    assert local == [], "a connection was copied in the session's process"
    recs = [r for r in proxy.records if r.host == "ok.test" and r.port == blob_server]
    assert [r.proto for r in recs] == ["http", "connect"] and all(r.down >= len(BLOB) for r in recs), recs
    assert proxy.ns is not None and proxy.ns.proc is not None
    proxy.ns.proc.kill()
    proxy.ns.proc.wait()
    out = inside(proxy, DOWNLOAD.format(urls=[url]) + tunnel)
    assert out.count(want) == 2, out
    assert proxy._relay_dead and sum(local) >= 2 * len(BLOB), local
    recs = [r for r in proxy.records if r.host == "ok.test" and r.port == blob_server]
    assert len(recs) == 4 and all(r.down >= len(BLOB) for r in recs), recs


UPLOAD = """
import hashlib, http.client, os
body = bytes(range(256)) * 4096 * 3  # 3 MiB: more than BULK_BODY, so the relay moves it
c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=20)
c.request("POST", "http://ok.test:{port}/up", body=body, headers={{"Content-Length": str(len(body))}})
print(c.getresponse().read().decode().strip(), hashlib.sha256(body).hexdigest())
"""


@pytest.mark.needs_sandbox
def test_a_large_request_body_is_moved_by_the_helper_and_counted(proxy, server, monkeypatch):
    local: list[int] = []
    real = egress.copy_fds

    def counted(sfd: int, dfd: int, **kw: int) -> int:
        n = real(sfd, dfd, **kw)
        local.append(n)
        return n

    monkeypatch.setattr(egress, "copy_fds", counted)
    _Hits.seen.clear()
    out = inside(proxy, UPLOAD.format(port=server))
    size = 256 * 4096 * 3
    assert f"hit /up {size}" in out, out
    assert len(_Hits.seen) == 1 and _Hits.seen[0].startswith(f"POST /up host=ok.test:{server}")
    assert local == [], "the body was copied in the session's process"
    rec = [r for r in proxy.records if r.host == "ok.test" and r.port == server][-1]
    assert rec.proto == "http" and size < rec.up < size + 1000 and rec.down > 0, rec


FDS_HELD = """
import os, socket, sys
c = socket.create_connection(("127.0.0.1", 3128), timeout=10)
c.sendall(b"CONNECT ok.test:{port} HTTP/1.1\\r\\n\\r\\n")
assert b" 200 " in c.recv(4096)
print("TUNNEL", flush=True)
sys.stdin.readline()  # the tunnel stays open until the test has looked
"""


@pytest.mark.needs_sandbox
def test_the_tunnels_sockets_stay_in_the_helper_cloexec_and_no_command_inherits_them(proxy, server):
    """While a tunnel is live, the helper holds its two sockets with FD_CLOEXEC set (it never runs anything, and
    would not pass them on if it did), and a sandboxed command started meanwhile holds no socket at all."""
    argv = [*proxy.launch_prefix(), probe().bwrap or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc",
            "/proc", "--unshare-all", "--share-net", "--cap-drop", "ALL", "--die-with-parent", "--",
            "/usr/bin/python3", "-c", FDS_HELD.format(port=server)]
    holder = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=proxy_env(dict(os.environ)))
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"TUNNEL"
        assert proxy.ns is not None and proxy.ns.proc is not None
        helper = proxy.ns.proc.pid
        sockets: dict[int, bool] = {}
        deadline = time.monotonic() + 10
        while len(sockets) < 3 and time.monotonic() < deadline:  # the proxy hands them over just after the 200
            time.sleep(0.02)
            sockets = {}
            for fd in os.listdir(f"/proc/{helper}/fd"):
                try:
                    target = os.readlink(f"/proc/{helper}/fd/{fd}")
                    with open(f"/proc/{helper}/fdinfo/{fd}") as fh:
                        flags = int(next(ln for ln in fh if ln.startswith("flags:")).split()[1], 8)
                except OSError:
                    continue
                if target.startswith("socket:"):
                    sockets[int(fd)] = bool(flags & 0o2000000)  # O_CLOEXEC
        assert len(sockets) >= 3, sockets  # its channel and the tunnel's two sockets
        assert all(sockets.values()), sockets
        out = inside(proxy, "import os\nfor fd in sorted(os.listdir('/proc/self/fd')):\n"
                            "    try:\n        print(fd, os.readlink('/proc/self/fd/' + fd))\n"
                            "    except OSError:\n        pass\n")
        assert "socket:" not in out and "0 " in out, out
    finally:
        if holder.stdin is not None:
            holder.stdin.close()
        holder.wait(10)
