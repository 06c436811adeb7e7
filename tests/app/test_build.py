"""app.build: each part of a session is made once and a part that cannot be made is a ConfigError."""

from __future__ import annotations

import pytest

from desktop_agent.app import build
from desktop_agent.config import AppSettings


def _pc(tmp_path, **kw):
    return build.load_permission_context(str(tmp_path), allowed=kw.get("allowed", ()),
                                         disallowed=kw.get("disallowed", ()), settings_arg=None, mode=None,
                                         add_dirs=(), trusted=False)


def test_no_api_key_and_an_unknown_provider_are_config_errors(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(build.ConfigError, match="no API key found"):
        build.make_client(AppSettings())
    with pytest.raises(build.ConfigError, match="unknown provider 'grpc'"):
        build.make_client(AppSettings(), "grpc")


def test_the_client_takes_the_key_and_the_endpoint(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    client = build.make_client(AppSettings())
    assert type(client).__name__ == "AnthropicClient"


def test_whole_tool_deny_rules_remove_tools_and_tools_narrows(tmp_path):
    pc = _pc(tmp_path, disallowed=["Write", "WebFetch"])
    names = {t.name for t in build.offered_tools(pc, None)}
    assert "Read" in names and "Write" not in names and "WebFetch" not in names
    assert sorted(t.name for t in build.offered_tools(_pc(tmp_path), ["Read", "Glob"])) == ["Glob", "Read"]


def test_a_bad_mcp_config_is_a_config_error_and_none_configured_is_none(tmp_path):
    pc = _pc(tmp_path)
    assert build.make_mcp(str(tmp_path), pc, []) is None
    with pytest.raises(build.ConfigError, match="--mcp-config: no such file"):
        build.make_mcp(str(tmp_path), pc, ["missing.json"])


def test_the_context_carries_the_parts_and_backs_up_under_the_data_dir(tmp_path):
    from desktop_agent.util import dirs

    pc = _pc(tmp_path)
    ctx = build.make_context(str(tmp_path), pc, prompter=None, hooks=None, session_id="s1", transcript_path="t",
                             tools=[])
    assert ctx.permission_context is pc and ctx.working_dirs == list(pc.working_dirs) and ctx.session_id == "s1"
    assert ctx.file_history.dir == dirs.data_dir() / "file-history" / "s1"
