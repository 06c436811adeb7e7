"""A decision per hunk, in the tools: ``apply_hunks`` (only the accepted hunks of a patch),
``edit_input_for_text`` (an Edit input for that result) and the tool_result sentence naming the
rejected hunks. Checked against many random files and edits (every subset is checked by diffing the
result again: it must hold exactly the accepted hunks' changes)."""

from __future__ import annotations

import random

from desktop_agent.tools.edit import EditTool, _compute, edit_input_for_text, partial_edit_input
from desktop_agent.util.diff import apply_hunks, format_line_ranges, rejected_hunks_sentence, structured_patch
from desktop_agent.tools.write import WriteTool, partial_write_input


def _random_pair(rng: random.Random) -> tuple[str, str]:
    lines = [rng.choice(["a", "b", "x = 1", "", "def f():", "    return 2"]) + str(rng.randint(0, 3))
             for _ in range(rng.randint(0, 40))]
    old = "\n".join(lines) + ("\n" if rng.random() < 0.6 else "")
    new_lines: list[str] = []
    for line in old.split("\n"):
        r = rng.random()
        if r < 0.08:
            continue
        new_lines.append(line + "X" if r < 0.16 else line)
        if 0.16 <= r < 0.22:
            new_lines.append(f"ins{rng.randint(0, 9)}")
    new = "\n".join(new_lines)
    return old, (new.rstrip("\n") if rng.random() < 0.1 else new)


def test_apply_hunks_keeps_exactly_the_accepted_changes():
    rng = random.Random(13)
    checked = 0
    for _ in range(1500):
        old, new = _random_pair(rng)
        hunks = structured_patch(old, new)
        if not hunks:
            continue
        accepted = [rng.random() < 0.5 for _ in hunks]
        result = apply_hunks(old, new, hunks, accepted)
        assert apply_hunks(old, new, hunks, [True] * len(hunks)) == new
        assert apply_hunks(old, new, hunks, [False] * len(hunks)) == old
        want = [x for h, a in zip(hunks, accepted) if a for x in h["lines"] if x[:1] in "+-"]
        got = [x for h in structured_patch(old, result) for x in h["lines"] if x[:1] in "+-"]
        assert got == want
        if result != old:  # and an Edit input writes the same result
            edit = edit_input_for_text(old, result, {"file_path": "/f", "old_string": "?", "new_string": "!"})
            assert old.count(edit["old_string"]) == 1
            assert _compute(old, edit["old_string"], edit["new_string"], False)[1] == result
        checked += 1
    assert checked > 1000


def test_partial_inputs_and_the_sentence():
    old = "".join(f"line {i}\n" for i in range(1, 61))
    new = old.replace("line 5\n", "line 5 changed\n").replace("line 41\n", "line 41 changed\n")
    hunks = structured_patch(old, new)
    assert len(hunks) == 2
    write = partial_write_input(old, {"file_path": "/f", "content": new}, hunks, [True, False])
    assert write["content"] == old.replace("line 5\n", "line 5 changed\n")
    edit = partial_edit_input(old, {"file_path": "/f", "old_string": old, "new_string": new, "replace_all": False},
                              hunks, [False, True])
    assert edit["old_string"] == "line 41\n" and edit["new_string"] == "line 41 changed\n"
    assert "replace_all" not in edit
    assert format_line_ranges([(12, 18), (40, 41)]) == "lines 12\u201318, 40\u201341"
    assert format_line_ranges([(7, 7)]) == "line 7"
    assert rejected_hunks_sentence([(12, 18), (40, 41)], 5) == (
        "The user rejected 2 of 5 hunks (lines 12\u201318, 40\u201341); those parts were NOT written.")


def test_result_text_names_the_rejected_hunks():
    data = {"filePath": "/f", "userModified": True, "replaceAll": False, "rejectedHunks": [[2, 8]], "totalHunks": 2}
    assert EditTool().map_result_to_block(data, "t")["content"] == (
        "The file /f has been updated successfully.  The user modified your proposed changes before accepting "
        "them. . The user rejected 1 of 2 hunks (lines 2\u20138); those parts were NOT written.")
    write = dict(data, type="update")
    assert WriteTool().map_result_to_block(write, "t")["content"] == EditTool().map_result_to_block(data, "t")[
        "content"]
    assert WriteTool().map_result_to_block({"type": "update", "filePath": "/f"}, "t")["content"] == (
        "The file /f has been updated successfully.")
