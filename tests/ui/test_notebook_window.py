"""NotebookEdit through the window: the permission dialog shows the cell's patch (old source → new source),
Allow writes the notebook in its own format, and the changes panel lists the change."""

from __future__ import annotations

import asyncio
import json

from PySide6.QtCore import Qt

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.tools.test_notebook_edit import nb_text
from tests.ui.test_ecosystem_window import dialog, send


def test_notebook_edit_dialog_shows_the_cell_patch_and_allow_writes(qtbot, qloop, fake, make_window, workdir):
    nb = workdir / "analysis.ipynb"
    nb.write_text(nb_text(), "utf-8")
    fake.script([
        reply(tool_use("Read", {"file_path": str(nb)}, id="toolu_r")),
        reply(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "calc",
                                        "new_source": "x = 2\nprint(x * 3)"}, id="toolu_n")),
        reply(text("Cell updated.")),
    ])
    win = make_window()

    async def scenario():
        assert await win.folders.open_folder(str(workdir))
        task = await send(qtbot, win, "update the calc cell")
        dlg = await dialog(win)
        assert dlg.request.tool_name == "NotebookEdit"
        assert dlg.request.structured_patch[0]["lines"] == ["-x = 1", "-print(x + 1)", "+x = 2", "+print(x * 3)"]
        shown = dlg.diff_view.toPlainText()
        assert "print(x + 1)" in shown and "print(x * 3)" in shown
        assert json.loads(nb.read_text())["cells"][1]["source"][0] == "x = 1\n"  # nothing written before Allow
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 20)

    qloop.run_until_complete(scenario())
    data = json.loads(nb.read_text("utf-8"))
    assert data["cells"][1]["source"] == ["x = 2\n", "print(x * 3)"]
    assert nb.read_text("utf-8") == nb_text(data)
    fake.assert_done()
    [change] = [c for c in win.diff_panel.changes if c.tool == "NotebookEdit"]
    assert change.file_path == str(nb) and change.status == "applied", change
