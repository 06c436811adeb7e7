"""The Edit tool through run_tool_use (SPEC §3.7, §9 items 25, 30–48, Appendix A "Edit / Write")."""

from __future__ import annotations

import asyncio
import os
import stat

import pytest

from desktop_agent.core.events import PermissionRequested
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.core.permission import PermissionReply
from desktop_agent.session.history import FileHistory
from desktop_agent.tools import edit as edit_mod
from desktop_agent.tools.edit import (
    EditTool,
    apply_edit_to_file,
    find_actual_string,
    preserve_quote_style,
)
from tests.engine.helpers import FakePrompter, ctx_with, tool_use
from tests.tools.util import WRAP, read, run, tools



def edit(ctx, path, old, new, id="toolu_edit_2", **kw):
    return run(run_tool_use(tool_use("Edit", {"file_path": str(path), "old_string": old, "new_string": new, **kw},
                                     id), ctx))


def bump_mtime(path, seconds=2.0):
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + int(seconds * 1e9)))


@pytest.fixture
def ctx(workdir):
    return ctx_with(tools(), workdir)


@pytest.fixture
def app(workdir):
    return workdir / "app.ts"


# ---------------------------------------------------------------- the running example and success texts


def test_item34_success_text_and_file(ctx, app):
    read(ctx, app)
    out = edit(ctx, app, "export const value = 1", "export const value = 2")
    assert out.block == {"type": "tool_result", "tool_use_id": "toolu_edit_2",
                         "content": f"The file {app} has been updated successfully."}
    assert app.read_text() == "export const value = 2"


def test_item34_path_exactly_as_given(ctx, app):
    read(ctx, "app.ts")
    out = edit(ctx, "app.ts", "value = 1", "value = 2")
    assert out.block["content"] == "The file app.ts has been updated successfully."
    assert app.read_text() == "export const value = 2"


def test_item46_returned_data(ctx, app):
    read(ctx, app)
    out = edit(ctx, app, "value = 1", "value = 2")
    assert out.data == {
        "filePath": str(app), "oldString": "value = 1", "newString": "value = 2",
        "originalFile": "export const value = 1",
        "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
                             "lines": ["-export const value = 1", "+export const value = 2"]}],
        "userModified": False, "replaceAll": False,
    }


def test_item45_state_after_edit(ctx, app):
    read(ctx, app)
    edit(ctx, app, "value = 1", "value = 2")
    entry = ctx.read_file_state.get(str(app))
    assert entry.content == "export const value = 2"
    assert entry.offset is None and entry.limit is None
    assert entry.timestamp == os.stat(app).st_mtime_ns // 1_000_000


def test_item25_read_edit_read_gives_full_content(ctx, app):
    read(ctx, app)
    edit(ctx, app, "value = 1", "value = 2")
    out = read(ctx, app)
    assert out.block["content"] == "1\texport const value = 2"


def test_consecutive_edits_without_reread(ctx, app):
    read(ctx, app)
    assert not edit(ctx, app, "value = 1", "value = 2").is_error
    assert not edit(ctx, app, "value = 2", "value = 3").is_error
    assert app.read_text() == "export const value = 3"


# ---------------------------------------------------------------- validation, in order


def test_item30_not_read(ctx, app):
    out = edit(ctx, app, "value = 1", "value = 2")
    assert out.is_error and out.stage == "validation"
    assert out.block["content"] == WRAP.format("File has not been read yet. Read it first before writing to it.")
    assert app.read_text() == "export const value = 1"


def test_item31_line_number_prefix_not_found(ctx, app):
    read(ctx, app)
    out = edit(ctx, app, "1\texport const value = 1", "1\texport const value = 2")
    assert out.block["content"] == WRAP.format("String to replace not found in file.\nString: 1\texport const value = 1")
    assert app.read_text() == "export const value = 1"


def test_not_found_appendix_a(ctx, workdir):
    p = workdir / "g.txt"
    p.write_text("alpha\nbeta\n")
    read(ctx, p)
    out = edit(ctx, p, "zeta", "eta")
    assert out.block["content"] == "<tool_use_error>String to replace not found in file.\nString: zeta</tool_use_error>"


def test_item32_two_matches(ctx, workdir):
    p = workdir / "a.txt"
    p.write_text("a\na\n")
    read(ctx, p)
    out = edit(ctx, p, "a", "b")
    assert out.is_error
    assert out.block["content"] == WRAP.format(
        "Found 2 matches of the string to replace, but replace_all is false. To replace all occurrences, set "
        "replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the "
        "instance.\nString: a")
    assert p.read_text() == "a\na\n"


def test_item33_replace_all(ctx, workdir):
    p = workdir / "a.txt"
    p.write_text("a\na\n")
    read(ctx, p)
    out = edit(ctx, p, "a", "b", replace_all=True)
    assert out.block["content"] == f"The file {p} has been updated. All occurrences were successfully replaced."
    assert p.read_text() == "b\nb\n"
    assert out.data["replaceAll"] is True


def test_item35_same_strings(ctx, app):
    out = edit(ctx, app, "x", "x")
    assert out.block["content"] == WRAP.format("No changes to make: old_string and new_string are exactly the same.")


def test_item36_modified_since_read(ctx, app):
    read(ctx, app)
    app.write_text("export const value = 5")
    bump_mtime(app)
    out = edit(ctx, app, "value = 5", "value = 6")
    assert out.block["content"] == WRAP.format(
        "File has been modified since read, either by the user or by a linter. Read it again before attempting to "
        "write it.")
    assert app.read_text() == "export const value = 5"


def test_item37_touch_with_same_content_after_full_read(ctx, app):
    read(ctx, app)
    bump_mtime(app)
    out = edit(ctx, app, "value = 1", "value = 2")
    assert not out.is_error, out.block
    assert app.read_text() == "export const value = 2"


def test_item38_partial_read_has_no_content_fallback(ctx, workdir):
    p = workdir / "m.txt"
    p.write_text("one\ntwo\nthree\n")
    read(ctx, p, limit=1)
    bump_mtime(p)
    out = edit(ctx, p, "one", "uno")
    assert out.block["content"] == WRAP.format(
        "File has been modified since read, either by the user or by a linter. Read it again before attempting to "
        "write it.")


def test_partial_read_allows_edit_when_unchanged(ctx, workdir):
    p = workdir / "m.txt"
    p.write_text("one\ntwo\nthree\n")
    read(ctx, p, offset=2, limit=1)
    assert not edit(ctx, p, "three", "tres").is_error
    assert p.read_text() == "one\ntwo\ntres\n"


def test_partial_view_entry_counts_as_not_read(ctx, app):
    from desktop_agent.core.context import FileStateEntry

    ctx.read_file_state.set(str(app), FileStateEntry("export const value = 1", os.stat(app).st_mtime_ns // 10**6,
                                                     is_partial_view=True))
    out = edit(ctx, app, "value = 1", "value = 2")
    assert out.block["content"] == WRAP.format("File has not been read yet. Read it first before writing to it.")


def test_item40_create_with_empty_old_string(ctx, workdir):
    p = workdir / "new" / "dir" / "created.txt"
    out = edit(ctx, p, "", "hello\nworld\n")
    assert not out.is_error, out.block
    assert p.read_text() == "hello\nworld\n"
    assert out.data["originalFile"] == ""
    assert out.data["structuredPatch"] == [{"oldStart": 1, "oldLines": 0, "newStart": 1, "newLines": 2,
                                            "lines": ["+hello", "+world"]}]
    assert ctx.read_file_state.get(str(p)).content == "hello\nworld\n"


def test_item41_missing_file(ctx, workdir):
    out = edit(ctx, workdir / "missing.txt", "a", "b")
    assert out.block["content"] == WRAP.format(
        f"File does not exist. Note: your current working directory is {workdir}.")


def test_missing_file_did_you_mean(ctx, workdir):
    out = edit(ctx, workdir / "app.js", "a", "b")
    assert out.block["content"] == WRAP.format(
        f"File does not exist. Note: your current working directory is {workdir}. Did you mean {workdir / 'app.ts'}?")


def test_item42_create_over_existing(ctx, app):
    out = edit(ctx, app, "", "new content")
    assert out.block["content"] == WRAP.format("Cannot create new file - file already exists.")
    assert app.read_text() == "export const value = 1"


def test_empty_existing_file_is_filled(ctx, workdir):
    p = workdir / "empty.txt"
    p.write_text("")
    out = edit(ctx, p, "", "filled\n")
    assert not out.is_error, out.block
    assert p.read_text() == "filled\n"
    # ...also after reading it
    q = workdir / "empty2.txt"
    q.write_text("")
    read(ctx, q)
    assert not edit(ctx, q, "", "x").is_error and q.read_text() == "x"


def test_item48_notebook(ctx, workdir):
    p = workdir / "nb.ipynb"
    p.write_text('{"cells": []}')
    out = edit(ctx, p, "cells", "cellz")
    assert out.block["content"] == WRAP.format("File is a Jupyter Notebook. Use the NotebookEdit to edit this file.")


def test_too_large(ctx, app, monkeypatch):
    monkeypatch.setattr(edit_mod, "MAX_EDIT_FILE_SIZE", 10)
    out = edit(ctx, app, "value = 1", "value = 2")
    assert out.block["content"] == WRAP.format(
        "File is too large to edit (22 bytes). Maximum editable file size is 10 bytes.")


def test_size_limit_text_for_one_gib():
    from desktop_agent.util.fileio import format_file_size

    assert format_file_size(edit_mod.MAX_EDIT_FILE_SIZE) == "1GB"


class DenyPath:
    """A permission state whose deny rules cover one path (the ``core.permission.ReadPolicy`` Edit relies on)."""

    mode = "bypassPermissions"

    def __init__(self, path):
        self.path = str(path)

    def path_denied(self, abs_path, operation, *, checked=None, is_dir=None):
        return abs_path == self.path and operation == "edit"

    def has_read_denies(self):
        return False

    def read_deny_globs(self, search_root):
        return []


def test_item47_denied_path_via_contract(workdir, app):
    ctx = ctx_with(tools(), workdir, permission_context=DenyPath(app))
    out = edit(ctx, app, "value = 1", "value = 2")
    assert out.stage == "validation"
    assert out.block["content"] == WRAP.format("File is in a directory that is denied by your permission settings.")


def test_item47_denied_path_with_real_rules(workdir, app):
    pc = PermissionContext(str(workdir), mode="bypassPermissions")
    pc.add_rules(["Edit(app.ts)"], "deny", "session")
    ctx = ctx_with(tools(), workdir, permission_context=pc)
    read(ctx, app)
    out = edit(ctx, app, "value = 1", "value = 2")
    assert out.block["content"] == WRAP.format("File is in a directory that is denied by your permission settings.")
    assert app.read_text() == "export const value = 1"


def test_validation_order_same_strings_before_not_read(ctx, workdir):
    # check 1 comes before check 4 (missing file) and 7 (not read)
    out = edit(ctx, workdir / "missing.txt", "same", "same")
    assert "No changes to make" in out.block["content"]


# ---------------------------------------------------------------- encodings, line endings, quotes


def test_item43_crlf_preserved(ctx, workdir):
    p = workdir / "w.txt"
    p.write_bytes(b"x = 1\r\ny = 2\r\n")
    read(ctx, p)
    out = edit(ctx, p, "x = 1", "x = 3")
    assert not out.is_error
    assert p.read_bytes() == b"x = 3\r\ny = 2\r\n"


def test_crlf_multiline_old_and_new_strings(ctx, workdir):
    p = workdir / "w.txt"
    p.write_bytes(b"a\r\nb\r\nc\r\n")
    read(ctx, p)
    assert not edit(ctx, p, "a\nb", "A\nB\nB2").is_error
    assert p.read_bytes() == b"A\r\nB\r\nB2\r\nc\r\n"


def test_item44_utf16le_bom_preserved(ctx, workdir):
    p = workdir / "u16.txt"
    p.write_bytes(b"\xff\xfe" + "naïve = 1\r\nok\r\n".encode("utf-16-le"))
    read(ctx, p)
    out = edit(ctx, p, "naïve = 1", "naïve = 2")
    assert not out.is_error, out.block
    assert p.read_bytes() == b"\xff\xfe" + "naïve = 2\r\nok\r\n".encode("utf-16-le")


def test_utf8_bom_and_invalid_bytes_preserved(ctx, workdir):
    p = workdir / "bom.txt"
    p.write_bytes(b"\xef\xbb\xbfkeep \xff\xfe raw\nvalue = 1\n")
    read(ctx, p)
    assert not edit(ctx, p, "value = 1", "value = 2").is_error
    assert p.read_bytes() == b"\xef\xbb\xbfkeep \xff\xfe raw\nvalue = 2\n"


def test_curly_quotes_match_and_style_kept(ctx, workdir):
    p = workdir / "q.txt"
    p.write_text("say \u201chello\u201d and it\u2019s fine\n")
    read(ctx, p)
    out = edit(ctx, p, 'say "hello" and it\'s fine', 'say "goodbye" and it\'s \'ok\'')
    assert not out.is_error, out.block
    assert p.read_text() == "say \u201cgoodbye\u201d and it\u2019s \u2018ok\u2019\n"
    assert out.data["oldString"] == "say \u201chello\u201d and it\u2019s fine"


def test_quote_helpers():
    assert find_actual_string("a \u201cb\u201d", '"b"') == "\u201cb\u201d"
    assert find_actual_string("abc", "abc") == "abc"
    assert find_actual_string("abc", "x") is None
    assert preserve_quote_style('"b"', '"b"', '"c"') == '"c"'
    assert preserve_quote_style('"b"', "\u201cb\u201d", '("c")') == "(\u201cc\u201d)"
    assert apply_edit_to_file("a\nb\nc\n", "b", "") == "a\nc\n"  # deleting a line removes its newline
    assert apply_edit_to_file("xx", "x", "y") == "yx"
    assert apply_edit_to_file("xx", "x", "y", True) == "yy"


def test_mode_bits_kept(ctx, workdir):
    p = workdir / "run.sh"
    p.write_text("echo 1\n")
    p.chmod(0o750)
    read(ctx, p)
    assert not edit(ctx, p, "echo 1", "echo 2").is_error
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o750


def test_symlink_is_written_through(ctx, workdir):
    target = workdir / "real.txt"
    target.write_text("v = 1\n")
    link = workdir / "link.txt"
    link.symlink_to(target)
    read(ctx, link)
    assert not edit(ctx, link, "v = 1", "v = 2").is_error
    assert link.is_symlink() and target.read_text() == "v = 2\n"


# ---------------------------------------------------------------- permission round trip


def test_item39_change_while_permission_pending(workdir, app):
    class ChangingPrompter(FakePrompter):
        async def ask(self, request):
            self.requests.append(request)
            app.write_text("export const value = 99")  # the user (or a linter) edits meanwhile
            bump_mtime(app)
            await asyncio.sleep(0)
            return PermissionReply(behavior="allow")

    prompter = ChangingPrompter()
    ctx = ctx_with(tools(), workdir, permission_context=PermissionContext(str(workdir), mode="default"),
                   prompter=prompter)
    read(ctx, app)
    out = edit(ctx, app, "value = 1", "value = 2")
    assert len(prompter.requests) == 1
    assert out.is_error and out.stage == "call"
    assert out.block == {"type": "tool_result", "tool_use_id": "toolu_edit_2", "is_error": True,
                         "content": WRAP.format("File has been unexpectedly modified. Read it again before "
                                                "attempting to write it.")}
    assert app.read_text() == "export const value = 99"


def test_permission_request_carries_patch_computed_before_ask(workdir, app):
    prompter = FakePrompter()
    events = []
    ctx = ctx_with(tools(), workdir, permission_context=PermissionContext(str(workdir), mode="default"),
                   prompter=prompter, emit=events.append)
    read(ctx, app)
    out = edit(ctx, app, "value = 1", "value = 2")
    assert not out.is_error
    (request,) = prompter.requests
    assert request.tool_name == "Edit" and request.tool_use_id == "toolu_edit_2"
    assert request.file_path == str(app)
    assert request.original_file == "export const value = 1"
    assert request.structured_patch == out.data["structuredPatch"]
    assert request.message == f"Claude requested permissions to write to {app}, but you haven't granted it yet."
    assert any(isinstance(e, PermissionRequested) for e in events)


def test_deny_leaves_file_unchanged(workdir, app):
    prompter = FakePrompter(PermissionReply(behavior="deny", message="User denied via UI"))
    ctx = ctx_with(tools(), workdir, permission_context=PermissionContext(str(workdir), mode="default"),
                   prompter=prompter)
    read(ctx, app)
    out = edit(ctx, app, "value = 1", "value = 2")
    assert out.block == {"type": "tool_result", "tool_use_id": "toolu_edit_2", "is_error": True,
                         "content": "User denied via UI"}
    assert app.read_text() == "export const value = 1"


def test_user_modified_proposal(workdir, app):
    new_input = {"file_path": str(app), "old_string": "value = 1", "new_string": "value = 42"}
    prompter = FakePrompter(PermissionReply(behavior="allow", updated_input=new_input))
    ctx = ctx_with(tools(), workdir, permission_context=PermissionContext(str(workdir), mode="default"),
                   prompter=prompter)
    read(ctx, app)
    out = edit(ctx, app, "value = 1", "value = 2")
    assert out.block["content"] == (f"The file {app} has been updated successfully.  The user modified your proposed "
                                    "changes before accepting them. .")
    assert out.data["userModified"] is True
    assert app.read_text() == "export const value = 42"


def test_user_modified_replace_all_text():
    tool = EditTool()
    block = tool.map_result_to_block({"filePath": "/p", "userModified": True, "replaceAll": True}, "t")
    assert block["content"] == ("The file /p has been updated.  The user modified your proposed changes before "
                                "accepting them. . All occurrences were successfully replaced.")


# ---------------------------------------------------------------- file history


def test_backup_made_before_write(workdir, app, tmp_path):
    history = FileHistory(tmp_path / "data", "sess-1")
    ctx = ctx_with(tools(), workdir, file_history=history)
    read(ctx, app)
    edit(ctx, app, "value = 1", "value = 2")
    (entry,) = history.list(str(app))
    assert entry.existed and open(entry.backup).read() == "export const value = 1"
    history.restore(str(app))
    assert app.read_text() == "export const value = 1"


def test_flags_and_schema():
    tool = EditTool()
    inp = tool.input_model.model_validate({"file_path": "/x", "old_string": "a", "new_string": "b"})
    assert tool.is_concurrency_safe(inp) is False and tool.is_read_only(inp) is False
    assert tool.strict is True and tool.max_result_size_chars == 100_000
    schema = tool.input_schema()
    assert schema["required"] == ["file_path", "old_string", "new_string"]
    assert schema["properties"]["replace_all"]["description"] == "Replace all occurrences of old_string (default false)"
    assert schema["additionalProperties"] is False


# ---------------------------------------------------------------- through the orchestrator


def _finished(events):
    from desktop_agent.core.events import ToolCallFinished

    return [e for e in events if isinstance(e, ToolCallFinished)]


def test_read_edit_read_in_one_round_sees_the_edit(workdir, app):
    """§9 item 50 with the real tools: [Read A, Edit A, Read A] → three batches, the last Read sees the edit."""
    from desktop_agent.engine.scheduler import partition_tool_calls, run_tools

    ctx = ctx_with(tools(), workdir)
    blocks = [
        tool_use("Read", {"file_path": str(app)}, "toolu_1"),
        tool_use("Edit", {"file_path": str(app), "old_string": "value = 1", "new_string": "value = 2"}, "toolu_2"),
        tool_use("Read", {"file_path": str(app)}, "toolu_3"),
    ]
    assert [len(b.blocks) for b in partition_tool_calls(blocks, ctx)] == [1, 1, 1]

    async def main():
        return [e async for e in run_tools(blocks, ctx)]

    results = {e.tool_use_id: e for e in _finished(run(main()))}
    assert results["toolu_1"].content == "1\texport const value = 1"
    assert results["toolu_2"].content == f"The file {app} has been updated successfully."
    assert results["toolu_2"].data["structuredPatch"][0]["lines"] == ["-export const value = 1",
                                                                      "+export const value = 2"]
    assert results["toolu_3"].content == "1\texport const value = 2"


def test_ten_parallel_reads_all_correct(workdir):
    from desktop_agent.engine.scheduler import partition_tool_calls, run_tools

    paths = []
    for i in range(10):
        p = workdir / f"f{i}.txt"
        p.write_text("".join(f"file {i} line {j}\n" for j in range(2000)))
        paths.append(p)
    ctx = ctx_with(tools(), workdir)
    blocks = [tool_use("Read", {"file_path": str(p), "offset": 1000, "limit": 2}, f"toolu_{i}")
              for i, p in enumerate(paths)]
    assert len(partition_tool_calls(blocks, ctx)) == 1  # one concurrent batch

    async def main():
        return [e async for e in run_tools(blocks, ctx)]

    results = {e.tool_use_id: e.content for e in _finished(run(main()))}
    assert results == {f"toolu_{i}": f"1000\tfile {i} line 999\n1001\tfile {i} line 1000" for i in range(10)}


def test_user_modified_old_string_not_found_is_reported_at_call(workdir, app):
    """validate_input saw the model's input; the user's edited input is checked again in call()."""
    new_input = {"file_path": str(app), "old_string": "nowhere", "new_string": "x"}
    prompter = FakePrompter(PermissionReply(behavior="allow", updated_input=new_input))
    ctx = ctx_with(tools(), workdir, permission_context=PermissionContext(str(workdir), mode="default"),
                   prompter=prompter)
    read(ctx, app)
    out = edit(ctx, app, "value = 1", "value = 2")
    assert out.block["content"] == WRAP.format("String to replace not found in file.\nString: nowhere")
    assert app.read_text() == "export const value = 1"
