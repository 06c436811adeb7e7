"""What the permission dialog computes from a proposed file change with the tools' own code, so the UI
never imports ``tools``: the file an Edit would leave (the live preview of a proposal the user edited)
and the input that writes only the hunks the user accepted (Edit: the narrowest unique ``old_string``
around the accepted changes; Write: the original with those hunks applied).
"""

from __future__ import annotations

from typing import Any, Literal

# tools.edit and tools.write (with core.tool, pydantic's schema machinery) are imported when a proposal is computed,
# not when the permission dialog's module loads at the window's first paint.

HunkTool = Literal["Edit", "Write"]


def edited_file(original: str, edit_input: dict[str, Any]) -> str:
    """The whole file as the Edit ``edit_input`` would leave ``original`` (unchanged if it does not apply)."""
    from desktop_agent.tools.edit import proposed_file

    return proposed_file(original, edit_input)


def accepted_hunks_input(tool: HunkTool, original: str | None, tool_input: dict[str, Any],
                         hunks: list[dict[str, Any]], accepted: list[bool]) -> dict[str, Any]:
    """The ``tool`` input that writes only the ``accepted`` hunks of ``hunks`` (its patch against ``original``)."""
    if tool == "Edit":
        from desktop_agent.tools.edit import partial_edit_input

        return partial_edit_input(original or "", tool_input, hunks, accepted)
    from desktop_agent.tools.write import partial_write_input

    return partial_write_input(original, tool_input, hunks, accepted)


__all__ = ["HunkTool", "accepted_hunks_input", "edited_file"]
