"""A message is prose and code segments (issue 28): streamed with a fence split across chunks it ends as the whole
text rendered at once; find marks matches inside a code block and scrolls to them; a wide block scrolls only
itself."""

from __future__ import annotations


from desktop_agent.ui.conversation.markdown import CodeView, MarkdownBlock, split_segments
from desktop_agent.ui.conversation.view import ConversationView


def _view(qtbot, w=600, h=500):
    view = ConversationView()
    qtbot.addWidget(view)
    view.resize(w, h)
    view.show()
    return view


TEXT = ("Before the code.\n\n```python\ndef needle_in_code(x):\n    return x\n```\n\nBetween, with a needle.\n\n"
        "```\nplain " + "wide " * 80 + "\n```\nAfter.")


def test_streaming_with_split_fences_matches_the_whole_render(qtbot):
    view = _view(qtbot)
    for i in range(0, len(TEXT), 2):  # "``" and "`" arrive apart
        view.append_text(TEXT[i:i + 2])
        view.current_text.flush()
    streamed = view.current_text
    kinds = [s.kind for s in streamed.segments]
    assert kinds == ["prose", "code", "prose", "code", "prose"]
    whole = MarkdownBlock(view.column)
    whole.text = TEXT
    whole.render_text()
    assert streamed.toPlainText() == whole.toPlainText()
    assert [c for _, _, c in streamed.code_blocks] == ["def needle_in_code(x):\n    return x", "plain " + "wide " * 80]
    assert split_segments("```\nunclosed") == [("code", "unclosed", "")]


def test_find_marks_matches_in_code_and_prose(qtbot):
    view = _view(qtbot)
    view.append_text(TEXT)
    view.close_text()
    block = view.current_text or next(w for w in view.column.items if isinstance(w, MarkdownBlock))
    matches = view.find_matches("needle")
    assert [w for w, _ in matches] == [block, block]
    view.highlight_matches("needle", matches, 0)
    marks = [(seg.kind, len(seg.extraSelections())) for seg in block.segments if seg.extraSelections()]
    assert marks == [("code", 1), ("prose", 1)]
    code = block.code_views()[0]
    sel = code.extraSelections()[0]
    assert sel.cursor.selectedText() == "needle"
    assert sel.format.background().color().name() in ("#ffb454", "#b36b00")  # the current match, stronger
    view.highlight_matches("", [], -1)
    assert block.extraSelections() == []
    assert block.find_text("NEEDLE")  # the first, in the code block
    assert code.textCursor().selectedText().lower() == "needle"


def test_wide_block_scrolls_itself_only(qtbot):
    view = _view(qtbot, 500, 400)
    view.append_text(TEXT)
    view.close_text()
    block = next(w for w in view.column.items if isinstance(w, MarkdownBlock))
    wide = block.code_views()[1]
    assert isinstance(wide, CodeView) and wide.horizontalScrollBar().maximum() > 0
    assert block.code_views()[0].horizontalScrollBar().maximum() == 0
    assert block.width() <= view.viewport().width()
    assert not view.horizontalScrollBar().isVisible()
