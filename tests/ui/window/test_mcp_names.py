"""MCP servers in the window (issue 28 part 2): before the first message the Servers view says they start with it
(not a bare "pending"); their tools read ``server · tool`` in the tool cards and in the Servers view. A real MCP
server (tests/fakes/mcp_server.py) from a trusted folder's ``.mcp.json``, the real window and engine, the fake
Anthropic server."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from PySide6.QtCore import Qt

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.ui.flow import wait_dialog

ROOT = Path(__file__).resolve().parents[3]


def test_servers_say_when_they_start_and_tools_read_server_dot_tool(qtbot, qloop, fake, make_window, workdir,
                                                                      tmp_path):
    from desktop_agent.permissions import trust

    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": {"demo": {
        "command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", "stdio"],
        "env": {"PYTHONPATH": str(ROOT), "MCP_FAKE_LOG": str(tmp_path / "mcp.log")}}}}))
    trust.set_trusted(str(workdir), True)
    fake.script([reply(tool_use("mcp__demo__echo", {"text": "hello"}, id="toolu_e")), reply(text("Echoed."))])
    win = make_window()

    async def scenario():
        assert await win.folders.open_folder(str(workdir))
        view = win.banners.show_servers()
        row = view.rows["demo"]
        assert row.state == "pending"
        assert "starts with the first message" in row.details.text()
        assert "start with the first message" in view.summary.text()
        assert "listed once it starts" in row.tools_label.text()
        qtbot.keyClicks(win.prompt, "echo something")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        task = win.controller._task
        dlg = await wait_dialog(win, 20)
        qtbot.mouseClick(dlg.allow_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 20)
        return view, row

    view, row = qloop.run_until_complete(scenario())
    fake.assert_done()
    card = win.conversation.cards["toolu_e"]
    assert card.display_name == "demo · echo" and card.state == card.DONE
    assert "mcp__demo__echo" not in card.accessibleName()
    assert row.state == "connected" and "starts with the first message" not in row.details.text()
    assert "demo · echo" in row.tools_label.text() and "mcp__" not in row.tools_label.text()
    assert "start with the first message" not in view.summary.text()
