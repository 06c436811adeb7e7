"""A name swapped between the permission check and the use (class 5 of the second hostile suite): the check is
made again on what is actually opened (Read) or on what the path resolves to inside the write's critical section
(Edit, Write). Each swap replaces an allowed file by a symlink to a denied one at the last moment before the open
or the write; the control makes the same swap towards an allowed file and the call goes through."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions import identity
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.tools import edit as edit_mod
from desktop_agent.tools import write as write_mod
from desktop_agent.tools.edit import EditTool
from desktop_agent.tools.read import tool as read_mod
from desktop_agent.tools.read.tool import ReadTool
from desktop_agent.tools.write import WriteTool

SECRET = "SECRET-RACE-77ab"


@pytest.fixture
def ws(tmp_path):
    w = tmp_path / "ws"
    w.mkdir()
    (w / ".env").write_text(f"TOKEN={SECRET}\n")
    (w / "ok.txt").write_text("fine\n")
    (w / "other.txt").write_text("other fine\n")
    return w


def ctx_for(ws: Path) -> ToolUseContext:
    pc = PermissionContext(str(ws), mode="bypassPermissions")
    pc.add_rules(["Read(./.env)"], "deny")
    identity.capture(pc)
    return ToolUseContext(cwd=str(ws), tools=[ReadTool(), EditTool(), WriteTool()], permission_context=pc)


def call(ctx: ToolUseContext, name: str, inp: dict[str, Any]) -> dict[str, Any]:
    out = asyncio.run(run_tool_use({"type": "tool_use", "id": "toolu_r", "name": name, "input": inp}, ctx))
    return out.block


def swap_to(link: Path, target: Path) -> None:
    tmp = link.with_name(link.name + ".swap")
    os.symlink(target, tmp)
    os.replace(tmp, link)


@pytest.mark.parametrize("to_denied", [True, False], ids=["denied", "control"])
def test_read_checks_the_file_it_opened(ws, monkeypatch, to_denied):
    real_stat = read_mod.stat_regular_file

    def stat_then_swap(path: str, cwd: str) -> Any:
        st = real_stat(path, cwd)
        swap_to(Path(path), ws / (".env" if to_denied else "other.txt"))  # after every name check, before open
        return st

    monkeypatch.setattr(read_mod, "stat_regular_file", stat_then_swap)
    block = call(ctx_for(ws), "Read", {"file_path": str(ws / "ok.txt")})
    if to_denied:
        assert block.get("is_error") and SECRET not in str(block["content"]), block
    else:
        assert "other fine" in str(block["content"]), block


@pytest.mark.parametrize("tool", ["Edit", "Write"])
@pytest.mark.parametrize("to_denied", [True, False], ids=["denied", "control"])
def test_a_write_checks_where_the_path_leads_now(ws, monkeypatch, tool, to_denied):
    ctx = ctx_for(ws)
    assert not call(ctx, "Read", {"file_path": str(ws / "ok.txt")}).get("is_error")
    target = ws / (".env" if to_denied else "other.txt")
    before = target.read_text()
    module = edit_mod if tool == "Edit" else write_mod
    real_prepare = module.prepare_write

    async def prepare_then_swap(abs_path: str, c: Any) -> None:
        await real_prepare(abs_path, c)
        target.write_text("fine\n")  # so that the staleness check would pass on the swapped-in file
        swap_to(Path(abs_path), target)

    monkeypatch.setattr(module, "prepare_write", prepare_then_swap)
    inp = ({"file_path": str(ws / "ok.txt"), "old_string": "fine", "new_string": "pwned"} if tool == "Edit"
           else {"file_path": str(ws / "ok.txt"), "content": "pwned\n"})
    block = call(ctx, tool, inp)
    if to_denied:
        assert block.get("is_error"), block
        assert target.read_text() == "fine\n" and "pwned" not in target.read_text()
    else:
        assert not block.get("is_error"), block
        assert "pwned" in target.read_text() and before != target.read_text()


def test_a_rule_change_after_a_rename_keeps_the_binding(ws):
    """A grant ("allow for session", a host's new flag layer) changes the rules after a denied folder was renamed:
    the identity bound before stays bound while its rule is in force, and goes with its rule."""
    (ws / "secrets").mkdir()
    (ws / "secrets" / "k.txt").write_text(SECRET)
    pc = PermissionContext(str(ws), mode="bypassPermissions")
    pc.add_rules(["Read(./secrets/**)"], "deny")
    identity.capture(pc)
    ctx = ToolUseContext(cwd=str(ws), tools=[ReadTool(), EditTool(), WriteTool()], permission_context=pc)
    os.rename(ws / "secrets", ws / "s2")
    pc.add_rules(["Bash(ls:*)"], "allow")  # a grant: the rules changed
    block = call(ctx, "Read", {"file_path": str(ws / "s2" / "k.txt")})
    assert block.get("is_error") and SECRET not in str(block["content"]), block
    pc.remove_rules(["Read(./secrets/**)"], "deny")  # the rule goes: so does what it bound
    assert SECRET in str(call(ctx, "Read", {"file_path": str(ws / "s2" / "k.txt")})["content"])
