"""The stdio permission server's per-hunk reply (``desktop_agent/cli/stdio.py``): an SDK host that allows only
some hunks sends ``updatedInput`` with the accepted ones plus ``rejectedHunks`` ([[start, end], …],
original lines) and ``totalHunks``; the tool_result then names the rejected ranges, as in the window.
A real ``desktop-agent`` child against the fake Anthropic server; malformed ranges are ignored."""

from __future__ import annotations

from desktop_agent.util.diff import apply_hunks, hunk_old_range, structured_patch
from tests.fakes.anthropic_server import reply, text, tool_use
from tests.test_cli import fake, start, tool_results  # noqa: F401 - the fixture

ORIGINAL = "".join(f"line {i}\n" for i in range(1, 61))


def _changed(keep: tuple[int, ...] = (5, 30, 55)) -> str:
    return "".join(f"line {i} changed\n" if i in keep else f"line {i}\n" for i in range(1, 61))


def test_allow_with_rejected_hunks_names_them_in_the_tool_result(fake, workdir, tmp_path):  # noqa: F811
    path = workdir / "lines.txt"
    path.write_text(ORIGINAL)
    other = workdir / "other.txt"
    other.write_text("a = 1\n")
    fake.script([
        reply(tool_use("Read", {"file_path": str(path)}, id="toolu_r1"),
              tool_use("Read", {"file_path": str(other)}, id="toolu_r2")),
        reply(tool_use("Write", {"file_path": str(path), "content": _changed()}, id="toolu_w"),
              tool_use("Edit", {"file_path": str(other), "old_string": "a = 1", "new_string": "a = 2"},
                       id="toolu_e")),
        reply(text("ok")),
    ])
    d = start(fake, workdir, tmp_path)
    d.user("change three lines")
    hunks = structured_patch(ORIGINAL, _changed())
    assert len(hunks) == 3
    accepted = [True, False, True]
    req = d.control_request("can_use_tool")
    assert req["request"]["tool_use_id"] == "toolu_w"
    partial = apply_hunks(ORIGINAL, _changed(), hunks, accepted)
    d.respond(req["request_id"], {"behavior": "allow",
                                  "updatedInput": {"file_path": str(path), "content": partial},
                                  "rejectedHunks": [list(hunk_old_range(hunks[1]))], "totalHunks": 3})
    req2 = d.control_request("can_use_tool")
    assert req2["request"]["tool_use_id"] == "toolu_e"
    # Malformed ranges (a bool, an inverted range) are ignored: the usual user-modified sentence only.
    d.respond(req2["request_id"], {"behavior": "allow",
                                   "updatedInput": {"file_path": str(other), "old_string": "a = 1",
                                                    "new_string": "a = 3"},
                                   "rejectedHunks": [[True, 2], [9, 3]], "totalHunks": 2})
    assert d.result()["subtype"] == "success"
    assert d.close() == 0
    assert path.read_text() == _changed(keep=(5, 55))
    assert other.read_text() == "a = 3\n"
    a, b = hunk_old_range(hunks[1])
    assert tool_results(d, "toolu_w")[0]["content"] == (
        f"The file {path} has been updated successfully.  The user modified your proposed changes before "
        f"accepting them. . The user rejected 1 of 3 hunks (lines {a}\u2013{b}); those parts were NOT written.")
    edit_text = tool_results(d, "toolu_e")[0]["content"]
    assert edit_text == (f"The file {other} has been updated successfully.  The user modified your proposed "
                         "changes before accepting them. .")
    # The host's tool_use_result carries the same fields as the window's.
    data = [m for m in d.seen if m.get("type") == "user" and m.get("tool_use_result")
            and m["tool_use_result"].get("filePath") == str(path)][0]["tool_use_result"]
    assert data["rejectedHunks"] == [[a, b]] and data["totalHunks"] == 3
    fake.assert_done()
