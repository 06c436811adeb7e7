"""``core.tool.tool_input_schema`` builds a model's schema once; every caller gets its own copy."""

from __future__ import annotations

from pydantic import BaseModel, Field

from desktop_agent.core import tool as core_tool
from desktop_agent.core.tool import tool_input_schema


class _Inner(BaseModel):
    title: str  # a field named title survives


class _Input(BaseModel):
    path: str = Field(description="where")
    inner: _Inner | None = None


def test_cached_schema_is_built_once_and_copied(monkeypatch):
    core_tool._SCHEMAS.pop(_Input, None)
    calls = []
    real = core_tool._build_input_schema
    monkeypatch.setattr(core_tool, "_build_input_schema", lambda m: calls.append(m) or real(m))
    first = tool_input_schema(_Input)
    assert first == real(_Input)  # the same schema as a fresh build
    assert first["properties"]["inner"]["properties"]["title"] == {"type": "string"}
    first["properties"]["path"]["description"] = "mutated"
    first["properties"]["extra"] = {}
    second = tool_input_schema(_Input)
    assert calls == [_Input]  # built once
    assert second["properties"]["path"]["description"] == "where"  # a caller's change does not leak
    assert "extra" not in second["properties"]
    assert second is not first


def test_every_registered_tool_schema_matches_a_fresh_build():
    from desktop_agent.tools.registry import all_builtin_tools

    for t in all_builtin_tools():
        t.input_schema()  # cached now

        assert t.input_schema() == core_tool._build_input_schema(t.input_model), t.name
