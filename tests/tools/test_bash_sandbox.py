"""The Bash tool inside the real bubblewrap sandbox (desktop_agent/permissions/sandbox.py, tools/bash.py): what a
command may write, read and reach, the background shell, the kill of the whole tree, the private TMPDIR,
the ``dangerouslyDisableSandbox`` escape, and an unavailable sandbox. Every command goes through
``run_tool_use`` with a real PermissionContext; most run in bypassPermissions mode (or with the static
analysis switched off) so that the sandbox alone is what stops them."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.rules import parse_rule
from desktop_agent.core.permission import PermissionReply, PermissionRule
from desktop_agent.permissions import sandbox
from desktop_agent.permissions import sandbox_policy
from desktop_agent.permissions.sandbox_launch import BubblewrapSandbox
from desktop_agent.tools.bash import process as process_mod
from desktop_agent.tools.bash.background import BashOutputTool, KillShellTool, background_shells
from desktop_agent.tools.bash.tool import BashTool
from tests.tools.util import pid_alive

pytestmark = pytest.mark.needs_sandbox  # skipped with the probe's reason where bubblewrap cannot start


class Prompter:
    waits = True  # core.permission.PermissionPrompter: a person answers

    def __init__(self, answer="deny"):
        self.answer = answer
        self.requests = []

    async def ask(self, request):
        self.requests.append(request)
        return PermissionReply(behavior=self.answer, message="no" if self.answer == "deny" else None)


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    (d / "src").mkdir(parents=True)
    (d / "src" / "app.ts").write_text("original")
    (d / ".env").write_text("TOKEN=hunter2")
    (d / "secrets").mkdir()
    (d / "secrets" / "k.pem").write_text("PRIVATE")
    (tmp_path / "outside").mkdir()
    return d


@pytest.fixture
def no_analysis(monkeypatch):
    monkeypatch.setenv(sandbox.SKIP_ANALYSIS_ENV, "1")


def make_ctx(ws, mode="bypassPermissions", deny=(), prompter=None, trusted=True):
    rules = [PermissionRule(value=parse_rule(r), behavior="deny", source="session") for r in deny]
    pc = PermissionContext(str(ws), mode=mode, rules=rules, trusted=trusted)
    return ToolUseContext(cwd=str(ws), tools=[BashTool(), BashOutputTool(), KillShellTool()], permission_context=pc,
                          prompter=prompter, sandbox=BubblewrapSandbox())


async def call(ctx, inp, name="Bash", id="toolu_sb"):
    out = await run_tool_use({"type": "tool_use", "id": id, "name": name, "input": inp}, ctx)
    assert out.block["tool_use_id"] == id
    if out.context_modifier is not None:
        out.context_modifier(ctx)
    return out


def bash(ctx, command, **inp):
    return asyncio.run(call(ctx, {"command": command, **inp}))


def test_writes_only_inside_the_working_dir(ws, no_analysis):
    outside = ws.parent / "outside"
    out = bash(make_ctx(ws), f"touch {outside}/x; echo hi > inside.txt; touch {os.path.expanduser('~')}/h; "
                             "cat inside.txt")
    text = out.block["content"]
    assert "Read-only file system" in text and text.rstrip().endswith("hi")
    assert (ws / "inside.txt").read_text() == "hi\n"
    assert not (outside / "x").exists() and not os.path.exists(os.path.expanduser("~/h"))


def test_read_deny_paths_are_masked(ws, no_analysis):
    ctx = make_ctx(ws, deny=["Read(./.env)", "Read(./secrets/**)"])
    out = bash(ctx, "cat .env; F=.e; cat ${F}nv; echo \"[$(ls -A secrets)]\"; cat secrets/k.pem; "
                    "grep -r hunt.r2 . ; cp .env copy; mv .env moved; echo done")
    text = out.block["content"]
    assert "hunter2" not in text and "PRIVATE" not in text and "\n[]\n" in text
    assert "Permission denied" in text and text.rstrip().endswith("done")
    assert (ws / ".env").read_text() == "TOKEN=hunter2" and not (ws / "moved").exists()
    assert not (ws / "copy").exists() or "hunter2" not in (ws / "copy").read_text()


def test_edit_deny_and_git_internals_are_read_only(ws, no_analysis):
    assert bash(make_ctx(ws), "git init -q . && echo ok").block["content"] == "ok"
    out = bash(make_ctx(ws, deny=["Edit(./src/**)"]),
               "echo evil > src/app.ts; cd src && echo evil > app.ts; cd ..; touch src/new; "
               "echo '#!/bin/sh' > .git/hooks/pre-commit; git config core.fsmonitor 'touch pwn'; "
               "echo ok > free.txt")
    assert "Read-only file system" in out.block["content"]
    assert (ws / "src" / "app.ts").read_text() == "original" and not (ws / "src" / "new").exists()
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert "fsmonitor" not in (ws / ".git" / "config").read_text()
    assert (ws / "free.txt").read_text() == "ok\n"


def test_network_is_off_unless_the_settings_allow_it(ws, no_analysis, _isolated_home):
    """No list: no network. A list: still no direct route (the host's loopback included) — only the egress proxy
    on 127.0.0.1:3128 inside, which connects (host side) to what the list names (issue 27)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    port = server.getsockname()[1]
    probe = f"(exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected) 2>&1 || echo refused"
    via_proxy = (f"(exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT localhost:{port} HTTP/1.1\\r\\n\\r\\n' >&3 "
                 "&& head -c 12 <&3; echo) 2>&1")
    settings = _isolated_home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    try:
        assert "refused" in bash(make_ctx(ws), probe).block["content"]
        assert "3128: Connection refused" in bash(make_ctx(ws), via_proxy).block["content"]  # no proxy at all
        settings.write_text(json.dumps({"sandbox": {"network": {"allowedDomains": ["example.com"]}}}))
        assert "refused" in bash(make_ctx(ws), probe).block["content"]
        assert "HTTP/1.1 403" in bash(make_ctx(ws), via_proxy).block["content"]
        settings.write_text(json.dumps({"sandbox": {"network": {"allowedDomains": [f"localhost:{port}"]}}}))
        assert "refused" in bash(make_ctx(ws), probe).block["content"]
        assert "HTTP/1.1 200" in bash(make_ctx(ws), via_proxy).block["content"]
    finally:
        server.close()


def test_tmpdir_is_private_and_writable(ws, no_analysis):
    out = bash(make_ctx(ws), "echo $TMPDIR; echo t > $TMPDIR/f && cat $TMPDIR/f; touch /tmp/da-canary-$$ 2>&1")
    lines = out.block["content"].split("\n")[1:]  # after "Exit code 1" (touch failed)
    assert lines[0] == sandbox_policy.private_tmpdir() and lines[1] == "t" and "Read-only file system" in lines[2]


def test_background_shell_is_sandboxed(ws, no_analysis):
    outside = ws.parent / "outside"

    async def main():
        ctx = make_ctx(ws, deny=["Read(./.env)"])
        out = await call(ctx, {"command": f"touch {outside}/bg; cat .env; echo finished", "run_in_background": True})
        shell_id = out.block["content"].rsplit(" ", 1)[-1]
        for _ in range(100):
            if background_shells(ctx)[shell_id].status != "running":
                break
            await asyncio.sleep(0.05)
        return await call(ctx, {"bash_id": shell_id}, name="BashOutput")

    text = asyncio.run(main()).block["content"]
    # outside/ is under the host's /tmp here: hidden by the sandbox's private /tmp (else read-only)
    assert ("Read-only file system" in text or "No such file or directory" in text) and "finished" in text \
        and "hunter2" not in text
    assert not (outside / "bg").exists()


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    stat = fh.read()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


@pytest.fixture
def spawned(monkeypatch):
    pids = []
    real = process_mod.spawn_shell

    async def recording(*a, **kw):
        proc = await real(*a, **kw)
        pids.append(proc.pid)
        return proc

    monkeypatch.setattr(process_mod, "spawn_shell", recording)
    return pids


async def _tree_when_running(pids, count):
    for _ in range(200):
        if pids and len(tree := _descendants(pids[-1])) >= count:
            return {pids[-1], *tree}
        await asyncio.sleep(0.02)
    raise AssertionError(f"the sandboxed tree did not start: {pids}")


async def _gone(pids, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        await asyncio.sleep(0.05)
    return [p for p in pids if pid_alive(p)]


@pytest.mark.parametrize("command", ["sleep 100 & setsid sleep 100 & sleep 100",
                                     "trap '' TERM; sleep 100 & sleep 100"], ids=["plain", "ignores_term"])
def test_timeout_kills_the_whole_sandboxed_tree(ws, spawned, command):
    async def main():
        ctx = make_ctx(ws)
        task = asyncio.ensure_future(call(ctx, {"command": command, "timeout": 1500}))
        tree = await _tree_when_running(spawned, 4)  # bwrap's init, bash, the sleeps
        out = await task
        return out, tree, await _gone(tree)

    out, tree, survivors = asyncio.run(main())
    assert "Command timed out after 1.5s" in out.block["content"]
    assert len(tree) >= 4 and survivors == []


def test_stop_and_kill_shell_kill_the_sandboxed_tree(ws, spawned):
    async def main():
        ctx = make_ctx(ws)
        task = asyncio.ensure_future(call(ctx, {"command": "sleep 100 & sleep 100"}))
        tree = await _tree_when_running(spawned, 3)
        ctx.abort.abort("user_interrupted")
        stopped = await asyncio.wait_for(task, 5)
        left_fg = await _gone(tree)
        out = await call(ctx, {"command": "sleep 100 & sleep 100", "run_in_background": True})
        shell_id = out.block["content"].rsplit(" ", 1)[-1]
        tree_bg = await _tree_when_running(spawned, 3)
        await call(ctx, {"shell_id": shell_id}, name="KillShell")
        return stopped, left_fg, await _gone(tree_bg)

    stopped, left_fg, left_bg = asyncio.run(main())
    assert stopped.block["content"].endswith("<error>Command was aborted before completion</error>")
    assert left_fg == [] and left_bg == []


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions", "default"])
def test_dangerously_disable_sandbox_always_asks(ws, mode):
    outside = ws.parent / "outside"
    prompter = Prompter("deny")
    out = bash(make_ctx(ws, mode=mode, prompter=prompter), "echo ok", dangerouslyDisableSandbox=True)
    assert out.is_error and len(prompter.requests) == 1
    assert "outside the sandbox" in prompter.requests[0].message
    yes = Prompter("allow")
    out = bash(make_ctx(ws, mode=mode, prompter=yes), f"touch {outside}/unsandboxed && echo made",
               dangerouslyDisableSandbox=True)
    assert len(yes.requests) == 1 and out.block["content"] == "made" and (outside / "unsandboxed").exists()


def test_dangerously_disable_sandbox_is_denied_in_dont_ask(ws):
    prompter = Prompter("allow")
    out = bash(make_ctx(ws, mode="dontAsk", prompter=prompter), "echo ok", dangerouslyDisableSandbox=True)
    assert out.is_error and prompter.requests == []


@pytest.fixture
def no_bwrap(monkeypatch):
    monkeypatch.setenv(sandbox.BWRAP_ENV, "/nonexistent/bwrap")
    sandbox.reset_probe()
    yield
    sandbox.reset_probe()


def test_unavailable_sandbox_asks_in_bypass_and_warns_once(ws, no_bwrap, capsys):
    outside = ws.parent / "outside"
    prompter = Prompter("deny")

    def ctx():  # a fresh one per command: a refusal stops the turn
        return make_ctx(ws, mode="bypassPermissions", prompter=prompter)

    out = bash(ctx(), f"touch {outside}/x")
    assert out.is_error and len(prompter.requests) == 1 and not (outside / "x").exists()
    assert "sandbox could not start" in prompter.requests[0].message
    assert bash(ctx(), "echo read-only").block["content"] == "read-only" and len(prompter.requests) == 1
    bash(ctx(), "touch y")
    assert len(prompter.requests) == 2 and not (ws / "y").exists()
    prompter.answer = "allow"
    assert bash(ctx(), "touch y && echo made").block["content"] == "made" and (ws / "y").exists()
    assert capsys.readouterr().err.count("sandbox could not start") == 1
    denied = bash(make_ctx(ws, mode="dontAsk"), "touch z")
    assert denied.is_error and not (ws / "z").exists()


def test_sandbox_off_switch_runs_unsandboxed(ws, monkeypatch):
    monkeypatch.setenv(sandbox.MODE_ENV, "off")
    outside = ws.parent / "outside"
    assert bash(make_ctx(ws), f"touch {outside}/free && echo ok").block["content"] == "ok"
    assert (outside / "free").exists()


def test_untrusted_folder_git_config_cannot_run_programs(ws, no_analysis):
    canary = ws / "pwned"
    out = bash(make_ctx(ws, trusted=False),
               f"git init -q . && git config core.fsmonitor 'touch {canary}' 2>&1; echo x > f; git add f; "
               "git status --short")
    # .git/config is protected only once it exists: the first command could write it; the next ones honour
    # the overrides and cannot change it.
    assert "f" in out.block["content"]
    canary.unlink(missing_ok=True)
    out = bash(make_ctx(ws, trusted=False), "git status --short; git diff --cached --stat")
    assert not canary.exists(), out.block["content"]
    bash(make_ctx(ws, trusted=True), "git status --short")  # trusted: the repository's own config applies
    assert canary.exists()
