"""The headless CLI with ``--provider openai`` (and ``DESKTOP_AGENT_PROVIDER``) against the fake
OpenAI-compatible server: the running example (Read → Edit → text) and a streamed multi-tool turn, with
``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` as the OpenAI SDK's own variables and ``--model``."""

from __future__ import annotations

import json

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.fakes.openai_server import FakeOpenAI
from tests.test_cli import cli_env, jsonl, run_cli


def env_for(fake: FakeOpenAI, home, **extra):
    return cli_env(None, home, **{"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-local-1", **extra})


def test_running_example_over_chat_completions(workdir, tmp_path):
    app = workdir / "app.ts"
    with FakeOpenAI(api_key="sk-local-1") as fake:
        fake.script([
            reply(tool_use("Read", {"file_path": str(app)}, id="call_r1")),
            reply(tool_use("Edit", {"file_path": str(app), "old_string": "export const value = 1",
                                    "new_string": "export const value = 2"}, id="call_e2")),
            reply(text("Done: value is 2.")),
        ])
        out = run_cli(["-p", "Change value to 2", "--provider", "openai", "--model", "qwen2.5-coder:7b",
                       "--permission-mode", "acceptEdits", "--output-format", "json"], workdir,
                      env_for(fake, tmp_path / "h"))
        assert out.returncode == 0, out.stderr
        fake.assert_done()
        result = json.loads(out.stdout)
        assert result["result"] == "Done: value is 2." and result["subtype"] == "success"
        assert app.read_text() == "export const value = 2"
        bodies = [r.body for r in fake.requests]
        assert all(b["model"] == "qwen2.5-coder:7b" and b["stream"] for b in bodies)
        assert bodies[2]["messages"][-1] == {"role": "tool", "tool_call_id": "call_e2",
                                             "content": f"The file {app} has been updated successfully."}
        assert fake.requests[0].headers["authorization"] == "Bearer sk-local-1"
        assert result["usage"]["output_tokens"] > 0


def test_streamed_multi_tool_turn_via_env_provider(workdir, tmp_path):
    (workdir / "b.txt").write_text("bee\n")
    with FakeOpenAI(chunk_size=2) as fake:
        fake.script([
            reply(text("Reading two files."), tool_use("Read", {"file_path": str(workdir / "app.ts")}, id="call_a"),
                  tool_use("Read", {"file_path": str(workdir / "b.txt")}, id="call_b")),
            reply(text("Both read.")),
        ])
        out = run_cli(["-p", "read both", "--output-format", "stream-json", "--verbose"], workdir,
                      env_for(fake, tmp_path / "h", DESKTOP_AGENT_PROVIDER="openai", OPENAI_API_KEY=""))
        assert out.returncode == 0, out.stderr
        fake.assert_done()
    lines = jsonl(out.stdout)
    results = {b["tool_use_id"]: b["content"] for m in lines if m.get("type") == "user"
               for b in m["message"]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"}
    assert results == {"call_a": "1\texport const value = 1", "call_b": "1\tbee\n2\t"}
    tool_msgs = [m for m in fake.requests[1].body["messages"] if m["role"] == "tool"]
    # concurrent Reads: results in completion order (SPEC Appendix A), each right after the assistant's calls
    assert sorted(m["tool_call_id"] for m in tool_msgs) == ["call_a", "call_b"]
    assert "authorization" not in fake.requests[0].headers
    assert lines[-1]["result"] == "Both read."


def test_unknown_provider_is_a_usage_error(workdir, tmp_path):
    out = run_cli(["-p", "x", "--provider", "gemini"], workdir, cli_env(None, tmp_path / "h"))
    assert out.returncode == 2 and "--provider must be one of anthropic, openai" in out.stderr
