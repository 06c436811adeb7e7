"""Expanded tool cards (issue 28 part 2): the input as ``key: value`` fields (long values under their key, monospace,
wrapped), never raw JSON; a failed command's exit line in the error colour while the rest of the card keeps its
colours; MCP tools named ``server · tool``. Real widgets, offscreen."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette

from desktop_agent.ui.conversation.tool_fields import display_tool_name, exit_line, input_fields, mcp_parts
from desktop_agent.ui.conversation.view import ConversationView
from desktop_agent.ui.highlight import colors, is_dark


def _view(qtbot):
    view = ConversationView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show()
    view.cwd = "/work"
    return view


def _block_colours(body):
    """(text, foreground colour) of each block's text."""
    out = []
    block = body.document().begin()
    while block.isValid():
        for frag in _fragments(block):
            out.append((frag.text(), frag.charFormat().foreground().color().name()))
        block = block.next()
    return out


def _fragments(block):
    it = block.begin()
    while not it.atEnd():
        frag = it.fragment()
        if frag.isValid():
            yield frag
        it += 1


def test_failed_command_shows_the_exit_line_red_and_the_card_normal(qtbot):
    view = _view(qtbot)
    card = view.start_tool("t1", "Bash", {"command": "npm test -- --watch=false", "description": "Run the tests"})
    view.finish_tool("t1", "Bash", "Exit code 2\nFAIL src/a.test.ts\n  ✕ adds numbers", True)
    card.set_expanded(True)
    c = colors(is_dark(card))
    normal = card.body.palette().color(QPalette.ColorRole.Text).name()
    assert normal != QColor(c.error).name()  # the body is not painted red as a whole
    frags = _block_colours(card.body)
    assert ("Exit code 2", QColor(c.error).name()) in frags
    output = [col for text, col in frags if "FAIL src/a.test.ts" in text]
    assert output and output[0] != QColor(c.error).name()
    plain = card.body.toPlainText()
    assert "command: npm test -- --watch=false" in plain and "description: Run the tests" in plain
    assert "{" not in plain and '"command"' not in plain  # fields, not JSON
    assert card.summary == "Exit code 2"  # the collapsed header still says it


def test_long_and_multiline_values_sit_under_their_key_wrapped(qtbot):
    view = _view(qtbot)
    old = "def f():\n    return 1\n"
    long_path = "/work/" + "/".join(f"dir{i}" for i in range(30)) + "/file.py"
    card = view.start_tool("t2", "Edit", {"file_path": long_path, "old_string": old, "new_string": "x", "n": 3,
                                          "replace_all": False, "opts": {"a": [1, 2]}})
    view.finish_tool("t2", "Edit", "ok", False)
    card.set_expanded(True)
    doc = card.body.document()
    texts = [doc.findBlockByNumber(i).text() for i in range(doc.blockCount())]
    assert "old_string: " in texts and "def f():" in texts  # under its key
    i = texts.index("def f():")
    assert doc.findBlockByNumber(i).blockFormat().leftMargin() > 0
    assert "new_string: x" in texts and "n: 3" in texts and "replace_all: false" in texts
    assert any(t.startswith("file_path: ") for t in texts) or long_path in texts  # never cut
    assert long_path in card.body.toPlainText()
    assert card.body.horizontalScrollBar().maximum() == 0  # wrapped, no sideways scrolling
    mono = [f for b in range(doc.blockCount()) for f in _fragments(doc.findBlockByNumber(b)) if "def f():" in f.text()]
    assert mono and mono[0].charFormat().fontFixedPitch()


def test_mcp_names_read_server_dot_tool(qtbot):
    assert display_tool_name("mcp__demo__echo") == "demo · echo"
    assert display_tool_name("mcp__my-server__do__thing") == "my-server · do__thing"  # the server ends at the first __
    assert display_tool_name("Bash") == "Bash" and mcp_parts("mcp__broken") is None
    assert display_tool_name("mcp____x") == "mcp____x"  # no server: shown raw
    view = _view(qtbot)
    card = view.start_tool("t3", "mcp__demo__echo", {"text": "hi"})
    assert card.display_name == "demo · echo" and card.accessibleName().startswith("demo · echo")
    assert card.name == "mcp__demo__echo"  # the rules and the changes panel keep the real name
    card.grab()


def test_fields_and_exit_line_helpers():
    assert [(f.key, f.text, f.block) for f in input_fields({"a": "x", "b": None, "c": "l1\nl2"})] == \
        [("a", "x", False), ("b", "null", False), ("c", "l1\nl2", True)]
    assert input_fields(["not", "an", "object"])[0].key == "input"
    assert exit_line("<tool_use_error>Exit code 127\nnope: not found</tool_use_error>", True) == \
        ("Exit code 127", "nope: not found")
    assert exit_line("File does not exist.", True) == ("File does not exist.", "")
    assert exit_line("fine\nmore", False) == (None, "fine\nmore")
