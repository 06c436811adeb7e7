"""Slash commands written as Markdown files, and their UserPromptExpansion hooks (App. B §B.5, ``docs/hooks.md``).

A prompt ``/name args`` names a command when ``name.md`` exists in ``<folder>/.claude/commands/`` (the project's,
only in a trusted folder: an untrusted clone must not put words in the user's mouth) or in
``<CLAUDE_CONFIG_DIR>/commands/`` (the user's; the project's wins on a clash). A sub-folder makes a namespace:
``.claude/commands/git/fix.md`` is ``/git:fix``. The file's text, without a leading ``---`` front-matter block,
is the command's prompt; ``$ARGUMENTS`` in it becomes the arguments, and without it non-empty arguments are appended
as ``ARGUMENTS: <args>`` (the reference's forms).

``expand(prompt, contexts, ...)`` runs the UserPromptExpansion hooks (matcher: the command name; input
``expansion_type: "slash_command"``, ``command_name``, ``command_args``, ``command_source`` —
``projectSettings``/``userSettings`` — and ``prompt``, the typed text) and returns an ``Expansion``: the user
entry's text (``<command-message>…</command-message>`` / ``<command-name>/…</command-name>`` /
``<command-args>…</command-args>``), the command's prompt for the model (written as an ``isMeta`` entry after it),
or ``blocked`` — exit 2 or ``decision: block`` gives ``UserPromptExpansion operation blocked by hook:\\n<reason>``
followed by ``\\n\\nOriginal prompt: <prompt>`` unless ``suppressOriginalPrompt``; ``continue: false`` its
``stopReason``. The hooks' context (``additionalContext`` or plain stdout) joins ``contexts``. A prompt that names
no command file is left alone (``/compact`` is the CLI's own).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.hooks import HookRunner
from desktop_agent.util import dirs

MAX_COMMAND_BYTES = 256 * 1024
_INVOCATION = re.compile(r"/([A-Za-z0-9_][A-Za-z0-9_.:-]*)(?:\s+(.*))?", re.S)
_FRONT_MATTER = re.compile(r"\A---\r?\n.*?\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
BLOCKED_PREFIX = "UserPromptExpansion operation blocked by hook:"
STOPPED_TEXT = "UserPromptExpansion hook stopped the command"


@dataclass
class Expansion:
    shown: str | None = None  # the user entry's text; None: the prompt as typed
    body: str | None = None  # the command's prompt for the model
    blocked: str | None = None  # why the prompt is not sent


@dataclass
class Command:
    name: str
    path: str
    source: str  # projectSettings | userSettings


def _commands_in(root: str, source: str, out: dict[str, Command]) -> None:
    if not os.path.isdir(root):
        return
    for folder, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        rel = os.path.relpath(folder, root)
        prefix = "" if rel == "." else rel.replace(os.sep, ":") + ":"
        for f in sorted(files):
            if f.endswith(".md") and not f.startswith("."):
                out.setdefault(prefix + f[:-3], Command(prefix + f[:-3], os.path.join(folder, f), source))


def find_commands(cwd: str, trusted: bool) -> dict[str, Command]:
    """The commands by name: the project's (trusted folders only) over the user's."""
    out: dict[str, Command] = {}
    if trusted:
        _commands_in(os.path.join(cwd, ".claude", "commands"), "projectSettings", out)
    _commands_in(os.path.join(dirs.claude_config_dir(), "commands"), "userSettings", out)
    return out


def command_text(path: str, args: str) -> str | None:
    """The command file's prompt with its arguments, or None when it cannot be read as text."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_COMMAND_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_COMMAND_BYTES:
        return None
    text = _FRONT_MATTER.sub("", raw.decode("utf-8", "replace"), count=1).strip()
    if "$ARGUMENTS" in text:
        return text.replace("$ARGUMENTS", args)
    return f"{text}\n\nARGUMENTS: {args}" if args else text


def shown_text(name: str, args: str) -> str:
    lines = [f"<command-message>{name}</command-message>", f"<command-name>/{name}</command-name>"]
    if args:
        lines.append(f"<command-args>{args}</command-args>")
    return "\n".join(lines)


async def expand(prompt: str | list[dict[str, Any]], contexts: list[str], *, cwd: str, trusted: bool,
                 hooks: HookRunner | None, ctx: ToolUseContext | None) -> Expansion:
    if not isinstance(prompt, str):
        return Expansion()
    match = _INVOCATION.fullmatch(prompt.strip())
    if match is None or match.group(1) == "compact":
        return Expansion()
    name, args = match.group(1), (match.group(2) or "").strip()
    command = find_commands(cwd, trusted).get(name)
    if command is None:
        return Expansion()
    body = command_text(command.path, args)
    if body is None:
        return Expansion()
    typed = f"/{name} {args}" if args else f"/{name}"
    if hooks is not None and hooks.has_hooks("UserPromptExpansion", name):
        out = await hooks.user_prompt_expansion("slash_command", name, args, command.source, typed, ctx)
        if out.block:
            text = f"{BLOCKED_PREFIX}\n{out.reason or 'blocked'}"
            return Expansion(blocked=text if out.suppress_original else f"{text}\n\nOriginal prompt: {typed}")
        if out.stop:
            return Expansion(blocked=f"{STOPPED_TEXT}: {out.stop_reason}" if out.stop_reason else STOPPED_TEXT)
        if out.additional_context:
            contexts.append(f"UserPromptExpansion hook additional context: {out.additional_context}")
    return Expansion(shown=shown_text(name, args), body=body)
