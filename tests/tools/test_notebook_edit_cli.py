"""NotebookEdit end to end through the real CLI against the fake API: Read, then NotebookEdit asked over
``can_use_tool`` (the request carries the cell's patch), allowed → the notebook on disk holds the new cell
source in its own format; a second edit denied → unchanged, the message verbatim."""

from __future__ import annotations

import json

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.test_cli import fake, start, tool_results  # noqa: F401
from tests.tools.test_notebook_edit import NB, nb_text


def test_notebook_edit_asked_allowed_and_denied_over_stdio(fake, workdir, tmp_path):
    nb = workdir / "analysis.ipynb"
    nb.write_text(nb_text(), "utf-8")
    fake.script([
        reply(tool_use("Read", {"file_path": str(nb)}, id="toolu_r")),
        reply(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "calc", "new_source": "x = 2"},
                       id="toolu_n1")),
        reply(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "intro", "edit_mode": "delete",
                                        "new_source": ""}, id="toolu_n2")),
        reply(text("done")),
    ])
    d = start(fake, workdir, tmp_path)
    try:
        d.user("change the notebook")
        ask = d.control_request("can_use_tool")
        req = ask["request"]
        assert req["tool_name"] == "NotebookEdit" and req["tool_use_id"] == "toolu_n1"
        assert req["structured_patch"][0]["lines"] == ["-x = 1", "-print(x + 1)", "+x = 2"]
        d.respond(ask["request_id"], {"behavior": "allow", "updatedInput": req["input"]})
        ask = d.control_request("can_use_tool")
        assert ask["request"]["tool_use_id"] == "toolu_n2"
        d.respond(ask["request_id"], {"behavior": "deny", "message": "keep the intro"})
        assert d.result()["subtype"] == "success"
    finally:
        assert d.close() == 0
    fake.assert_done()
    assert tool_results(d, "toolu_n1")[0]["content"] == "Updated cell calc with x = 2"
    r2 = tool_results(d, "toolu_n2")[0]
    assert r2["content"] == "keep the intro" and r2["is_error"] is True
    data = json.loads(nb.read_text("utf-8"))
    assert [c["id"] for c in data["cells"]] == ["intro", "calc"]
    assert data["cells"][1]["source"] == ["x = 2"] and data["cells"][1]["outputs"] == []
    assert nb.read_text("utf-8") == nb_text(data)  # indent 1, trailing newline: the notebook's own format
    assert NB["cells"][1]["source"] == ["x = 1\n", "print(x + 1)"]  # the fixture itself untouched
