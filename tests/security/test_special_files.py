"""FIFOs, sockets and devices on every file tool path through the real CLI, in bypass (nothing asks): each call
ends with one error tool_result, nothing blocks waiting for a writer, and the special file is still there."""

from __future__ import annotations

import os
import socket
import stat

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.test_cli import cli_env, fake, jsonl, run_cli  # noqa: F401


def test_no_file_tool_blocks_on_a_fifo_a_socket_or_a_device(fake, workdir, tmp_path):
    fifo, nb_fifo = workdir / "p.txt", workdir / "p.ipynb"
    os.mkfifo(fifo)
    os.mkfifo(nb_fifo)
    sock_path = workdir / "s.txt"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(sock_path))
    calls = [
        ("Read", {"file_path": str(fifo)}),
        ("Edit", {"file_path": str(fifo), "old_string": "a", "new_string": "b"}),
        ("Write", {"file_path": str(fifo), "content": "x"}),
        ("NotebookEdit", {"notebook_path": str(nb_fifo), "new_source": "x", "cell_id": "c1"}),
        ("Edit", {"file_path": str(sock_path), "old_string": "a", "new_string": "b"}),
        ("Edit", {"file_path": "/dev/zero", "old_string": "a", "new_string": "b"}),
        ("Read", {"file_path": "/dev/zero"}),
        ("Grep", {"pattern": "x", "path": str(fifo)}),
    ]
    fake.script([reply(tool_use(name, inp, id=f"toolu_{i}")) for i, (name, inp) in enumerate(calls)]
                + [reply(text("done"))])
    try:
        out = run_cli(["-p", "go", "--output-format", "stream-json", "--verbose", "--permission-mode",
                       "bypassPermissions"], workdir, cli_env(fake, tmp_path / "h"), timeout=90)
    finally:
        srv.close()
    assert out.returncode == 0, out.stderr[-2000:]
    lines = jsonl(out.stdout)
    assert lines[-1]["type"] == "result" and lines[-1]["subtype"] == "success"
    results = {b["tool_use_id"]: b for m in lines if m.get("type") == "user" for b in m["message"]["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"}
    for i, (name, _inp) in enumerate(calls):
        r = results[f"toolu_{i}"]
        assert r.get("is_error") is True, (name, r)
        assert "not a regular file" in str(r["content"]) or "device file" in str(r["content"]), (name, r)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and stat.S_ISFIFO(os.lstat(nb_fifo).st_mode)
    fake.assert_done()
