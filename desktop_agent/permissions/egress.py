"""The network the settings name, and nothing else: the egress proxy of a session's sandboxed shells (issue 27).

With a non-empty ``sandbox.network.allowedDomains`` (or a host the person allowed for the session), every
sandboxed shell of the session runs in a **network namespace of the session's own** — loopback only, no route out,
none of the host's abstract Unix sockets — and reaches the outside only through this proxy, which runs in the
session's process (a thread with its own asyncio loop) and connects, on the host side, to the hosts the rules
allow. An empty or absent list means no proxy and no network at all (bubblewrap's ``--unshare-net``, as before).

How the proxy is reached (the anchor, anthropics/sandbox-runtime, binds a Unix socket into the sandbox and runs
``socat`` inside to expose it on ``localhost:3128``; measured here that costs 17 ms per command — socat's start and
the wait until it listens — and one more copy of every byte). We keep its boundary and drop the relay:
``EgressProxy.start`` starts one helper per session (a small Python program that calls ``unshare(CLONE_NEWUSER |
CLONE_NEWNET)`` itself, maps our uid to itself and brings ``lo`` up) that creates the listening TCP socket
``127.0.0.1:3128`` *inside* the new namespace and hands it to us with its user and network namespace descriptors
(``SCM_RIGHTS``), and stays as the session's relay (it receives each connection's sockets ``MSG_CMSG_CLOEXEC`` and
never starts a program: no sandboxed command can hold them): the proxy accepts on that socket directly, decides, connects
upstream and hands each direction's two sockets to the helper, which moves the bytes (``copy_fds``, out of this
process and its GIL) and reports the count. ``close`` (the session's end) closes the descriptors and the channel:
the helper exits and the namespace goes. Each sandboxed shell starts as ``nsenter --user=...
--net=... --preserve-credentials -- bwrap --unshare-all --share-net ...``: bubblewrap's own user, PID, IPC, UTS,
mount namespaces as before, and the session's network namespace instead of the host's. Added start-up: about
1-4 ms (bench/bench_egress.py), plus 20-35 ms once per session (the helper's start). A 100 MB loopback download
through the proxy costs the second TCP hop any relay that terminates TCP pays (a C one, ``socat``, included):
1.1-1.2x the direct one on a loaded 2-core machine (``socat`` alone: 1.25-1.5x); from a server paced at
1 Gbit/s, 1.00-1.03x. bench/bench_egress.py measures each hop. The
session's shells share that namespace: a server one command starts on loopback is
there for the next (the host's loopback is not: ``localhost`` requests go through the proxy, see below).

The proxy speaks HTTP (``CONNECT host:port`` tunnels; plain ``GET http://host/...`` forwarded, one request per
connection, ``Connection: close``; a ``Content-Length`` body over 1 MB is moved by the helper as well, exactly its
length — measured on a 100 MB POST with a busy Python thread in this process: 1.3x direct, against 81x when this
loop copied it) and SOCKS5 (``CONNECT`` only, names resolved here: ``socks5h``) on the same
port, told apart by the first byte. Every request is decided by ``EgressRules`` and logged (``EgressRecord``:
host, port, bytes up/down, allow|deny and the rule that decided) to ``<data dir>/egress/<session>.jsonl`` (one
line per request, flushed at once) and to the in-memory ``records`` and ``listeners`` the window reads.

Rules (``EgressRules``, spelled as the reference's settings: ``sandbox.network.allowedDomains`` and
``sandbox.network.deniedDomains``): ``example.com`` (that name exactly), ``*.example.com`` (strict subdomains
only), an optional ``:PORT`` (``localhost:8080``, ``127.0.0.1:5432``, ``[::1]:8080``); a denied entry wins over
an allowed one; anything no entry allows is refused. ``*`` and one-label wildcards (``*.com``) are refused in the
allow list (the reference's rule); ``*`` is accepted in the deny list. Names are resolved on the host side only
after they are allowed (a denied name is never looked up). **Loopback and link-local destinations** (the host's
own services, ``169.254.169.254``) are connected only when the allowing rule names a loopback host itself
(``localhost``, ``127.0.0.1``, ``[::1]``, with or without a port): an allowed ``*.example.com`` whose DNS answers
``127.0.0.1`` is refused. ``0.0.0.0`` and ``::`` are always refused.

Inside, every shell gets ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` (and lowercase) ``http://127.0.0.1:3128``
(``ALL_PROXY`` as ``http://``, as the reference does: httpx refuses ``socks5h://`` without ``socksio``; the SOCKS5
side is on the same port for clients that ask for it), ``NO_PROXY``/``no_proxy`` empty (so ``localhost`` goes
through the proxy and is decided by the rules — a person's local database is reachable only when listed),
``npm_config_proxy``/``npm_config_https_proxy``, ``PIP_PROXY``, git's ``http.proxy`` (``GIT_CONFIG_*``: it wins
over a user's ``~/.gitconfig`` proxy), ``CARGO_HTTP_PROXY``, ``GRPC_PROXY``, ``RSYNC_PROXY`` and
``JAVA_TOOL_OPTIONS`` (``-Dhttp(s).proxyHost/Port``, empty ``-Dhttp.nonProxyHosts`` — Java's default skips
localhost — and ``-DsocksProxyHost/Port`` for raw sockets). ``/etc/resolv.conf`` inside names no server (a
program that resolves by itself gets an immediate failure; no DNS packet can leave the namespace anyway).

Test-only switch: ``DESKTOP_AGENT_UNSAFE_EGRESS_HOSTS`` = a JSON object ``{"name": "127.0.0.1", ...}`` maps names
to addresses in the proxy's resolver (the leak suite maps its test names to local servers). It is read **once,
when this module is imported** — from the environment the process was started with, before a settings ``env``
block or an ``update_environment_variables`` message is applied (``app.session`` imports this module first) — so
neither the model (which controls the command, never the CLI's environment) nor a project's settings can set it;
a mapped address counts as named by the rule (the loopback guard does not apply to it). Never set it outside tests.
"""

from __future__ import annotations

import array
import asyncio
import atexit
import collections
import ipaddress
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Literal

UNSAFE_HOSTS_ENV = "DESKTOP_AGENT_UNSAFE_EGRESS_HOSTS"
_HOSTS_AT_START = os.environ.get(UNSAFE_HOSTS_ENV) or ""  # read once, at import (see the module docstring)
PROXY_PORT = 3128
PROXY_URL = f"http://127.0.0.1:{PROXY_PORT}"
CONNECT_TIMEOUT_S = 15.0
HEAD_LIMIT = 64 * 1024
BULK_BODY = 1 << 20  # a request body this large (Content-Length) is moved by the relay, not the proxy's loop
MAX_RECORDS = 2000
RESOLV_CONF = ("# desktop-agent sandbox: no name server here; names resolve through the egress proxy only\n"
               "options timeout:1 attempts:1\n")

Decision = Literal["allow", "deny"]


# --------------------------------------------------------------------------------------------------- rules


def _strip_brackets(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        addr = ipaddress.ip_address(_strip_brackets(host).split("%")[0])
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")


def canonical_host(host: str) -> str | None:
    """A host as the rules compare it: lower case, no trailing dot, IP literals in their canonical form; None
    for anything that is neither a DNS name nor an IP literal (a ``%`` zone, spaces, an empty label...)."""
    h = (host or "").strip().lower()
    if h.endswith(".") and not h.endswith(".."):
        h = h[:-1]
    if not h or len(h) > 253:
        return None
    addr = _ip(h) if "%" not in h else None
    if addr is not None:
        return str(addr)
    if ":" in h or "%" in h:
        return None
    labels = h.split(".")
    if not all(_LABEL.match(label) for label in labels):
        return None
    return h


@dataclass(frozen=True)
class DomainRule:
    raw: str
    host: str          # canonical host, or "*.base", or "*"
    port: int | None
    kind: Literal["allow", "deny"]

    def matches(self, host: str, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.host == "*":
            return True
        if self.host.startswith("*."):
            return _ip(host) is None and host.endswith(self.host[1:])
        return host == self.host

    @property
    def names_loopback(self) -> bool:
        if self.host == "localhost":
            return True
        addr = _ip(self.host)
        return addr is not None and (addr.is_loopback or addr.is_link_local)


def parse_rule(entry: str, kind: Literal["allow", "deny"]) -> DomainRule | str:
    """A rule, or the reason the entry was refused (a sentence for the warnings)."""
    text = (entry or "").strip()
    where = "sandbox.network.allowedDomains" if kind == "allow" else "sandbox.network.deniedDomains"
    bad = f"{text!r} in {where} is not a domain (example.com, *.example.com, localhost:8080, [::1]:8080); ignored"
    if not text or "://" in text or "/" in text:
        return bad
    port: int | None = None
    host = text
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            return bad
        host, rest = text[1:close], text[close + 1:]
        if rest:
            if not rest.startswith(":"):
                return bad
            port_text = rest[1:]
        else:
            port_text = ""
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif text.count(":") > 1:
        return f"{text!r} in {where}: an IPv6 address goes in brackets ([::1], [::1]:8080); ignored"
    else:
        port_text = ""
    if port_text:
        if not re.fullmatch(r"[1-9][0-9]{0,4}", port_text) or int(port_text) > 65535:
            return bad
        port = int(port_text)
    host = host.lower()
    if host == "*":
        if kind == "allow":
            return f"'*' in {where} would allow every host; it was ignored (list the hosts instead)"
        return DomainRule(text, "*", port, kind)
    if host.startswith("*."):
        base = canonical_host(host[2:])
        if base is None or _ip(base) is not None or "." not in base:
            return (f"{text!r} in {where} is too broad or not a domain (a wildcard needs a domain with a dot after "
                    "it: *.example.com); ignored")
        return DomainRule(text, "*." + base, port, kind)
    if "*" in host:
        return bad
    canon = canonical_host(host)
    if canon is None:
        return bad
    return DomainRule(text, canon, port, kind)


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    rule: str                   # the entry that decided, or why none did
    loopback_ok: bool = False   # the allowing rule names a loopback host itself


@dataclass(frozen=True)
class EgressRules:
    allowed: tuple[DomainRule, ...] = ()
    denied: tuple[DomainRule, ...] = ()
    warnings: tuple[str, ...] = ()

    @classmethod
    def from_lists(cls, allowed: Iterable[str], denied: Iterable[str] = ()) -> EgressRules:
        a: list[DomainRule] = []
        d: list[DomainRule] = []
        warnings: list[str] = []
        for entries, kind, out in ((allowed, "allow", a), (denied, "deny", d)):
            for entry in entries:
                rule = parse_rule(entry, kind)  # type: ignore[arg-type]
                if isinstance(rule, str):
                    warnings.append(rule)
                elif rule not in out:
                    out.append(rule)
        return cls(tuple(a), tuple(d), tuple(warnings))

    def with_allowed(self, entries: Iterable[str]) -> EgressRules:
        extra = EgressRules.from_lists(entries)
        return EgressRules(self.allowed + tuple(r for r in extra.allowed if r not in self.allowed), self.denied,
                           self.warnings + extra.warnings)

    @property
    def empty(self) -> bool:
        return not self.allowed

    def decide(self, host: str, port: int) -> Verdict:
        canon = canonical_host(host)
        if canon is None:
            return Verdict("deny", f"{host!r} is not a host name")
        if not 0 < port < 65536:
            return Verdict("deny", f"port {port} is not a port")
        for rule in self.denied:
            if rule.matches(canon, port):
                return Verdict("deny", f"deniedDomains: {rule.raw}")
        for rule in self.allowed:
            if rule.matches(canon, port):
                return Verdict("allow", f"allowedDomains: {rule.raw}", rule.names_loopback)
        return Verdict("deny", "no entry of sandbox.network.allowedDomains allows it")


def _unsafe_hosts(text: str) -> dict[str, str]:
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    out: dict[str, str] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            name, addr = canonical_host(str(k)), _ip(str(v))
            if name and addr is not None:
                out[name] = str(addr)
    return out


def _guarded(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """A destination the loopback guard keeps for rules that name it: the host's own services."""
    return addr.is_loopback or addr.is_link_local


# --------------------------------------------------------------------------------------------------- records


@dataclass
class EgressRecord:
    ts: float
    session: str
    proto: str              # "connect" | "http" | "socks5"
    host: str
    port: int
    decision: Decision
    rule: str
    up: int = 0             # bytes from the sandbox to the host
    down: int = 0           # bytes back
    error: str = ""
    ms: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------------------------------- the namespace


# The byte mover, shared by the helper (as source: it runs there under its own interpreter) and by this process
# (the fallback when the helper's relay is gone): ``read``/``write`` through one 4 MB buffer per direction, an
# anonymous mapping (a small exchange touches a page or two of it; a bulk one reads up to 4 MB a call). Measured
# against ``splice(2)`` through a 1 MB pipe (the most an unprivileged pipe holds) on a 100 MB loopback download,
# interleaved, three runs: ratios to direct 1.13-1.24 with the copy, 1.59-1.64 with splice (socat: 1.28; likely
# because the copy hands the receiver fresh full segments, splice the sender's page fragments). The sockets keep
# their O_NONBLOCK (the proxy's loop still reads the other direction of an HTTP forward): EAGAIN waits in
# ``poll``. Returns the bytes moved; half-closes ``dst`` at the end.
COPY_SOURCE = r"""
def copy_fds(sfd, dfd, size=1 << 22, limit=-1):
    import _socket, mmap, os, select
    buf = mmap.mmap(-1, size)  # anonymous: a page costs memory only once a read has filled it
    view = memoryview(buf)
    moved = 0
    pin = select.poll()
    pin.register(sfd, select.POLLIN)
    pout = select.poll()
    pout.register(dfd, select.POLLOUT)
    try:
        while limit != 0:
            try:
                n = os.readv(sfd, [buf if limit < 0 else view[:min(size, limit)]])
            except BlockingIOError:
                pin.poll()
                continue
            if n <= 0:
                break
            off = 0
            while off < n:
                try:
                    off += os.write(dfd, view[off:n])
                except BlockingIOError:
                    pout.poll()
            moved += n
            if limit > 0:
                limit -= n
    except OSError:
        pass
    finally:
        view.release()
        buf.close()
        if limit >= 0:  # a request body: exactly ``limit`` bytes, no half-close (the response still comes)
            return moved
        try:
            half = _socket.socket(fileno=os.dup(dfd))
            try:
                half.shutdown(_socket.SHUT_WR)
            finally:
                half.close()
        except OSError:
            pass
    return moved
"""
_copy_ns: dict[str, Any] = {}
exec(COPY_SOURCE, _copy_ns)  # noqa: S102 - our own constant source, shared with the helper
copy_fds: Callable[..., int] = _copy_ns["copy_fds"]  # (sfd, dfd, size=4 MB, limit=-1) -> bytes moved

# The helper: makes the namespace, hands its listening socket and its descriptors over, then stays as the
# session's relay — ``relay`` messages (SOCK_SEQPACKET: one per direction of a connection, ``b"<id>"`` with the
# source and destination sockets as SCM_RIGHTS) get a thread each that copies until EOF and answers
# ``b"<id> <bytes>"``. Moving the bytes here, not in the session's process, keeps them away from that process's
# GIL (measured: one busy Python thread there made a 100 MB download 2.8x slower through in-process copy
# threads, which need the GIL at every turn). EOF on the channel (the proxy closed, or its process died) ends it.
HELPER = COPY_SOURCE + r"""
import _socket as socket, _thread, array, fcntl, os, struct, sys  # the C modules only: a quicker start
chan = socket.socket(fileno=int(sys.argv[1]))
port = int(sys.argv[2])
uid, gid = os.getuid(), os.getgid()
if hasattr(os, "unshare"):  # CLONE_NEWUSER | CLONE_NEWNET, in this process: its caps stay
    os.unshare(0x10000000 | 0x40000000)
else:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000 | 0x40000000) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
    with open(f"/proc/self/{name}", "w") as fh:
        fh.write(text)
ctl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # lo up (SIOCGIFFLAGS / SIOCSIFFLAGS, IFF_UP)
flags = struct.unpack("16sh", fcntl.ioctl(ctl, 0x8913, struct.pack("16sh", b"lo", 0)))[1]
fcntl.ioctl(ctl, 0x8914, struct.pack("16sh", b"lo", flags | 1))
ctl.close()
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", port))
s.listen(512)
fds = [s.fileno(), os.open("/proc/self/ns/user", os.O_RDONLY), os.open("/proc/self/ns/net", os.O_RDONLY)]
chan.sendmsg([b"ok"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
s.close()
for fd in fds[1:]:
    os.close(fd)
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 2)  # nobody reads our stderr from here on
lock = _thread.allocate_lock()
os.set_inheritable(chan.fileno(), False)
def move(cid, sfd, dfd, limit):
    n = 0
    try:
        n = copy_fds(sfd, dfd, limit=limit)
    finally:
        os.close(sfd)
        os.close(dfd)
        try:
            with lock:
                chan.sendmsg([b"%d %d" % (cid, n)])
        except OSError:
            pass
while True:
    got = array.array("i")
    try:
        msg, anc, _fl, _ad = chan.recvmsg(64, socket.CMSG_SPACE(2 * got.itemsize), 0x40000000)  # MSG_CMSG_CLOEXEC
    except OSError:
        break
    if not msg:
        break
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            got.frombytes(data[:len(data) - len(data) % got.itemsize])
    if len(got) != 2:
        for fd in got:
            os.close(fd)
        continue
    cid, _, limit = msg.partition(b" ")
    _thread.start_new_thread(move, (int(cid), got[0], got[1], int(limit or -1)))
os._exit(0)
"""


def _helper_python() -> str:
    for cand in ("/usr/bin/python3", sys.executable):
        if cand and os.access(cand, os.X_OK):
            return cand
    return sys.executable


@dataclass
class Namespace:
    """The session's network namespace: the listening socket inside it, the descriptors that enter it, and the
    helper that made it and now relays for it (``proc``; ``chan`` reaches it; None: no relay, in-process copy)."""

    listener: socket.socket
    userns_fd: int
    netns_fd: int
    proc: subprocess.Popen[bytes] | None = None
    chan: socket.socket | None = None

    def enter_argv(self) -> list[str]:
        pid = os.getpid()
        return [shutil.which("nsenter") or "/usr/bin/nsenter", f"--user=/proc/{pid}/fd/{self.userns_fd}",
                f"--net=/proc/{pid}/fd/{self.netns_fd}", "--preserve-credentials", "--"]

    def close(self) -> None:
        """Everything goes: our descriptors, the listening socket, the helper (EOF on its channel ends it; it is
        killed after 2 s and always reaped)."""
        for fd in (self.userns_fd, self.netns_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            self.listener.close()
        except OSError:
            pass
        if self.chan is not None:
            try:
                self.chan.close()
            except OSError:
                pass
        if self.proc is not None:
            try:
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def make_namespace(bwrap: str, port: int = PROXY_PORT, timeout: float = 10.0) -> Namespace:
    """A new user + network namespace (loopback up) with a socket listening on ``127.0.0.1:port`` in it, and its
    helper left running as the relay. ``bwrap``: the sandbox's binary — a missing one means no sandbox, so no
    namespace either."""
    if not os.access(bwrap, os.X_OK) and shutil.which(bwrap) is None:
        raise OSError(f"{bwrap} is not installed")
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    proc: subprocess.Popen[bytes] | None = None
    try:
        # the helper unshares in its own process (not bubblewrap, not unshare(1)): run unprivileged, a program
        # exec'd into a new user namespace loses its capabilities, so it could not bring lo up, and a namespace
        # bubblewrap made cannot be entered again by nsenter (setns(CLONE_NEWNET): EPERM; measured as uid 65534)
        argv = [_helper_python(), "-I", "-S", "-c", HELPER, str(theirs.fileno()), str(port)]
        proc = subprocess.Popen(argv, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, cwd="/",
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # cwd: it pins no folder
        theirs.close()
        ours.settimeout(timeout)
        fds = array.array("i")
        try:
            msg, anc, _flags, _addr = ours.recvmsg(16, socket.CMSG_SPACE(3 * fds.itemsize))
        except OSError as exc:
            msg, anc = b"", []
            err = f"{exc}"
        else:
            err = ""
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        if msg != b"ok" or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            try:
                _, stderr = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, stderr = proc.communicate()
            detail = (stderr or b"").decode("utf-8", "replace").strip().splitlines()[-1:] or [err or "no answer"]
            raise OSError(f"the sandbox's network namespace could not be made: {detail[0]}")
        if proc.stderr is not None:
            proc.stderr.close()  # the helper sends its stderr to /dev/null from here on
        listener = socket.socket(fileno=fds[0])
        listener.setblocking(False)
        for fd in (fds[1], fds[2]):
            os.set_inheritable(fd, False)
        ours.setblocking(False)
        ns = Namespace(listener, fds[1], fds[2], proc, ours)
        proc = None
        return ns
    except BaseException:
        ours.close()
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        raise
    finally:
        try:
            theirs.close()
        except OSError:
            pass


# --------------------------------------------------------------------------------------------------- proxy


class _Conn:
    """One accepted connection: a receive buffer over a non-blocking socket."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket):
        self.loop, self.sock, self.buf = loop, sock, bytearray()

    async def fill(self) -> bool:
        data = await self.loop.sock_recv(self.sock, 65536)
        if not data:
            return False
        self.buf += data
        return True

    async def read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not await self.fill():
                raise ConnectionError("closed")
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    async def read_until(self, sep: bytes, limit: int) -> bytes:
        while True:
            at = self.buf.find(sep)
            if at >= 0:
                out = bytes(self.buf[:at + len(sep)])
                del self.buf[:at + len(sep)]
                return out
            if len(self.buf) > limit or not await self.fill():
                raise ConnectionError("no end of header")

    async def send(self, data: bytes) -> None:
        await self.loop.sock_sendall(self.sock, data)


class Denied(Exception):
    pass


class EgressProxy:
    """The egress proxy of one session (see the module docstring). ``start`` makes the namespace and the thread;
    ``launch_prefix``/``env`` are what a sandboxed shell needs; ``close`` ends both."""

    def __init__(self, rules: EgressRules, *, session_id: str = "", log_path: str | None = None,
                 hosts: dict[str, str] | None = None, bwrap: str = "bwrap",
                 resolver: Callable[[str, int], Any] | None = None):
        self.rules = rules
        self.session_id = session_id
        self.log_path = log_path
        self.hosts = dict(hosts) if hosts is not None else _unsafe_hosts(_HOSTS_AT_START)
        self.bwrap = bwrap
        self.resolver = resolver  # an async (name, port) -> [address] in place of getaddrinfo (tests)
        self.session_allowed: list[str] = []  # "Allow this host for the session"
        self.records: collections.deque[EgressRecord] = collections.deque(maxlen=MAX_RECORDS)
        self.listeners: list[Callable[[EgressRecord], None]] = []
        self.ns: Namespace | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._log_fh: Any = None
        self._closed = False
        self._live: set[socket.socket] = set()  # sockets a copy works on (shut down by close)
        self._pumps: set[threading.Thread] = set()  # the in-process copy threads running (joined by close)
        self.make_ns: Callable[[str], Namespace] | None = None  # in place of make_namespace (the bench's host hop)
        self._relay_waits: dict[int, asyncio.Future[int]] = {}  # directions the helper's relay is moving
        self._relay_dead = False
        self._ids = itertools.count(1)

    # -------------------------------------------------------------- lifecycle
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self.ns is not None

    def start(self) -> None:
        with self._lock:
            if self.running:
                return
            self._closed = False
            self._relay_dead = False
            self.ns = (self.make_ns or make_namespace)(self.bwrap)
            ready = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(ready,), name="egress-proxy", daemon=True)
            self._thread.start()
            ready.wait(10)
            atexit.register(self.close)

    def _run(self, ready: threading.Event) -> None:
        loop = self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        task = loop.create_task(self._serve())
        ready.set()
        try:
            loop.run_until_complete(task)
        except Exception:  # pragma: no cover - the loop was stopped
            pass
        finally:
            for t in asyncio.all_tasks(loop):
                t.cancel()
            try:
                loop.run_until_complete(asyncio.sleep(0))
            except Exception:  # pragma: no cover
                pass
            loop.close()

    async def _serve(self) -> None:
        assert self.ns is not None
        lst = self.ns.listener
        loop = asyncio.get_running_loop()
        if self.ns.chan is not None:
            loop.add_reader(self.ns.chan.fileno(), self._relay_readable)
        while not self._closed:
            try:
                sock, _ = await loop.sock_accept(lst)
            except (OSError, asyncio.CancelledError):
                return
            sock.setblocking(False)
            loop.create_task(self._handle(sock))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            loop, thread, ns = self._loop, self._thread, self.ns
            self.ns = None
            live: list[socket.socket] = []
            for _ in range(3):  # the loop thread may be changing the set
                try:
                    live = list(self._live)
                    break
                except RuntimeError:
                    continue
            for sock in live:
                _shut(sock)
            if loop is not None and thread is not None and thread.is_alive():
                def stop() -> None:
                    for t in asyncio.all_tasks(loop):
                        t.cancel()
                loop.call_soon_threadsafe(stop)
                thread.join(5)
            for t in list(self._pumps):  # woken by the shutdowns above
                t.join(2)
            if ns is not None:
                ns.close()  # the last descriptors of the namespace: it goes (no helper is left: it exited at start)
            try:
                atexit.unregister(self.close)  # and the exit hook no longer holds the proxy
            except Exception:  # pragma: no cover
                pass
            if self._log_fh is not None:
                try:
                    self._log_fh.close()
                except OSError:
                    pass
                self._log_fh = None

    # -------------------------------------------------------------- rules
    def set_rules(self, rules: EgressRules) -> None:
        self.rules = rules

    def allow_for_session(self, host: str) -> None:
        if host not in self.session_allowed:
            self.session_allowed.append(host)

    def effective_rules(self) -> EgressRules:
        return self.rules.with_allowed(self.session_allowed) if self.session_allowed else self.rules

    # -------------------------------------------------------------- what a shell needs
    def launch_prefix(self) -> list[str]:
        if self.ns is None:
            raise OSError("the egress proxy is not running")
        return self.ns.enter_argv()

    # -------------------------------------------------------------- log
    def _record(self, rec: EgressRecord) -> None:
        self.records.append(rec)
        if self.log_path:
            try:
                if self._log_fh is None:
                    os.makedirs(os.path.dirname(self.log_path), mode=0o700, exist_ok=True)
                    self._log_fh = open(self.log_path, "a", encoding="utf-8")
                self._log_fh.write(json.dumps(rec.to_json(), ensure_ascii=False) + "\n")
                self._log_fh.flush()
            except OSError:
                pass
        for fn in list(self.listeners):
            try:
                fn(rec)
            except Exception:  # a listener's bug never stops the proxy
                pass

    # -------------------------------------------------------------- connections
    async def _open(self, host: str, port: int, verdict: Verdict) -> socket.socket:
        loop = asyncio.get_running_loop()
        canon = canonical_host(host) or host
        mapped = self.hosts.get(canon)
        if mapped is not None:
            addrs = [mapped]
            guard = False
        else:
            literal = _ip(canon)
            if literal is not None:
                addrs = [str(literal)]
            elif canon == "localhost":
                addrs = ["127.0.0.1", "::1"]
            elif self.resolver is not None:
                addrs = list(await self.resolver(canon, port))
            else:
                infos = await asyncio.wait_for(loop.getaddrinfo(canon, port, type=socket.SOCK_STREAM),
                                               CONNECT_TIMEOUT_S)
                addrs = list(dict.fromkeys(str(i[4][0]) for i in infos))
            guard = not verdict.loopback_ok
        last: Exception | None = None
        for text in addrs:
            addr = ipaddress.ip_address(text.split("%")[0])
            if addr.is_unspecified or (isinstance(addr, ipaddress.IPv4Address) and addr.is_multicast):
                last = Denied(f"{host} is {addr}: not a destination")
                continue
            if guard and _guarded(addr):
                last = Denied(f"{host} resolves to {addr}, the host's own address; only a rule naming it "
                              "(localhost, 127.0.0.1, [::1]) reaches it")
                continue
            fam = socket.AF_INET6 if addr.version == 6 else socket.AF_INET
            sock = socket.socket(fam, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                await asyncio.wait_for(loop.sock_connect(sock, (text, port)), CONNECT_TIMEOUT_S)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except (OSError, asyncio.TimeoutError) as exc:
                sock.close()
                last = exc
        raise last or OSError(f"{host} has no address")

    async def _handle(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        conn = _Conn(loop, sock)
        try:
            if not await conn.fill():
                return
            if conn.buf[:1] == b"\x05":
                await self._socks(conn)
            else:
                await self._http(conn)
        except (OSError, ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError, ValueError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            self._live.discard(sock)
            try:
                sock.close()
            except OSError:
                pass

    def _decide(self, proto: str, host: str, port: int) -> tuple[Verdict, EgressRecord]:
        verdict = self.effective_rules().decide(host, port)
        rec = EgressRecord(time.time(), self.session_id, proto, canonical_host(host) or host[:255], port,
                           verdict.decision, verdict.rule)
        return verdict, rec

    async def _pump(self, src: socket.socket, dst: socket.socket, rec: EgressRecord, up: bool,
                    limit: int = -1) -> None:
        """Copy ``src`` to ``dst`` until EOF, then half-close ``dst``: by the helper's relay (another process, so
        this one's GIL never slows the bytes), else in a thread of ours (``copy_fds``). ``limit`` >= 0: exactly
        that many bytes (a request body; no half-close)."""
        loop = asyncio.get_running_loop()
        ns = self.ns
        if ns is not None and ns.chan is not None and not self._relay_dead:
            cid = next(self._ids)
            fut: asyncio.Future[int] = loop.create_future()
            self._relay_waits[cid] = fut
            try:
                ns.chan.sendmsg([b"%d %d" % (cid, limit) if limit >= 0 else b"%d" % cid], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                                 array.array("i", [src.fileno(), dst.fileno()]))])
            except OSError:  # the relay is gone or full: this connection is copied here
                self._relay_waits.pop(cid, None)
            else:
                self._live.update((src, dst))
                try:
                    n = await asyncio.shield(fut)
                except asyncio.CancelledError:
                    _shut(src)
                    _shut(dst)
                    raise
                finally:
                    self._relay_waits.pop(cid, None)
                if up:
                    rec.up += n
                else:
                    rec.down += n
                return
        done: asyncio.Future[int] = loop.create_future()

        def finish(n: int) -> None:
            if not done.done():
                done.set_result(n)

        def work() -> None:
            n = 0
            try:
                n = copy_fds(src.fileno(), dst.fileno(), limit=limit)
            finally:
                self._pumps.discard(threading.current_thread())
                try:
                    loop.call_soon_threadsafe(finish, n)
                except RuntimeError:  # the loop is closed
                    pass

        self._live.update((src, dst))
        pump = threading.Thread(target=work, name="egress-pump", daemon=True)
        self._pumps.add(pump)
        pump.start()
        try:
            n = await asyncio.shield(done)
        except asyncio.CancelledError:
            _shut(src)
            _shut(dst)
            raise
        if up:
            rec.up += n
        else:
            rec.down += n

    def _relay_readable(self) -> None:
        """The helper's answers: ``b"<id> <bytes>"`` when a direction is done; EOF: the relay is gone (what it
        was moving ends; new connections are copied in this process)."""
        ns = self.ns
        if ns is None or ns.chan is None:
            return
        while True:
            try:
                msg = ns.chan.recv(64)
            except BlockingIOError:
                return
            except OSError:
                msg = b""
            if not msg:
                self._relay_dead = True
                if ns.proc is not None:
                    ns.proc.poll()  # reaped if it is gone
                try:
                    asyncio.get_running_loop().remove_reader(ns.chan.fileno())
                except (OSError, ValueError, RuntimeError):
                    pass
                for fut in list(self._relay_waits.values()):
                    if not fut.done():
                        fut.set_result(0)
                return
            cid, _, n = msg.partition(b" ")
            waiting = self._relay_waits.get(int(cid))
            if waiting is not None and not waiting.done():
                waiting.set_result(int(n or 0))

    async def _tunnel(self, conn: _Conn, upstream: socket.socket, rec: EgressRecord) -> None:
        if conn.buf:
            pending = bytes(conn.buf)
            conn.buf.clear()
            await asyncio.get_running_loop().sock_sendall(upstream, pending)
            rec.up += len(pending)
        await asyncio.gather(self._pump(conn.sock, upstream, rec, True), self._pump(upstream, conn.sock, rec, False))

    async def _connected(self, proto: str, host: str, port: int, verdict: Verdict, rec: EgressRecord,
                         on_ok: Callable[[], Any], on_fail: Callable[[str], Any],
                         body: Callable[[socket.socket], Any]) -> None:
        t0 = time.monotonic()
        try:
            upstream = await self._open(host, port, verdict)
        except Denied as exc:
            rec.decision, rec.rule = "deny", str(exc)
            self._record(rec)
            await on_fail(str(exc))
            return
        except (OSError, asyncio.TimeoutError) as exc:
            rec.error = f"{type(exc).__name__}: {exc}"[:300]
            rec.ms = int((time.monotonic() - t0) * 1000)
            self._record(rec)
            await on_fail(rec.error)
            return
        try:
            await on_ok()
            await body(upstream)
        finally:
            self._live.discard(upstream)
            upstream.close()
            rec.ms = int((time.monotonic() - t0) * 1000)
            self._record(rec)

    # -------------------------------------------------------------- SOCKS5
    async def _socks(self, conn: _Conn) -> None:
        head = await conn.read_exact(2)
        methods = await conn.read_exact(head[1])
        if 0 not in methods:
            await conn.send(b"\x05\xff")
            return
        await conn.send(b"\x05\x00")
        ver, cmd, _rsv, atyp = await conn.read_exact(4)
        if atyp == 1:
            host = socket.inet_ntop(socket.AF_INET, await conn.read_exact(4))
        elif atyp == 4:
            host = socket.inet_ntop(socket.AF_INET6, await conn.read_exact(16))
        elif atyp == 3:
            n = (await conn.read_exact(1))[0]
            host = (await conn.read_exact(n)).decode("ascii", "replace")
        else:
            await conn.send(b"\x05\x08\x00\x01" + bytes(6))
            return
        port = int.from_bytes(await conn.read_exact(2), "big")
        if ver != 5 or cmd != 1:  # BIND and UDP ASSOCIATE: no UDP leaves the sandbox
            rec = EgressRecord(time.time(), self.session_id, "socks5", canonical_host(host) or host, port, "deny",
                               f"SOCKS5 command {cmd} is not supported (CONNECT only)")
            self._record(rec)
            await conn.send(b"\x05\x07\x00\x01" + bytes(6))
            return
        verdict, rec = self._decide("socks5", host, port)
        if verdict.decision == "deny":
            self._record(rec)
            await conn.send(b"\x05\x02\x00\x01" + bytes(6))
            return

        async def ok() -> None:
            await conn.send(b"\x05\x00\x00\x01" + bytes(6))

        async def fail(_why: str) -> None:
            await conn.send(b"\x05\x02\x00\x01" + bytes(6) if rec.decision == "deny" else b"\x05\x05\x00\x01" + bytes(6))

        async def body(up: socket.socket) -> None:
            await self._tunnel(conn, up, rec)

        await self._connected("socks5", host, port, verdict, rec, ok, fail, body)

    # -------------------------------------------------------------- HTTP
    async def _refuse(self, conn: _Conn, status: str, text: str) -> None:
        body = (text + "\n").encode("utf-8", "replace")
        await conn.send(f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        f"X-Proxy-Error: blocked-by-allowlist\r\nContent-Length: {len(body)}\r\n"
                        "Connection: close\r\n\r\n".encode() + body)

    async def _http(self, conn: _Conn) -> None:
        head = await conn.read_until(b"\r\n\r\n", HEAD_LIMIT)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            await self._refuse(conn, "400 Bad Request", "desktop-agent egress proxy: not an HTTP request")
            return
        method, target, version = parts
        headers = [ln for ln in lines[1:] if ln]
        if method == "CONNECT":
            host, port = _split_authority(target, 443)
            if host is None:
                await self._refuse(conn, "400 Bad Request", f"desktop-agent egress proxy: bad CONNECT target {target!r}")
                return
            await self._http_connect(conn, host, port)
            return
        m = re.match(r"^http://([^/?#]+)(.*)$", target, re.I)
        if not m:
            await self._refuse(conn, "400 Bad Request", "desktop-agent egress proxy: a proxy request needs an absolute "
                                                        "http:// URL (https goes through CONNECT)")
            return
        authority, path = m.group(1), m.group(2) or "/"
        if "@" in authority:
            authority = authority.rsplit("@", 1)[1]
        host, port = _split_authority(authority, 80)
        if host is None:
            await self._refuse(conn, "400 Bad Request", f"desktop-agent egress proxy: bad URL host {authority!r}")
            return
        verdict, rec = self._decide("http", host, port)
        if verdict.decision == "deny":
            self._record(rec)
            await self._refuse(conn, "403 Forbidden", _deny_text(host, port, rec.rule))
            return
        kept: list[str] = []
        length: int | None = None
        chunked = upgrade = False
        for h in headers:
            name, _, value = h.partition(":")
            key = name.strip().lower()
            if key in ("host", "proxy-connection", "proxy-authorization", "connection", "keep-alive"):
                if key == "connection" and "upgrade" in value.lower():
                    upgrade = True
                continue
            if key == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    await self._refuse(conn, "400 Bad Request", "desktop-agent egress proxy: bad Content-Length")
                    return
            if key == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
            kept.append(h)
        host_header = authority if not authority.endswith(":80") else authority[:-3]
        out = [f"{method} {path} {version}", f"Host: {host_header}", *kept,
               "Connection: upgrade" if upgrade else "Connection: close", "", ""]
        request = "\r\n".join(out).encode("latin-1")

        async def ok() -> None:
            pass

        async def fail(why: str) -> None:
            if rec.decision == "deny":
                await self._refuse(conn, "403 Forbidden", _deny_text(host, port, why))
            else:
                await self._refuse(conn, "502 Bad Gateway", f"desktop-agent egress proxy: {host}:{port}: {why}")

        async def body(up: socket.socket) -> None:
            loop = asyncio.get_running_loop()
            await loop.sock_sendall(up, request)
            rec.up += len(request)
            if upgrade:
                await self._tunnel(conn, up, rec)
                return
            down = loop.create_task(self._pump(up, conn.sock, rec, False))
            try:
                if chunked:
                    await self._forward_chunked(conn, up, rec)
                elif length:
                    await self._forward_length(conn, up, rec, length, bulk=True)
                conn.buf.clear()  # a pipelined second request is not forwarded: one request per connection
                await down
            finally:
                down.cancel()

        await self._connected("http", host, port, verdict, rec, ok, fail, body)

    async def _forward_length(self, conn: _Conn, up: socket.socket, rec: EgressRecord, length: int,
                              bulk: bool = False) -> None:
        """``length`` bytes of a request body: what is buffered, then (``bulk``, a Content-Length body larger than
        ``BULK_BODY``) the rest moved by the relay as a download is (never more than the body: a pipelined
        request stays unread), else through this loop."""
        loop = asyncio.get_running_loop()
        left = length
        if bulk and left - len(conn.buf) >= BULK_BODY:
            chunk = bytes(conn.buf[:left])
            del conn.buf[:len(chunk)]
            if chunk:
                await loop.sock_sendall(up, chunk)
                rec.up += len(chunk)
                left -= len(chunk)
            await self._pump(conn.sock, up, rec, True, limit=left)
            return
        while left > 0:
            if not conn.buf and not await conn.fill():
                return
            chunk = bytes(conn.buf[:left])
            del conn.buf[:len(chunk)]
            await loop.sock_sendall(up, chunk)
            rec.up += len(chunk)
            left -= len(chunk)

    async def _forward_chunked(self, conn: _Conn, up: socket.socket, rec: EgressRecord) -> None:
        loop = asyncio.get_running_loop()
        while True:
            line = await conn.read_until(b"\r\n", 4096)
            size = int(line.split(b";")[0].strip() or b"0", 16)
            await loop.sock_sendall(up, line)
            rec.up += len(line)
            if size == 0:
                while True:  # trailers up to the empty line
                    t = await conn.read_until(b"\r\n", HEAD_LIMIT)
                    await loop.sock_sendall(up, t)
                    rec.up += len(t)
                    if t == b"\r\n":
                        return
            await self._forward_length(conn, up, rec, size + 2)

    async def _http_connect(self, conn: _Conn, host: str, port: int) -> None:
        verdict, rec = self._decide("connect", host, port)
        if verdict.decision == "deny":
            self._record(rec)
            await self._refuse(conn, "403 Forbidden", _deny_text(host, port, rec.rule))
            return

        async def ok() -> None:
            await conn.send(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def fail(why: str) -> None:
            if rec.decision == "deny":
                await self._refuse(conn, "403 Forbidden", _deny_text(host, port, why))
            else:
                await self._refuse(conn, "502 Bad Gateway", f"desktop-agent egress proxy: {host}:{port}: {why}")

        async def body(up: socket.socket) -> None:
            await self._tunnel(conn, up, rec)

        await self._connected("connect", host, port, verdict, rec, ok, fail, body)




def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _deny_text(host: str, port: int, why: str) -> str:
    return (f"desktop-agent: the sandbox's network does not reach {host}:{port} ({why}). Hosts are allowed by "
            "sandbox.network.allowedDomains in the settings.")


def _split_authority(text: str, default_port: int) -> tuple[str | None, int]:
    text = text.strip()
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            return None, 0
        host, rest = text[1:close], text[close + 1:]
        port_text = rest[1:] if rest.startswith(":") else ""
        if rest and not rest.startswith(":"):
            return None, 0
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif ":" in text:
        return None, 0
    else:
        host, port_text = text, ""
    if port_text:
        if not port_text.isdigit():
            return None, 0
        port = int(port_text)
    else:
        port = default_port
    return (host or None), port


# --------------------------------------------------------------------------------------------------- shell env


def _git_config(env: dict[str, str], key: str, value: str) -> None:
    try:
        n = int(env.get("GIT_CONFIG_COUNT") or "0")
    except ValueError:
        n = 0
    env[f"GIT_CONFIG_KEY_{n}"] = key
    env[f"GIT_CONFIG_VALUE_{n}"] = value
    env["GIT_CONFIG_COUNT"] = str(n + 1)


def proxy_env(env: dict[str, str], port: int = PROXY_PORT) -> dict[str, str]:
    """The shell's environment with every proxy setting pointed at the proxy inside (see the module docstring)."""
    out = dict(env)
    url = f"http://127.0.0.1:{port}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "GRPC_PROXY"):
        out[name] = out[name.lower()] = url
    out["NO_PROXY"] = out["no_proxy"] = ""
    out["npm_config_proxy"] = out["npm_config_https_proxy"] = url
    out["npm_config_noproxy"] = ""
    out["PIP_PROXY"] = url
    out["CARGO_HTTP_PROXY"] = url
    out["RSYNC_PROXY"] = f"127.0.0.1:{port}"
    out.pop(UNSAFE_HOSTS_ENV, None)
    _git_config(out, "http.proxy", url)
    java = (f"-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort={port} -Dhttps.proxyHost=127.0.0.1 "
            f"-Dhttps.proxyPort={port} -Dhttp.nonProxyHosts= -DsocksProxyHost=127.0.0.1 -DsocksProxyPort={port} "
            "-Djava.net.useSystemProxies=false")
    out["JAVA_TOOL_OPTIONS"] = (out.get("JAVA_TOOL_OPTIONS", "") + " " + java).strip()
    return out


_resolv: str | None = None
_resolv_lock = threading.Lock()


def resolv_conf_file(directory: str) -> str:
    """A resolv.conf that names no server (bound over /etc/resolv.conf inside)."""
    global _resolv
    with _resolv_lock:
        if _resolv is None or not os.path.isfile(_resolv):
            path = os.path.join(directory, "resolv.conf")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(RESOLV_CONF)
            os.chmod(path, 0o444)
            _resolv = path
        return _resolv


def log_path_for(data_dir: str, session_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id or "session")[:120]
    return os.path.join(data_dir, "egress", f"{safe}.jsonl")


def read_log(path: str) -> list[EgressRecord]:
    """The records of a session's log (the window's Network view reads it; bad lines skipped)."""
    out: list[EgressRecord] = []
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    data = json.loads(line)
                    out.append(EgressRecord(**{k: data[k] for k in EgressRecord.__dataclass_fields__ if k in data}))
                except (ValueError, TypeError, KeyError):
                    continue
    except OSError:
        pass
    return out


__all__ = ["EgressProxy", "EgressRecord", "EgressRules", "DomainRule", "Verdict", "Namespace", "make_namespace",
           "proxy_env", "parse_rule", "canonical_host", "log_path_for", "read_log", "resolv_conf_file",
           "PROXY_PORT", "UNSAFE_HOSTS_ENV"]
