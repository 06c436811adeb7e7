"""The Grep tool: content search with ripgrep (SPEC §3.8, App. A "Grep", App. B.1 GrepInput).

Owns ``GrepTool`` and its input model. Builds the rg command line (hidden files searched, VCS
directories and .gitignore'd files skipped — as in rg, a ``glob`` that names an ignored file
overrides the ignore — ``--max-columns 500``), orders files newest modification first (ties by
path) in all three modes, drops every file a Read deny rule covers (``DenyFilter``, in every mode,
before counting and paging; rg also gets exclude globs where a rule translates), paginates with
``head_limit`` (default 250, 0 = unlimited) and ``offset``, and formats the output exactly as
App. A. The stat/grouping work runs on rg's reader thread while rg still searches
(``ripgrep.run_rg``), never on the loop. Concurrency-safe and read-only; the permission is a read
permission on the searched path (a denied one answers with the denied text).
"""

from __future__ import annotations

import asyncio
import os
import stat
from typing import Any, Literal

from pydantic import ConfigDict, Field

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.util.paths import is_inside
from desktop_agent.core.tool import ToolInput, ToolResult, ValidationResult, Tool
from desktop_agent.tools.read.files import special_file_message
from desktop_agent.tools.ripgrep import (DenyFilter, NewestFirst, RipgrepError, deny_exclude_args, rg_argument_problem,
                                         run_rg, split_rel, vcs_exclude_args)

DEFAULT_HEAD_LIMIT = 250
MAX_COLUMNS = 500
CWD_NOTE = "Note: your current working directory is"


class GrepInput(ToolInput):
    model_config = ConfigDict(serialize_by_alias=True)

    pattern: str = Field(description="The regular expression pattern to search for in file contents")
    path: str | None = Field(
        None, description="File or directory to search in (rg PATH). Defaults to current working directory.")
    glob: str | None = Field(
        None, description='Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps to rg --glob')
    type: str | None = Field(
        None, description="File type to search (rg --type). Common types: js, py, rust, go, java, etc. More "
                          "efficient than include for standard file types.")
    output_mode: Literal["content", "files_with_matches", "count"] | None = Field(
        None, description='Output mode: "content" shows matching lines (supports -A/-B/-C context, -n line numbers, '
                          'head_limit), "files_with_matches" shows file paths (supports head_limit), "count" shows '
                          'match counts (supports head_limit). Defaults to "files_with_matches".')
    case_insensitive: bool | None = Field(None, alias="-i", description="Case insensitive search (rg -i)")
    only_matching: bool | None = Field(
        None, alias="-o", description='Show only the matching part of each line (rg -o). Requires output_mode: '
                                      '"content", ignored otherwise.')
    line_numbers: bool | None = Field(
        None, alias="-n", description='Show line numbers in output (rg -n). Requires output_mode: "content", '
                                      'ignored otherwise. Defaults to true.')
    before: int | None = Field(
        None, alias="-B", ge=0, description='Number of lines to show before each match (rg -B). Requires '
                                            'output_mode: "content", ignored otherwise.')
    after: int | None = Field(
        None, alias="-A", ge=0, description='Number of lines to show after each match (rg -A). Requires '
                                            'output_mode: "content", ignored otherwise.')
    around: int | None = Field(None, alias="-C", ge=0, description="Alias for context.")
    context: int | None = Field(
        None, ge=0, description='Number of lines to show before and after each match (rg -C). Requires '
                                'output_mode: "content", ignored otherwise.')
    head_limit: int | None = Field(
        None, ge=0, description='Limit output to first N lines/entries, equivalent to "| head -N". Works across all '
                                'output modes: content (limits output lines), files_with_matches (limits file paths), '
                                'count (limits count entries). Defaults to 250 when unspecified. Pass 0 for unlimited '
                                '(use sparingly — large result sets waste context).')
    offset: int | None = Field(
        None, ge=0, description='Skip first N lines/entries before applying head_limit, equivalent to '
                                '"| tail -n +N | head -N". Works across all output modes. Defaults to 0.')
    multiline: bool | None = Field(
        None, description="Enable multiline mode where . matches newlines and patterns can span lines "
                          "(rg -U --multiline-dotall). Default: false.")


def _glob_args(glob: str | None) -> list[str]:
    """``*.ts,*.tsx`` or ``*.ts *.tsx`` → two globs; a brace pattern is kept whole (as the reference agent)."""
    if not glob:
        return []
    out: list[str] = []
    for raw in glob.split():
        if "{" in raw and "}" in raw:
            out.append(raw)
        else:
            out.extend(p for p in raw.split(",") if p)
    args: list[str] = []
    for g in out:
        args += ["--glob", g]
    return args


def apply_head_limit(items: list[str], limit: int | None, offset: int) -> tuple[list[str], int | None]:
    """The page ``items[offset:offset+limit]`` and the limit that was applied (None when nothing was cut)."""
    if limit == 0:
        return items[offset:], None
    effective = DEFAULT_HEAD_LIMIT if limit is None else limit
    page = items[offset: offset + effective]
    truncated = len(items) - offset > effective
    return page, (effective if truncated else None)


def _page(head: list[str], total: int, limit: int | None, offset: int) -> tuple[list[str], int | None]:
    """``apply_head_limit(items, limit, offset)`` given only ``head = items[:offset + limit]`` (all of them for an
    unlimited page) and ``total = len(items)``."""
    if limit == 0:
        return head[offset:], None
    effective = DEFAULT_HEAD_LIMIT if limit is None else limit
    return head[offset: offset + effective], (effective if total - offset > effective else None)


def pagination_note(applied_limit: int | None, applied_offset: int) -> str:
    """``[Showing results with pagination = limit: <n>, offset: <m>]`` when a page was cut (SPEC §3.8)."""
    if applied_limit is not None:
        return f"[Showing results with pagination = limit: {applied_limit}, offset: {applied_offset}]"
    if applied_offset:
        return f"[Showing results with pagination = offset: {applied_offset}]"
    return ""


class _ContentCollector:
    """Content lines (``path\0:n\0:text``) grouped by file as rg streams them, files newest first.

    rg writes each file's lines together; ``--`` separates context groups, also across files, so it is
    kept only inside a file and put back between files. Runs on ``run_rg``'s worker thread.
    """

    def __init__(self, cwd: str, context: bool, deny: DenyFilter | None = None):
        self.files = NewestFirst(cwd, deny)
        self.blocks: dict[str, list[str]] = {}
        self.hidden: set[str] = set()  # files a Read deny rule covers: their lines are dropped
        self.context = context
        self.current: str | None = None
        self.block: list[str] = []
        self.pending_sep = False
        self.count = 0

    def feed(self, text: str) -> None:
        lines = text.split("\n")
        lines.pop()  # complete lines only: the text ends with a newline
        for line in lines:
            if line == "--":
                self.pending_sep = True
                continue
            cut = line.find("\x00")
            path = line[:cut] if cut >= 0 else ""
            if path in self.hidden:
                self.pending_sep = False
                continue
            if path != self.current:
                block = self.blocks.get(path)
                if block is None:
                    if not self.files.add(path):
                        self.hidden.add(path)
                        self.pending_sep = False
                        continue
                    block = self.blocks[path] = []
                elif self.context:  # pragma: no cover - rg does not interleave files
                    block.append("--")
                self.current, self.block = path, block
            elif self.pending_sep:
                self.block.append("--")
                self.count += 1
            self.pending_sep = False
            self.block.append(line)
            self.count += 1

    def lines(self) -> list[str]:
        out: list[str] = []
        for path in self.files.ordered():
            if self.context and out:
                out.append("--")
            out.extend(self.blocks[path])
        return out

    def head(self, need: int | None) -> tuple[list[str], int]:
        """``lines()[:need]`` (all for None) and ``len(lines())``, ordering only the files the head needs."""
        if need is None:
            every = self.lines()
            return every, len(every)
        total = sum(len(block) for block in self.blocks.values())
        if self.context and self.blocks:
            total += len(self.blocks) - 1
        out: list[str] = []
        for path in self.files.iter_ordered():
            if len(out) >= need:
                break
            if self.context and out:
                out.append("--")
            out.extend(self.blocks[path])
        return out[:need], total


class _CountCollector:
    """``path:count`` lines, files newest first."""

    def __init__(self, cwd: str, deny: DenyFilter | None = None):
        self.files = NewestFirst(cwd, deny)
        self.by_path: dict[str, str] = {}

    def feed(self, text: str) -> None:
        add = self.files.add
        by_path = self.by_path
        for line in text.split("\n"):
            if line:
                path = line.rpartition(":")[0]
                if add(path):
                    by_path[path] = line

    def lines(self) -> list[str]:
        return [self.by_path[p] for p in self.files.ordered()]

    def head(self, need: int | None) -> tuple[list[str], int]:
        """``lines()[:need]`` (all for None) and ``len(lines())``."""
        return [self.by_path[p] for p in self.files.first(need)], len(self.files.keys)


_NO_RESULTS: dict[str, dict[str, Any]] = {
    "content": {"mode": "content", "numFiles": 0, "filenames": [], "content": "", "numLines": 0},
    "count": {"mode": "count", "numFiles": 0, "filenames": [], "content": "", "numMatches": 0},
    "files_with_matches": {"mode": "files_with_matches", "numFiles": 0, "filenames": []},
}

# Below this many results the final ordering is done inline; above it, on a worker thread.
_INLINE_SORT_MAX = 2000


class GrepTool(Tool):
    name = "Grep"
    input_model = GrepInput
    max_result_size_chars = 20_000

    def is_concurrency_safe(self, input: Any) -> bool:
        return True

    def is_read_only(self, input: Any) -> bool:
        return True

    def summary(self, input: dict[str, Any]) -> str:
        pattern = input.get("pattern") if isinstance(input, dict) else None
        path = input.get("path") if isinstance(input, dict) else None
        if isinstance(pattern, str) and isinstance(path, str) and path:
            return f"{pattern} in {path}"
        return pattern if isinstance(pattern, str) else ""

    def _search_path(self, input: GrepInput, ctx: ToolUseContext) -> str:
        return ctx.expand(input.path) if input.path else ctx.cwd

    async def validate_input(self, input: GrepInput, ctx: ToolUseContext) -> ValidationResult:
        for parameter, value in (("pattern", input.pattern), ("glob", input.glob), ("type", input.type),
                                 ("path", input.path)):
            problem = rg_argument_problem(parameter, value)
            if problem is not None:
                return ValidationResult.fail(problem, 3)
        if input.path:
            abs_path = self._search_path(input, ctx)
            if not os.path.exists(abs_path):
                return ValidationResult.fail(f"Path does not exist: {input.path}. {CWD_NOTE} {ctx.cwd}.", 1)
            # rg reads a path it is given even when it is a FIFO or a device (a directory walk skips them).
            mode = os.stat(abs_path).st_mode
            if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
                return ValidationResult.fail(special_file_message(abs_path, mode), 4)
        return ValidationResult.ok()

    def permission_target(self, input: GrepInput, ctx: ToolUseContext) -> PermissionTarget:
        return PermissionTarget(kind="read", path=self._search_path(input, ctx), summary=input.pattern)

    def build_args(self, input: GrepInput, ctx: ToolUseContext) -> tuple[list[str], str]:
        """rg's argv (without the binary) and the output mode."""
        mode = input.output_mode or "files_with_matches"
        # --no-messages: unreadable files and "No files were searched" are not errors; fatal diagnostics
        # (invalid regex, unknown --type) still reach stderr.
        args = ["--no-config", "--no-messages", "--hidden", *vcs_exclude_args(), "--max-columns", str(MAX_COLUMNS)]
        if input.multiline:
            args += ["-U", "--multiline-dotall"]
        if input.case_insensitive:
            args.append("-i")
        if mode == "files_with_matches":
            args.append("-l")
        elif mode == "count":
            args += ["-c", "--with-filename"]
        else:
            if input.line_numbers is not False:
                args.append("-n")
            if input.only_matching:
                args.append("-o")
            ctx_lines = input.context if input.context is not None else input.around
            if ctx_lines is not None:
                args += ["-C", str(ctx_lines)]
            else:
                if input.before is not None:
                    args += ["-B", str(input.before)]
                if input.after is not None:
                    args += ["-A", str(input.after)]
            # Field separators with a NUL in front, so a path can be cut from its line without ambiguity;
            # the NULs are removed from the final text (rg skips binary files: text lines hold no NUL).
            args += ["--field-match-separator", "\\x00:", "--field-context-separator", "\\x00-"]
        if input.type:
            args += ["--type", input.type]
        args += _glob_args(input.glob)
        # Read deny rules: rg skips names holding a newline, and the files the rules' globs express (later
        # globs take precedence over the user's; rg matches globs against paths relative to its cwd, so those
        # only for a search inside it).
        args += deny_exclude_args(ctx, ctx.cwd, rule_globs=is_inside(self._search_path(input, ctx), ctx.cwd))
        args += ["--regexp", input.pattern]
        target = split_rel(self._search_path(input, ctx), ctx.cwd)
        if target:
            args += ["--", target]
        return args, mode

    async def call(self, input: GrepInput, ctx: ToolUseContext) -> ToolResult:
        args, mode = self.build_args(input, ctx)
        cwd = ctx.cwd
        offset = input.offset or 0
        # Results are ordered newest file first. The per-line work (stat, grouping) runs on a worker
        # thread while rg is still searching; a single-file content search needs none.
        # Read deny rules: rg got exclude globs (build_args); this filter is the guarantee (every mode).
        deny = DenyFilter.for_search(ctx, cwd, self._search_path(input, ctx))
        collector: Any = None
        consumer: Any = None
        if mode == "files_with_matches":
            collector = NewestFirst(cwd, deny)
            consumer = collector.add_lines
        elif mode == "count":
            collector = _CountCollector(cwd, deny)
            consumer = collector.feed
        elif not os.path.isfile(self._search_path(input, ctx)):
            uses_context = any(v for v in (input.context, input.around, input.before, input.after))
            collector = _ContentCollector(cwd, uses_context, deny)
            consumer = collector.feed
        elif deny is not None and deny.denied(self._search_path(input, ctx)):
            return ToolResult(data={"mode": "content", "numFiles": 0, "filenames": [], "content": "", "numLines": 0})
        if deny is not None and "\n" in split_rel(self._search_path(input, ctx), cwd) \
                and os.path.isdir(self._search_path(input, ctx)):
            # every path rg prints would hold the newline and reach the filter in pieces: nothing is shown
            return ToolResult(data=dict(_NO_RESULTS[mode]))
        result = await run_rg(args, cwd, consumer=consumer)
        if result.returncode not in (0, 1) and not result.output_bytes and result.diagnostic:
            raise RipgrepError(result.diagnostic)
        # Only the head of the order is needed (offset + head_limit entries), and how many entries there are.
        limit = input.head_limit
        need = None if limit == 0 else offset + (DEFAULT_HEAD_LIMIT if limit is None else limit)
        lines: list[str]
        if collector is None:
            lines = result.stdout.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            total = len(lines)
        else:
            files = collector if mode == "files_with_matches" else collector.files
            head = (lambda n: (collector.first(n), len(collector.keys))) if files is collector else collector.head
            big = len(files.keys) > _INLINE_SORT_MAX
            lines, total = await asyncio.to_thread(head, need) if big else head(need)

        if mode == "content":
            page, applied_limit = _page(lines, total, limit, offset)
            content = "\n".join(page).replace("\x00", "")
            data = {"mode": "content", "numFiles": 0, "filenames": [], "content": content, "numLines": len(page)}
        elif mode == "count":
            page, applied_limit = _page(lines, total, limit, offset)
            total = files = 0
            for line in page:
                _, sep, num = line.rpartition(":")
                if sep and num.isdigit():
                    total += int(num)
                    files += 1
            data = {"mode": "count", "numFiles": files, "filenames": [], "content": "\n".join(page),
                    "numMatches": total}
        else:
            page, applied_limit = _page(lines, total, limit, offset)
            data = {"mode": "files_with_matches", "numFiles": len(page), "filenames": page}
        if applied_limit is not None:
            data["appliedLimit"] = applied_limit
        if offset:
            data["appliedOffset"] = offset
        return ToolResult(data=data)

    def map_result_to_block(self, data: Any, tool_use_id: str) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": format_grep_result(data)}


def format_grep_result(data: dict[str, Any]) -> str:
    """App. A texts: ``Found N files\\n…`` / ``No files found``; content lines / ``No matches found``;
    count lines + ``\\n\\nFound N total occurrences across M files.``"""
    applied_limit = data.get("appliedLimit")
    applied_offset = data.get("appliedOffset", 0)
    note = pagination_note(applied_limit, applied_offset)
    suffix = f"\n\n{note}" if note else ""
    mode = data.get("mode", "files_with_matches")
    if mode == "content":
        return (data.get("content") or "No matches found") + suffix
    if mode == "count":
        matches = data.get("numMatches") or 0
        files = data.get("numFiles") or 0
        summary = (f"\n\nFound {matches} total {'occurrence' if matches == 1 else 'occurrences'} across "
                   f"{files} {'file' if files == 1 else 'files'}.")
        return (data.get("content") or "No matches found") + summary + suffix
    filenames = data.get("filenames") or []
    if not filenames:
        return "No files found" + suffix
    n = len(filenames)
    return f"Found {n} {'file' if n == 1 else 'files'}\n" + "\n".join(filenames) + suffix
