"""``cli.headless``: stdin lines are decoded through ``protocol``; what does not decode is answered or ignored."""

from __future__ import annotations

import io
import json

from desktop_agent.cli.argv import parse_args
from desktop_agent.cli.headless import HeadlessRun
from desktop_agent.cli.stdio import Output


def _run() -> tuple[HeadlessRun, io.StringIO]:
    buf = io.StringIO()
    opts = parse_args(["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"])
    return HeadlessRun(opts, Output(buf)), buf


def test_a_control_request_that_does_not_decode_gets_an_error_reply(capsys):
    run, buf = _run()
    run.on_line('{"type": "control_request", "request_id": "q1", "request": {"subtype": "set_permission_mode"}}\n')
    reply = json.loads(buf.getvalue())
    assert reply["type"] == "control_response" and reply["response"]["subtype"] == "error"
    assert reply["response"]["request_id"] == "q1" and "bad control_request" in reply["response"]["error"]
    run.on_line('{"type": "user", "message": "not an object"}\n')  # ignored, said on stderr with --verbose
    run.on_line("[1, 2]\n")
    run.on_line("not json\n")
    assert run.queue.empty() and buf.getvalue().count("\n") == 1
    assert "ignoring a stdin line that is not JSON" in capsys.readouterr().err


def test_user_lines_are_queued_typed():
    run, _ = _run()
    run.on_line('{"type": "user", "message": {"role": "user", "content": "hi"}, "session_id": "default"}\n')
    line = run.queue.get_nowait()
    assert line is not None and line.message["content"] == "hi"
