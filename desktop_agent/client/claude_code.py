"""What only Claude Code as the executor needs, for ``client.subprocess``: telling its model the truth about rejected
hunks, the "Allow for session" it is offered, the model from Settings, and its own sessions of a folder.

- ``POST_EDIT_HOOKS``: the hook callbacks registered in ``initialize`` (PostToolUse on Edit, Write, NotebookEdit).
  Claude Code runs an allowed ``updatedInput`` that writes only the accepted hunks and tells its model "updated";
  ``Rejections`` remembers the rejected hunks of each such call and answers the ``hook_callback`` for it with
  ``additionalContext`` = our Edit tool's own sentence (``util.diff.rejected_hunks_sentence``), and gives the
  translator the ``rejectedHunks``/``totalHunks`` our own tools put in their result data (the changes panel's ✗).
- ``narrow_suggestions``: Claude Code offers ``setMode acceptEdits`` for an Edit; "Allow for session" must add
  only the rule for this one call (``Edit(//<file>)``, or its own ``addRules``/``addDirectories``); a ``setMode``
  stays in the request as a separate choice the person must pick (the dialog's menu), never the default.
- ``settings_model``: the model chosen in Settings (``--model`` at spawn when the session names none).
- ``list_sessions`` / ``transcript_path`` / ``history``: its sessions of a folder (a transcript's
  ``hook_additional_context`` attachments with our sentence give its results their ``rejectedHunks`` back), from
  ``$CLAUDE_CONFIG_DIR`` (else ``~/.claude``) ``/projects/<slug>/*.jsonl``, the slug as Claude Code computes it
  (every non-alphanumeric character a ``-``; over 200 characters cut, with a hash we do not reproduce, so the
  cut prefix is matched and each file's recorded ``cwd`` decides). Blocking file reads: callers run them off
  the Qt thread.
"""

from __future__ import annotations

import glob
import logging
import os
import re
from typing import Any

from desktop_agent.client.local import SessionSummary
from desktop_agent.core.permission import PermissionRequest, PermissionUpdate, RuleValue
from desktop_agent.util import dirs
from desktop_agent.util.diff import rejected_hunks_sentence

log = logging.getLogger(__name__)

POST_EDIT_HOOK_ID = "desktop_agent_rejected_hunks"
EDIT_TOOLS = ("Edit", "Write", "NotebookEdit", "MultiEdit")
POST_EDIT_HOOKS: dict[str, Any] = {
    "PostToolUse": [{"matcher": "Edit|Write|NotebookEdit", "hookCallbackIds": [POST_EDIT_HOOK_ID]}]}
SLUG_LIMIT = 200
HEAD_BYTES = 256 * 1024


class Rejections:
    """The hunks the person rejected, per tool_use_id, until Claude Code's PostToolUse hook and the tool result
    have used them."""

    def __init__(self) -> None:
        self._by_tool: dict[str, tuple[list[tuple[int, int]], int]] = {}

    def record(self, tool_use_id: str, ranges: list[tuple[int, int]] | None, total: int | None) -> None:
        if tool_use_id and ranges:
            self._by_tool[tool_use_id] = ([(int(a), int(b)) for a, b in ranges], int(total or len(ranges)))

    def sentence(self, tool_use_id: str) -> str:
        found = self._by_tool.get(tool_use_id)
        return rejected_hunks_sentence(*found) if found else ""

    def hook_output(self, callback_id: str, hook_input: dict[str, Any], tool_use_id: str | None) -> dict[str, Any]:
        """The reply to a ``hook_callback``; ``KeyError`` for a callback we never registered."""
        if callback_id != POST_EDIT_HOOK_ID:
            raise KeyError(callback_id)
        if hook_input.get("hook_event_name") not in (None, "PostToolUse"):
            return {}
        tid = str(hook_input.get("tool_use_id") or tool_use_id or "")
        text = self.sentence(tid)
        if not text:
            return {}
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": text}}

    def result_fields(self, tool_use_id: str, is_error: bool) -> dict[str, Any]:
        """``rejectedHunks``/``totalHunks`` for the tool result's data (then forgotten); nothing for a failed call
        (nothing was written: the panel shows it failed)."""
        found = self._by_tool.pop(tool_use_id, None)
        if found is None or is_error:
            return {}
        ranges, total = found
        return {"rejectedHunks": [[a, b] for a, b in ranges], "totalHunks": total}


# ----------------------------------------------------------------------------------------------- Allow for session
GLOB_CHARS = frozenset("*?[]{}()\\!")


def _rule_path(path: str, cwd: str) -> str | None:
    """The rule path for exactly this file, ``//<absolute path>`` (Claude Code's absolute form: no pattern matches
    it elsewhere); None when the name holds a pattern character (a rule for it could match other files)."""
    full = os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))
    if GLOB_CHARS.intersection(full):
        return None
    return "/" + full


def narrow_suggestions(request: PermissionRequest) -> PermissionRequest:
    """The request with "Allow for session" narrowed to this call: Claude Code's own rules kept (for the session,
    not a settings file), its directory suggestion only when it has no rule (a Read outside the folder), a
    ``setMode`` moved after them (offered only as its own choice); a file tool asked with nothing but a mode
    switch gets the rule for its one file, ``Edit(//<path>)``."""
    narrow = [u.model_copy(update={"destination": "session"}) for u in request.suggestions if u.type != "setMode"]
    if any(u.type == "addRules" for u in narrow):  # the call's rule; a directory (its Bash adds the cwd) only alone
        narrow = [u for u in narrow if u.type == "addRules"]
    # bypassPermissions is entered only through its own confirmation, never from a permission request
    modes = [u for u in request.suggestions if u.type == "setMode" and u.mode != "bypassPermissions"]
    path = request.input.get("file_path") or request.input.get("notebook_path")
    rule = _rule_path(path, request.cwd) if isinstance(path, str) and path else None
    if not narrow and request.tool_name in EDIT_TOOLS and rule is not None:
        narrow = [PermissionUpdate(type="addRules", behavior="allow", destination="session",
                                   rules=[RuleValue(tool_name="Edit", rule_content=rule)])]
    return request.model_copy(update={"suggestions": [*narrow, *modes]})


# ------------------------------------------------------------------------------------------------------ the model
def settings_model() -> str | None:
    """The model of new sessions: ``ANTHROPIC_MODEL``, else Settings' (None: Claude Code's default)."""
    try:
        from desktop_agent.config import AppSettings, resolve_model

        return resolve_model(None, AppSettings.load())
    except Exception:
        log.exception("could not read the model setting")
        return None


# ----------------------------------------------------------------------------------------------- its sessions
def projects_root() -> str:
    return os.path.join(dirs.claude_config_dir(), "projects")


def folder_slug(folder: str) -> str:
    """Claude Code's folder name for ``folder`` under ``projects/`` (before its hash suffix, for a long one)."""
    return re.sub(r"[^a-zA-Z0-9]", "-", folder)


def _candidate_dirs(folder: str) -> list[str]:
    root = projects_root()
    out: list[str] = []
    for variant in dict.fromkeys([os.path.abspath(folder), os.path.realpath(folder)]):
        slug = folder_slug(variant)
        if len(slug) <= SLUG_LIMIT:
            out.append(os.path.join(root, slug))
        else:
            out += glob.glob(os.path.join(glob.escape(root), glob.escape(slug[:SLUG_LIMIT]) + "-*"))
    return [d for d in dict.fromkeys(out) if os.path.isdir(d)]


def _same_folder(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _summary(path: str, folder: str, exact_dir: bool) -> SessionSummary | None:
    """One transcript's summary, or None when it records another folder (a slug two folders share)."""
    from desktop_agent.core.messages import text_of
    from desktop_agent.session.store import count_transcript_messages, read_transcript

    st = os.stat(path)
    entries = read_transcript(path, full=True)
    cwds = {str(e["cwd"]) for e in entries if isinstance(e.get("cwd"), str)}
    if cwds and not any(_same_folder(c, folder) for c in cwds):
        return None
    if not cwds and not exact_dir:
        return None
    first = ""
    for e in entries:
        if e.get("type") != "user" or e.get("isMeta") or e.get("isCompactSummary"):
            continue
        content = (e.get("message") or {}).get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                             for b in content):
            continue
        text = text_of(e).strip()
        if text and not text.startswith("<"):  # <command-name>, <local-command-stdout>…: not a prompt
            first = " ".join(text.split())[:200]
            break
    return SessionSummary(os.path.basename(path)[:-len(".jsonl")], first, count_transcript_messages(entries),
                          st.st_mtime)


def list_sessions(folder: str | os.PathLike[str]) -> list[SessionSummary]:
    """Claude Code's sessions of ``folder``, newest first (blocking: run it off the Qt thread)."""
    folder = os.path.abspath(os.fspath(folder))
    out: list[SessionSummary] = []
    for directory in _candidate_dirs(folder):
        exact = os.path.basename(directory) in (folder_slug(folder), folder_slug(os.path.realpath(folder)))
        for path in glob.glob(os.path.join(glob.escape(directory), "*.jsonl")):
            if not os.path.isfile(path):
                continue
            try:
                summary = _summary(path, folder, exact)
            except (OSError, ValueError):
                continue
            if summary is not None:
                out.append(summary)
    out.sort(key=lambda s: -s.mtime)
    return out


def transcript_path(session_id: str, folder: str | None = None) -> str:
    """Claude Code's transcript of ``session_id``: in the folder's project directory, else in any; or ""."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", session_id or ""):
        return ""  # an id is a file name, never a path
    for directory in _candidate_dirs(folder) if folder else []:
        path = os.path.join(directory, session_id + ".jsonl")
        if os.path.isfile(path):
            return path
    found = glob.glob(os.path.join(glob.escape(projects_root()), "*", session_id + ".jsonl"))
    return found[0] if found else ""


_SENTENCE = re.compile(r"The user rejected (\d+) of (\d+) hunks \(lines? ([0-9\u2013, ]+)\); those parts were NOT written\.")


def parse_rejection(text: str) -> tuple[list[tuple[int, int]], int] | None:
    """The ranges and total of our rejected-hunks sentence, exactly as ``rejected_hunks_sentence`` wrote it; None
    for any other text."""
    m = _SENTENCE.fullmatch(text.strip())
    if m is None:
        return None
    ranges: list[tuple[int, int]] = []
    for part in m.group(3).split(", "):
        a, _, b = part.partition("\u2013")
        if not a.isdigit() or (b and not b.isdigit()):
            return None
        ranges.append((int(a), int(b or a)))
    total = int(m.group(2))
    if rejected_hunks_sentence(ranges, total) != text.strip():
        return None
    return ranges, total


def with_rejections(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claude Code's transcript with our PostToolUse context (its ``hook_additional_context`` attachments) folded
    back into each tool result's data as ``rejectedHunks``/``totalHunks``: after a resume the changes panel says
    which hunks were rejected, as it does for our own executor."""
    found: dict[str, tuple[list[tuple[int, int]], int]] = {}
    for e in entries:
        att = e.get("attachment") if e.get("type") == "attachment" else None
        if not isinstance(att, dict) or att.get("type") != "hook_additional_context" \
                or att.get("hookEvent") != "PostToolUse" or not isinstance(att.get("toolUseID"), str):
            continue
        for text in att.get("content") or []:
            parsed = parse_rejection(text) if isinstance(text, str) else None
            if parsed is not None:
                found[att["toolUseID"]] = parsed
    if not found:
        return entries
    out: list[dict[str, Any]] = []
    for e in entries:
        content = (e.get("message") or {}).get("content") if isinstance(e.get("message"), dict) else None
        ids = [b.get("tool_use_id") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
            if isinstance(content, list) else []
        data = e.get("toolUseResult")
        if len(ids) == 1 and ids[0] in found and isinstance(data, dict):
            ranges, total = found[ids[0]]
            e = {**e, "toolUseResult": {**data, "rejectedHunks": [[a, b] for a, b in ranges], "totalHunks": total}}
        out.append(e)
    return out


def history(folder: str | os.PathLike[str] | None, session_id: str) -> list[dict[str, Any]] | None:
    """A Claude Code session's transcript for display (with the rejected hunks our hook told its model); None when
    there is none or it cannot be read."""
    path = transcript_path(session_id, os.fspath(folder) if folder is not None else None)
    if not path:
        return None
    try:
        from desktop_agent.session.resume import history_for_display
        from desktop_agent.session.store import read_transcript

        return history_for_display(with_rejections(read_transcript(path, full=True)))
    except Exception:  # a format this version cannot read: no history on screen, the session still resumes
        log.exception("could not read Claude Code's transcript %s", path)
        return None


__all__ = ["EDIT_TOOLS", "POST_EDIT_HOOKS", "POST_EDIT_HOOK_ID", "Rejections", "folder_slug", "history",
           "list_sessions", "narrow_suggestions", "parse_rejection", "projects_root", "settings_model",
           "transcript_path", "with_rejections"]
