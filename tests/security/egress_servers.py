"""Local servers for the egress leak suite (``test_egress.py``), all on this machine, each logging what reached it:
an HTTP server (echo pages under ``/hit/``, a PEP 503 simple index with a real wheel, an npm tarball, and a git
repository through ``git http-backend`` as CGI), the same handler over TLS (a self-signed certificate), an IPv6 one
on ``::1``, a raw TCP listener and a UDP listener on every address (a fake DNS server among the UDP ports), an
abstract Unix socket, and a real ``dbus-daemon`` session bus on an abstract address.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import ssl
import subprocess
import tarfile
import threading
import zipfile
from pathlib import Path
from typing import Any

WHEEL_MARK = "demo-pkg-installed-ok-3b1f"
NPM_MARK = "demo-npm-installed-ok-77ce"
GIT_MARK = "egress-clone-marker-9a2e"


class Log:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.lock = threading.Lock()

    def add(self, text: str) -> None:
        with self.lock:
            self.lines.append(text)

    def text(self) -> str:
        with self.lock:
            return "\n".join(self.lines)


def _record(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def make_wheel(directory: Path) -> Path:
    files = {
        "demo_pkg/__init__.py": f"MARK = {WHEEL_MARK!r}\n".encode(),
        "demo_pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
        "demo_pkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: egress-test\nRoot-Is-Purelib: true\n"
                                       b"Tag: py3-none-any\n",
    }
    record = "\n".join([_record(p, d) for p, d in files.items()] + ["demo_pkg-1.0.dist-info/RECORD,,", ""])
    path = directory / "files" / "demo_pkg-1.0-py3-none-any.whl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr("demo_pkg-1.0.dist-info/RECORD", record)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    index = directory / "simple" / "demo-pkg" / "index.html"
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text(f'<!DOCTYPE html><html><body><a href="/files/{path.name}#sha256={digest}">{path.name}</a>'
                     "</body></html>\n")
    return path


def make_npm_tarball(directory: Path) -> Path:
    path = directory / "demo-npm-1.0.0.tgz"
    with tarfile.open(path, "w:gz") as tf:
        for name, text in (("package/package.json", json.dumps({"name": "demo-npm", "version": "1.0.0",
                                                                   "main": "index.js"})),
                           ("package/index.js", f"module.exports = {{ mark: {NPM_MARK!r} }};\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tf.addfile(info, io.BytesIO(data))
    return path


def make_repo(directory: Path) -> Path:
    work, bare = directory / "gitwork", directory / "git" / "repo.git"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t",
               GIT_CONFIG_NOSYSTEM="1", HOME=str(directory))
    work.mkdir(parents=True)
    (work / "README").write_text("cloned through the egress proxy\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", GIT_MARK]):
        subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)
    bare.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], env=env, check=True, capture_output=True)
    return bare


def make_handler(root: Path, log: Log, name: str) -> type[http.server.BaseHTTPRequestHandler]:
    git_root = str(root / "git")

    class Handler(http.server.SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, directory=str(root), **kw)

        def log_message(self, *args: Any) -> None:
            pass

        def _note(self) -> None:
            log.add(f"{name} {self.command} {self.path} host={self.headers.get('Host')}")

        def do_GET(self) -> None:
            self._note()
            if self.path.startswith("/git/"):
                return self._git()
            if self.path.startswith("/hit/"):
                body = f"ok {self.path} via {name}\n".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return None
            return super().do_GET()

        def do_POST(self) -> None:
            self._note()
            if self.path.startswith("/git/"):
                return self._git()
            self.send_error(405)
            return None

        def _git(self) -> None:
            path, _, query = self.path[len("/git"):].partition("?")
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                body = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        break
                    body += self.rfile.read(size)
                    self.rfile.readline()
            else:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            env = {"GIT_PROJECT_ROOT": git_root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
                   "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_ADDR": "127.0.0.1",
                   "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
                   "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                   "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""), "PATH": os.environ.get("PATH", ""),
                   "GIT_CONFIG_NOSYSTEM": "1", "HOME": git_root}
            out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
            sep = b"\r\n\r\n" if b"\r\n\r\n" in out else b"\n\n"
            head, _, rest = out.partition(sep)
            status = 200
            headers: list[tuple[str, str]] = []
            for line in head.decode("latin-1").splitlines():
                key, _, value = line.partition(":")
                if key.lower() == "status":
                    status = int(value.split()[0])
                elif key:
                    headers.append((key, value.strip()))
            self.send_response(status)
            for key, value in headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(rest)))
            self.end_headers()
            self.wfile.write(rest)

    return Handler


class _V6Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


def self_signed(directory: Path) -> tuple[str, str]:
    """A self-signed certificate for the test names: with the openssl CLI, else the cryptography package."""
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    if shutil.which("openssl"):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-subj", "/CN=allowed.test", "-days", "2", "-keyout", str(key_path), "-out",
                        str(cert_path)], check=True, capture_output=True)
        return str(cert_path), str(key_path)
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "allowed.test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("allowed.test"), x509.DNSName("denied.test")]),
                           critical=False).sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_path), str(key_path)


def host_address() -> str | None:
    """A non-loopback address of this machine (the route out), or None."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.254", 9))
        addr = s.getsockname()[0]
        return None if addr.startswith("127.") else addr
    except OSError:
        return None
    finally:
        s.close()


class Servers:
    def __init__(self, root: Path, tag: str):
        self.root = root
        self.log = Log()
        self.threads: list[Any] = []
        self.closers: list[Any] = []
        self.tag = tag
        make_wheel(root)
        make_npm_tarball(root)
        make_repo(root)
        self.http = self._serve(http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(root, self.log, "http")))
        tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(root, self.log, "https"))
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(*self_signed(root))
        tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
        self.https = self._serve(tls)
        self.http6 = self._serve(_V6Server(("::1", 0), make_handler(root, self.log, "http6")))
        self.host_ip = host_address()
        self.tcp = self._raw_tcp()
        self.udp = self._udp()
        self.abstract = f"da-egress-abstract-{tag}"
        self._abstract()
        self.dbus_address, self.dbus_proc = self._dbus()

    def _serve(self, server: http.server.ThreadingHTTPServer) -> int:
        t = threading.Thread(target=server.serve_forever, daemon=True)
        t.start()
        self.closers.append(server.shutdown)
        return server.server_address[1]

    def _accepting(self, sock: socket.socket, name: str) -> None:
        def run() -> None:
            while True:
                try:
                    conn, peer = sock.accept()
                except OSError:
                    return
                conn.settimeout(2)
                try:
                    data = conn.recv(200)
                except OSError:
                    data = b""
                self.log.add(f"{name} {peer} {data!r}")
                conn.close()
        threading.Thread(target=run, daemon=True).start()
        self.closers.append(sock.close)

    def _raw_tcp(self) -> int:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.bind(("::", 0))
        s.listen(16)
        self._accepting(s, "tcp")
        return s.getsockname()[1]

    def _udp(self) -> int:
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.bind(("::", 0))

        def run() -> None:
            while True:
                try:
                    data, peer = s.recvfrom(2048)
                except OSError:
                    return
                self.log.add(f"udp {peer} {data!r}")
        threading.Thread(target=run, daemon=True).start()
        self.closers.append(s.close)
        return s.getsockname()[1]

    def _abstract(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind("\0" + self.abstract)
        s.listen(8)
        self._accepting(s, "abstract")

    def _dbus(self) -> tuple[str | None, subprocess.Popen | None]:
        daemon = shutil.which("dbus-daemon")
        if daemon is None:
            return None, None
        proc = subprocess.Popen([daemon, "--session", "--nofork", "--print-address=1",
                                 f"--address=unix:abstract=/tmp/da-egress-dbus-{self.tag}"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        assert proc.stdout is not None
        line = proc.stdout.readline().decode().strip()
        self.closers.append(proc.kill)
        return (line or None), proc

    def close(self) -> None:
        for fn in self.closers:
            try:
                fn()
            except Exception:
                pass
        if self.dbus_proc is not None:
            self.dbus_proc.wait(5)
