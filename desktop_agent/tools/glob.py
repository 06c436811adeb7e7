"""The Glob tool: find files by name pattern (App. A "Glob", App. B.1 GlobInput and notes).

Owns ``GlobTool`` and its input model. Lists files with ``rg --files --glob`` (gitignore-style glob
semantics; hidden files included, VCS directories skipped; .gitignore NOT respected unless
``CLAUDE_CODE_GLOB_NO_IGNORE=false``), drops every path a Read deny rule covers (``DenyFilter``:
the path, its symlink target, or a directory above it; rg also gets exclude globs for the rules it
can express), orders them oldest modification first (ties by path; App. A — Grep is newest first)
in a worker thread, returns at most 100 paths relative to the working directory with the reference
agent's truncation note. Concurrency-safe and read-only; the permission is a read permission on
the searched directory (a denied one answers with the denied text).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic import Field

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.core.tool import Tool, ToolInput, ToolResult, ValidationResult
from desktop_agent.tools.ripgrep import (ByMtime, DenyFilter, RgResult, RipgrepError, deny_exclude_args,
                                         rg_argument_problem, run_rg, sort_by_mtime, split_rel, vcs_exclude_args)

MAX_GLOB_RESULTS = 100
TRUNCATED_NOTE = "(Results are truncated. Consider using a more specific path or pattern.)"
CWD_NOTE = "Note: your current working directory is"
_GLOB_CHARS = set("*?[{")


class GlobInput(ToolInput):
    pattern: str = Field(description="The glob pattern to match files against")
    path: str | None = Field(
        None, description='The directory to search in. If not specified, the current working directory will be used. '
                          'IMPORTANT: Omit this field to use the default directory. DO NOT enter "undefined" or '
                          '"null" - simply omit it for the default behavior. Must be a valid directory path if '
                          'provided.')


def respect_gitignore() -> bool:
    """B.1: Glob does not respect .gitignore by default; ``CLAUDE_CODE_GLOB_NO_IGNORE=false`` turns it on."""
    return os.environ.get("CLAUDE_CODE_GLOB_NO_IGNORE", "").strip().lower() in ("false", "0", "no", "off")


def split_pattern(pattern: str, base: str) -> tuple[str, str]:
    """(directory to search, glob relative to it). An absolute pattern contributes its literal prefix."""
    pattern = pattern.strip()
    if pattern.startswith("~") or pattern.startswith("../") or pattern == "..":
        pattern = os.path.normpath(os.path.join(base, os.path.expanduser(pattern)))
    if os.path.isabs(os.path.expanduser(pattern)):
        parts = os.path.expanduser(pattern).split(os.sep)
        literal: list[str] = []
        for i, part in enumerate(parts[:-1]):
            if any(ch in _GLOB_CHARS for ch in part):
                break
            literal.append(part)
        directory = os.sep.join(literal) or os.sep
        rest = os.sep.join(parts[len(literal):])
        return os.path.normpath(directory), rest
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return base, pattern


def _lines(result: RgResult) -> list[str]:
    if result.returncode not in (0, 1) and not result.stdout and result.diagnostic:
        raise RipgrepError(result.diagnostic)
    paths = result.stdout.split("\n")
    if paths and paths[-1] == "":
        paths.pop()
    return paths


class GlobTool(Tool):
    name = "Glob"
    input_model = GlobInput
    max_result_size_chars = 100_000

    def is_concurrency_safe(self, input: Any) -> bool:
        return True

    def is_read_only(self, input: Any) -> bool:
        return True

    def _base(self, input: GlobInput, ctx: ToolUseContext) -> str:
        return ctx.expand(input.path) if input.path else ctx.cwd

    async def validate_input(self, input: GlobInput, ctx: ToolUseContext) -> ValidationResult:
        for parameter, value in (("pattern", input.pattern), ("path", input.path)):
            problem = rg_argument_problem(parameter, value)
            if problem is not None:
                return ValidationResult.fail(problem, 3)
        if input.path:
            base = self._base(input, ctx)
            if not os.path.exists(base):
                return ValidationResult.fail(f"Directory does not exist: {input.path}. {CWD_NOTE} {ctx.cwd}.", 1)
            if not os.path.isdir(base):
                return ValidationResult.fail(f"Path is not a directory: {input.path}", 2)
        return ValidationResult.ok()

    def permission_target(self, input: GlobInput, ctx: ToolUseContext) -> PermissionTarget:
        directory, _ = split_pattern(input.pattern, self._base(input, ctx))
        return PermissionTarget(kind="read", path=directory, summary=input.pattern)

    async def call(self, input: GlobInput, ctx: ToolUseContext) -> ToolResult:
        directory, glob = split_pattern(input.pattern, self._base(input, ctx))
        if not os.path.isdir(directory):
            return ToolResult(data={"filenames": [], "numFiles": 0, "truncated": False})
        # Read deny rules: rg skips what the globs can express; the filter drops everything they cover.
        deny = DenyFilter.for_search(ctx, directory)
        deny_globs = deny_exclude_args(ctx, directory)
        args = ["--no-config", "--no-messages", "--files", "--hidden"]
        if not respect_gitignore():
            args.append("--no-ignore")
        args += ["--glob", glob or "*", *vcs_exclude_args(), *deny_globs]
        if respect_gitignore():
            # rg's --glob overrides ignore files for the files it matches; keep only what rg lists unfiltered.
            everything_args = ["--no-config", "--no-messages", "--files", "--hidden", *vcs_exclude_args()]
            listed, everything = await asyncio.gather(run_rg(args, directory), run_rg(everything_args, directory))
            allowed = set(_lines(everything))
            paths = [p for p in _lines(listed) if p in allowed]
            ordered = await asyncio.to_thread(sort_by_mtime, paths, directory, False, deny)
        else:
            # Paths are filtered and stat'ed on a worker thread while rg is still listing.
            collector = ByMtime(directory, newest_first=False, deny=deny)
            result = await run_rg(args, directory, consumer=collector.add_lines)
            if result.returncode not in (0, 1) and not result.output_bytes and result.diagnostic:
                raise RipgrepError(result.diagnostic)
            big = len(collector.keys) > 2000
            ordered = await asyncio.to_thread(collector.ordered) if big else collector.ordered()
        truncated = len(ordered) > MAX_GLOB_RESULTS
        ordered = ordered[:MAX_GLOB_RESULTS]
        # rg printed paths relative to ``directory``; the model sees them relative to the working dir.
        rel_dir = split_rel(directory, ctx.cwd)
        if rel_dir:
            ordered = [os.path.join(rel_dir, p) for p in ordered]
        return ToolResult(data={"filenames": ordered, "numFiles": len(ordered), "truncated": truncated})

    def map_result_to_block(self, data: Any, tool_use_id: str) -> dict[str, Any]:
        filenames = data.get("filenames") or []
        if not filenames:
            content = "No files found"
        else:
            content = "\n".join(filenames)
            if data.get("truncated"):
                content += "\n" + TRUNCATED_NOTE
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
