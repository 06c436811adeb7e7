"""The Read tool through run_tool_use (SPEC §3.5, §3.6, §9 items 19–29, Appendix A "Read")."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import os
import stat
import sys

import pytest

from desktop_agent.engine.execution import run_tool_use
from desktop_agent.tools.read import media as read_media
from desktop_agent.tools.read import text as read_text
from desktop_agent.tools.read import tool as read_mod
from desktop_agent.tools.edit import EditTool
from desktop_agent.tools.read.tool import ReadTool
from desktop_agent.tools.write import WriteTool
from tests.engine.helpers import ctx_with, tool_use


def tools():
    return [ReadTool(), EditTool(), WriteTool()]


def run(coro):
    return asyncio.run(coro)


def read(ctx, file_path, id="toolu_read_1", **kw):
    return run(run_tool_use(tool_use("Read", {"file_path": str(file_path), **kw}, id), ctx))


def bump_mtime(path, seconds=2.0):
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + int(seconds * 1e9)))


@pytest.fixture
def ctx(tmp_path):
    return ctx_with(tools(), tmp_path)


# ---------------------------------------------------------------- text output


def test_item19_running_example(workdir):
    ctx = ctx_with(tools(), workdir)
    out = read(ctx, workdir / "app.ts")
    assert out.block == {"type": "tool_result", "tool_use_id": "toolu_read_1", "content": "1\texport const value = 1"}


def test_trailing_newline_gives_final_empty_numbered_line(tmp_path, ctx):
    (tmp_path / "f.txt").write_text("alpha\nbeta\ngamma\n")
    assert read(ctx, tmp_path / "f.txt").block["content"] == "1\talpha\n2\tbeta\n3\tgamma\n4\t"


def test_item20_offset_and_limit(tmp_path, ctx):
    (tmp_path / "three.txt").write_text("one\ntwo\nthree")
    assert read(ctx, tmp_path / "three.txt", offset=2, limit=1).block["content"] == "2\ttwo"
    (tmp_path / "five.txt").write_text("l1\nl2\nl3\nl4\nl5\n")
    assert read(ctx, tmp_path / "five.txt", offset=2, limit=2).block["content"] == "2\tl2\n3\tl3"


def test_offset_zero_is_treated_like_one(tmp_path, ctx):
    (tmp_path / "f.txt").write_text("a\nb")
    assert read(ctx, tmp_path / "f.txt", offset=0).block["content"] == "1\ta\n2\tb"


def test_item21_state_after_read(workdir):
    ctx = ctx_with(tools(), workdir)
    read(ctx, workdir / "app.ts")
    entry = ctx.read_file_state.get(str(workdir / "app.ts"))
    assert entry is not None
    assert entry.offset == 1 and entry.limit is None and not entry.is_partial_view
    assert entry.content == "export const value = 1"
    assert entry.timestamp == os.stat(workdir / "app.ts").st_mtime_ns // 1_000_000


def test_item22_repeat_read_is_stub_and_23_touch_gives_full_content(workdir):
    ctx = ctx_with(tools(), workdir)
    path = workdir / "app.ts"
    assert read(ctx, path).block["content"] == "1\texport const value = 1"
    second = read(ctx, path, id="toolu_read_2")
    assert second.block == {
        "type": "tool_result", "tool_use_id": "toolu_read_2",
        "content": "Wasted call — file unchanged since your last Read. Refer to that earlier tool_result instead.",
    }
    bump_mtime(path)
    assert read(ctx, path).block["content"] == "1\texport const value = 1"


def test_item24_different_range_gives_full_content(tmp_path, ctx):
    p = tmp_path / "f.txt"
    p.write_text("l1\nl2\nl3\nl4\nl5\n")
    assert read(ctx, p, offset=1).block["content"].startswith("1\tl1")
    assert read(ctx, p, offset=1, limit=5).block["content"] == "1\tl1\n2\tl2\n3\tl3\n4\tl4\n5\tl5"
    # the same range again is the stub; another range in between resets it (Appendix A)
    assert read(ctx, p, offset=2, limit=2).block["content"] == "2\tl2\n3\tl3"
    assert read(ctx, p, offset=2, limit=2).block["content"].startswith("Wasted call")
    assert read(ctx, p, offset=4, limit=1).block["content"] == "4\tl4"
    assert read(ctx, p, offset=2, limit=2).block["content"] == "2\tl2\n3\tl3"


def test_no_offset_then_offset_one_is_the_same_range(tmp_path, ctx):
    p = tmp_path / "f.txt"
    p.write_text("x\n")
    read(ctx, p)
    assert read(ctx, p, offset=1).block["content"].startswith("Wasted call")


def test_item26_empty_file(tmp_path, ctx):
    (tmp_path / "empty.txt").write_text("")
    out = read(ctx, tmp_path / "empty.txt")
    assert not out.is_error
    assert out.block["content"] == "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
    # An empty read still counts as a read (Edit may fill it afterwards).
    assert ctx.read_file_state.get(str(tmp_path / "empty.txt")).content == ""


def test_item27_offset_past_end(tmp_path, ctx):
    (tmp_path / "three.txt").write_text("a\nb\nc")
    out = read(ctx, tmp_path / "three.txt", offset=10)
    assert not out.is_error
    assert out.block["content"] == ("<system-reminder>Warning: the file exists but is shorter than the provided offset "
                                    "(10). The file has 3 lines.</system-reminder>")
    (tmp_path / "six.txt").write_text("l1\nl2\nl3\nl4\nl5\n")
    out = read(ctx, tmp_path / "six.txt", offset=100)
    assert out.block["content"] == ("<system-reminder>Warning: the file exists but is shorter than the provided offset "
                                    "(100). The file has 6 lines.</system-reminder>")


def test_item28_flags():
    tool = ReadTool()
    inp = tool.input_model.model_validate({"file_path": "/x"})
    assert tool.is_concurrency_safe(inp) is True
    assert tool.is_read_only(inp) is True
    assert tool.max_result_size_chars == math.inf
    assert tool.name == "Read"


def test_item29_crlf_has_no_cr(tmp_path, ctx):
    (tmp_path / "w.txt").write_bytes(b"x = 1\r\ny = 2\r\n")
    out = read(ctx, tmp_path / "w.txt")
    assert out.block["content"] == "1\tx = 1\n2\ty = 2\n3\t"
    assert "\r" not in out.block["content"]
    assert ctx.read_file_state.get(str(tmp_path / "w.txt")).content == "x = 1\ny = 2\n"


def test_long_lines_are_not_cut(tmp_path, ctx):
    line = "x" * 5000
    (tmp_path / "long.txt").write_text(line)
    assert read(ctx, tmp_path / "long.txt").block["content"] == "1\t" + line


def test_relative_path_resolves_against_cwd(workdir):
    ctx = ctx_with(tools(), workdir)
    out = read(ctx, "app.ts")
    assert out.block["content"] == "1\texport const value = 1"
    assert str(workdir / "app.ts") in ctx.read_file_state


def test_utf16_and_utf8_bom_files_read_as_text(tmp_path, ctx):
    (tmp_path / "u16.txt").write_bytes(b"\xff\xfe" + "héllo\r\nwörld".encode("utf-16-le"))
    assert read(ctx, tmp_path / "u16.txt").block["content"] == "1\théllo\n2\twörld"
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbfabc\n")
    assert read(ctx, tmp_path / "bom.txt").block["content"] == "1\tabc\n2\t"


def test_invalid_utf8_is_shown_with_replacement_chars(tmp_path, ctx):
    (tmp_path / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    out = read(ctx, tmp_path / "latin1.txt")
    assert out.block["content"] == "1\tcaf\ufffd\n2\t"
    json.dumps(out.block)  # still serialisable for the API


# ---------------------------------------------------------------- errors


def test_missing_file_is_bare_error(workdir):
    ctx = ctx_with(tools(), workdir)
    out = read(ctx, workdir / "nope.txt")
    assert out.is_error
    assert out.block["content"] == f"File does not exist. Note: your current working directory is {workdir}."


def test_missing_file_suggests_near_match(workdir):
    ctx = ctx_with(tools(), workdir)
    out = read(ctx, workdir / "app.js")
    assert out.block["content"] == (f"File does not exist. Note: your current working directory is {workdir}. "
                                    f"Did you mean {workdir / 'app.ts'}?")


def test_whole_file_over_256kb_is_bare_error_and_reads_with_limit(tmp_path, ctx):
    p = tmp_path / "big.txt"
    line = "y" * 99 + "\n"
    data = (line * 3301)[:330035]  # 322.3KB
    p.write_text(data)
    out = read(ctx, p)
    assert out.is_error
    assert out.block["content"] == (
        "File content (322.3KB) exceeds maximum allowed size (256KB). Use offset and limit parameters to read "
        "specific portions of the file, or search for specific content instead of reading the whole file.")
    ok = read(ctx, p, offset=3000, limit=2)
    assert not ok.is_error and ok.block["content"] == f"3000\t{'y' * 99}\n3001\t{'y' * 99}"


def test_token_cap(tmp_path, ctx, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS", "10")
    (tmp_path / "f.txt").write_text("z" * 100)
    out = read(ctx, tmp_path / "f.txt")
    assert out.is_error
    assert out.block["content"] == (
        "File content (25 tokens) exceeds maximum allowed tokens (10). Use offset and limit parameters to read "
        "specific portions of the file, or search for specific content instead of reading the whole file.")
    assert str(tmp_path / "f.txt") not in ctx.read_file_state
    # the default is 25,000 tokens: the same file reads fine
    monkeypatch.delenv("CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS")
    assert read(ctx, tmp_path / "f.txt").block["content"] == "1\t" + "z" * 100


def test_binary_by_extension(tmp_path, ctx):
    (tmp_path / "blob.bin").write_bytes(b"hello")
    out = read(ctx, tmp_path / "blob.bin")
    assert out.is_error and out.stage == "validation"
    assert out.block["content"] == (
        "<tool_use_error>This tool cannot read binary files. The file appears to be a binary .bin file. Please use "
        "appropriate tools for binary file analysis.</tool_use_error>")


def test_binary_by_content(tmp_path, ctx):
    (tmp_path / "data.xyz").write_bytes(b"\x00\x01\x02\x03garbage\x00" * 50)
    out = read(ctx, tmp_path / "data.xyz")
    assert out.block["content"] == (
        "<tool_use_error>This tool cannot read binary files. The file appears to be a binary .xyz file. Please use "
        "appropriate tools for binary file analysis.</tool_use_error>")
    (tmp_path / "noext").write_bytes(b"\x7fELF\x00\x00")
    out = read(ctx, tmp_path / "noext")
    assert out.is_error and "The file appears to be a binary file." in out.block["content"]


def test_directory_gets_a_sentence(tmp_path, ctx):
    (tmp_path / "src").mkdir()
    out = read(ctx, tmp_path / "src")
    assert out.is_error
    assert out.block["content"] == (
        f"{tmp_path / 'src'} is a directory, not a file. Use the Glob tool or Bash `ls` to list its contents.")


def test_blocked_device(ctx):
    out = read(ctx, "/dev/zero")
    assert out.block["content"] == (
        "<tool_use_error>Cannot read '/dev/zero': this device file would block or produce infinite "
        "output.</tool_use_error>")


def test_schema_errors(ctx):
    out = run(run_tool_use(tool_use("Read", {}), ctx))
    assert out.block["content"] == ("<tool_use_error>InputValidationError: Read failed due to the following issue:\n"
                                    "The required parameter `file_path` is missing</tool_use_error>")
    out = run(run_tool_use(tool_use("Read", {"file_path": "/x", "bogus": 1}), ctx))
    assert out.block["content"] == ("<tool_use_error>InputValidationError: Read failed due to the following issue:\n"
                                    "An unexpected parameter `bogus` was provided</tool_use_error>")


def test_permission_check_gets_absolute_path(workdir, monkeypatch):
    from desktop_agent.permissions import paths

    seen = []

    def fake(tool_name, abs_path, input, ctx):
        from desktop_agent.core.permission import PermissionDecision
        seen.append((tool_name, abs_path, input))
        return PermissionDecision(behavior="deny", message="no reading today")

    monkeypatch.setattr(paths, "check_read_permission_for_tool", fake)
    reader = ReadTool()
    target = reader.permission_target(reader.input_model(file_path="app.ts"), ctx_with(tools(), workdir))
    assert (target.kind, target.path) == ("read", str(workdir / "app.ts"))
    ctx = ctx_with(tools(), workdir)
    out = read(ctx, "app.ts")
    assert out.is_error and out.block["content"] == "no reading today"
    assert seen == [("Read", str(workdir / "app.ts"), {"file_path": "app.ts"})]


# ---------------------------------------------------------------- images, PDFs, notebooks

PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def test_png_is_an_image_block(tmp_path, ctx):
    (tmp_path / "dot.png").write_bytes(PNG_1x1)
    out = read(ctx, tmp_path / "dot.png")
    assert not out.is_error
    assert out.block["content"] == [{"type": "image", "source": {
        "type": "base64", "data": base64.b64encode(PNG_1x1).decode(), "media_type": "image/png"}}]
    # images are exempt from the file_unchanged stub
    again = read(ctx, tmp_path / "dot.png")
    assert isinstance(again.block["content"], list)


def test_media_type_from_content_not_name(tmp_path, ctx):
    (tmp_path / "really_png.jpg").write_bytes(PNG_1x1)
    out = read(ctx, tmp_path / "really_png.jpg")
    assert out.block["content"][0]["source"]["media_type"] == "image/png"


def test_oversized_image_without_pillow_is_a_clear_error(tmp_path, ctx, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)  # as if Pillow were not installed
    monkeypatch.setattr(read_media, "MAX_IMAGE_RAW_BYTES", 1000)
    (tmp_path / "huge.png").write_bytes(PNG_1x1 + b"\x00" * 2000)
    out = read(ctx, tmp_path / "huge.png")
    assert out.is_error
    assert "Image file is too large to read" in out.block["content"]
    assert "Pillow is not installed" in out.block["content"]


def test_pdf_page_validation(tmp_path, ctx):
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4\n")
    out = read(ctx, tmp_path / "doc.pdf", pages="abc")
    assert out.block["content"] == ('<tool_use_error>Invalid pages parameter: "abc". Use formats like "1-5", "3", or '
                                    '"10-20". Pages are 1-indexed.</tool_use_error>')
    out = read(ctx, tmp_path / "doc.pdf", pages="1-21")
    assert out.block["content"] == ('<tool_use_error>Page range "1-21" exceeds maximum of 20 pages per request. Please '
                                    'use a smaller range.</tool_use_error>')


# PDF text (pypdf): real PDFs in tests/tools/test_read_media.py (page ranges, the long-PDF refusal,
# encrypted and damaged files).


def test_notebook_cells_with_outputs(tmp_path, ctx):
    nb = {
        "cells": [
            {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n", "text"]},
            {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": 1, "source": "print(1+1)",
             "outputs": [{"output_type": "stream", "name": "stdout", "text": ["2\n"]},
                         {"output_type": "display_data", "data": {"image/png": base64.b64encode(PNG_1x1).decode(),
                                                                   "text/plain": ["<Figure>"]}}]},
            {"cell_type": "code", "metadata": {}, "execution_count": 2, "source": "1/0",
             "outputs": [{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                          "traceback": ["\x1b[0;31mZeroDivisionError\x1b[0m"]}]},
        ],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
    }
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    out = read(ctx, tmp_path / "nb.ipynb")
    assert not out.is_error
    blocks = out.block["content"]
    texts = [b.get("text") for b in blocks]
    assert texts[0] == '<cell id="intro"><cell_type>markdown</cell_type># Title\ntext</cell id="intro">'
    assert texts[1] == '<cell id="c1">print(1+1)</cell id="c1">'
    assert texts[2] == "2\n"
    assert texts[3] == "<Figure>"
    assert blocks[4]["type"] == "image" and blocks[4]["source"]["media_type"] == "image/png"
    assert texts[5] == '<cell id="cell-2">1/0</cell id="cell-2">'
    assert texts[6] == "ZeroDivisionError: division by zero\nZeroDivisionError"
    # a notebook read counts as a read for Write
    assert str(tmp_path / "nb.ipynb") in ctx.read_file_state


# ---------------------------------------------------------------- large files, concurrency


def _reference_range(data: bytes, offset, limit):
    """The obvious implementation: decode everything, drop CR of CRLF, split on LF."""
    text = read_text.fileio.decode_bytes(data)[0].replace("\r\n", "\n")
    lines = text.split("\n") if text else []
    start = 0 if not offset else offset - 1
    chosen = lines[start:start + limit] if limit is not None else lines[start:]
    return "\n".join(chosen), len(chosen), len(lines)


@pytest.mark.parametrize("mode", ["bytes", "streamed"])
def test_ranges_match_reference(tmp_path, monkeypatch, mode):
    variants = {
        "lf_final_newline.txt": b"".join(b"line %d\n" % i for i in range(1, 51)),
        "crlf_no_final_newline.txt": b"\r\n".join(b"row %d" % i for i in range(1, 51)),
        "crlf_final.txt": b"".join(b"r%d\r\n" % i for i in range(1, 51)),
        "mixed_and_lone_cr.txt": b"a\r\nb\nc\rd\r\n\r\ne\r",
        "bom.txt": b"\xef\xbb\xbf" + b"".join(b"b%d\n" % i for i in range(1, 51)),
        "utf16.txt": b"\xff\xfe" + "x\r\ny\r\nz".encode("utf-16-le"),
        "bad_utf8.txt": b"ok\n\xff\xfe\n\xc3\n",
        "single_line.txt": b"only",
        "empty.txt": b"",
    }
    ranges = [(None, None), (None, 5), (1, 3), (2, 1), (10, 5), (48, 10), (51, 1), (52, 3), (200, 1), (0, 2),
              (3, None)]
    if mode == "streamed":
        monkeypatch.setattr(read_text, "STREAM_THRESHOLD_BYTES", 10)
    for name, data in variants.items():
        p = tmp_path / name
        p.write_bytes(data)
        for o, n in ranges:
            if mode == "streamed" and n is None:
                continue  # only ranges with a limit are streamed
            got = read_text.read_text_range(str(p), o, n)
            assert (got.content, got.num_lines, got.total_lines) == _reference_range(data, o, n), (name, o, n)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bb", b"", b"\r", b"x\r", b"\xff"]), max_size=40),
       st.sampled_from([b"\n", b"\r\n"]), st.booleans(),
       st.one_of(st.none(), st.integers(0, 45)), st.one_of(st.none(), st.integers(1, 45)),
       st.sampled_from([4, 7, 65536]))
def test_byte_ranges_match_reference(parts, sep, final, offset, limit, step):
    data = sep.join(parts) + (sep if final and parts else b"")
    original = read_text._line_start
    read_text._line_start = lambda d, n, pos=0, step_=step: original(d, n, pos, step_)  # tiny chunks too
    try:
        got = read_text.text_range_from_bytes(data, offset, limit, 0, len(data))
    finally:
        read_text._line_start = original
    assert (got.content, got.num_lines, got.total_lines) == _reference_range(data, offset, limit)


def test_rendered_numbering_matches_simple_numbering():
    text = "\n".join(f"l{i}" for i in range(3000))
    assert read_text.render_numbered(text, 1) == read_text.add_line_numbers(text, 1)
    assert read_text.render_numbered(text, 250_000) == read_text.add_line_numbers(text, 250_000)
    assert read_text.render_numbered("", 7) == "7\t"


def test_reads_run_off_the_event_loop(tmp_path, ctx, monkeypatch):
    """While a slow read runs in its worker thread, the loop keeps running other coroutines."""
    import threading
    import time as _time

    (tmp_path / "f.txt").write_text("hello\n")
    loop_thread = []
    real = read_mod.text_range_from_bytes

    def slow(*args, **kw):
        loop_thread.append(threading.current_thread() is threading.main_thread())
        _time.sleep(0.2)
        return real(*args, **kw)

    monkeypatch.setattr(read_mod, "text_range_from_bytes", slow)

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        t = asyncio.create_task(ticker())
        out = await run_tool_use(tool_use("Read", {"file_path": str(tmp_path / "f.txt")}), ctx)
        t.cancel()
        return out, ticks

    out, ticks = run(main())
    assert out.block["content"] == "1\thello\n2\t"
    assert loop_thread == [False]
    assert ticks >= 5


def test_fifo_is_not_read(tmp_path, ctx):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    out = read(ctx, fifo)
    assert out.is_error and "not a regular file" in out.block["content"]


def test_parallel_reads_overlap_their_io_waits(tmp_path, monkeypatch):
    """Slow storage (each read waits 0.3 s): ten Reads in one concurrent batch take about one wait."""
    import time as _time

    from desktop_agent.core.events import ToolCallFinished
    from desktop_agent.engine.scheduler import run_tools

    real = read_mod._io_job

    def slow_io(*args):
        _time.sleep(0.3)
        return real(*args)

    monkeypatch.setattr(read_mod, "_io_job", slow_io)
    for i in range(10):
        (tmp_path / f"f{i}.txt").write_text(f"content {i}\n")
    ctx = ctx_with(tools(), tmp_path)
    blocks = [tool_use("Read", {"file_path": str(tmp_path / f"f{i}.txt")}, f"t{i}") for i in range(10)]

    async def main():
        return [e async for e in run_tools(blocks, ctx)]

    t0 = _time.perf_counter()
    events = run(main())
    elapsed = _time.perf_counter() - t0
    results = {e.tool_use_id: e.content for e in events if isinstance(e, ToolCallFinished)}
    assert results == {f"t{i}": f"1\tcontent {i}\n2\t" for i in range(10)}
    assert elapsed < 1.5, elapsed  # sequential would be 3 s


def test_streamed_range_through_the_tool(tmp_path, ctx, monkeypatch):
    monkeypatch.setattr(read_mod, "STREAM_THRESHOLD_BYTES", 10)  # the tool's choice to stream
    monkeypatch.setattr(read_text, "STREAM_THRESHOLD_BYTES", 10)  # and the text reader's
    p = tmp_path / "big.log"
    p.write_bytes(b"".join(b"entry %d\r\n" % i for i in range(1, 101)))
    out = read(ctx, p, offset=99, limit=5)
    assert out.block["content"] == "99\tentry 99\n100\tentry 100\n101\t"
    (tmp_path / "big.bin2").write_bytes(b"\x00" * 100)
    out = read(ctx, tmp_path / "big.bin2", offset=1, limit=1)
    assert out.is_error and "cannot read binary files" in out.block["content"]
