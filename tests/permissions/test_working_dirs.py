"""Working directories have one owner (issue 21 item 6): the permission state. ``ToolUseContext.working_dirs`` is
a view of it, so an ``addDirectories`` / ``removeDirectories`` update — a person's "allow" in the window, a host's
``control_response``, a PermissionRequest hook's ``updatedPermissions`` — counts at the next call: for Edit and
Write, for the Bash path checks and for the sandbox's writable binds. Attacks: remove, then write to the removed
directory (Write, Edit, a Bash redirect) must ask, and be denied headless; re-add, and acceptEdits writes there
again. Real tools, real files, real sandbox."""

from __future__ import annotations

import asyncio
import dataclasses
import os

import pytest

from desktop_agent.app.build import make_context
from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import PermissionReply, PermissionUpdate
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.sandbox_launch import plan_launch


def tools():
    from desktop_agent.tools.registry import all_builtin_tools

    return list(all_builtin_tools())


class Prompter:
    """Answers every ask with ``answer(request)``; records the requests."""

    waits = True

    def __init__(self, answer):
        self.answer = answer
        self.requests = []

    async def ask(self, request):
        self.requests.append(request)
        return self.answer(request)


def remove(d):
    return PermissionUpdate(type="removeDirectories", directories=[d], destination="session")


def add(d):
    return PermissionUpdate(type="addDirectories", directories=[d], destination="session")


_RUNNER: list[asyncio.Runner] = []


@pytest.fixture(autouse=True)
def _one_loop():
    """One event loop per test: the session's abort signal binds to the loop it first waits on."""
    with asyncio.Runner() as runner:
        _RUNNER.append(runner)
        yield
        _RUNNER.pop()


def call(ctx, name, inp, id):
    out = _RUNNER[-1].run(run_tool_use({"type": "tool_use", "id": id, "name": name, "input": inp}, ctx))
    if out.context_modifier is not None:
        out.context_modifier(ctx)
    return out


@pytest.fixture
def dirs(tmp_path):
    ws, extra, out = tmp_path / "ws", tmp_path / "extra", tmp_path / "out"
    for d in (ws, extra, out):
        d.mkdir()
    return str(ws), str(extra), str(out)


def test_the_context_reads_the_permission_state_not_a_copy(dirs):
    ws, extra, _ = dirs
    pc = PermissionContext(ws, additional_dirs=[extra])
    ctx = ToolUseContext(cwd=ws, permission_context=pc)
    copy = dataclasses.replace(ctx)  # what the scheduler hands each tool call
    assert ctx.working_dirs == copy.working_dirs == [ws, extra]
    ctx.working_dirs.append("/")  # a list handed out, not the owner: changing it changes nothing
    assert "/" not in ctx.working_dirs
    pc.apply_updates([remove(extra)])
    assert ctx.working_dirs == copy.working_dirs == [ws]
    pc.apply_updates([add(extra)])
    assert ctx.working_dirs == copy.working_dirs == [ws, extra]
    assert ToolUseContext(cwd=ws).working_dirs == [ws]  # no permission state: the original cwd alone


def test_removal_under_any_name_and_across_a_resume(dirs, tmp_path):
    ws, extra, _ = dirs
    link = tmp_path / "link-to-extra"
    link.symlink_to(extra)
    for added, removed in [("../extra", extra), (extra, "../extra"), (extra, str(link)), (str(link), extra)]:
        pc = PermissionContext(ws)
        pc.apply_updates([add(added)])
        assert len(pc.working_dirs) == 2
        pc.apply_updates([remove(removed)])
        assert pc.working_dirs == [ws], (added, removed)
    # a launch directory (--add-dir / additionalDirectories) removed in the session stays removed on resume
    pc = PermissionContext(ws, additional_dirs=[extra])
    pc.apply_updates([remove(extra)])
    fresh = PermissionContext(ws, additional_dirs=[extra])
    fresh.restore(pc.to_json())
    assert fresh.working_dirs == [ws]
    pc.apply_updates([add(extra)])  # re-added: no removal left to restore
    assert "removed_dirs" not in pc.to_json()
    again = PermissionContext(ws, additional_dirs=[extra])
    again.restore(pc.to_json())
    assert extra in again.working_dirs
    # the original working directory cannot be removed
    pc.apply_updates([remove(ws)])
    assert pc.working_dirs[0] == ws


@pytest.mark.needs_sandbox
def test_remove_then_write_asks_headless_denied_and_readd_allows(dirs):
    ws, extra, out = dirs
    pc = PermissionContext(ws, mode="acceptEdits", additional_dirs=[extra])
    answers = {"allow": True}

    def answer(request):
        if request.input.get("file_path", "").startswith(out):  # the window's "allow", with an update
            return PermissionReply(behavior="allow", updated_permissions=[remove(extra)])
        return PermissionReply(behavior="allow" if answers["allow"] else "deny")

    prompter = Prompter(answer)
    # the context as the app builds it for a session
    ctx = make_context(ws, pc, prompter=prompter, hooks=None, session_id="s1", transcript_path="", tools=tools())
    a = os.path.join(extra, "a.txt")
    assert not call(ctx, "Write", {"file_path": a, "content": "one\n"}, "t1").is_error
    assert not call(ctx, "Read", {"file_path": a}, "t2").is_error
    assert not call(ctx, "Bash", {"command": f"echo one > {extra}/b.txt"}, "t3").is_error
    assert open(os.path.join(extra, "b.txt")).read() == "one\n" and not prompter.requests  # inside: no ask

    # an ask elsewhere, answered "allow" with removeDirectories (as a dialog or a host's control_response does)
    assert not call(ctx, "Write", {"file_path": os.path.join(out, "x.txt"), "content": "x"}, "t4").is_error
    assert extra not in ctx.working_dirs and len(prompter.requests) == 1

    answers["allow"] = False
    out5 = call(ctx, "Write", {"file_path": os.path.join(extra, "c.txt"), "content": "pwn"}, "t5")
    out6 = call(ctx, "Edit", {"file_path": a, "old_string": "one", "new_string": "pwn"}, "t6")
    out7 = call(ctx, "Bash", {"command": f"echo pwn > {extra}/d.txt"}, "t7")
    assert out5.is_error and out6.is_error and out7.is_error
    assert [r.tool_name for r in prompter.requests[1:]] == ["Write", "Edit", "Bash"]  # each one asked
    assert "outside the allowed working directories" in prompter.requests[3].message
    assert not os.path.exists(os.path.join(extra, "c.txt")) and not os.path.exists(os.path.join(extra, "d.txt"))
    assert open(a).read() == "one\n"

    ctx.prompter = None  # headless: denied, nothing written
    for i, (name, inp) in enumerate([("Write", {"file_path": os.path.join(extra, "c.txt"), "content": "pwn"}),
                                     ("Edit", {"file_path": a, "old_string": "one", "new_string": "pwn"}),
                                     ("Bash", {"command": f"echo pwn > {extra}/d.txt"})]):
        assert call(ctx, name, inp, f"h{i}").is_error, name
    assert not os.path.exists(os.path.join(extra, "c.txt")) and not os.path.exists(os.path.join(extra, "d.txt"))
    assert open(a).read() == "one\n"

    pc.apply_updates([add(extra)])  # re-added: acceptEdits writes there again, unasked
    assert not call(ctx, "Write", {"file_path": os.path.join(extra, "c.txt"), "content": "back\n"}, "t8").is_error
    assert not call(ctx, "Bash", {"command": f"echo back > {extra}/d.txt"}, "t9").is_error
    assert open(os.path.join(extra, "c.txt")).read() == open(os.path.join(extra, "d.txt")).read() == "back\n"


@pytest.mark.needs_sandbox
def test_the_sandbox_binds_follow_the_owner(dirs):
    """Bypass mode lets a write outside the working folders through the analysis; the sandbox must then hold it:
    its writable binds are read from the same owner, so a removed directory is read-only inside at once."""
    ws, extra, _ = dirs
    pc = PermissionContext(ws, mode="bypassPermissions", additional_dirs=[extra])
    ctx = ToolUseContext(cwd=ws, permission_context=pc, tools=tools())

    def binds():
        argv = plan_launch(["bash", "-c", "true"], ws, {}, ctx).argv
        return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--bind"]

    assert os.path.realpath(extra) in binds()
    assert not call(ctx, "Bash", {"command": f"echo one > {extra}/a.txt"}, "t1").is_error
    pc.apply_updates([remove(extra)])
    assert os.path.realpath(extra) not in binds() and os.path.realpath(ws) in binds()
    result = call(ctx, "Bash", {"command": f"echo pwn > {extra}/b.txt"}, "t2")
    # read-only, or (under the private /tmp of the socket policy) not there at all inside the sandbox
    assert result.is_error and any(why in str(result.block["content"])
                                   for why in ("Read-only file system", "No such file or directory"))
    assert not os.path.exists(os.path.join(extra, "b.txt"))
    pc.apply_updates([add(extra)])
    assert not call(ctx, "Bash", {"command": f"echo back > {extra}/b.txt"}, "t3").is_error
    assert open(os.path.join(extra, "b.txt")).read() == "back\n"
