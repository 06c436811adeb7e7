"""Tool definitions sent to the API: names, field sets and types match the reference agent (SPEC App. B.1),
and the full definitions match a reviewed snapshot (tests/tools/schemas.snapshot.json).

To accept an intended change: ``UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/tools/test_schemas.py``
and review the diff of the snapshot file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from desktop_agent.tools.registry import default_tools

SNAPSHOT = Path(__file__).with_name("schemas.snapshot.json")

# App. B.1, field by field: name → (JSON type, required)
B1 = {
    "Read": {"file_path": ("string", True), "offset": ("integer", False), "limit": ("integer", False),
             "pages": ("string", False)},
    "Edit": {"file_path": ("string", True), "old_string": ("string", True), "new_string": ("string", True),
             "replace_all": ("boolean", False)},
    "Write": {"file_path": ("string", True), "content": ("string", True)},
    "Glob": {"pattern": ("string", True), "path": ("string", False)},
    "Grep": {"pattern": ("string", True), "path": ("string", False), "glob": ("string", False),
             "type": ("string", False), "output_mode": ("string", False), "-i": ("boolean", False),
             "-o": ("boolean", False), "-n": ("boolean", False), "-B": ("number", False), "-A": ("number", False),
             "-C": ("number", False), "context": ("number", False), "head_limit": ("number", False),
             "offset": ("number", False), "multiline": ("boolean", False)},
    "Bash": {"command": ("string", True), "timeout": ("number", False), "description": ("string", False),
             "run_in_background": ("boolean", False), "dangerouslyDisableSandbox": ("boolean", False)},
}


def _definitions() -> dict[str, dict]:
    return {t.name: t.to_api_schema() for t in default_tools()}


@pytest.mark.parametrize("name", sorted(B1))
def test_fields_types_and_required_match_appendix_b1(name):
    schema = _definitions()[name]["input_schema"]
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(B1[name])
    assert set(schema.get("required", [])) == {k for k, (_, req) in B1[name].items() if req}
    for field, (kind, _) in B1[name].items():
        prop = schema["properties"][field]
        got = prop.get("type") or ("string" if "enum" in prop else None)
        # JSON Schema "integer" is a "number" in the reference's TypeScript types.
        assert got == kind or (kind == "number" and got == "integer"), (field, prop)
        assert prop.get("description"), f"{name}.{field} has no description"


def test_schemas_are_clean():
    text = json.dumps(_definitions())
    assert '"title"' not in text.replace('"title": {', "")  # the keyword, not a field called title
    assert "$ref" not in text and "$defs" not in text
    assert '{"type": "null"}' not in text


def test_every_tool_has_a_description_from_its_prompt_file():
    for name, definition in _definitions().items():
        assert len(definition["description"]) > 40, name


def test_definitions_match_snapshot():
    current = _definitions()
    if os.environ.get("UPDATE_SNAPSHOTS") or not SNAPSHOT.exists():
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert json.loads(SNAPSHOT.read_text()) == current
