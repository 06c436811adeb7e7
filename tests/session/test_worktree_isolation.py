"""A worktree session's working folder is the worktree (issue 24): its sandbox writes there and never in the main
checkout, a write to the main checkout asks as an outside-folder write (and is denied headless), the worktree's
files are not "our state" for the protected-path check while the registry and ``.git`` stay protected, and
``--worktree [name]`` runs the CLI session in one (Claude Code's ``-w`` semantics: optional name, generated when
omitted)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from desktop_agent.app.build import make_context
from desktop_agent.cli.argv import UsageError, parse_args
from desktop_agent.core.permission import PermissionReply
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions import protected
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.session import worktrees as W

ID = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(tmp_path / "data"))
    r = tmp_path / "repo"
    (r / "src").mkdir(parents=True)
    (r / "src" / "main.py").write_text("print('main')\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=r, check=True, capture_output=True, env={**os.environ, **ID})
    return str(r)


class Prompter:
    waits = True

    def __init__(self, behavior):
        self.behavior = behavior
        self.requests = []

    async def ask(self, request):
        self.requests.append(request)
        return PermissionReply(behavior=self.behavior)


_RUNNER: list[asyncio.Runner] = []


@pytest.fixture(autouse=True)
def _one_loop():
    """One event loop per test: the session's abort signal binds to the loop it first waits on."""
    with asyncio.Runner() as runner:
        _RUNNER.append(runner)
        yield
        _RUNNER.pop()


def call(ctx, name, inp, id):
    return _RUNNER[-1].run(run_tool_use({"type": "tool_use", "id": id, "name": name, "input": inp}, ctx))


def tools():
    from desktop_agent.tools.registry import all_builtin_tools

    return list(all_builtin_tools())


def test_the_worktree_is_not_our_state_but_the_registry_and_git_are(repo):
    wt = W.create(repo, "iso")
    assert protected.protected_reason(os.path.join(wt.path, "src", "main.py")) is None
    assert protected.protected_reason(os.path.join(wt.path, "new.txt")) is None
    assert protected.protected_reason(str(W.root_dir() / "registry.json"))
    assert protected.protected_reason(str(W.root_dir() / "registry.lock"))
    assert protected.protected_reason(os.path.join(os.path.dirname(wt.path), "other-file"))
    assert protected.protected_reason(os.path.join(os.path.dirname(wt.path), ".trash-iso-1", "x"))
    assert protected.protected_reason(os.path.join(wt.path, ".git"))
    assert protected.protected_reason(os.path.join(wt.path, "..", "..", "registry.json"))


@pytest.mark.needs_sandbox
def test_a_worktree_session_writes_in_the_worktree_and_asks_for_the_main_checkout(repo):
    wt = W.create(repo, "iso")
    pc = PermissionContext(wt.path, mode="acceptEdits")
    prompter = Prompter("deny")
    ctx = make_context(wt.path, pc, prompter=prompter, hooks=None, session_id="s1", transcript_path="",
                       tools=tools())
    inside = os.path.join(wt.path, "src", "new.py")
    main_file = os.path.join(repo, "src", "main.py")
    main_new = os.path.join(repo, "src", "new.py")
    # in the worktree: acceptEdits writes unasked, and the sandboxed shell can write there
    assert not call(ctx, "Write", {"file_path": inside, "content": "print('wt')\n"}, "t1").is_error
    assert not call(ctx, "Bash", {"command": "echo from-bash > made.txt"}, "t2").is_error
    assert Path(wt.path, "made.txt").read_text() == "from-bash\n" and not prompter.requests
    # the main checkout: an outside-folder write, asked (and refused here), nothing written
    out = call(ctx, "Write", {"file_path": main_new, "content": "pwned\n"}, "t3")
    assert out.is_error and len(prompter.requests) == 1  # acceptEdits asks only outside the working folders
    assert main_new in prompter.requests[0].message
    out = call(ctx, "Bash", {"command": f"echo pwned > {main_file}"}, "t4")  # a shell write there asks too
    assert out.is_error and len(prompter.requests) == 2
    assert "outside the allowed working directories" in prompter.requests[1].message
    assert Path(main_file).read_text() == "print('main')\n" and not os.path.exists(main_new)
    # bypass lets the Bash analysis through: the sandbox itself must hold the main checkout read-only
    pc_bypass = PermissionContext(wt.path, mode="bypassPermissions")
    ctx2 = make_context(wt.path, pc_bypass, prompter=None, hooks=None, session_id="s2", transcript_path="",
                        tools=tools())
    res = call(ctx2, "Bash", {"command": f"echo pwned > {main_file}; echo pwned > {repo}/new.txt"}, "t5")
    # read-only, or (the test's checkout is under /tmp, private inside the sandbox) not there at all
    assert res.is_error and any(why in str(res.block["content"])
                                for why in ("Read-only file system", "No such file or directory"))
    assert Path(main_file).read_text() == "print('main')\n" and not os.path.exists(os.path.join(repo, "new.txt"))
    assert not call(ctx2, "Bash", {"command": "echo again >> made.txt"}, "t6").is_error
    assert Path(wt.path, "made.txt").read_text() == "from-bash\nagain\n"
    # headless (no prompter): the main checkout write is denied
    ctx.prompter = None
    assert call(ctx, "Write", {"file_path": main_new, "content": "pwned\n"}, "t7").is_error
    assert not os.path.exists(main_new)
    assert Path(main_file).read_text() == "print('main')\n"


def test_worktree_flag_takes_an_optional_name():
    assert parse_args(["-p", "--worktree", "fix-login", "hi"]).worktree == "fix-login"
    assert parse_args(["-p", "-w", "--", "hi"]).worktree == ""
    assert parse_args(["-w", "-p", "hi"]).worktree == ""
    assert parse_args(["-p", "--worktree=x1", "hi"]).worktree == "x1"
    assert parse_args(["-p", "hi"]).worktree is None
    for bad in ("../escape", "a/b", "x.lock", "-rf"):
        with pytest.raises(UsageError):
            parse_args(["-p", f"--worktree={bad}", "hi"])
    with pytest.raises(UsageError):  # a window flag it is not
        parse_args(["--worktree", "x"]).window()


def test_the_cli_runs_its_session_in_a_new_worktree(repo, tmp_path):
    """``desktop-agent -p --worktree NAME`` against the fake Messages server, started in a subfolder: the session's
    cwd (init message) is that subfolder of the worktree, the model's Write lands there, the main checkout is
    untouched; the same name again reuses the worktree."""
    from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
    from tests.test_cli import cli_env

    sub = os.path.join(repo, "src")
    with FakeAnthropic() as fake:
        fake.script([reply(tool_use("Write", {"file_path": "made.txt", "content": "by the model\n"}, id="w1")),
                     reply(text("done"))])
        env = cli_env(fake, tmp_path / "home", DESKTOP_AGENT_DATA_DIR=os.environ["DESKTOP_AGENT_DATA_DIR"])
        proc = subprocess.run([sys.executable, "-m", "desktop_agent", "-p", "--worktree", "cli-one",
                               "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits",
                               "write it"], cwd=sub, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    init = next(e for e in lines if e.get("subtype") == "init")
    wt = W.get(repo, "cli-one")
    assert init["cwd"] == os.path.join(wt.path, "src") and wt.branch == "agent/cli-one"
    assert Path(wt.path, "src", "made.txt").read_text() == "by the model\n"
    assert not os.path.exists(os.path.join(sub, "made.txt"))
    assert W.enter(repo, "cli-one").path == wt.path
    assert W.repository_of(sub) == W.repository_of(repo)  # from a subfolder: the same repository
