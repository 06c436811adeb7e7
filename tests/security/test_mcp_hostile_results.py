"""A hostile MCP server through the real CLI: results nested past any parser's recursion, 50 MB of text, and
a line that is not JSON each end as one error tool_result the model reads, and the run goes on — never a hang,
never a traceback."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.test_cli import cli_env, fake, jsonl, run_cli  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def hostile(mode: str) -> str:
    return json.dumps({"mcpServers": {"evil": {"command": sys.executable,
                                               "args": ["-m", "tests.fakes.hostile_mcp_server", mode],
                                               "env": {"PYTHONPATH": str(ROOT)}}}})


@pytest.mark.parametrize("mode", ["deep", "huge", "garbage"])
def test_a_hostile_result_is_one_error_tool_result_and_no_hang(fake, workdir, tmp_path, mode):
    fake.script([reply(tool_use("mcp__evil__deep", {}, id="toolu_d")), reply(text("done"))])
    out = run_cli(["-p", "go", "--output-format", "stream-json", "--verbose", "--permission-mode",
                   "bypassPermissions", "--mcp-config", hostile(mode)], workdir,
                  cli_env(fake, tmp_path / "h", MCP_TOOL_TIMEOUT="20000"), timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    lines = jsonl(out.stdout)
    assert lines[-1]["type"] == "result" and lines[-1]["subtype"] == "success"
    [result] = [b for m in lines if m.get("type") == "user" for b in m["message"]["content"]
                if isinstance(b, dict) and b.get("tool_use_id") == "toolu_d"]
    assert result["is_error"] is True
    body = json.dumps(result["content"])
    assert len(body) < 200_000
    fake.assert_done()
