"""The base of every protocol model: tolerant on the way in, faithful on the way out.

``WireModel`` keeps fields it does not know (``extra="allow"``: a newer CLI or Claude Code may add some)
and ``to_wire()`` writes the JSON object the reference writes: optional fields left out when ``None``,
except those named in ``_keep_null`` (``parent_tool_use_id`` is always present, as ``null``).
``loads_object`` is the one way in for a line: its JSON object, or ``ProtocolError``.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic_core import to_jsonable_python


class ProtocolError(ValueError):
    """A line that is not JSON, or a known message type whose fields do not validate."""


def loads_object(text: str | bytes | dict[str, Any]) -> dict[str, Any]:
    """One line's JSON object (a dict passes as is); ``ProtocolError`` when it is not JSON or not an object."""
    if isinstance(text, dict):
        return text
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {str(text)[:120]!r}") from exc
    if not isinstance(obj, dict):
        raise ProtocolError(f"not a JSON object: {str(text)[:120]!r}")
    return obj


class WireModel(BaseModel):
    # Schemas are built on first use: a -p run touches a few of these models, and building all costs ~10 ms.
    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    _keep_null: ClassVar[frozenset[str]] = frozenset()

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, info in type(self).model_fields.items():
            value = getattr(self, name)
            if value is None and name not in self._keep_null:
                continue
            out[info.alias or name] = _plain(value)
        for key, value in (self.model_extra or {}).items():
            out[key] = _plain(value)
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, WireModel):
        return value.to_wire()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return to_jsonable_python(value)
