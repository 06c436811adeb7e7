"""The egress proxy lives as long as its session (issue 27; ``BubblewrapSandbox.close`` from ``AgentSession.aclose``):
a session with ``allowedDomains`` runs a real sandboxed Bash call through the proxy (a local HTTP server reached as
``localhost:PORT``); when the session ends, the proxy's thread is gone, its helper (the relay living in the
namespace) has exited and been reaped, its listening socket (made inside the session's network namespace) is
closed, and no process on the machine — no helper, no shell left behind, not this one — still holds that network
namespace (``/proc/*/ns/net`` and
``/proc/*/fd``). The same through the real CLI (``python -m desktop_agent -p`` against the fake Anthropic server):
after it exits, nothing holds the namespace its command ran in, and its per-process directories (the stub
directory the sandbox's ``/etc/resolv.conf`` comes from, the shells' TMPDIR) are removed."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

from desktop_agent.app.session import AgentSession
from desktop_agent.model.scripted import ScriptedModelClient, reply, text, tool_use
from desktop_agent.permissions.sandbox_launch import BubblewrapSandbox
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.anthropic_server import reply as fake_reply
from tests.fakes.anthropic_server import text as fake_text
from tests.fakes.anthropic_server import tool_use as fake_tool_use
from tests.test_cli import cli_env, run_cli

pytestmark = pytest.mark.needs_sandbox

# what the sandboxed command prints: the network namespace it runs in, the host path bound over its resolv.conf
# (the egress stub file: only present when it runs behind the proxy), its TMPDIR, and one request through the proxy
PROBE = ("echo NS=$(readlink /proc/self/ns/net); echo TMP=$TMPDIR; "
         "echo RESOLV=$(awk '$5 == \"/etc/resolv.conf\" {{print $4}}' /proc/self/mountinfo); "
         "curl -s -m 10 http://localhost:{port}/lifetime")


class _Ok(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        body = f"reached {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def holders(ns: str) -> list[str]:
    """Every process (of those this user can read) whose network namespace is ``ns`` or that holds a descriptor
    to it: ``["<pid> ns", "<pid> fd N"]``."""
    out: list[str] = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{pid}/ns/net") == ns:
                out.append(f"{pid} ns")
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == ns:
                        out.append(f"{pid} fd {fd}")
                except OSError:
                    continue
        except OSError:
            continue
    return out


def _field(out: str, name: str) -> str:
    m = re.search(rf"^{name}=(.*)$", out, re.M)
    assert m, f"{name}= not in {out!r}"
    return m.group(1).strip()


def _egress_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("egress-")]


def test_ending_a_session_closes_its_proxy_and_its_namespace(workdir, server, monkeypatch):
    monkeypatch.setenv("DESKTOP_AGENT_SANDBOX", "on")
    before = set(_egress_threads())
    settings = json.dumps({"sandbox": {"network": {"allowedDomains": [f"localhost:{server}"]}}})
    client = ScriptedModelClient([reply(tool_use("Bash", {"command": PROBE.format(port=server)}, id="toolu_life")),
                                  reply(text("done"))])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions", settings_arg=settings)
    sandbox = s.ctx.sandbox
    assert isinstance(sandbox, BubblewrapSandbox)

    async def scenario() -> str:
        await s.run("probe the network")
        result = [b for m in client.requests[1].messages if isinstance(m.get("content"), list)
                  for b in m["content"] if b.get("type") == "tool_result"]
        return str(result[0]["content"])

    out = asyncio.run(scenario())
    assert "reached /lifetime" in out, out  # the call really went through the proxy
    ns = _field(out, "NS")
    assert ns.startswith("net:[") and ns != os.readlink("/proc/self/ns/net"), out  # its own namespace
    proxy = sandbox.egress
    assert proxy is not None and proxy.running
    listener = proxy.ns.listener if proxy.ns is not None else None
    assert listener is not None and listener.fileno() >= 0
    held = holders(ns)
    assert any(h.startswith(f"{os.getpid()} fd") for h in held), held  # the proxy holds it while the session lives
    helper = proxy.ns.proc.pid if proxy.ns is not None and proxy.ns.proc is not None else None
    assert helper is not None and f"{helper} ns" in held, held  # the helper (the relay) lives in it
    assert _field(out, "RESOLV").endswith("/resolv.conf"), out

    asyncio.run(s.end("other"))
    assert sandbox.egress is None
    assert not proxy.running and proxy._thread is not None and not proxy._thread.is_alive()
    assert listener.fileno() == -1  # the listening socket inside the namespace is closed
    assert set(_egress_threads()) <= before, _egress_threads()
    deadline = time.monotonic() + 5
    while holders(ns) and time.monotonic() < deadline:  # a process exiting may still be listed for a moment
        time.sleep(0.05)
    assert not holders(ns), f"the session's network namespace is still held: {holders(ns)}"
    assert not os.path.exists(f"/proc/{helper}"), "the helper was not reaped"
    asyncio.run(s.aclose())  # a second close is a no-op
    assert sandbox.egress is None


def test_closing_twice_and_from_another_thread_is_safe(workdir, server, monkeypatch):
    """``close`` is idempotent and thread-safe: the session's close (a worker thread) and the exit hook may race."""
    monkeypatch.setenv("DESKTOP_AGENT_SANDBOX", "on")
    settings = json.dumps({"sandbox": {"network": {"allowedDomains": [f"localhost:{server}"]}}})
    client = ScriptedModelClient([reply(tool_use("Bash", {"command": PROBE.format(port=server)}, id="toolu_twice")),
                                  reply(text("done"))])
    s = AgentSession.create(str(workdir), client=client, permission_mode="bypassPermissions", settings_arg=settings)
    asyncio.run(s.run("probe"))
    sandbox = s.ctx.sandbox
    assert isinstance(sandbox, BubblewrapSandbox) and sandbox.egress is not None
    proxy = sandbox.egress
    threads = [threading.Thread(target=sandbox.close) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sandbox.egress is None and not proxy.running
    asyncio.run(s.end("other"))
    asyncio.run(s.end("other"))


def test_the_cli_leaves_nothing_behind(tmp_path, server):
    home = tmp_path / "home"
    proj = tmp_path / "proj"
    proj.mkdir()
    settings = json.dumps({"sandbox": {"network": {"allowedDomains": [f"localhost:{server}"]}}})
    with FakeAnthropic() as fake:
        fake.script([fake_reply(fake_tool_use("Bash", {"command": PROBE.format(port=server)}, id="toolu_cli")),
                     fake_reply(fake_text("done"))])
        env = cli_env(fake, home, DESKTOP_AGENT_SANDBOX="on")
        proc = run_cli(["-p", "probe the network", "--output-format", "json", "--permission-mode",
                        "bypassPermissions", "--settings", settings], proj, env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        results = [b for m in fake.request_messages(1) if isinstance(m.get("content"), list)
                   for b in m["content"] if b.get("type") == "tool_result"]
    out = str(results[0]["content"])
    assert "reached /lifetime" in out, out
    ns = _field(out, "NS")
    assert ns.startswith("net:[") and ns != os.readlink("/proc/self/ns/net"), out
    stub_dir = os.path.dirname(_field(out, "RESOLV"))
    tmp = _field(out, "TMP")
    assert os.path.basename(stub_dir).startswith("desktop-agent-stubs-") and "desktop-agent-shell-" in tmp, out
    assert not holders(ns), f"the CLI's network namespace outlives it: {holders(ns)}"
    assert not os.path.exists(stub_dir) and not os.path.exists(tmp), (stub_dir, tmp)
    helpers = [p for p in os.listdir("/proc") if p.isdigit() and _is_helper_of(p, proj)]
    assert not helpers, helpers


def _is_helper_of(pid: str, proj: Path) -> bool:
    """A process still running in the CLI's project (a shell, a relay, the namespace helper)."""
    try:
        return os.readlink(f"/proc/{pid}/cwd") == str(proj)
    except OSError:
        return False


def test_the_host_closes_the_proxy_of_a_session_it_ends_and_of_every_session_at_its_close(tmp_path, server,
                                                                                       monkeypatch):
    """The window's sessions live in the host: ``end_session`` (a tab closed) and ``Host.close`` (the daemon
    stops) end each session's helper."""
    from desktop_agent.host.server import Host

    monkeypatch.setenv("DESKTOP_AGENT_SANDBOX", "on")
    settings = json.dumps({"sandbox": {"network": {"allowedDomains": [f"localhost:{server}"]}}})

    async def scenario() -> None:
        host = Host()
        helpers = []
        sessions = []
        for name in ("one", "two"):
            folder = tmp_path / name
            folder.mkdir()
            hosted = await host.open_session(str(folder), engine_kwargs={
                "client": ScriptedModelClient([]), "settings_arg": settings, "permission_mode": "bypassPermissions"})
            ctx = hosted.session.ctx
            assert isinstance(ctx.sandbox, BubblewrapSandbox)
            plan = await asyncio.to_thread(ctx.sandbox.plan_launch, ["/bin/sh", "-c", "true"], str(folder),
                                           dict(os.environ), ctx, command="true")  # what a Bash call does first
            plan.release()
            proxy = ctx.sandbox.egress
            assert proxy is not None and proxy.ns is not None and proxy.ns.proc is not None
            helpers.append(proxy.ns.proc.pid)
            sessions.append(hosted)
        assert all(os.path.exists(f"/proc/{pid}") for pid in helpers)
        await host.end_session(sessions[0].session_id, "other")
        assert not os.path.exists(f"/proc/{helpers[0]}") and os.path.exists(f"/proc/{helpers[1]}")
        await host.close()
        assert not os.path.exists(f"/proc/{helpers[1]}")

    asyncio.run(scenario())
