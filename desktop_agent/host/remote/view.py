"""What the phone page shows of a question, and the reply its decision makes — exactly as the desktop dialog does.

``question_view``: the session, the tool, the command (every field of the input), or the file and its whole
structured patch (never truncated), each line highlighted server-side with Pygments as ``[css class, text]``
tokens — the page builds them with ``textContent``, never HTML. ``per_hunk`` is the dialog's rule (Edit and Write
with a patch; Edit only with the original file).

``reply_for``: deny (``User denied via UI`` and the feedback), or allow with only the accepted hunks — the input
that writes them computed with the tools' own code (``tools.edit.partial_edit_input``,
``tools.write.partial_write_input``, as the dialog's ``client.proposals``) and ``rejected_hunks`` (original line
ranges) of ``total_hunks``. Never a lasting permission.
"""

from __future__ import annotations

import json
import os
from typing import Any

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

from desktop_agent.core.permission import PermissionReply
from desktop_agent.host.inbox import PendingQuestion
from desktop_agent.tools.edit import partial_edit_input
from desktop_agent.tools.write import partial_write_input
from desktop_agent.util.diff import hunk_old_range
from desktop_agent.util.invisible import reveal

USER_DENIED = "User denied via UI"  # SPEC: the desktop's deny
HUNK_TOOLS = ("Edit", "Write")
MAX_FEEDBACK = 4000


def _lexer(path: str) -> Lexer:
    try:
        return get_lexer_for_filename(os.path.basename(path), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def _css_class(ttype: Any) -> str:
    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
    return STANDARD_TYPES[ttype]


def highlight_lines(path: str, texts: list[str]) -> list[list[list[str]]]:
    """Per line, ``[[css class, text], …]`` (the lines lexed together so multi-line constructs colour right)."""
    if not texts:
        return []
    out: list[list[list[str]]] = [[]]
    for ttype, value in _lexer(path).get_tokens("\n".join(texts)):
        cls = _css_class(ttype)
        parts = value.split("\n")
        for i, part in enumerate(parts):
            if i:
                out.append([])
            if part:
                out[-1].append([cls, reveal(part)])
    while len(out) < len(texts):
        out.append([])
    return out[:len(texts)]


def per_hunk(question: PendingQuestion) -> bool:
    req = question.request
    return bool(req.structured_patch) and req.tool_name in HUNK_TOOLS and "file_path" in req.input \
        and (req.tool_name == "Write" or req.original_file is not None)


def question_view(question: PendingQuestion) -> dict[str, Any]:
    req = question.request
    view: dict[str, Any] = {
        "session_id": question.session_id, "request_id": req.request_id, "input_sha256": question.input_sha256,
        "session": question.title or question.session_id, "folder": question.folder, "tool": req.tool_name,
        "asked_at": question.asked_at, "message": req.message or req.reason_text, "per_hunk": per_hunk(question),
    }
    command = req.input.get("command")
    if req.tool_name == "Bash" and isinstance(command, str):
        view["command"] = reveal(command)
        view["subcommands"] = [reveal(c) for c in req.subcommands or []]
    view["description"] = reveal(str(req.description or req.input.get("description") or ""))
    # the whole input, always (a command's flags, a read's range…)
    view["input"] = reveal(json.dumps(req.input, indent=2, ensure_ascii=False, sort_keys=True))
    path = req.file_path or req.input.get("file_path") or req.input.get("notebook_path")
    if isinstance(path, str) and path:
        view["file"] = reveal(os.path.relpath(path, question.folder) if question.folder and path.startswith(
            question.folder.rstrip("/") + "/") else path)
    if req.structured_patch:
        hunks = []
        for hunk in req.structured_patch:
            lines = [str(line) for line in hunk.get("lines", [])]
            tokens = highlight_lines(str(path or ""), [line[1:] for line in lines])
            start, end = hunk_old_range(hunk)
            hunks.append({
                "header": f"@@ -{hunk['oldStart']},{hunk['oldLines']} +{hunk['newStart']},{hunk['newLines']} @@",
                "old_range": [start, end],
                "adds": sum(1 for line in lines if line.startswith("+")),
                "dels": sum(1 for line in lines if line.startswith("-")),
                "lines": [{"kind": line[:1] or " ", "tokens": tok} for line, tok in zip(lines, tokens)],
            })
        view["hunks"] = hunks
        view["adds"] = sum(h["adds"] for h in hunks)
        view["dels"] = sum(h["dels"] for h in hunks)
    return view


class BadDecision(ValueError):
    pass


def reply_for(question: PendingQuestion, behavior: str, accepted: str, feedback: str) -> PermissionReply:
    """The reply of the page's decision. ``accepted``: one "1"/"0" per hunk (only with ``per_hunk``), or ""."""
    if len(feedback) > MAX_FEEDBACK:
        raise BadDecision("feedback too long")
    if behavior == "deny":
        if accepted:
            raise BadDecision("a deny has no hunks")
        return PermissionReply(behavior="deny", message=USER_DENIED, feedback=feedback.strip() or None)
    if behavior != "allow":
        raise BadDecision("behavior must be allow or deny")
    req = question.request
    hunks = req.structured_patch or []
    if not accepted:
        return PermissionReply(behavior="allow")
    if not per_hunk(question) or len(accepted) != len(hunks) or set(accepted) - {"0", "1"}:
        raise BadDecision("one decision per hunk")
    decisions = [c == "1" for c in accepted]
    if all(decisions):
        return PermissionReply(behavior="allow")
    if not any(decisions):
        raise BadDecision("every hunk rejected: deny instead")
    if req.tool_name == "Edit":
        updated = partial_edit_input(req.original_file or "", dict(req.input), hunks, decisions)
    else:
        updated = partial_write_input(req.original_file, dict(req.input), hunks, decisions)
    rejected = [hunk_old_range(h) for h, take in zip(hunks, decisions) if not take]
    return PermissionReply(behavior="allow", updated_input=updated, rejected_hunks=rejected, total_hunks=len(hunks))
