"""The Write tool through run_tool_use (Appendix A "Edit / Write", B.1 FileWriteOutput)."""

from __future__ import annotations

import os
import stat

import pytest

from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.core.permission import PermissionReply
from desktop_agent.session.history import FileHistory
from desktop_agent.tools.write import WriteTool
from tests.engine.helpers import FakePrompter, ctx_with, tool_use
from tests.tools.util import WRAP, read, run, tools



def write(ctx, path, content, id="toolu_write_1"):
    return run(run_tool_use(tool_use("Write", {"file_path": str(path), "content": content}, id), ctx))


def bump_mtime(path, seconds=2.0):
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + int(seconds * 1e9)))


@pytest.fixture
def ctx(workdir):
    return ctx_with(tools(), workdir)


def test_create_with_parents(ctx, workdir):
    p = workdir / "a" / "b" / "new.py"
    out = write(ctx, p, "print('hi')\n")
    assert out.block == {"type": "tool_result", "tool_use_id": "toolu_write_1",
                         "content": f"File created successfully at: {p}"}
    assert p.read_text() == "print('hi')\n"
    assert out.data == {"type": "create", "filePath": str(p), "content": "print('hi')\n",
                        "structuredPatch": [{"oldStart": 1, "oldLines": 0, "newStart": 1, "newLines": 1,
                                             "lines": ["+print('hi')"]}],
                        "originalFile": None}
    entry = ctx.read_file_state.get(str(p))
    assert entry.content == "print('hi')\n" and entry.offset is None and entry.limit is None
    assert entry.timestamp == os.stat(p).st_mtime_ns // 1_000_000


def test_new_file_mode_follows_umask(ctx, workdir):
    p = workdir / "fresh.txt"
    write(ctx, p, "x")
    old = os.umask(0)
    os.umask(old)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o666 & ~old


def test_overwrite_unread_file_is_refused(ctx, workdir):
    out = write(ctx, workdir / "app.ts", "new")
    assert out.block["content"] == WRAP.format("File has not been read yet. Read it first before writing to it.")
    assert (workdir / "app.ts").read_text() == "export const value = 1"


def test_overwrite_read_file(ctx, workdir):
    app = workdir / "app.ts"
    read(ctx, app)
    out = write(ctx, "app.ts", "export const value = 2\n")
    assert out.block["content"] == "The file app.ts has been updated successfully."
    assert app.read_text() == "export const value = 2\n"
    assert out.data["type"] == "update"
    assert out.data["originalFile"] == "export const value = 1"
    assert out.data["structuredPatch"] == [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
                                            "lines": ["-export const value = 1", "+export const value = 2"]}]


def test_modified_since_read(ctx, workdir):
    app = workdir / "app.ts"
    read(ctx, app)
    app.write_text("changed")
    bump_mtime(app)
    out = write(ctx, app, "new")
    assert out.block["content"] == WRAP.format(
        "File has been modified since read, either by the user or by a linter. Read it again before attempting to "
        "write it.")
    assert app.read_text() == "changed"


def test_touched_but_same_content_is_fine(ctx, workdir):
    app = workdir / "app.ts"
    read(ctx, app)
    bump_mtime(app)
    assert not write(ctx, app, "new").is_error
    assert app.read_text() == "new"


def test_range_read_does_not_count_for_write(ctx, workdir):
    p = workdir / "m.txt"
    p.write_text("1\n2\n3\n")
    read(ctx, p, limit=1)
    assert write(ctx, p, "x").block["content"] == WRAP.format(
        "File has not been read yet. Read it first before writing to it.")
    read(ctx, p, offset=2)
    assert "has not been read yet" in write(ctx, p, "x").block["content"]
    read(ctx, p)  # the whole file
    assert not write(ctx, p, "x").is_error and p.read_text() == "x"


def test_notebook_needs_a_read_first(ctx, workdir):
    nb = workdir / "n.ipynb"
    nb.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    assert "has not been read yet" in write(ctx, nb, "{}").block["content"]
    read(ctx, nb)
    assert not write(ctx, nb, "{}").is_error


def test_crlf_and_encoding_kept_on_overwrite(ctx, workdir):
    p = workdir / "w.txt"
    p.write_bytes(b"\xff\xfe" + "a\r\nb\r\n".encode("utf-16-le"))
    read(ctx, p)
    assert not write(ctx, p, "x\ny\n").is_error
    assert p.read_bytes() == b"\xff\xfe" + "x\r\ny\r\n".encode("utf-16-le")


def test_lf_file_content_written_verbatim(ctx, workdir):
    p = workdir / "lf.txt"
    p.write_text("a\n")
    read(ctx, p)
    write(ctx, p, "x\r\ny\n")  # the model asked for these exact bytes
    assert p.read_bytes() == b"x\r\ny\n"


def test_change_while_permission_pending(workdir):
    app = workdir / "app.ts"

    class ChangingPrompter(FakePrompter):
        async def ask(self, request):
            self.requests.append(request)
            app.write_text("external")
            bump_mtime(app)
            return PermissionReply(behavior="allow")

    prompter = ChangingPrompter()
    ctx = ctx_with(tools(), workdir, permission_context=PermissionContext(str(workdir), mode="default"),
                   prompter=prompter)
    read(ctx, app)
    out = write(ctx, app, "mine")
    assert out.block["content"] == WRAP.format(
        "File has been unexpectedly modified. Read it again before attempting to write it.")
    assert app.read_text() == "external"
    assert prompter.requests[0].original_file == "export const value = 1"
    assert prompter.requests[0].structured_patch == [
        {"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
         "lines": ["-export const value = 1", "+mine"]}]


def test_file_created_while_permission_pending(workdir):
    target = workdir / "later.txt"

    class CreatingPrompter(FakePrompter):
        async def ask(self, request):
            target.write_text("someone else's")
            return PermissionReply(behavior="allow")

    ctx = ctx_with(tools(), workdir, permission_context=PermissionContext(str(workdir), mode="default"),
                   prompter=CreatingPrompter())
    out = write(ctx, target, "mine")
    assert "unexpectedly modified" in out.block["content"]
    assert target.read_text() == "someone else's"


def test_edit_deny_rule_blocks_write(workdir):
    pc = PermissionContext(str(workdir), mode="bypassPermissions")
    pc.add_rules(["Edit(secret/**)"], "deny", "session")
    ctx = ctx_with(tools(), workdir, permission_context=pc)
    out = write(ctx, workdir / "secret" / "x.txt", "x")
    assert out.block["content"] == WRAP.format("File is in a directory that is denied by your permission settings.")
    assert not (workdir / "secret").exists()


def test_backup_and_restore_of_overwrite(workdir, tmp_path):
    history = FileHistory(tmp_path / "data", "s1")
    ctx = ctx_with(tools(), workdir, file_history=history)
    app = workdir / "app.ts"
    read(ctx, app)
    write(ctx, app, "v2")
    new = workdir / "n.txt"
    write(ctx, new, "created")
    assert [e.existed for e in history.list()] == [True, False]
    history.restore(str(app))
    history.restore(str(new))
    assert app.read_text() == "export const value = 1" and not new.exists()


def test_write_to_directory_is_refused(ctx, workdir):
    (workdir / "d").mkdir()
    out = write(ctx, workdir / "d", "x")
    assert out.is_error and "is a directory" in out.block["content"]


def test_schema():
    tool = WriteTool()
    schema = tool.input_schema()
    assert schema["required"] == ["file_path", "content"]
    assert schema["properties"]["file_path"]["description"] == (
        "The absolute path to the file to write (must be absolute, not relative)")
    assert tool.is_read_only(None) is False and tool.is_concurrency_safe(None) is False
