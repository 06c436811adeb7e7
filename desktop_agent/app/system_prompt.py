"""The system prompt: who the agent is, how to use the tools, the environment, and memory files.

``build_system_prompt`` returns the ``system`` blocks of every request of a session:
1. the main text (``desktop_agent/prompts/system.md``, or ``--system-prompt``), then an appended
   text (``--append-system-prompt``) if any;
2. the environment block: working dir and additional dirs, git repo or not, platform, OS version,
   today's date, the model, and a git status summary (branch, main branch, short status, recent
   commits) taken once at the start of the session — like the reference agent's ``gitStatus``;
3. the memory files, in the reference agent's order and wording: the user's
   ``~/.claude/CLAUDE.md`` (``CLAUDE_CONFIG_DIR`` respected), then from the filesystem root down
   to the working dir each directory's ``CLAUDE.md``, ``.claude/CLAUDE.md``, ``AGENTS.md`` and
   ``CLAUDE.local.md`` (closer files come later and so take precedence). ``@path`` lines import
   another file (relative to the file, ``~`` expanded, 5 levels deep, no cycles).

The blocks are stable for a session, so the client's cache breakpoint on the last system block
makes them a cheap prompt-cache hit from the second request on. Git runs as an asyncio
subprocess with a timeout (never on the UI thread's critical path).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import os
import platform
import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from desktop_agent.util import dirs
from desktop_agent.util.git_env import git_safety_env

MAX_MEMORY_FILE_CHARS = 40_000
MAX_STATUS_CHARS = 2_000
MAX_IMPORT_DEPTH = 5
GIT_TIMEOUT_S = 3.0

MEMORY_HEADER = (
    "Codebase and user instructions are shown below. Be sure to adhere to these instructions. "
    "IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written."
)


@cache
def default_prompt_text() -> str:
    return resources.files("desktop_agent").joinpath("prompts", "system.md").read_text("utf-8").strip()


@dataclass
class MemoryFile:
    path: str
    kind: str  # user, project, local
    content: str

    @property
    def label(self) -> str:
        return {
            "user": "user's private global instructions for all projects",
            "project": "project instructions, checked into the codebase",
            "local": "user's private project instructions, not checked in",
        }[self.kind]


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(MAX_MEMORY_FILE_CHARS + 1)
    except OSError:
        return None


def _expand_imports(text: str, base_dir: str, seen: set[str], depth: int) -> str:
    """Replace ``@path`` lines (outside code fences) with that file's contents."""
    if depth >= MAX_IMPORT_DEPTH or "@" not in text:
        return text
    out: list[str] = []
    fenced = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
        if not fenced and stripped.startswith("@") and len(stripped) > 1 and " " not in stripped:
            target = os.path.expanduser(stripped[1:])
            if not os.path.isabs(target):
                target = os.path.join(base_dir, target)
            target = os.path.normpath(target)
            if target not in seen and os.path.isfile(target):
                content = _read_text(target)
                if content is not None:
                    seen.add(target)
                    out.append(_expand_imports(content.rstrip("\n"), os.path.dirname(target), seen, depth + 1))
                    continue
        out.append(line)
    return "\n".join(out)


def _memory(path: str, kind: str, seen: set[str]) -> MemoryFile | None:
    path = os.path.normpath(path)
    if path in seen or not os.path.isfile(path):
        return None
    content = _read_text(path)
    if content is None or not content.strip():
        return None
    seen.add(path)
    if len(content) > MAX_MEMORY_FILE_CHARS:
        content = content[:MAX_MEMORY_FILE_CHARS] + "\n… (truncated: the file is over 40,000 characters)"
    content = _expand_imports(content, os.path.dirname(path), seen, 0)
    return MemoryFile(path=path, kind=kind, content=content.strip())


def find_memory_files(cwd: str, include_user: bool = True) -> list[MemoryFile]:
    """The memory files that apply to ``cwd``, lowest precedence first."""
    seen: set[str] = set()
    found: list[MemoryFile] = []
    if include_user:
        user = _memory(os.path.join(dirs.claude_config_dir(), "CLAUDE.md"), "user", seen)
        if user:
            found.append(user)
    cwd = os.path.abspath(cwd)
    chain = []
    d = cwd
    while True:
        chain.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    for directory in reversed(chain):  # root first, cwd last
        for name, kind in (("CLAUDE.md", "project"), (os.path.join(".claude", "CLAUDE.md"), "project"),
                           ("AGENTS.md", "project"), ("CLAUDE.local.md", "local")):
            mem = _memory(os.path.join(directory, name), kind, seen)
            if mem:
                found.append(mem)
    return found


def format_memory(files: list[MemoryFile]) -> str:
    if not files:
        return ""
    parts = [MEMORY_HEADER]
    for f in files:
        parts.append(f"Contents of {f.path} ({f.label}):\n\n{f.content}")
    return "\n\n".join(parts)


async def _git(cwd: str, *args: str) -> str | None:
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", *args, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            stdin=asyncio.subprocess.DEVNULL,
            # a cloned repository's config must not start programs (core.fsmonitor...) before anyone trusted it
            env=git_safety_env({**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}),
        )
    except OSError:
        return None
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), GIT_TIMEOUT_S)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        return None
    if proc.returncode != 0:
        return None
    return out.decode("utf-8", "replace").strip()


async def git_status_summary(cwd: str) -> str | None:
    """The reference agent's ``gitStatus`` text, or None outside a git work tree."""
    inside = await _git(cwd, "rev-parse", "--is-inside-work-tree")
    if inside != "true":
        return None
    branch, status, log, main = await asyncio.gather(
        _git(cwd, "branch", "--show-current"),
        _git(cwd, "status", "--short"),
        _git(cwd, "log", "--oneline", "-n", "5"),
        _git(cwd, "rev-parse", "--abbrev-ref", "origin/HEAD"),
    )
    main_branch = (main or "").removeprefix("origin/") or "main"
    status = status or "(clean)"
    if len(status) > MAX_STATUS_CHARS:
        status = status[:MAX_STATUS_CHARS] + (
            "\n... (truncated because it exceeds 2k characters. If you need more information, run "
            "\"git status\" using Bash)")
    return (
        "gitStatus: This is the git status at the start of the conversation. Note that this status is a "
        "snapshot in time, and will not update during the conversation.\n"
        f"Current branch: {branch or '(detached HEAD)'}\n\n"
        f"Main branch (you will usually use this for PRs): {main_branch}\n\n"
        f"Status:\n{status}\n\n"
        f"Recent commits:\n{log or '(no commits yet)'}"
    )


def environment_text(cwd: str, *, model: str | None, additional_dirs: list[str] | None, is_git: bool,
                     git_summary: str | None, today: _dt.date | None = None) -> str:
    today = today or _dt.date.today()
    lines = [
        "Here is useful information about the environment you are running in:",
        "<env>",
        f"Working directory: {cwd}",
    ]
    if additional_dirs:
        lines.append(f"Additional working directories: {', '.join(additional_dirs)}")
    lines += [
        f"Is directory a git repo: {'Yes' if is_git else 'No'}",
        f"Platform: {sys.platform}",
        f"OS Version: {platform.system()} {platform.release()}",
        f"Today's date: {today.isoformat()}",
        "</env>",
    ]
    if model:
        lines.append(f"You are powered by the model {model}.")
    text = "\n".join(lines)
    if git_summary:
        text += "\n\n" + git_summary
    return text


async def build_system_prompt(
    cwd: str,
    *,
    model: str | None = None,
    custom_prompt: str | None = None,
    append_prompt: str | None = None,
    additional_dirs: list[str] | None = None,
    include_memory: bool = True,
    include_git: bool = True,
    today: _dt.date | None = None,
) -> list[dict[str, Any]]:
    """The system blocks for a session in ``cwd`` (see the module docstring for the order).

    ``custom_prompt`` replaces the main text only (``--system-prompt ""``, as the SDK sends, drops it);
    the environment and memory blocks stay, since the model needs them to work in the folder."""
    cwd = os.path.abspath(cwd)
    main = default_prompt_text() if custom_prompt is None else custom_prompt
    blocks: list[dict[str, Any]] = []
    if main.strip():
        blocks.append({"type": "text", "text": main})
    if append_prompt:
        blocks.append({"type": "text", "text": append_prompt})
    git_summary = await git_status_summary(cwd) if include_git else None
    blocks.append({"type": "text", "text": environment_text(
        cwd, model=model, additional_dirs=additional_dirs, is_git=git_summary is not None,
        git_summary=git_summary, today=today)})
    if include_memory:
        memory = format_memory(find_memory_files(cwd))
        if memory:
            blocks.append({"type": "text", "text": memory})
    return blocks
