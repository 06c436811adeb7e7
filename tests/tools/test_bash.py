"""Bash, BashOutput and KillShell with real subprocesses (SPEC §3.9, App. A "Bash" and "Order of results",
App. B.1 Bash notes, §9 item 54)."""

from __future__ import annotations

import asyncio
import os
import re
import time

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.core.events import ToolCallFinished
from desktop_agent.engine.scheduler import ToolRunner, partition_tool_calls
from desktop_agent.permissions import bash as permissions_bash
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.sandbox_launch import BubblewrapSandbox
from desktop_agent.tools.bash import background as background_mod
from desktop_agent.tools.bash.background import BashOutputTool, KillShellTool
from desktop_agent.tools.bash.output import MAX_OUTPUT_CHARS, cap_output, exit_code_is_error
from desktop_agent.tools.bash.tool import ABORTED_NOTE, BashInput, BashTool, effective_timeout_ms
from tests.engine.helpers import Tracker, make_tools
from tests.tools.util import pid_alive


def run(coro):
    return asyncio.run(coro)


def tools():
    return [BashTool(), BashOutputTool(), KillShellTool()]


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    (d / "src").mkdir(parents=True)
    return d


def make_ctx(ws, **kw):
    # These tests are about the tool, not the policy: bypass mode, said explicitly (no permission state is
    # default mode, where most of these commands would ask).
    kw.setdefault("permission_context", PermissionContext(str(ws), mode="bypassPermissions"))
    kw.setdefault("sandbox", BubblewrapSandbox())
    return ToolUseContext(cwd=str(ws), tools=tools(), **kw)


def use(name, inp, id="toolu_bash"):
    return {"type": "tool_use", "id": id, "name": name, "input": inp}


async def call(ctx, inp, name="Bash", id="toolu_bash"):
    out = await run_tool_use(use(name, inp, id), ctx)
    assert out.block["tool_use_id"] == id
    if out.context_modifier is not None:
        out.context_modifier(ctx)
    return out


def bash(ws, inp, ctx=None):
    return run(call(ctx or make_ctx(ws), inp))


@pytest.fixture
def host_pids(monkeypatch):
    """For tests that read `$$`/`$!` as host PIDs: the sandbox runs commands in a PID namespace of their own,
    so these run unsandboxed (tests/tools/test_bash_sandbox.py kills the tree inside the sandbox)."""
    monkeypatch.setenv("DESKTOP_AGENT_SANDBOX", "off")


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            alive.append(int(entry))
    return alive




async def wait_gone(pgid: int, timeout: float = 3.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        members = group_members(pgid)
        if not members:
            return []
        await asyncio.sleep(0.05)
    return group_members(pgid)


# ---- App. A texts


def test_output_text(ws):
    out = bash(ws, {"command": "echo hi"})
    assert out.block == {"type": "tool_result", "tool_use_id": "toolu_bash", "content": "hi"}


@pytest.mark.needs_sandbox
def test_nonzero_exit_is_error_without_wrapper(ws):
    out = bash(ws, {"command": "exit 3"})
    assert out.is_error and out.block["content"] == "Exit code 3"
    out = bash(ws, {"command": "echo out; echo err >&2; exit 2"})
    assert out.is_error and out.block["content"] == "Exit code 2\nout\nerr"


def test_no_output(ws):
    out = bash(ws, {"command": "true"})
    assert not out.is_error and out.block["content"] == "(Bash completed with no output)"
    # stdin is /dev/null: a command reading it ends at once.
    assert bash(ws, {"command": "cat"}).block["content"] == "(Bash completed with no output)"


def test_pwd_is_the_workspace(ws):
    assert bash(ws, {"command": "pwd"}).block["content"] == str(ws)


def test_stderr_and_stdout_interleave_in_order_and_blank_lines_trimmed(ws):
    out = bash(ws, {"command": "echo; echo; echo a; echo b >&2; echo c; echo; echo"})
    assert out.block["content"] == "a\nb\nc"


def test_exit_code_one_is_success_for_search_and_compare_commands(ws):
    (ws / "f.txt").write_text("hello\n")
    (ws / "g.txt").write_text("world\n")
    out = bash(ws, {"command": "grep nomatch f.txt"})
    assert not out.is_error and out.block["content"] == "(Bash completed with no output)"
    out = bash(ws, {"command": "diff f.txt g.txt"})
    assert not out.is_error and out.block["content"] == "1c1\n< hello\n---\n> world"
    assert not bash(ws, {"command": "test -f nope.txt"}).is_error
    out = bash(ws, {"command": "false"})
    assert out.is_error and out.block["content"] == "Exit code 1"
    out = bash(ws, {"command": "grep -q x nope.txt"})  # exit 2: a real error
    assert out.is_error and out.block["content"].startswith("Exit code 2\ngrep: nope.txt")


@pytest.mark.parametrize("command,code,error", [
    ("grep x f", 1, False), ("rg x", 1, False), ("find . -name x", 1, False), ("diff a b", 1, False),
    ("test -f x", 1, False), ("[ -f x ]", 1, False), ("git diff --stat", 1, False), ("git -C . diff", 1, False),
    ("cat f | grep x", 1, False), ("LC_ALL=C /usr/bin/grep x f", 1, False), ("git status", 1, True),
    ("false", 1, True), ("grep x f", 2, True), ("ls", 0, False), ("grep x f | wc -l", 1, True),
])
def test_exit_code_semantics(command, code, error):
    assert exit_code_is_error(command, code) is error


# ---- flags, permissions, schema


def test_concurrency_follows_read_only():
    tool = BashTool()
    ls, rm = BashInput(command="ls"), BashInput(command="rm x")
    assert tool.is_read_only(ls) and tool.is_concurrency_safe(ls)  # §9 item 54
    assert not tool.is_read_only(rm) and not tool.is_concurrency_safe(rm)
    assert tool.interrupt_behavior() == "block"
    assert set(tool.input_schema()["properties"]) == {"command", "timeout", "description", "run_in_background",
                                                      "dangerouslyDisableSandbox"}
    assert BashOutputTool().is_concurrency_safe(None) and not KillShellTool().is_read_only(None)


def test_check_permissions_delegates_to_bash_permission(ws, monkeypatch):
    seen = []

    def fake(input, ctx):
        seen.append(input)
        from desktop_agent.core.permission import PermissionDecision

        return PermissionDecision(behavior="deny", message="nope from bash check")

    monkeypatch.setattr(permissions_bash, "check_bash_permission", fake)
    out = bash(ws, {"command": "echo hi", "description": "Say hi"})
    assert seen == [{"command": "echo hi", "description": "Say hi"}]
    assert out.is_error and out.block["content"] == "nope from bash check"


def test_timeout_default_and_clamp(monkeypatch):
    assert effective_timeout_ms(None) == 120_000
    assert effective_timeout_ms(5_000) == 5_000
    assert effective_timeout_ms(10_000_000) == 600_000
    monkeypatch.setenv("BASH_DEFAULT_TIMEOUT_MS", "1000")
    assert effective_timeout_ms(None) == 1000


def test_dangerously_disable_sandbox_is_accepted(ws):
    # Accepted by the schema; running outside the sandbox always asks (no prompter here: refused).
    out = bash(ws, {"command": "echo ok", "dangerouslyDisableSandbox": True})
    assert out.is_error and "outside the sandbox" in out.block["content"]


# ---- killing the whole process group


def test_timeout_kills_the_whole_group(ws, host_pids):
    async def main():
        ctx = make_ctx(ws)
        t0 = time.monotonic()
        out = await call(ctx, {"command": "echo $$; sleep 100 & echo $!; sleep 100", "timeout": 500})
        elapsed = time.monotonic() - t0
        pgid, child = (int(x) for x in out.block["content"].split("\n")[:2])
        return out, elapsed, pgid, child, await wait_gone(pgid)

    out, elapsed, pgid, child, survivors = run(main())
    assert out.is_error
    assert out.block["content"].endswith(
        "Command timed out after 0.5s and was killed. Use a larger timeout, or run_in_background for "
        "long-running commands.")
    assert elapsed < 5
    assert survivors == [] and not pid_alive(pgid) and not pid_alive(child)


def test_timeout_escalates_to_sigkill_when_term_is_ignored(ws, host_pids):
    async def main():
        out = await call(make_ctx(ws), {"command": "trap '' TERM; echo $$; sleep 100 & echo $!; sleep 100",
                                        "timeout": 300})
        pgid, child = (int(x) for x in out.block["content"].split("\n")[:2])
        return out, pgid, child, await wait_gone(pgid)

    out, pgid, child, survivors = run(main())
    assert out.is_error and "Command timed out after 0.3s" in out.block["content"]
    assert survivors == [] and not pid_alive(child)


def test_cancellation_kills_the_whole_group(ws, host_pids):
    progress = []

    async def main():
        ctx = make_ctx(ws, on_progress=lambda tid, data: progress.append((tid, data)))
        task = asyncio.ensure_future(call(ctx, {"command": "echo $$; sleep 100 & echo $!; sleep 100"}))
        for _ in range(100):
            if progress and progress[-1][1]["output"].count("\n") >= 2:
                break
            await asyncio.sleep(0.05)
        pgid, child = (int(x) for x in progress[-1][1]["output"].split("\n")[:2])
        assert group_members(pgid)  # running
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return pgid, child, await wait_gone(pgid)

    pgid, child, survivors = run(main())
    assert progress[0][0] == "toolu_bash"
    assert survivors == [] and not pid_alive(child)


def test_user_abort_kills_the_group_and_reports_partial_output(ws, host_pids):
    async def main():
        ctx = make_ctx(ws)
        task = asyncio.ensure_future(call(ctx, {"command": "echo $$; echo started; sleep 100 & sleep 100"}))
        await asyncio.sleep(0.4)
        ctx.abort.abort("user_interrupted")
        out = await asyncio.wait_for(task, 5)
        pgid = int(out.block["content"].split("\n")[0])
        return out, pgid, await wait_gone(pgid)

    out, pgid, survivors = run(main())
    assert out.is_error
    lines = out.block["content"].split("\n")
    assert lines[1:] == ["started", ABORTED_NOTE]
    assert survivors == []


def test_background_child_holding_the_pipe_does_not_block_the_result(ws, host_pids):
    async def main():
        t0 = time.monotonic()
        out = await call(make_ctx(ws), {"command": "sleep 3 & echo $!; echo hi"})
        elapsed = time.monotonic() - t0
        child = int(out.block["content"].split("\n")[0])
        os.kill(child, 9)
        return out, elapsed

    out, elapsed = run(main())
    assert out.block["content"].split("\n")[1] == "hi" and elapsed < 2


# ---- working directory


@pytest.mark.needs_sandbox
def test_cwd_persists_inside_and_resets_outside(ws):
    async def main():
        ctx = make_ctx(ws)
        texts = []
        for command in ["cd src", "pwd", "cd ..", "pwd", "cd / && echo moved", "pwd", "cd src && exit 3", "pwd"]:
            out = await call(ctx, {"command": command})
            texts.append(out.block["content"])
        return texts, ctx.cwd

    texts, cwd = run(main())
    assert texts == ["(Bash completed with no output)", str(ws / "src"), "(Bash completed with no output)", str(ws),
                     f"moved\nShell cwd was reset to {ws}", str(ws), "Exit code 3", str(ws)]
    assert cwd == str(ws)


def test_cwd_change_travels_through_the_tool_runner(ws):
    async def main():
        ctx = make_ctx(ws)
        runner = ToolRunner([use("Bash", {"command": "cd src"}, "t1")], ctx)
        async for _ in runner.events():
            pass
        runner2 = ToolRunner([use("Bash", {"command": "pwd"}, "t2")], runner.ctx)
        async for _ in runner2.events():
            pass
        return runner.ctx.cwd, runner2.outcomes["t2"].block["content"]

    cwd, pwd = run(main())
    assert cwd == str(ws / "src") and pwd == str(ws / "src")


@pytest.mark.needs_sandbox
def test_deleted_cwd_falls_back_to_original(ws):
    async def main():
        ctx = make_ctx(ws)
        await call(ctx, {"command": "mkdir gone && cd gone"})
        assert ctx.cwd == str(ws / "gone")
        os.rmdir(ws / "gone")
        return (await call(ctx, {"command": "pwd"})).block["content"], ctx.cwd

    text, cwd = run(main())
    assert text == f"{ws}\nShell cwd was reset to {ws}" and cwd == str(ws)


# ---- output cap


@pytest.mark.needs_sandbox
def test_output_capped_at_30000_keeping_head_and_tail(ws):
    out = bash(ws, {"command": "seq 1 100000"})
    text = out.block["content"]
    full = "\n".join(str(i) for i in range(1, 100001))
    assert len(text) <= MAX_OUTPUT_CHARS
    m = re.search(r"\n\n\.\.\. \[(\d+) characters truncated\] \.\.\.\n\n", text)
    assert m
    head, tail = text[: m.start()], text[m.end():]
    assert full.startswith(head) and full.endswith(tail) and head.startswith("1\n2\n3\n")
    assert tail.endswith("99999\n100000")
    assert int(m.group(1)) == len(full) - len(head) - len(tail)  # says exactly how much was cut
    assert len(head) > 10_000 and len(tail) > 10_000


@pytest.mark.needs_sandbox
def test_output_just_over_the_cap(ws):
    out = bash(ws, {"command": "python3 -c \"print('a' * 20000 + 'b' * 20000)\""})
    text = out.block["content"]
    assert len(text) <= MAX_OUTPUT_CHARS
    m = re.search(r"\n\n\.\.\. \[(\d+) characters truncated\] \.\.\.\n\n", text)
    assert text.startswith("a" * 10_000) and text.endswith("b" * 10_000)
    assert int(m.group(1)) == 40_000 - (len(text) - len(m.group(0)))
    assert bash(ws, {"command": "python3 -c \"print('x' * 30000)\""}).block["content"] == "x" * 30_000


def test_cap_output_unit():
    assert cap_output("short") == "short"
    capped = cap_output("x" * 100, limit=60)
    assert len(capped) <= 60 and "[" in capped and capped.startswith("x") and capped.endswith("x")


# ---- progress and order of results


def test_progress_streams_output_before_the_end(ws):
    events = []

    async def main():
        ctx = make_ctx(ws, on_progress=lambda tid, data: events.append((time.monotonic(), tid, data)))
        out = await call(ctx, {"command": "echo one; sleep 0.4; echo two"}, id="toolu_p")
        return out, time.monotonic()

    out, t_end = run(main())
    assert out.block["content"] == "one\ntwo"
    first = events[0]
    assert first[1] == "toolu_p" and first[2]["output"].startswith("one") and first[2]["type"] == "bash_progress"
    assert t_end - first[0] > 0.3  # arrived while the command was still running


def test_concurrent_batch_results_in_completion_order(ws):
    """App. A: [Bash "sleep 0.3; echo slow", Read, Bash "echo fast"] → Read, fast, slow."""
    read = make_tools(Tracker(), delay=0)[0]
    blocks = [use("Bash", {"command": "sleep 0.3; echo slow"}, "b_slow"), use("Read", {"file_path": "x"}, "r"),
              use("Bash", {"command": "echo fast"}, "b_fast")]

    async def main():
        ctx = ToolUseContext(cwd=str(ws), tools=[BashTool(), read], sandbox=BubblewrapSandbox())
        assert [len(b.blocks) for b in partition_tool_calls(blocks, ctx)] == [3]
        runner = ToolRunner(blocks, ctx)
        finished = [ev for ev in [e async for e in runner.events()] if isinstance(ev, ToolCallFinished)]
        return finished, runner

    finished, runner = run(main())
    assert [(e.tool_use_id, e.content) for e in finished] == [("r", "Read ok"), ("b_fast", "fast"),
                                                             ("b_slow", "slow")]
    assert [b["tool_use_id"] for b in runner.results_in_order_of_completion()] == ["r", "b_fast", "b_slow"]


def test_cd_is_read_only_but_runs_alone_so_its_cwd_change_applies(ws):
    (ws / "sub").mkdir(exist_ok=True)
    tool = BashTool()
    cd = tool.input_model.model_validate({"command": "cd sub"})
    assert tool.is_read_only(cd) and not tool.is_concurrency_safe(cd)


# ---- background shells


@pytest.mark.needs_sandbox
def test_background_shell_lifecycle(ws):
    async def main():
        ctx = make_ctx(ws)
        out = await call(ctx, {"command": "echo start; sleep 0.5; echo done; exit 4", "run_in_background": True})
        texts = [out.block["content"]]
        shell_id = re.fullmatch(r"Command running in background with ID: (\S+)", out.block["content"]).group(1)
        assert shell_id in ctx.extras["bash_shells"]
        await asyncio.sleep(0.2)
        first = await call(ctx, {"bash_id": shell_id}, name="BashOutput")
        await asyncio.sleep(0.6)
        second = await call(ctx, {"bash_id": shell_id}, name="BashOutput")
        third = await call(ctx, {"bash_id": shell_id}, name="BashOutput")
        kill = await call(ctx, {"shell_id": shell_id}, name="KillShell")
        return texts, first, second, third, kill, shell_id

    texts, first, second, third, kill, shell_id = run(main())
    assert first.data["status"] == "running" and first.data["exitCode"] is None
    assert re.fullmatch(r"<status>running</status>\n\n<stdout>\nstart\n</stdout>\n\n<timestamp>[^<]+</timestamp>",
                        first.block["content"])
    assert re.fullmatch(r"<status>completed</status>\n\n<exit_code>4</exit_code>\n\n<stdout>\ndone\n</stdout>\n\n"
                        r"<timestamp>[^<]+</timestamp>", second.block["content"])
    assert "<stdout>" not in third.block["content"] and "<exit_code>4</exit_code>" in third.block["content"]
    assert kill.is_error and kill.block["content"] == (
        f"<tool_use_error>Shell {shell_id} is not running, so cannot be killed (status: completed)</tool_use_error>")


def test_kill_shell_kills_the_group(ws, host_pids):
    async def main():
        ctx = make_ctx(ws)
        out = await call(ctx, {"command": "echo $$; sleep 100 & echo $!; sleep 100", "run_in_background": True})
        shell_id = out.block["content"].rsplit(" ", 1)[1]
        for _ in range(100):
            shell = ctx.extras["bash_shells"][shell_id]
            if shell.unread.count(b"\n") >= 2:
                break
            await asyncio.sleep(0.05)
        pgid, child = (int(x) for x in bytes(shell.unread).decode().split())
        assert group_members(pgid)
        kill = await call(ctx, {"shell_id": shell_id}, name="KillShell")
        after = await call(ctx, {"bash_id": shell_id}, name="BashOutput")
        again = await call(ctx, {"shell_id": shell_id}, name="KillShell")
        return kill, after, again, pgid, child, shell_id, await wait_gone(pgid)

    kill, after, again, pgid, child, shell_id, survivors = run(main())
    assert kill.block["content"] == (
        f"Successfully killed shell: {shell_id} (echo $$; sleep 100 & echo $!; sleep 100)")
    assert after.data["status"] == "killed" and after.block["content"].startswith("<status>killed</status>")
    assert again.is_error and "(status: killed)" in again.block["content"]
    assert survivors == [] and not pid_alive(child)


def test_bash_output_filter_and_unknown_ids(ws):
    async def main():
        ctx = make_ctx(ws)
        out = await call(ctx, {"command": "printf 'ok 1\\nerr 2\\nok 3\\n'", "run_in_background": True})
        shell_id = out.block["content"].rsplit(" ", 1)[1]
        await asyncio.sleep(0.3)
        filtered = await call(ctx, {"bash_id": shell_id, "filter": "^ok"}, name="BashOutput")
        rest = await call(ctx, {"bash_id": shell_id}, name="BashOutput")
        bad = await call(ctx, {"bash_id": shell_id, "filter": "("}, name="BashOutput")
        unknown = await call(ctx, {"bash_id": "nope"}, name="BashOutput")
        unknown_kill = await call(ctx, {"shell_id": "nope"}, name="KillShell")
        return filtered, rest, bad, unknown, unknown_kill

    filtered, rest, bad, unknown, unknown_kill = run(main())
    assert "<stdout>\nok 1\nok 3\n</stdout>" in filtered.block["content"]
    assert "<stdout>" not in rest.block["content"]  # non-matching lines were consumed
    assert bad.is_error and bad.block["content"].startswith('<tool_use_error>Invalid regular expression "("')
    assert unknown.block["content"] == "<tool_use_error>No shell found with ID: nope</tool_use_error>"
    assert unknown_kill.block["content"] == "<tool_use_error>No shell found with ID: nope</tool_use_error>"


def test_kill_background_shells_at_session_end(ws):
    async def main():
        ctx = make_ctx(ws)
        out = await call(ctx, {"command": "sleep 100", "run_in_background": True})
        shell = ctx.extras["bash_shells"][out.block["content"].rsplit(" ", 1)[1]]
        await background_mod.kill_background_shells(ctx)
        return shell.proc.pid, shell.status, await wait_gone(shell.proc.pid)

    pgid, status, survivors = run(main())
    assert status == "killed" and survivors == []


def test_cd_into_an_added_working_dir_persists(ws, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()

    async def main():
        ctx = ToolUseContext(cwd=str(ws), permission_context=PermissionContext(str(ws), additional_dirs=[str(extra)]),
                             tools=tools(), sandbox=BubblewrapSandbox())
        first = await call(ctx, {"command": f"cd {extra}"})
        second = await call(ctx, {"command": "pwd"})
        return first.block["content"], second.block["content"], ctx.cwd

    assert run(main()) == ("(Bash completed with no output)", str(extra), str(extra))


def test_new_user_input_interrupt_does_not_stop_a_running_command(ws):
    """Abort reason "interrupt" (the user typed while tools run) cancels only "cancel" tools; Bash is "block"."""

    async def main():
        ctx = make_ctx(ws)
        task = asyncio.ensure_future(call(ctx, {"command": "sleep 0.4; echo finished"}))
        await asyncio.sleep(0.1)
        ctx.abort.abort("interrupt")
        return await asyncio.wait_for(task, 5)

    out = run(main())
    assert not out.is_error and out.block["content"] == "finished"
