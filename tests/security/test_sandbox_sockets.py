"""Issue 22, class 3: no Unix socket of the host is reachable from inside the sandbox, through the real CLI.

Listening servers (a separate process that logs every connection with the data sent) stand for the host's
sockets: one under the host's ``/tmp`` (ssh-agent, X11 live there), a fake ``$XDG_RUNTIME_DIR/bus`` outside
``/tmp`` and ``/run`` (D-Bus, our own host's socket, podman), one in a plain directory of the home that only
``/proc/net/unix`` knows about, one bound in another network namespace that only ``$SSH_AUTH_SOCK`` names (a
socket mounted in from a container's host), and an abstract one. Every scripted command connects and sends its
case's tag; a case holds when no listener logged its tag, it got one tool_result and the CLI exited 0. Each runs
in bypass, in default with Bash allowed, and both again with the command analysis off (the sandbox alone).
Controls: the same commands with the sandbox switched off are logged — the listeners and clients do work.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from desktop_agent.permissions import sandbox
from tests.security import harness, suite

pytestmark = pytest.mark.skipif(not sandbox.probe().ok, reason="bubblewrap cannot start here")

ALL_MODES = ["bypass", "default-allowed", "bypass@no-analysis", "default-allowed@no-analysis"]
_ID = uuid.uuid4().hex[:12]  # the dirs are made (and removed) by the fixture, not at collection
TMP_DIR = Path("/tmp") / f"da-sec-sock-{_ID}"
OUT_DIR = Path(os.path.expanduser("~")) / f".da-sec-sock-{_ID}"  # not under /tmp, not under /run
ADDR = {
    "tmp": str(TMP_DIR / "host.sock"),
    "runtime": str(OUT_DIR / "runtime" / "bus"),
    "scan": str(OUT_DIR / "plain" / "agent.sock"),
    "netns": str(OUT_DIR / "netns" / "ssh.sock"),
    "abstract": f"@da-sec-abstract-{OUT_DIR.name}",
}
ENV = {"XDG_RUNTIME_DIR": str(OUT_DIR / "runtime"),
       "DBUS_SESSION_BUS_ADDRESS": f"unix:path={ADDR['runtime']},guid=0123",
       "SSH_AUTH_SOCK": ADDR["netns"]}


def _py(addr: str, tag: str) -> str:
    target = repr("\0" + addr[1:]) if addr.startswith("@") else repr(addr)
    return (f"python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect({target}); "
            f"s.sendall(b'{tag}'); print('connected')\"")


def _routes(name: str, addr: str, tag: str) -> list[tuple[str, str]]:
    routes = [("python", _py(addr, tag))]
    if addr.startswith("@"):
        return routes
    routes += [
        ("curl", f"curl -s --max-time 3 --unix-socket {addr} -H 'X: {tag}' http://x/{tag}; echo rc=$?"),
        ("perl", f"perl -MIO::Socket::UNIX -e '$s = IO::Socket::UNIX->new(Peer => q({addr})) or die qq(no: $!); "
                 f"print $s q({tag})'"),
        ("node", f"node -e \"const c = require('net').connect('{addr}', () => {{ c.end('{tag}'); }}); "
                 "c.on('error', e => console.log(e.code))\""),
        ("symlink", f"ln -sf {addr} ./sock-link-{tag}; {_py('./sock-link-' + tag, tag)}"),
        ("proc-root", _py("/proc/self/root" + addr, tag)),
    ]
    return routes


def _cases() -> list[dict]:
    out: list[dict] = []
    for name, addr in ADDR.items():
        for route, _ in _routes(name, addr, "T"):
            for mode in ALL_MODES:  # a tag per case: the log says which one got through
                tag = f"TAG-{name}-{route}-{mode.replace('@', '-')}-held"
                command = dict(_routes(name, addr, tag))[route]
                base = suite.case("sockets", f"S-{name}-{route}", command, [], env=dict(ENV), tag=tag, addr=name)
                out += suite.twin_modes(base, [mode])
            if route == "python" or name == "tmp":  # controls: the sandbox switched off, the same command
                tag = f"TAG-{name}-{route}-control"
                command = dict(_routes(name, addr, tag))[route]
                out.append(suite.case("sockets", f"K-{name}-{route}-sandbox-off", command, [], control=True,
                                      env={**ENV, "DESKTOP_AGENT_SANDBOX": "off"}, tag=tag, addr=name))
    return out


CASES = _cases()


@pytest.fixture(scope="module")
def socket_runs(tmp_path_factory):
    logs: list[Path] = []
    procs = []
    TMP_DIR.mkdir(mode=0o700)
    for d in ("runtime", "plain", "netns"):
        (OUT_DIR / d).mkdir(parents=True, exist_ok=True)
    try:
        log = TMP_DIR / "host.log"
        procs.append(suite.unix_listener(log, [ADDR["tmp"], ADDR["runtime"], ADDR["scan"], ADDR["abstract"]]))
        logs.append(log)
        # bound in a network namespace of its own: /proc/net/unix here does not list it
        bwrap = sandbox.probe().bwrap or "bwrap"
        netns_log = OUT_DIR / "netns.log"
        wrap = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
                "--bind", str(OUT_DIR), str(OUT_DIR), "--die-with-parent", "--"]
        procs.append(suite.unix_listener(netns_log, [ADDR["netns"]], wrap=wrap))
        logs.append(netns_log)
        with open("/proc/net/unix") as fh:
            listed = fh.read()
        assert ADDR["scan"] in listed and ADDR["netns"] not in listed
        runs = suite.run_module_cases(CASES, tmp_path_factory.mktemp("sockets"))
        seen = "".join(suite.logged(p) for p in logs)
        yield runs, seen
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(TMP_DIR, ignore_errors=True)
        shutil.rmtree(OUT_DIR, ignore_errors=True)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("scenario", [c["id"] for c in CASES if not c.get("control")])
def test_no_host_socket_is_reachable(scenario, socket_runs):
    runs, seen = socket_runs
    run, case = runs[scenario]
    problems = harness.breaches(run, case)
    if case["tag"] in seen:
        problems.append(f"the host socket {case['addr']} logged a connection from this case")
    assert not problems, f"{scenario}: {problems}; tool_result: {harness.excerpt(run, case)!r}"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("scenario", [c["id"] for c in CASES if c.get("control")])
def test_control_without_the_sandbox_connects(scenario, socket_runs):
    runs, seen = socket_runs
    run, case = runs[scenario]
    assert not harness.breaches(run, case), harness.breaches(run, case)
    assert case["tag"] in seen, (f"{scenario}: the listener saw nothing, so the held cases prove nothing; "
                                 f"tool_result: {harness.excerpt(run, case)!r}")


def test_sandboxed_programs_keep_their_own_unix_sockets(socket_runs, tmp_path):
    """Only the host's sockets are cut: a program's own socket in TMPDIR works inside (seccomp would break it)."""
    runs, _ = socket_runs
    ids = [c["id"] for c in CASES if c["id"].startswith("S-tmp-python@bypass") and not c.get("control")]
    assert ids  # the fixture ran; now a run of our own
    own = suite.case("sockets", "own-socket", "python3 -c \"import os, socket; p = os.environ['TMPDIR'] + '/own.sock'; "
                     "s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(); c = socket.socket(socket.AF_UNIX); "
                     "c.connect(p); a, _ = s.accept(); c.sendall(b'own-ok'); print(a.recv(10).decode())\"", [])
    result = suite.run_module_cases([own], tmp_path)
    run, case = result["own-socket"]
    assert not harness.breaches(run, case)
    assert "own-ok" in harness.excerpt(run, case), harness.excerpt(run, case)
