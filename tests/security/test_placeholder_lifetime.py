"""The sandbox's placeholders for missing protected names (``util.placeholders``, ``permissions.protected``) live
for the command that binds them and no longer: a sandboxed Bash call leaves the person's folder as it was, while
during the call a write to the protected name still fails. Concurrent commands keep a placeholder until the
last one ends; something the person made meanwhile is never removed; what a kill -9 of the agent left is swept
by the next process. Everything runs through the real Bash tool and the real bubblewrap sandbox."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions import sandbox
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.sandbox_launch import BubblewrapSandbox
from desktop_agent.tools.bash.tool import BashTool
from desktop_agent.util import placeholders

pytestmark = pytest.mark.needs_sandbox

NAMES = (".claude", ".envrc", ".idea", ".mcp.json", ".vscode")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv(sandbox.SKIP_ANALYSIS_ENV, "1")  # the sandbox alone stops the writes
    locks = tmp_path / "locks"  # a registry of its own: another agent process's sweep would otherwise race us
    locks.mkdir()
    monkeypatch.setenv(placeholders.LOCK_DIR_ENV, str(locks))
    d = tmp_path / "proj"
    d.mkdir()
    (d / "README.md").write_text("hi\n")
    (d / "x").mkdir()
    yield d
    placeholders.cleanup_placeholders()


def _ctx(folder) -> ToolUseContext:
    pc = PermissionContext(str(folder), mode="bypassPermissions", trusted=True)
    return ToolUseContext(cwd=str(folder), tools=[BashTool()], permission_context=pc, sandbox=BubblewrapSandbox())


async def _bash(ctx, command, id="toolu_ph"):
    out = await run_tool_use({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}}, ctx)
    assert out.block["tool_use_id"] == id
    return out.block["content"]


def _listing(folder) -> list[tuple[str, bool, int]]:
    out = []
    for name in sorted(os.listdir(folder)):
        st = os.lstat(os.path.join(folder, name))
        out.append((name, os.path.isdir(os.path.join(folder, name)), st.st_ino))
    return out


def test_a_sandboxed_command_leaves_the_folder_listing_unchanged(folder):
    before = _listing(folder)
    asyncio.run(_bash(_ctx(folder), "true"))
    assert _listing(folder) == before
    # during a command the protected names are still unwritable, whatever the route
    text = asyncio.run(_bash(_ctx(folder), "echo '{}' > .mcp.json; mkdir .vscode; mkdir -p .claude && echo '{}' > "
                                  ".claude/settings.local.json; mv x .idea; echo 'eval x' > .envrc; "
                                  "ls -A; echo done"))
    assert text.rstrip().endswith("done") and "Read-only file system" in text, text
    for name in NAMES:
        assert name in text  # the placeholders are there inside, for the command's lifetime
    assert _listing(folder) == before, os.listdir(folder)  # ... and gone after it
    assert (folder / "x").is_dir() and (folder / "README.md").read_text() == "hi\n"


def test_what_the_person_makes_meanwhile_is_kept(folder):
    """While the command runs the person puts a file in ``.claude`` and replaces the ``.vscode`` placeholder by
    their own (empty) folder: both stay; the untouched rest goes."""
    ctx = _ctx(folder)

    async def run():
        task = asyncio.ensure_future(_bash(ctx, "touch x/started; sleep 1.5; echo x > .idea/y; echo done"))
        for _ in range(1000):
            if (folder / "x" / "started").exists():  # the sandbox is up, its mounts made
                break
            await asyncio.sleep(0.01)
        (folder / ".claude" / "settings.local.json").write_text("{}")
        os.rmdir(folder / ".vscode")  # on the host: detaches the mount inside, so only the name is the test here
        os.mkdir(folder / ".vscode")
        return await task

    text = asyncio.run(run())
    assert "done" in text and ".idea/y: Read-only file system" in text, text
    assert (folder / ".claude" / "settings.local.json").read_text() == "{}"
    assert (folder / ".vscode").is_dir()  # another inode than ours: the person's folder
    assert not os.path.lexists(folder / ".mcp.json") and not os.path.lexists(folder / ".idea")


def test_concurrent_commands_keep_the_placeholder_until_the_last_ends(folder):
    ctx = _ctx(folder)

    async def run():
        slow = asyncio.ensure_future(_bash(ctx, "sleep 1.2; echo '{}' > .mcp.json; echo slow-done", id="toolu_a"))
        await asyncio.sleep(0.3)
        assert os.path.isdir(folder / ".mcp.json")
        await _bash(ctx, "true", id="toolu_b")
        still = os.path.isdir(folder / ".mcp.json")  # the slow command still binds it
        return still, await slow

    still, text = asyncio.run(run())
    assert still
    assert ".mcp.json: Is a directory" in text and "slow-done" in text, text  # the write failed
    assert not os.path.lexists(folder / ".mcp.json") and not os.path.lexists(folder / ".claude")


AGENT = textwrap.dedent("""
    import asyncio, sys
    from desktop_agent.core.context import ToolUseContext
    from desktop_agent.engine.execution import run_tool_use
    from desktop_agent.permissions.context import PermissionContext
    from desktop_agent.permissions.sandbox_launch import BubblewrapSandbox
    from desktop_agent.tools.bash.tool import BashTool
    pc = PermissionContext(sys.argv[1], mode="bypassPermissions", trusted=True)
    ctx = ToolUseContext(cwd=sys.argv[1], tools=[BashTool()], permission_context=pc, sandbox=BubblewrapSandbox())
    asyncio.run(run_tool_use({"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "sleep 60"}}, ctx))
""")


def test_kill_9_mid_command_leftovers_are_swept_by_the_next_process(folder, tmp_path):
    """The agent is killed mid-command: its placeholders stay (nothing ran at exit) and its sandbox dies with it.
    The next process's sweep removes them — but not an empty ``.vscode`` the person made in another folder,
    nor a placeholder a live process still binds."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / ".vscode").mkdir()
    env = {**os.environ, "PYTHONPATH": ROOT}
    agent = subprocess.Popen([sys.executable, "-c", AGENT, str(folder)], env=env, cwd=str(folder))
    try:
        deadline = time.monotonic() + 20
        while not all(os.path.lexists(folder / n) for n in NAMES):
            assert time.monotonic() < deadline and agent.poll() is None, "the agent did not start its command"
            time.sleep(0.02)
        os.kill(agent.pid, signal.SIGKILL)
        agent.wait(10)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    time.sleep(0.2)  # bubblewrap dies with its parent (--die-with-parent); its lock dies with the agent
    assert all(os.path.lexists(folder / n) for n in NAMES)  # the leftovers the issue describes
    sweeper = subprocess.run([sys.executable, "-c", "from desktop_agent.util import placeholders; "
                              "print('\\n'.join(placeholders.sweep()))"], env=env, capture_output=True, text=True,
                             timeout=30)
    assert sweeper.returncode == 0, sweeper.stderr
    removed = set(sweeper.stdout.split())
    assert {str(folder / n) for n in NAMES} <= removed
    assert sorted(os.listdir(folder)) == ["README.md", "x"]
    assert (theirs / ".vscode").is_dir()  # no record of ours: never removed


def test_the_next_process_binding_a_leftover_removes_it_after_its_command(folder):
    """Without a sweep (a placeholder another process left and no longer holds): the next command that binds
    it takes it over, and removes it when it ends."""
    path = str(folder / ".mcp.json")
    script = ("import sys; from desktop_agent.util import placeholders as p; "
              "assert p.make_placeholder(sys.argv[1], 'file'); import os; os._exit(0)")  # no clean-up at exit
    subprocess.run([sys.executable, "-c", script, path], env={**os.environ, "PYTHONPATH": ROOT}, check=True,
                   timeout=30)
    assert os.path.isdir(path)
    asyncio.run(_bash(_ctx(folder), "true"))
    assert not os.path.lexists(path), os.listdir(folder)


HAMMER = textwrap.dedent("""
    import asyncio, sys
    from desktop_agent.core.context import ToolUseContext
    from desktop_agent.engine.execution import run_tool_use
    from desktop_agent.permissions.context import PermissionContext
    from desktop_agent.permissions.sandbox_launch import BubblewrapSandbox
    from desktop_agent.tools.bash.tool import BashTool
    async def main():
        for i in range(int(sys.argv[2])):
            pc = PermissionContext(sys.argv[1], mode="bypassPermissions", trusted=True)
            ctx = ToolUseContext(cwd=sys.argv[1], tools=[BashTool()], permission_context=pc,
                                 sandbox=BubblewrapSandbox())
            cmd = "sleep 0.05; echo '{}' > .mcp.json; mkdir -p .vscode/x; echo y > .envrc; true"
            await run_tool_use({"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": cmd}}, ctx)
    asyncio.run(main())
""")


def test_two_agent_processes_never_open_a_protected_name_to_each_other(folder):
    """One process's command ending (and removing what it made) while another process's command runs must not
    detach that command's read-only mount: a second agent process keeps writing the protected names while this
    one runs commands in the same folder; no write ever lands, and the folder ends as it began."""
    before = sorted(os.listdir(folder))
    other = subprocess.Popen([sys.executable, "-c", HAMMER, str(folder), "12"],
                             env={**os.environ, "PYTHONPATH": ROOT}, cwd=str(folder))
    try:
        async def mine():
            for i in range(12):
                await _bash(_ctx(folder), "echo '{}' > .mcp.json; mkdir -p .vscode/x; true", id=f"toolu_m{i}")
        asyncio.run(mine())
        assert other.wait(60) == 0
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
    assert sorted(os.listdir(folder)) == before, os.listdir(folder)
