"""Hostile tool input never crashes (issue 12 item 7): each gets an error tool_result, the session goes on.

Owns the cases for ``util/input_guard.py`` (depth measured and clipped without recursion), the guard in
``run_tool_use`` (input nested 10,000 deep, a NUL or a megabyte in a path parameter), the stream parser
(``MessageAccumulator`` on 10,000-deep tool input JSON), the transcript writer and reader on deep
values, Read on FIFOs, sockets and devices (refused, never hung on), and multi-megabyte strings to
Edit, Bash, Grep and Glob (an answer within a couple of seconds). The last test drives the real CLI
against the fake Anthropic server: one scripted turn carrying all of these, every tool_use answered
exactly once, the next request valid, the CLI exiting normally.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import wrap_error
from desktop_agent.util.input_guard import (CLIPPED_MARKER, MAX_INPUT_DEPTH, clip_depth, clip_json_text,
                                            fix_surrogates, has_surrogate_escape, hostile_input_error, too_deep)
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.model.stream import MessageAccumulator, message_to_events
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.tools.read.files import open_regular
from desktop_agent.tools.read.text import read_text_range
from desktop_agent.tools.read.tool import ReadTool
from desktop_agent.tools.registry import default_tools

DEEP = 10_000


def deep_value(depth: int, leaf: Any = 1, key: str = "a") -> Any:
    value = leaf
    for _ in range(depth):
        value = {key: value}
    return value


def nested_lists(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def deep_json(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    (d / "f.txt").write_text("hello\n")
    return d


def ctx_for(ws: Path, mode: str = "default") -> ToolUseContext:
    return ToolUseContext(cwd=str(ws), tools=default_tools(), permission_context=PermissionContext(str(ws), mode=mode))


def call(ctx: ToolUseContext, name: str, inp: Any, id: str = "toolu_h") -> dict[str, Any]:
    out = run(run_tool_use({"type": "tool_use", "id": id, "name": name, "input": inp}, ctx))
    assert out.block["tool_use_id"] == id and out.block["type"] == "tool_result"
    return out.block


def too_deep_text(tool: str, param: str) -> str:
    return (f"<tool_use_error>InputValidationError: {tool} failed due to the following issue:\n"
            f"The parameter `{param}` is nested more than {MAX_INPUT_DEPTH} levels deep</tool_use_error>")


# ---------------------------------------------------------------- the depth helpers

def test_too_deep_and_clip_depth_are_iterative():
    v = deep_value(DEEP)
    path = too_deep(v, MAX_INPUT_DEPTH)
    assert path is not None and len(path) == MAX_INPUT_DEPTH and set(path) == {"a"}
    assert too_deep(deep_value(MAX_INPUT_DEPTH - 1), MAX_INPUT_DEPTH) is None  # 63 dicts + the leaf: fine
    assert too_deep("x" * 10) is None and too_deep([1, [2, [3]]], 3) is None and too_deep([1, [2, [3]]], 2) == [1, 1]
    loop: list[Any] = []
    loop.append(loop)
    assert too_deep(loop, 5) is not None  # a cycle counts as infinitely deep, and ends
    clipped = clip_depth(v, 10)
    assert json.loads(json.dumps(clipped)) == clipped and too_deep(clipped, 10) is None
    assert json.dumps(clip_depth({"a": [1, {"b": [2, [3]]}, 4]}, 3)) == (
        '{"a": [1, {"b": "' + CLIPPED_MARKER + '"}, 4]}')
    small = {"x": [1, 2]}
    assert clip_depth(small) is small


def test_clip_json_text():
    text = '{"file_path": ' + deep_json(DEEP) + "}"
    with pytest.raises(RecursionError):
        json.loads(text)  # what the stream parser used to do
    value = json.loads(clip_json_text(text, MAX_INPUT_DEPTH + 1))
    assert len(too_deep(value, MAX_INPUT_DEPTH)) == MAX_INPUT_DEPTH  # still over the limit: the guard refuses it
    # brackets inside strings do not count; an unterminated over-deep tail stays invalid (ValueError)
    assert clip_json_text('[[["]]]]",1]]]', 2) == '[["' + CLIPPED_MARKER + '"]]'
    assert clip_json_text('{"k": "[[[[[[[[[["}', 2) == '{"k": "[[[[[[[[[["}'
    with pytest.raises(ValueError):
        json.loads(clip_json_text("[" * DEEP, 65))
    plain = '{"a": [1, 2]}'
    assert clip_json_text(plain, 65) is plain
    big = '{"p": "' + "[{" * 2_500_000 + '"}'  # 5 MB of brackets inside one string
    t0 = time.perf_counter()
    assert clip_json_text(big, 65) is big
    assert time.perf_counter() - t0 < 1.0


def test_hostile_input_error_texts():
    assert hostile_input_error("Read", {"file_path": "/x"}) is None
    assert wrap_error(hostile_input_error("Read", {"file_path": deep_value(DEEP)})) == too_deep_text("Read", "file_path")
    assert hostile_input_error("Grep", [deep_value(DEEP)]) == (
        "InputValidationError: Grep failed due to the following issue:\n"
        f"The input is nested more than {MAX_INPUT_DEPTH} levels deep")
    assert hostile_input_error("Read", {"file_path": "/a\x00b"}) == (
        "InputValidationError: Read failed due to the following issue:\n"
        "The parameter `file_path` contains a NUL character (\\0), which no path can contain")
    two = hostile_input_error("Grep", {"path": "a\x00", "file_path": "x" * 5000})
    assert "following issues:\n" in two and "`path` contains a NUL" in two and "`file_path` is 5000 characters" in two


# ---------------------------------------------------------------- run_tool_use

@pytest.mark.parametrize("name,inp,param", [
    ("Read", {"file_path": deep_value(DEEP)}, "file_path"),
    ("Read", {"file_path": "f.txt", "bogus": deep_value(DEEP)}, "bogus"),
    ("Read", {"file_path": "f.txt", "deep": nested_lists(MAX_INPUT_DEPTH + 1)}, "deep"),
    ("Edit", {"file_path": "f.txt", "old_string": deep_value(DEEP), "new_string": "x"}, "old_string"),
    ("Bash", {"command": "true", "x": deep_value(DEEP, key="b")}, "x"),
    ("Grep", {"pattern": deep_value(DEEP)}, "pattern"),
    ("Glob", {"pattern": "*", "path": deep_value(DEEP)}, "path"),
    ("Write", {"file_path": "f.txt", "content": deep_value(DEEP)}, "content"),
])
def test_deep_input_is_an_input_validation_error(ws, name, inp, param):
    for mode in ("default", "bypassPermissions"):
        block = call(ctx_for(ws, mode), name, inp)
        assert block["is_error"] and block["content"] == too_deep_text(name, param), block
    assert (ws / "f.txt").read_text() == "hello\n"


def test_deep_input_as_json_text(ws):
    """Some providers send the input as JSON text: a 10,000-deep text is clipped, then refused."""
    block = call(ctx_for(ws), "Read", '{"file_path": ' + deep_json(DEEP) + "}")
    assert block["content"] == too_deep_text("Read", "file_path")
    block = call(ctx_for(ws), "Read", "[" * DEEP)  # not even JSON: the schema error, no crash
    assert block["is_error"] and "InputValidationError" in block["content"]


@pytest.mark.parametrize("name,inp,param", [
    ("Read", {"file_path": "f.txt\x00/etc/passwd"}, "file_path"),
    ("Edit", {"file_path": "f\x00", "old_string": "a", "new_string": "b"}, "file_path"),
    ("Write", {"file_path": "g\x00.txt", "content": "x"}, "file_path"),
    ("Grep", {"pattern": "x", "path": ".\x00"}, "path"),
    ("Glob", {"pattern": "*", "path": "\x00"}, "path"),
])
def test_nul_in_a_path_is_a_clear_error(ws, name, inp, param):
    block = call(ctx_for(ws, "bypassPermissions"), name, inp)
    assert block["is_error"] and block["content"] == (
        f"<tool_use_error>InputValidationError: {name} failed due to the following issue:\n"
        f"The parameter `{param}` contains a NUL character (\\0), which no path can contain</tool_use_error>")
    assert sorted(p.name for p in ws.iterdir()) == ["f.txt"]


def test_nul_in_patterns_and_direct_read_validation(ws):
    ctx = ctx_for(ws)
    block = call(ctx, "Grep", {"pattern": "a\x00b"})
    assert block["is_error"] and "NUL character" in block["content"] and "\\x00" in block["content"]
    block = call(ctx, "Glob", {"pattern": "*\x00"})
    assert block["is_error"] and "NUL character, which cannot be passed to ripgrep" in block["content"]
    block = call(ctx, "Grep", {"pattern": "x", "glob": "*.py\x00"})
    assert block["is_error"] and "The glob contains a NUL character" in block["content"]
    from desktop_agent.tools.read.tool import ReadInput

    result = run(ReadTool().validate_input(ReadInput(file_path="a\x00b"), ctx))  # a caller that skips the guard
    assert not result.result and "NUL character" in result.message


def test_megabyte_strings_answer_quickly(ws):
    big = "x" * 5_000_000
    ctx = ctx_for(ws, "bypassPermissions")
    call(ctx, "Read", {"file_path": str(ws / "f.txt")})
    cases = [
        ("Edit", {"file_path": str(ws / "f.txt"), "old_string": big, "new_string": "y"}, "String to replace not found"),
        ("Bash", {"command": "echo " + big}, "The command is 5000005 bytes long"),
        ("Bash", {"command": big}, "The command is 5000000 bytes long"),
        ("Grep", {"pattern": big}, "The pattern is 5000000 bytes long"),
        ("Grep", {"pattern": "x", "glob": big}, "The glob is 5000000 bytes long"),
        ("Glob", {"pattern": big}, "The pattern is 5000000 bytes long"),
        ("Read", {"file_path": big}, "The parameter `file_path` is 5000000 characters long"),
    ]
    for mode in ("default", "bypassPermissions"):
        ctx = ctx_for(ws, mode)
        call(ctx, "Read", {"file_path": str(ws / "f.txt")})
        for name, inp, expected in cases:
            t0 = time.perf_counter()
            block = call(ctx, name, inp)
            took = time.perf_counter() - t0
            assert block["is_error"] and expected in block["content"], (name, str(block["content"])[:200])
            assert took < 2.0, (name, mode, took)
    assert (ws / "f.txt").read_text() == "hello\n"
    # A long command under the limit still runs.
    block = call(ctx_for(ws, "bypassPermissions"), "Bash", {"command": "echo " + "y" * 100_000 + " | wc -c"})
    assert block["content"].strip() == "100001", block


# ---------------------------------------------------------------- Read on special files

def _timed_read(ctx: ToolUseContext, path: str) -> tuple[dict[str, Any], float]:
    box: dict[str, Any] = {}

    def target() -> None:
        t0 = time.perf_counter()
        box["block"] = call(ctx, "Read", {"file_path": path})
        box["took"] = time.perf_counter() - t0

    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(10)
    assert not th.is_alive(), f"Read of {path} hangs"
    return box["block"], box["took"]


def test_read_refuses_fifos_sockets_and_devices(ws):
    fifo = ws / "pipe"
    os.mkfifo(fifo)
    sock_path = ws / "sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(sock_path))
    try:
        ctx = ctx_for(ws, "bypassPermissions")
        expected = {
            str(fifo): "a named pipe (FIFO)", str(sock_path): "a socket", "/dev/null": "a character device",
            "/dev/zero": "would block or produce infinite output", "/dev/stdin": "would block",
            "/dev/urandom": "would block",
        }
        for path, what in expected.items():
            block, took = _timed_read(ctx, path)
            assert block["is_error"] and what in block["content"], (path, block)
            assert block["content"].startswith(f"<tool_use_error>Cannot read '{path}'"), block
            assert took < 2.0
        # inside the working dir in default mode, no permission needed: refused at validation, before any ask
        block, _ = _timed_read(ctx_for(ws), str(fifo))
        assert block["content"] == (f"<tool_use_error>Cannot read '{fifo}': it is not a regular file (it is a named "
                                    "pipe (FIFO); reading it could block or never end).</tool_use_error>")
        # a link to a FIFO is refused by what it points to
        os.symlink(fifo, ws / "innocent.txt")
        block, _ = _timed_read(ctx, str(ws / "innocent.txt"))
        assert "named pipe" in block["content"]
    finally:
        srv.close()


def test_open_regular_does_not_wait_for_a_fifo_writer(ws):
    """The race: a file replaced by a FIFO between stat and open. O_NONBLOCK open + fstat refuses it at once."""
    from desktop_agent.core.errors import ToolError

    fifo = ws / "swap"
    os.mkfifo(fifo)
    t0 = time.perf_counter()
    with pytest.raises(ToolError, match="named pipe"):
        open_regular(str(fifo))
    with pytest.raises(ToolError, match="named pipe"):
        read_text_range(str(fifo), None, None)
    assert time.perf_counter() - t0 < 1.0
    with open_regular(str(ws / "f.txt")) as fh:
        assert fh.read() == b"hello\n" and stat.S_ISREG(os.fstat(fh.fileno()).st_mode)
    with pytest.raises(IsADirectoryError):
        open_regular(str(ws))
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(ToolError):
            open_regular(str(fifo))
    assert len(os.listdir("/proc/self/fd")) == before  # the refused descriptors are closed


def test_grep_refuses_a_fifo_or_device_path(ws):
    """rg reads a path it is given, FIFO or not (a directory walk skips FIFOs): refused before rg runs."""
    fifo = ws / "pipe"
    os.mkfifo(fifo)
    ctx = ctx_for(ws, "bypassPermissions")
    for path in (str(fifo), "/dev/zero", "/dev/null"):
        t0 = time.perf_counter()
        block = call(ctx, "Grep", {"pattern": "x", "path": path, "output_mode": "content"})
        assert block["is_error"] and "it is not a regular file" in block["content"], block
        assert time.perf_counter() - t0 < 2.0
    (ws / "a.txt").write_text("x marks\n")
    block = call(ctx, "Grep", {"pattern": "x", "output_mode": "content"})  # the walk skips the FIFO itself
    assert block["content"] == "a.txt:1:x marks", block


def test_lone_surrogates_are_replaced():
    value = json.loads('{"a\\ud800": ["x\\udfff", {"k": "\\ud83d\\ude00 ok"}], "n": 1}')
    fixed = fix_surrogates(value)
    assert fixed == {"a\ufffd": ["x\ufffd", {"k": "\U0001F600 ok"}], "n": 1}
    json.dumps(fixed, ensure_ascii=False).encode("utf-8")  # every writer can encode it now
    assert fix_surrogates("\ud83d" + "\ude00") == "\U0001F600"  # a pair split across deltas is joined
    assert has_surrogate_escape(r'{"a": "\ud800"}') and not has_surrogate_escape(r'{"a": "\u00e9"}')
    plain = {"a": ["b"]}
    assert fix_surrogates("abc") == "abc" and fix_surrogates(plain) == plain


# ---------------------------------------------------------------- the stream parser and the transcript

def test_stream_parser_survives_deep_tool_input():
    raw = '{"file_path": ' + deep_json(DEEP) + "}"
    message = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_deep", "name": "Read", "input": raw},
        {"type": "tool_use", "id": "toolu_ok", "name": "Read", "input": {"file_path": "/x"}}],
        "stop_reason": "tool_use"}
    acc = MessageAccumulator()
    finished = [b for ev in message_to_events(message, chunk_size=97) if (b := acc.feed(ev)) is not None]
    assert [b["id"] for b in finished] == ["toolu_deep", "toolu_ok"] and acc.stopped and not acc.truncated
    deep_input = finished[0]["input"]
    assert len(too_deep(deep_input, MAX_INPUT_DEPTH)) == MAX_INPUT_DEPTH
    json.dumps(acc.completed_content())  # what the transcript, stdout and the next request do
    assert finished[1]["input"] == {"file_path": "/x"}
    # lone surrogates in tool input and in text are replaced at the block's end
    message = {"role": "assistant", "content": [
        {"type": "text", "text": "a\ud800b"},
        {"type": "tool_use", "id": "toolu_s", "name": "Read", "input": '{"file_path": "/tmp/\\ud800x"}'}]}
    acc = MessageAccumulator()
    done = [b for ev in message_to_events(message, chunk_size=5) if (b := acc.feed(ev)) is not None]
    assert done[0]["text"] == "a\ufffdb" and done[1]["input"] == {"file_path": "/tmp/\ufffdx"}


def test_transcript_writer_and_reader_survive_deep_values(tmp_path):
    from desktop_agent.session.store import TranscriptStore, read_transcript

    path = tmp_path / "t.jsonl"
    store = TranscriptStore(path, "sid", str(tmp_path))
    store._append_raw({"type": "x", "uuid": "u1", "value": deep_value(DEEP)})
    store._append_raw({"type": "y", "uuid": "u2", "text": "lone \udc80"})
    store.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and CLIPPED_MARKER in lines[0]
    with path.open("a") as fh:  # a hand-made line nested 10,000 deep: skipped on load, not a crash
        fh.write('{"type": "z", "v": ' + deep_json(DEEP) + "}\n")
    entries = read_transcript(path, full=True)
    assert [e["type"] for e in entries] == ["x", "y"]


# ---------------------------------------------------------------- end to end, the real CLI

def test_cli_answers_every_hostile_tool_use_once_and_goes_on(ws, tmp_path):
    from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
    from tests.test_cli import cli_env, jsonl, run_cli, session_file

    fifo = ws / "pipe"
    os.mkfifo(fifo)
    calls = [
        tool_use("Read", '{"file_path": ' + deep_json(DEEP) + "}", id="toolu_deep"),
        tool_use("Read", '{"file_path": "f.txt", "extra": ' + "[" * DEEP + "]" * DEEP + "}", id="toolu_deep_extra"),
        tool_use("Grep", "[" * DEEP + "]" * DEEP, id="toolu_deep_list"),
        tool_use("Read", {"file_path": str(ws / "f.txt\x00.png")}, id="toolu_nul"),
        tool_use("Read", {"file_path": str(fifo)}, id="toolu_fifo"),
        tool_use("Read", {"file_path": "/dev/zero"}, id="toolu_zero"),
        tool_use("Read", {"file_path": "/dev/stdin"}, id="toolu_stdin"),
        tool_use("Grep", {"pattern": "y" * 120_000}, id="toolu_big_grep"),
        tool_use("Grep", {"pattern": "x", "path": str(fifo), "output_mode": "content"}, id="toolu_grep_fifo"),
        tool_use("Read", '{"file_path": "/tmp/\\ud800x"}', id="toolu_surrogate"),
        tool_use("Read", {"file_path": str(ws / "f.txt")}, id="toolu_fine"),
    ]
    # A failing Bash call cancels its parallel siblings (by design), so it gets a turn of its own. The
    # strings are just over the limits (5 MB ones are the unit test's): megabytes in the history would
    # make the CLI compact the conversation, a request this script does not answer.
    bash = tool_use("Bash", {"command": "echo " + "x" * 150_000}, id="toolu_big_bash")
    ids = [c["id"] for c in calls] + [bash["id"]]
    with FakeAnthropic(chunk_size=65536) as fake:
        fake.script([reply(*calls), reply(bash), reply(text("done"))])
        t0 = time.perf_counter()
        out = run_cli(["-p", "go", "--output-format", "stream-json", "--verbose"], ws, cli_env(fake, tmp_path / "h"),
                      timeout=120)
        took = time.perf_counter() - t0
        assert out.returncode == 0, out.stderr[-3000:]
        fake.assert_done()  # the second request was valid: every tool_use answered in the next message
        answered = [b for r in fake.requests[1:] for b in r.messages[-1]["content"] if b.get("type") == "tool_result"]
    lines = jsonl(out.stdout)
    assert lines[-1]["type"] == "result" and lines[-1]["subtype"] == "success" and lines[-1]["result"] == "done"
    results = [b for m in lines if m["type"] == "user" for b in m["message"]["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert sorted(r["tool_use_id"] for r in results) == sorted(ids)  # exactly one each
    assert sorted(r["tool_use_id"] for r in answered) == sorted(ids)
    by_id = {r["tool_use_id"]: r for r in results}
    assert by_id["toolu_deep"]["content"] == too_deep_text("Read", "file_path")
    assert by_id["toolu_deep_extra"]["content"] == too_deep_text("Read", "extra")
    assert "The input is nested more than" in by_id["toolu_deep_list"]["content"]
    assert "contains a NUL character" in by_id["toolu_nul"]["content"]
    assert "named pipe (FIFO)" in by_id["toolu_fifo"]["content"]
    assert "named pipe (FIFO)" in by_id["toolu_grep_fifo"]["content"]
    assert "/tmp/\ufffdx" in by_id["toolu_surrogate"]["content"]
    assert "would block" in by_id["toolu_zero"]["content"] and "would block" in by_id["toolu_stdin"]["content"]
    assert "The command is 150005 bytes long" in by_id["toolu_big_bash"]["content"]
    assert "The pattern is 120000 bytes long" in by_id["toolu_big_grep"]["content"]
    assert by_id["toolu_fine"]["content"] == "1\thello\n2\t" and not by_id["toolu_fine"].get("is_error")
    assert all(by_id[i].get("is_error") for i in ids if i != "toolu_fine")
    # the transcript on disk is whole: every line parses, every tool_use has its result
    transcript = session_file(tmp_path / "h", ws, lines[-1]["session_id"]).read_text().splitlines()
    entries = [json.loads(line) for line in transcript]
    recorded = [b["tool_use_id"] for e in entries if e.get("type") == "user"
                for b in (e["message"]["content"] if isinstance(e["message"]["content"], list) else [])
                if b.get("type") == "tool_result"]
    assert sorted(recorded) == sorted(ids)
    assert took < 60
