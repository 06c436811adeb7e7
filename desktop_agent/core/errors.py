"""Model-facing error texts and the InputValidationError formatter (SPEC §3.3, §3.4, §4.9, §6.4).

Models are trained on these strings: change them only together with SPEC.md.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

REJECT_MESSAGE = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
    "the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how "
    "to proceed."
)
INTERRUPTED_MESSAGE = "Interrupted by user"
# A started tool that was still running a grace period after the user's Stop (our wording: it may have had
# effects, so it must not claim nothing happened).
STOPPED_AFTER_GRACE_MESSAGE = (
    "<tool_use_error>Interrupted by user: the tool was still running {grace:g}s after the interrupt and was "
    "stopped. It may have made partial changes; check the current state before retrying.</tool_use_error>"
)
STREAMING_FALLBACK_MESSAGE = "<tool_use_error>Error: Streaming fallback - tool execution discarded</tool_use_error>"
USER_DENIED_MESSAGE = "User denied via UI"


class ToolError(Exception):
    """An error a tool's ``call`` raises for the model to act on.

    ``run_tool_use`` wraps every exception text from ``call`` in ``<tool_use_error>``; a ToolError
    with ``wrap=False`` is passed through bare (Read's "File does not exist..." and size-cap errors,
    SPEC Appendix A).
    """

    def __init__(self, message: str, *, wrap: bool = True):
        super().__init__(message)
        self.message = message
        self.wrap = wrap


def wrap_error(text: str) -> str:
    return f"<tool_use_error>{text}</tool_use_error>"


def no_such_tool(name: str) -> str:
    return wrap_error(f"Error: No such tool available: {name}")


def sibling_error_message(desc: str | None) -> str:
    if desc:
        return wrap_error(f"Cancelled: parallel tool call {desc} errored")
    return wrap_error("Cancelled: parallel tool call errored")


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


_EXPECTED = {
    "string_type": "string",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "int_type": "number",
    "int_parsing": "number",
    "int_from_float": "number",
    "float_type": "number",
    "float_parsing": "number",
    "list_type": "array",
    "tuple_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
}


def json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def format_validation_error(tool_name: str, error: ValidationError) -> str:
    """The text of ``formatZodValidationError``: missing, unexpected, then type-mismatch lines."""
    missing: list[str] = []
    unexpected: list[str] = []
    mismatch: list[str] = []
    other: list[str] = []
    for err in error.errors(include_url=False):
        loc = tuple(err.get("loc", ()))
        kind = err.get("type", "")
        if kind == "missing":
            missing.append(f"The required parameter `{_path(loc)}` is missing")
        elif kind == "extra_forbidden":
            unexpected.append(f"An unexpected parameter `{_path(loc)}` was provided")
        elif kind in _EXPECTED and loc:
            mismatch.append(
                f"The parameter `{_path(loc)}` type is expected as `{_EXPECTED[kind]}` "
                f"but provided as `{json_type_name(err.get('input'))}`"
            )
        else:
            where = f"`{_path(loc)}`: " if loc else ""
            other.append(f"{where}{err.get('msg', kind)}")
    lines = missing + unexpected + mismatch
    if not lines:
        lines = other or [str(error)]
        # No recognised issue: fall back to the raw messages, as the reference agent does.
        return "\n".join(lines)
    word = "issues" if len(lines) > 1 else "issue"
    return f"{tool_name} failed due to the following {word}:\n" + "\n".join(lines)


def input_validation_error(tool_name: str, error: ValidationError) -> str:
    return wrap_error(f"InputValidationError: {format_validation_error(tool_name, error)}")
