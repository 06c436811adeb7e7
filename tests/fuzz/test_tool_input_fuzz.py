"""Fuzz of tool inputs through ``run_tool_use`` with the real Read/Edit/Write/Grep/Glob/Bash tools.

Random inputs (right keys with odd values, wrong types, missing and extra keys, odd tool_use ids) in a
temp workspace. Property: ``run_tool_use`` never raises, returns exactly one well-formed ``tool_result``
with the call's id, and never takes the "internal error" exit (an exception escaping a tool's own
validation/permission/mapping code is our bug). Safety: mode ``acceptEdits`` without a prompter, so writes
outside the workspace and non-read-only commands are denied, never run; searches stay in the workspace.
The test prints how many calls ran per tool and how many were errors.
"""

from __future__ import annotations

import asyncio
import collections
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from desktop_agent.core.context import ToolUseContext
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.tools.registry import all_builtin_tools

TOOLS = [t for t in all_builtin_tools() if t.name in ("Read", "Edit", "Write", "Grep", "Glob", "Bash")]

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
JUNK = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True), TEXT,
                 st.lists(st.integers(), max_size=3), st.dictionaries(TEXT, st.integers(), max_size=2))
SAFE_WORDS = ["ls", "cat", "echo", "pwd", "head", "wc", "grep", "git status", "stat", "true", "false", "printf",
              "diff", "rm", "touch", "mkdir", "python3 -c 'print(1)'", "exit 3", "cd ..", "cd /"]


def _paths(ws: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from([
            os.path.join(ws, "a.txt"), os.path.join(ws, "crlf.txt"), os.path.join(ws, "empty.txt"),
            os.path.join(ws, "bin.dat"), os.path.join(ws, "sub"), os.path.join(ws, "missing.txt"),
            os.path.join(ws, "sub", "new", "deep.txt"), "a.txt", "./sub/../a.txt", "~/nope.txt", "",
            "/etc/passwd", "/outside/x.txt", os.path.join(ws, "a.txt") + "/", os.path.join(ws, "nb.ipynb"),
            os.path.join(ws, "utf16.txt"),
        ]),
        TEXT.map(lambda t: os.path.join(ws, t.replace("\x00", ""))),
    )


def _value(good: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly a value of the right type, one time in ten anything at all."""
    return st.integers(0, 9).flatmap(lambda n: JUNK if n == 0 else good)


def _inputs(ws: str) -> st.SearchStrategy[tuple[str, object]]:
    paths = _paths(ws)
    strings = st.one_of(TEXT, st.sampled_from(["hello", "line 2\n", "\r\n", "", "a", "‘quoted’", "hello\nworld"]))
    search_paths = st.sampled_from([ws, os.path.join(ws, "sub"), os.path.join(ws, "a.txt"), "sub", ".",
                                    os.path.join(ws, "missing")])
    patterns = st.one_of(TEXT, st.sampled_from(["hello", "**/*.txt", "*", "(", "[", "\\", "a|b", "^$", "**"]))
    per_tool = {
        "Read": {"file_path": paths, "offset": st.integers(-5, 10**9), "limit": st.integers(-5, 10**9),
                 "pages": TEXT},
        "Edit": {"file_path": paths, "old_string": strings, "new_string": strings, "replace_all": st.booleans()},
        "Write": {"file_path": paths, "content": strings},
        "Grep": {"pattern": patterns, "path": search_paths, "glob": patterns,
                 "output_mode": st.sampled_from(["content", "files_with_matches", "count", "bogus"]),
                 "head_limit": st.integers(-3, 10**6), "offset": st.integers(-3, 100), "-i": st.booleans(),
                 "-n": st.booleans(), "-A": st.integers(-1, 5), "multiline": st.booleans(),
                 "type": st.sampled_from(["py", "txt", "nonsense"])},
        "Glob": {"pattern": patterns, "path": search_paths},
        "Bash": {"command": st.one_of(TEXT, st.builds(lambda w, a: f"{w} {a}", st.sampled_from(SAFE_WORDS),
                                                      st.sampled_from(["", "a.txt", "sub", "-l", "/etc", "x y"]))),
                 "timeout": st.integers(-1000, 5000), "description": TEXT, "run_in_background": st.just(False)},
    }

    @st.composite
    def one(draw):
        name = draw(st.sampled_from(list(per_tool) + ["NoSuchTool"]))
        fields = per_tool.get(name, {"x": TEXT})
        keys = draw(st.lists(st.sampled_from(sorted(fields)), unique=True, max_size=2))
        required = {"Read": ["file_path"], "Edit": ["file_path", "old_string", "new_string"],
                    "Write": ["file_path", "content"], "Grep": ["pattern"], "Glob": ["pattern"],
                    "Bash": ["command"]}.get(name, [])
        if draw(st.integers(0, 4)):  # usually well-shaped
            keys = list(dict.fromkeys(required + keys))
        inp = {k: draw(_value(fields[k])) for k in keys}
        if draw(st.integers(0, 9)) == 0:
            inp[draw(TEXT)] = draw(JUNK)
        shape = draw(st.integers(0, 19))
        if shape == 0:
            return name, draw(JUNK)  # not an object at all
        return name, inp

    return one()


def _workspace(root: str) -> str:
    ws = os.path.join(root, "ws")
    os.makedirs(os.path.join(ws, "sub"))
    files = {"a.txt": b"hello\nworld\nhello again\n", "crlf.txt": b"one\r\ntwo\r\n", "empty.txt": b"",
             "bin.dat": b"\x00\x01\x02", "nb.ipynb": b'{"cells": []}', "sub/b.txt": b"hello from sub\n",
             "utf16.txt": "\ufeffhi\r\nthere\r\n".encode("utf-16-le")}
    for rel, data in files.items():
        with open(os.path.join(ws, rel), "wb") as fh:
            fh.write(data)
    return ws


STATS: collections.Counter = collections.Counter()


def _check(outcome, tool_use_id: str) -> None:
    block = outcome.block
    assert block["type"] == "tool_result"
    assert block["tool_use_id"] == tool_use_id
    assert set(block) <= {"type", "tool_use_id", "content", "is_error"}, block
    assert isinstance(block["content"], (str, list)), block
    if isinstance(block["content"], list):
        assert all(isinstance(b, dict) and "type" in b for b in block["content"])
    if "is_error" in block:
        assert block["is_error"] is True
        assert isinstance(block["content"], str) and block["content"].strip(), block
    assert outcome.stage != "internal", f"{outcome.tool_name} raised inside run_tool_use: {block['content']}"


@pytest.fixture
def short_bash(monkeypatch):
    monkeypatch.setenv("BASH_DEFAULT_TIMEOUT_MS", "3000")
    monkeypatch.setenv("BASH_MAX_TIMEOUT_MS", "3000")


def test_fuzz_tool_inputs_one_well_formed_result(short_bash):
    with tempfile.TemporaryDirectory() as root:
        ws = _workspace(root)
        pc = PermissionContext(ws, mode="acceptEdits")
        STATS.clear()

        @settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
        @given(case=_inputs(ws), tool_use_id=st.one_of(st.just("toolu_01"), TEXT), read_first=st.booleans())
        def run(case, tool_use_id, read_first):
            name, inp = case
            ctx = ToolUseContext(cwd=ws, permission_context=pc, tools=list(TOOLS))

            async def go():
                if read_first and isinstance(inp, dict) and isinstance(inp.get("file_path"), str):
                    await run_tool_use({"type": "tool_use", "id": "pre", "name": "Read",
                                        "input": {"file_path": inp["file_path"]}}, ctx)
                return await asyncio.wait_for(
                    run_tool_use({"type": "tool_use", "id": tool_use_id, "name": name, "input": inp}, ctx), 30)

            outcome = asyncio.run(go())
            _check(outcome, tool_use_id)
            STATS[(name, "error" if outcome.is_error else "ok")] += 1

        run()
    total = sum(STATS.values())
    print(f"tool input fuzz: {total} calls; " + ", ".join(f"{k[0]} {k[1]}={v}" for k, v in sorted(STATS.items())))
    assert total >= 100
    # Outside the workspace nothing was created.
    assert not os.path.exists("/outside/x.txt")


@pytest.mark.parametrize("tool_input", [
    None, [], "not json", "{\"file_path\": 1}", 42, {"file_path": None}, {"": ""},
])
def test_non_object_inputs_each_give_one_error_result(tool_input, tmp_path):
    ctx = ToolUseContext(cwd=str(tmp_path), permission_context=PermissionContext(str(tmp_path)), tools=list(TOOLS))
    seen = 0
    for tool in TOOLS:
        out = asyncio.run(run_tool_use({"type": "tool_use", "id": "t", "name": tool.name, "input": tool_input}, ctx))
        _check(out, "t")
        assert out.is_error
        seen += 1
    print(f"{tool_input!r}: {seen} tools answered with one error result each")
    assert seen == len(TOOLS) == 6
