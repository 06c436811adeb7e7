"""Glob through run_tool_use on real trees (App. A "Glob", App. B.1 Glob notes)."""

from __future__ import annotations

import asyncio
import os

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.tools.glob import TRUNCATED_NOTE, GlobInput, GlobTool, split_pattern
from desktop_agent.tools.registry import default_tools
from tests.tools.util import Ticker


def run(coro):
    return asyncio.run(coro)


def set_mtime(path, t):
    os.utime(path, (t, t))


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    (d / "src" / "deep").mkdir(parents=True)
    for rel, t in [("src/a.py", 100), ("src/b.py", 200), ("src/deep/c.py", 300), ("top.py", 50), ("README.md", 400)]:
        (d / rel).write_text("x\n")
        set_mtime(d / rel, 1_600_000_000 + t)
    return d


def glob(ws, inp, cwd=None, **kw):
    kw.setdefault("permission_context", PermissionContext(str(cwd or ws), mode="bypassPermissions"))
    ctx = ToolUseContext(cwd=str(cwd or ws), tools=default_tools(), **kw)
    out = run(run_tool_use({"type": "tool_use", "id": "toolu_glob", "name": "Glob", "input": inp}, ctx))
    assert out.block["tool_use_id"] == "toolu_glob"
    return out


def test_relative_paths_oldest_first(ws):
    """App. A: Glob lists oldest modification first (Grep is newest first)."""
    out = glob(ws, {"pattern": "src/*.py"})
    assert not out.is_error and out.block["content"] == "src/a.py\nsrc/b.py"


def test_recursive_pattern_oldest_first(ws):
    out = glob(ws, {"pattern": "**/*.py"})
    assert out.block["content"] == "top.py\nsrc/a.py\nsrc/b.py\nsrc/deep/c.py"


def test_equal_mtimes_are_ordered_by_path(ws):
    for rel in ("src/b.py", "src/a.py", "top.py"):
        set_mtime(ws / rel, 1_650_000_000)
    out = glob(ws, {"pattern": "**/*.py"})
    assert out.block["content"] == "src/deep/c.py\nsrc/a.py\nsrc/b.py\ntop.py"


def test_no_files_found(ws):
    out = glob(ws, {"pattern": "**/*.rs"})
    assert not out.is_error and out.block["content"] == "No files found"


def test_path_argument_and_paths_relative_to_cwd(ws):
    assert glob(ws, {"pattern": "*.py", "path": "src/deep"}).block["content"] == "src/deep/c.py"
    assert glob(ws, {"pattern": "./src/*.py"}).block["content"] == "src/a.py\nsrc/b.py"


def test_absolute_pattern_and_outside_dir(ws, tmp_path):
    out = glob(ws, {"pattern": str(ws / "src" / "**" / "*.py")})
    assert out.block["content"] == "src/a.py\nsrc/b.py\nsrc/deep/c.py"
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.txt").write_text("")
    from desktop_agent.permissions.context import PermissionContext

    pc = PermissionContext(str(ws), additional_dirs=[str(other)])  # no permission state would ask outside ws
    assert glob(ws, {"pattern": "*.txt", "path": str(other)}, permission_context=pc).block["content"] == str(
        other / "o.txt")
    assert glob(ws, {"pattern": "../other/*.txt"}, permission_context=pc).block["content"] == str(other / "o.txt")


def test_does_not_respect_gitignore_by_default_but_skips_vcs(ws, monkeypatch):
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD.py").write_text("")
    (ws / ".gitignore").write_text("ignored.py\n")
    (ws / "ignored.py").write_text("")
    (ws / ".hidden.py").write_text("")
    set_mtime(ws / "ignored.py", 1_700_000_000)
    set_mtime(ws / ".hidden.py", 1_700_000_001)
    out = glob(ws, {"pattern": "*.py"}).block["content"].split("\n")
    assert out[-2:] == ["ignored.py", ".hidden.py"] and ".git/HEAD.py" not in out and len(out) == 6
    monkeypatch.setenv("CLAUDE_CODE_GLOB_NO_IGNORE", "false")
    out = glob(ws, {"pattern": "*.py"}).block["content"].split("\n")
    assert "ignored.py" not in out and ".hidden.py" in out


def test_at_most_100_with_truncation_note(tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    for i in range(150):
        p = d / f"f{i:03d}.txt"
        p.write_text("")
        set_mtime(p, 1_600_000_000 + i)
    out = glob(d, {"pattern": "*.txt"})
    lines = out.block["content"].split("\n")
    assert lines[:100] == [f"f{i:03d}.txt" for i in range(100)]  # the 100 oldest
    assert lines[100:] == ["(Results are truncated. Consider using a more specific path or pattern.)"]
    assert lines[100] == TRUNCATED_NOTE
    assert out.data["truncated"] is True and out.data["numFiles"] == 100


def test_validation_errors(ws):
    out = glob(ws, {"pattern": "*", "path": "nope"})
    assert out.is_error and out.block["content"] == (
        f"<tool_use_error>Directory does not exist: nope. Note: your current working directory is {ws}."
        "</tool_use_error>")
    out = glob(ws, {"pattern": "*", "path": "top.py"})
    assert out.block["content"] == "<tool_use_error>Path is not a directory: top.py</tool_use_error>"


def test_flags_and_schema():
    tool = GlobTool()
    inp = GlobInput.model_validate({"pattern": "*"})
    assert tool.is_concurrency_safe(inp) and tool.is_read_only(inp)
    assert set(tool.input_schema()["properties"]) == {"pattern", "path"}
    assert "Fast file pattern matching" in tool.description()


def test_split_pattern():
    assert split_pattern("src/**/*.py", "/w") == ("/w", "src/**/*.py")
    assert split_pattern("/a/b/**/*.py", "/w") == ("/a/b", "**/*.py")
    assert split_pattern("/a/b/c.py", "/w") == ("/a/b", "c.py")
    assert split_pattern("../x/*.py", "/w/sub") == ("/w/x", "*.py")


def test_permission_outside_working_dir(ws, tmp_path):
    from desktop_agent.permissions.context import PermissionContext

    other = tmp_path / "elsewhere"
    other.mkdir()
    out = glob(ws, {"pattern": "*", "path": str(other)}, permission_context=PermissionContext(str(ws)))
    assert out.is_error and out.stage == "permission"
    assert out.block["content"] == f"Claude requested permissions to read from {other}, but you haven't granted it yet."


def test_large_tree_does_not_block_the_loop(tmp_path):
    """Listing and sorting 5,000 files runs off the loop: a ticker keeps ticking meanwhile."""
    d = tmp_path / "big"
    for i in range(50):
        sub = d / f"d{i}"
        sub.mkdir(parents=True)
        for j in range(100):
            (sub / f"f{j}.txt").write_text("")

    async def main():
        ctx = ToolUseContext(cwd=str(d), tools=default_tools())
        async with Ticker() as ticker:
            out = await run_tool_use({"type": "tool_use", "id": "g", "name": "Glob",
                                      "input": {"pattern": "**/*.txt"}}, ctx)
        return out, ticker.ticks

    out, ticks = run(main())
    assert out.data["truncated"] is True and len(out.data["filenames"]) == 100
    assert ticks >= 3
