"""Grep through run_tool_use against real files and the real ripgrep (SPEC §3.8, App. A "Grep", §9 item 57)."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.tools import grep as grep_mod
from desktop_agent.tools import ripgrep
from desktop_agent.tools.grep import GrepInput, GrepTool
from desktop_agent.tools.registry import default_tools
from tests.tools.util import Ticker, pid_alive


def run(coro):
    return asyncio.run(coro)


def set_mtime(path, t):
    os.utime(path, (t, t))


@pytest.fixture
def ws(tmp_path):
    """App. A's tree: notes.md (newest), src/b.py, src/a.py (oldest)."""
    d = tmp_path / "ws"
    (d / "src").mkdir(parents=True)
    (d / "notes.md").write_text("# Notes\nTODO write docs\n")
    (d / "src" / "b.py").write_text("# TODO: fix b\n# todo lower\n# TODO again\n")
    (d / "src" / "a.py").write_text("def a():\n    pass  # TODO\n")
    set_mtime(d / "src" / "a.py", 1_600_000_000)
    set_mtime(d / "src" / "b.py", 1_600_000_100)
    set_mtime(d / "notes.md", 1_600_000_200)
    return d


def grep(ws, inp, cwd=None, **ctx_kw):
    ctx_kw.setdefault("permission_context", PermissionContext(str(cwd or ws), mode="bypassPermissions"))
    ctx = ToolUseContext(cwd=str(cwd or ws), tools=default_tools(), **ctx_kw)
    return run(run_tool_use({"type": "tool_use", "id": "toolu_grep", "name": "Grep", "input": inp}, ctx))


def content(out):
    assert out.block["tool_use_id"] == "toolu_grep"
    return out.block["content"]


# ---- App. A texts, exactly


def test_files_with_matches_is_default_newest_first(ws):
    out = grep(ws, {"pattern": "TODO"})
    assert not out.is_error
    assert content(out) == "Found 3 files\nnotes.md\nsrc/b.py\nsrc/a.py"
    assert out.data["mode"] == "files_with_matches" and out.data["numFiles"] == 3


def test_files_order_follows_mtime_not_name(ws):
    set_mtime(ws / "src" / "a.py", 1_700_000_000)  # now the newest
    assert content(grep(ws, {"pattern": "TODO"})) == "Found 3 files\nsrc/a.py\nnotes.md\nsrc/b.py"


def test_no_files_found(ws):
    out = grep(ws, {"pattern": "NOTHING_MATCHES_THIS"})
    assert not out.is_error and content(out) == "No files found"


def test_content_mode_line_numbers_by_default(ws):
    out = grep(ws, {"pattern": "TODO", "output_mode": "content"})
    assert content(out) == (
        "notes.md:2:TODO write docs\n"
        "src/b.py:1:# TODO: fix b\n"
        "src/b.py:3:# TODO again\n"
        "src/a.py:2:    pass  # TODO"
    )


def test_content_mode_no_matches(ws):
    assert content(grep(ws, {"pattern": "NOPE", "output_mode": "content"})) == "No matches found"


def test_content_mode_without_line_numbers(ws):
    out = grep(ws, {"pattern": "TODO", "output_mode": "content", "-n": False, "path": "src"})
    assert content(out) == "src/b.py:# TODO: fix b\nsrc/b.py:# TODO again\nsrc/a.py:    pass  # TODO"


def test_single_file_path_with_context(ws):
    out = grep(ws, {"pattern": "TODO", "output_mode": "content", "-C": 1, "path": "src/b.py"})
    assert content(out) == "1:# TODO: fix b\n2-# todo lower\n3:# TODO again"


def test_count_mode(ws):
    out = grep(ws, {"pattern": "TODO", "output_mode": "count"})
    assert content(out) == "notes.md:1\nsrc/b.py:2\nsrc/a.py:1\n\nFound 4 total occurrences across 3 files."


def test_count_mode_none_and_singular(ws):
    assert content(grep(ws, {"pattern": "NOPE", "output_mode": "count"})) == (
        "No matches found\n\nFound 0 total occurrences across 0 files.")
    assert content(grep(ws, {"pattern": "write docs", "output_mode": "count"})) == (
        "notes.md:1\n\nFound 1 total occurrence across 1 file.")


# ---- options


def test_case_insensitive(ws):
    out = grep(ws, {"pattern": "todo lower|TODO again", "output_mode": "content", "path": "src/b.py"})
    assert content(out) == "2:# todo lower\n3:# TODO again"
    out = grep(ws, {"pattern": "todo", "-i": True, "output_mode": "count", "path": "src/b.py"})
    assert content(out) == "src/b.py:3\n\nFound 3 total occurrences across 1 file."


def test_glob_and_type_filters(ws):
    assert content(grep(ws, {"pattern": "TODO", "glob": "*.md"})) == "Found 1 file\nnotes.md"
    assert content(grep(ws, {"pattern": "TODO", "type": "py"})) == "Found 2 files\nsrc/b.py\nsrc/a.py"
    # Comma- or space-separated globs are several globs; a brace pattern stays whole.
    assert content(grep(ws, {"pattern": "TODO", "glob": "*.md,a.py"})) == "Found 2 files\nnotes.md\nsrc/a.py"
    assert content(grep(ws, {"pattern": "TODO", "glob": "*.{md,py}"})) == "Found 3 files\nnotes.md\nsrc/b.py\nsrc/a.py"


def test_before_after_context_and_context_precedence(ws):
    (ws / "c.txt").write_text("l1\nl2\nHIT\nl4\nl5\n")
    base = {"pattern": "HIT", "output_mode": "content", "path": "c.txt"}
    assert content(grep(ws, {**base, "-B": 1})) == "2-l2\n3:HIT"
    assert content(grep(ws, {**base, "-A": 2})) == "3:HIT\n4-l4\n5-l5"
    assert content(grep(ws, {**base, "context": 1, "-C": 2})) == "2-l2\n3:HIT\n4-l4"  # context wins over -C
    assert content(grep(ws, {**base, "-A": 1, "output_mode": "files_with_matches"})) == "Found 1 file\nc.txt"


def test_context_separators_across_files_stay_between_files(ws):
    out = content(grep(ws, {"pattern": "TODO", "output_mode": "content", "-C": 1, "glob": "*.py"}))
    assert out == (
        "src/b.py:1:# TODO: fix b\nsrc/b.py-2-# todo lower\nsrc/b.py:3:# TODO again\n--\n"
        "src/a.py-1-def a():\nsrc/a.py:2:    pass  # TODO"
    )


def test_only_matching_and_multiline(ws):
    (ws / "m.txt").write_text("struct A {\n  field x;\n}\n")
    out = grep(ws, {"pattern": "fi[a-z]+", "output_mode": "content", "-o": True, "path": "m.txt"})
    assert content(out) == "2:field"
    assert content(grep(ws, {"pattern": r"A \{.*field", "path": "m.txt"})) == "No files found"
    assert content(grep(ws, {"pattern": r"A \{.*field", "path": "m.txt", "multiline": True})) == "Found 1 file\nm.txt"


def test_pattern_starting_with_dash(ws):
    (ws / "d.txt").write_text("a --flag here\n")
    assert content(grep(ws, {"pattern": "--flag", "output_mode": "content", "path": "d.txt"})) == "1:a --flag here"


def test_gitignore_respected_hidden_searched_vcs_skipped(ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("TODO in git\n")
    (ws / ".gitignore").write_text("ignored.txt\n")
    (ws / "ignored.txt").write_text("TODO ignored\n")
    (ws / ".hidden.md").write_text("TODO hidden\n")
    set_mtime(ws / ".hidden.md", 1_500_000_000)
    assert content(grep(ws, {"pattern": "TODO"})) == "Found 4 files\nnotes.md\nsrc/b.py\nsrc/a.py\n.hidden.md"


def test_max_columns_500(ws):
    (ws / "long.txt").write_text("x" * 600 + " NEEDLE\nshort NEEDLE\n")
    out = content(grep(ws, {"pattern": "NEEDLE", "output_mode": "content", "path": "long.txt"}))
    lines = out.split("\n")
    assert lines[1] == "2:short NEEDLE"
    assert lines[0] == "1:[Omitted long matching line]"


# ---- pagination


@pytest.fixture
def many(tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    (d / "big.txt").write_text("".join(f"hit {i}\n" for i in range(1, 301)))
    for i in range(300):
        p = d / f"f{i:03d}.txt"
        p.write_text("hit\n")
        set_mtime(p, 1_600_000_000 + i)  # f299 newest
    return d


def test_content_head_limit_default_250_with_note(many):
    out = content(grep(many, {"pattern": "hit", "output_mode": "content", "path": "big.txt"}))
    body, note = out.split("\n\n")
    assert body.split("\n") == [f"{i}:hit {i}" for i in range(1, 251)]
    assert note == "[Showing results with pagination = limit: 250, offset: 0]"


def test_content_head_limit_zero_is_unlimited(many):
    out = content(grep(many, {"pattern": "hit", "output_mode": "content", "path": "big.txt", "head_limit": 0}))
    assert out.split("\n") == [f"{i}:hit {i}" for i in range(1, 301)]


def test_content_offset_and_limit(many):
    out = content(grep(many, {"pattern": "hit", "output_mode": "content", "path": "big.txt", "head_limit": 2,
                              "offset": 10}))
    assert out == "11:hit 11\n12:hit 12\n\n[Showing results with pagination = limit: 2, offset: 10]"
    # The last page is not truncated: no limit in the note, only the offset.
    out = content(grep(many, {"pattern": "hit", "output_mode": "content", "path": "big.txt", "head_limit": 5,
                              "offset": 298}))
    assert out == "299:hit 299\n300:hit 300\n\n[Showing results with pagination = offset: 298]"


def test_files_mode_pagination(many):
    out = content(grep(many, {"pattern": "hit", "glob": "f*.txt"}))
    lines = out.split("\n")
    assert lines[0] == "Found 250 files"
    assert lines[1:251] == [f"f{i:03d}.txt" for i in range(299, 49, -1)]
    assert out.endswith("\n\n[Showing results with pagination = limit: 250, offset: 0]")
    out = content(grep(many, {"pattern": "hit", "glob": "f*.txt", "head_limit": 2, "offset": 1}))
    assert out == "Found 2 files\nf298.txt\nf297.txt\n\n[Showing results with pagination = limit: 2, offset: 1]"


def test_count_mode_pagination_counts_the_page(many):
    out = content(grep(many, {"pattern": "hit", "glob": "f*.txt", "output_mode": "count", "head_limit": 3}))
    assert out == ("f299.txt:1\nf298.txt:1\nf297.txt:1\n\nFound 3 total occurrences across 3 files.\n\n"
                   "[Showing results with pagination = limit: 3, offset: 0]")


# ---- errors, paths, flags, permissions


def test_invalid_regex_returns_ripgreps_diagnostic(ws):
    out = grep(ws, {"pattern": "(unclosed"})
    assert out.is_error
    assert content(out).startswith("<tool_use_error>rg: regex parse error:")
    assert "unclosed group" in content(out)


def test_unknown_type_is_an_error(ws):
    out = grep(ws, {"pattern": "x", "type": "nosuchtype"})
    assert out.is_error and "unrecognized file type: nosuchtype" in content(out)


def test_missing_path_is_a_validation_error(ws):
    out = grep(ws, {"pattern": "x", "path": "nope"})
    assert out.is_error and out.stage == "validation"
    assert content(out) == (
        f"<tool_use_error>Path does not exist: nope. Note: your current working directory is {ws}.</tool_use_error>")


def test_path_outside_cwd_is_absolute_and_subdir_relative(ws, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.txt").write_text("TODO other\n")
    assert content(grep(ws, {"pattern": "TODO", "path": str(other)})) == f"Found 1 file\n{other / 'o.txt'}"
    # From a sub-directory as cwd, paths stay relative to the cwd.
    assert content(grep(ws, {"pattern": "TODO", "path": str(ws / "src")}, cwd=ws / "src")) == (
        "Found 2 files\nb.py\na.py")


def test_flags_and_size_cap():
    tool = GrepTool()
    inp = GrepInput.model_validate({"pattern": "x"})
    assert tool.is_concurrency_safe(inp) and tool.is_read_only(inp)
    assert tool.max_result_size_chars == 20_000  # §9 item 57
    schema = tool.input_schema()
    assert set(schema["properties"]) == {"pattern", "path", "glob", "type", "output_mode", "-i", "-o", "-n", "-B",
                                         "-A", "-C", "context", "head_limit", "offset", "multiline"}
    assert schema["required"] == ["pattern"]
    assert tool.description().startswith("A powerful search tool built on ripgrep")


def test_unknown_key_is_a_schema_error(ws):
    out = grep(ws, {"pattern": "x", "include": "*.py"})
    assert content(out) == ("<tool_use_error>InputValidationError: Grep failed due to the following issue:\n"
                            "An unexpected parameter `include` was provided</tool_use_error>")


def test_permission_target_is_a_read_of_the_search_path(ws, tmp_path, monkeypatch):
    from desktop_agent.permissions import paths

    seen = []
    real = paths.check_read_permission_for_tool

    def spy(tool_name, abs_path, input, ctx):
        seen.append((tool_name, abs_path, input))
        return real(tool_name, abs_path, input, ctx)

    monkeypatch.setattr(paths, "check_read_permission_for_tool", spy)
    grep(ws, {"pattern": "TODO", "path": "src", "-i": True})
    assert seen == [("Grep", str(ws / "src"), {"pattern": "TODO", "path": "src", "-i": True})]


def test_outside_working_dir_needs_permission(ws, tmp_path):
    from desktop_agent.permissions.context import PermissionContext

    other = tmp_path / "outside"
    other.mkdir()
    (other / "o.txt").write_text("TODO\n")
    out = grep(ws, {"pattern": "TODO", "path": str(other)}, permission_context=PermissionContext(str(ws)))
    assert out.is_error and out.stage == "permission"
    assert content(out) == f"Claude requested permissions to read from {other}, but you haven't granted it yet."
    inside = grep(ws, {"pattern": "TODO"}, permission_context=PermissionContext(str(ws)))
    assert not inside.is_error and content(inside).startswith("Found 3 files")


def test_rg_not_found_is_a_clear_error(ws, tmp_path, monkeypatch):
    empty = tmp_path / "nobin"
    empty.mkdir()
    monkeypatch.setattr(sys, "executable", str(empty / "python"))
    monkeypatch.setenv("PATH", str(empty))
    ripgrep.find_rg.cache_clear()
    try:
        assert ripgrep.find_rg() is None
        out = grep(ws, {"pattern": "TODO"})
    finally:
        monkeypatch.undo()
        ripgrep.find_rg.cache_clear()
    assert out.is_error
    assert content(out) == f"<tool_use_error>{ripgrep.RG_NOT_FOUND_MESSAGE}</tool_use_error>"
    assert "ripgrep (rg) is not installed" in content(out)


def test_rg_found_next_to_python_first(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "rg"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(bindir / "python"))
    ripgrep.find_rg.cache_clear()
    try:
        assert ripgrep.find_rg() == str(fake)
    finally:
        monkeypatch.undo()
        ripgrep.find_rg.cache_clear()


def test_filter_matching_no_file_is_no_result_not_an_error(ws):
    out = grep(ws, {"pattern": "TODO", "glob": "*.zzz"})
    assert not out.is_error and content(out) == "No files found"
    out = grep(ws, {"pattern": "TODO", "type": "rust", "output_mode": "content"})
    assert not out.is_error and content(out) == "No matches found"


def test_unreadable_file_is_skipped(ws):
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    p = ws / "secret.txt"
    p.write_text("TODO secret\n")
    p.chmod(0)
    out = grep(ws, {"pattern": "TODO"})
    assert not out.is_error and content(out) == "Found 3 files\nnotes.md\nsrc/b.py\nsrc/a.py"


def _rg_pids_for(path: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    argv = fh.read().split(b"\0")
            except OSError:
                continue
            if path.encode() in argv and os.path.basename(argv[0].decode(errors="replace")) == "rg":
                pids.append(int(entry))
    return pids




def test_cancelled_search_kills_rg_and_timeout_is_an_error(ws):
    fifo = str(ws / "never-written.fifo")
    os.mkfifo(fifo)  # rg blocks opening it: a search that never ends

    async def main():
        task = asyncio.ensure_future(ripgrep.run_rg(["--regexp", "x", "--", fifo], str(ws)))
        for _ in range(50):
            await asyncio.sleep(0.05)
            pids = _rg_pids_for(fifo)
            if pids:
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.1)
        cancelled_pids = pids
        with pytest.raises(ripgrep.RipgrepError, match=r"^Search timed out after 0.3s"):
            await ripgrep.run_rg(["--regexp", "x", "--", fifo], str(ws), timeout=0.3)
        await asyncio.sleep(0.1)
        return cancelled_pids, _rg_pids_for(fifo)

    cancelled, left = run(main())
    assert cancelled and not any(pid_alive(p) for p in cancelled)
    assert not any(pid_alive(p) for p in left)


def test_grep_runs_off_the_loop(many):
    """Searching, stat'ing and ordering 300 files leaves the loop free: a ticker keeps ticking."""

    async def main():
        ctx = ToolUseContext(cwd=str(many), tools=default_tools())
        async with Ticker() as ticker:
            out = await run_tool_use({"type": "tool_use", "id": "g", "name": "Grep",
                                      "input": {"pattern": "hit", "output_mode": "count", "head_limit": 0}}, ctx)
        return out, ticker.ticks

    out, ticks = run(main())
    assert out.block["content"].endswith("Found 600 total occurrences across 301 files.")
    assert ticks >= 2


def test_output_cap_stops_the_search(ws):
    (ws / "big.txt").write_text("hit\n" * 100_000)

    async def main():
        return await ripgrep.run_rg(["--regexp", "hit", "--", "big.txt"], str(ws), max_output_bytes=10_000)

    result = run(main())
    assert result.truncated and result.stdout.endswith("hit\n")
    assert 10_000 <= result.output_bytes and len(result.stdout) <= result.output_bytes


def test_read_deny_rule_hides_file_contents_from_grep(tmp_path):
    """A Read deny rule (`Read(./secrets/**)`, `Read(.env)`) also keeps Grep out of those files."""
    from desktop_agent.core.context import ToolUseContext
    from desktop_agent.engine.execution import run_tool_use
    from desktop_agent.permissions.context import PermissionContext
    from desktop_agent.tools.grep import GrepTool

    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "secrets" / "key.txt").write_text("TOKEN=abc\n")
    (ws / ".env").write_text("TOKEN=def\n")
    (ws / "app.py").write_text("TOKEN = read_env()\n")
    pc = PermissionContext.load(str(ws), cli_disallowed=["Read(./secrets/**)", "Read(.env)"])
    ctx = ToolUseContext(cwd=str(ws), tools=[GrepTool()], permission_context=pc)

    async def go(inp):
        return (await run_tool_use({"type": "tool_use", "id": "g", "name": "Grep", "input": inp}, ctx)).block

    import asyncio

    assert asyncio.run(go({"pattern": "TOKEN"}))["content"] == "Found 1 file\napp.py"
    content = asyncio.run(go({"pattern": "TOKEN", "output_mode": "content"}))["content"]
    assert content == "app.py:1:TOKEN = read_env()"
