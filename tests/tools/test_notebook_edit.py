"""NotebookEdit through run_tool_use: replace / insert / delete a cell, read-before-write, the patch
for the dialog, permission (an Edit deny rule blocks it; default mode asks), and the file's format kept."""

from __future__ import annotations

import json

import pytest

from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.tools.edit import written_state
from desktop_agent.tools.notebook_edit import NotebookEditTool
from tests.engine.helpers import ctx_with, tool_use
from tests.tools.util import WRAP, read, run, tools

NB = {
    "cells": [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Título\n", "notes"]},
        {"cell_type": "code", "execution_count": 3, "id": "calc", "metadata": {},
         "outputs": [{"name": "stdout", "output_type": "stream", "text": ["2\n"]}],
         "source": ["x = 1\n", "print(x + 1)"]},
    ],
    "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
}


def nb_text(nb=NB) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def edit(ctx, path, id="toolu_nb_1", **kw):
    return run(run_tool_use(tool_use("NotebookEdit", {"notebook_path": str(path), **kw}, id), ctx))


@pytest.fixture
def ctx(workdir):
    return ctx_with(tools() + [NotebookEditTool()], workdir)


@pytest.fixture
def nb(workdir):
    p = workdir / "analysis.ipynb"
    p.write_text(nb_text(), "utf-8")
    return p


def test_replace_keeps_format_and_clears_outputs(ctx, nb):
    read(ctx, nb)
    out = edit(ctx, nb, cell_id="calc", new_source="x = 2\nprint(x * 3)")
    assert not out.is_error, out.block
    assert out.block["content"] == "Updated cell calc with x = 2\nprint(x * 3)"
    text = nb.read_text("utf-8")
    data = json.loads(text)
    cell = data["cells"][1]
    assert cell["source"] == ["x = 2\n", "print(x * 3)"] and cell["outputs"] == [] and cell["execution_count"] is None
    assert text == nb_text(data)  # indent 1, non-ASCII kept, trailing newline, key order
    assert "Título" in text
    assert out.data["structuredPatch"][0]["lines"] == ["-x = 1", "-print(x + 1)", "+x = 2", "+print(x * 3)"]


def test_insert_after_and_at_start_and_delete(ctx, nb):
    read(ctx, nb)
    out = edit(ctx, nb, cell_id="intro", new_source="import os", cell_type="code", edit_mode="insert")
    assert not out.is_error, out.block
    cells = json.loads(nb.read_text())["cells"]
    assert [c["cell_type"] for c in cells] == ["markdown", "code", "code"]
    new_id = cells[1]["id"]
    assert out.block["content"] == f"Inserted cell {new_id} with import os" and len(new_id) == 8
    out = edit(ctx, nb, id="toolu_nb_2", new_source="first", cell_type="markdown", edit_mode="insert")
    assert json.loads(nb.read_text())["cells"][0]["source"] == ["first"]
    out = edit(ctx, nb, id="toolu_nb_3", cell_id="cell-3", new_source="", edit_mode="delete")
    assert out.block["content"] == "Deleted cell calc"
    assert [c.get("id") for c in json.loads(nb.read_text())["cells"]][-1] == new_id


def test_errors_the_model_can_act_on(ctx, nb, workdir):
    out = edit(ctx, nb, cell_id="calc", new_source="y")
    assert out.is_error and out.block["content"] == WRAP.format("File has not been read yet. Read it first "
                                                                "before writing to it.")
    read(ctx, nb)
    cases = [
        ({"cell_id": "nope", "new_source": "y"}, 'Cell with ID "nope" not found in notebook.'),
        ({"new_source": "y"}, "Cell ID must be specified when not inserting a new cell."),
        ({"new_source": "y", "edit_mode": "insert"}, "Cell type is required when using edit_mode=insert."),
    ]
    for i, (kw, msg) in enumerate(cases):
        out = edit(ctx, nb, id=f"toolu_e{i}", **kw)
        assert out.is_error and out.block["content"] == WRAP.format(msg)
    other = workdir / "x.py"
    other.write_text("a")
    out = edit(ctx, other, id="toolu_py", cell_id="cell-0", new_source="y")
    assert out.block["content"] == WRAP.format("File must be a Jupyter notebook (.ipynb file). For editing other "
                                               "file types, use the FileEdit tool.")
    nb.write_text(nb_text().replace('"x = 1\\n"', '"x = 5\\n"'))  # changed on disk since the Read
    out = edit(ctx, nb, id="toolu_stale", cell_id="calc", new_source="y")
    assert out.is_error and "modified since read" in out.block["content"]
    assert json.loads(nb.read_text())["cells"][1]["source"][0] == "x = 5\n"


def test_edit_deny_rule_blocks_and_default_mode_asks(workdir, nb):

    pc = PermissionContext(str(workdir), mode="default")
    pc.add_rules(["Edit(*.ipynb)"], "deny", "userSettings")
    ctx = ctx_with(tools() + [NotebookEditTool()], workdir, permission_context=pc)
    read(ctx, nb)
    out = edit(ctx, nb, cell_id="calc", new_source="boom")
    assert out.is_error and "denied" in out.block["content"]
    assert "boom" not in nb.read_text()


def test_patch_for_the_dialog_is_the_cell_source(ctx, nb):
    from desktop_agent.tools.notebook_edit import NotebookEditInput

    read(ctx, nb)
    extras = NotebookEditTool().permission_extras(
        NotebookEditInput(notebook_path=str(nb), cell_id="intro", new_source="# Title\nnotes"), ctx)
    assert extras["cell_id"] == "intro" and extras["original_file"] == "# Título\nnotes"
    assert extras["structured_patch"][0]["lines"] == ["-# Título", "+# Title", " notes"]


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "dontAsk"])
def test_hostile_notebook_edits_outside_the_folder_never_write(workdir, tmp_path, mode):
    """A hostile model: a notebook outside the working folder, directly and through a symlinked folder
    inside it. Headless (no one to ask) in default, acceptEdits and dontAsk: denied, the canary unchanged."""
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "victim.ipynb"
    target.write_text(nb_text(), "utf-8")
    (workdir / "link").symlink_to(outside, target_is_directory=True)
    pc = PermissionContext(str(workdir), mode=mode)
    ctx = ctx_with(tools() + [NotebookEditTool()], workdir, permission_context=pc)
    for i, path in enumerate([target, workdir / "link" / "victim.ipynb", workdir / "link" / ".." / "outside" /
                              "victim.ipynb"]):
        read_out = run(run_tool_use(tool_use("Read", {"file_path": str(path)}, f"r{i}"), ctx))
        out = edit(ctx, path, id=f"n{i}", cell_id="calc", new_source="import os; os.system('pwn')")
        assert out.is_error, (path, out.block)
        assert out.block["tool_use_id"] == f"n{i}"
        assert read_out.block["tool_use_id"] == f"r{i}"
    assert target.read_text("utf-8") == nb_text()  # the canary


def test_hostile_notebook_files_give_errors_not_crashes(ctx, workdir):
    bad = workdir / "bad.ipynb"
    bad.write_text('{"cells": ' + "[" * 5000 + "]" * 5000 + "}", "utf-8")  # json.loads would recurse
    # as if the model had read it whole (Read refuses to render it, which is a different path)
    ctx.read_file_state.set(str(bad), written_state(bad.read_text(), bad.stat().st_mtime_ns // 1_000_000))
    out = edit(ctx, bad, cell_id="cell-0", new_source="x")
    assert out.is_error and out.block["tool_use_id"] == "toolu_nb_1"
    assert out.block["content"] == WRAP.format("Notebook is not valid JSON.")
    assert bad.read_text().startswith('{"cells": [[[')
