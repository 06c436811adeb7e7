"""The one command-line parser of ``desktop-agent``: the reference agent's flags for ``-p`` and the window's flags.

``parse_args(argv) -> Options``; ``Options.headless`` says which front end runs, ``Options.window()`` gives the
window its ``app.options.WindowOptions``. One ``USAGE`` text lists both. A bad flag or flag value raises
``UsageError`` (one line on stderr, exit 2). Imports nothing heavy: ``--version`` and ``--help`` stay fast
(the rule checks of ``--tools``/``--allowedTools``/``--disallowedTools`` load ``permissions`` only when given).
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from desktop_agent.app.options import EXECUTORS, THEMES, WindowOptions

if TYPE_CHECKING:
    from desktop_agent.app.options import Executor, Theme
    from desktop_agent.core.permission import PermissionMode

PROG = "desktop-agent"

# flag → (destination, arity): 0 takes no value, 1 takes one value, LIST takes every value up to the next
# ``-…`` option, as the reference's variadic flags do (``--disallowedTools Edit "Bash(rm *)"`` is two rules;
# ``--flag=value`` is one value; repeating the flag adds more).
LIST = -1
OPTIONAL = 2  # one value when the next argument is not an option (commander's ``[name]``), else none
_FLAGS: dict[str, tuple[str, int]] = {
    "-p": ("print", 0),
    "--print": ("print", 0),
    "--output-format": ("output_format", 1),
    "--input-format": ("input_format", 1),
    "--verbose": ("verbose", 0),
    "--include-partial-messages": ("include_partial", 0),
    "--replay-user-messages": ("replay_user_messages", 0),
    "--model": ("model", 1),
    "--provider": ("provider", 1),
    "--max-turns": ("max_turns", 1),
    "--permission-mode": ("permission_mode", 1),
    "--dangerously-skip-permissions": ("skip_permissions", 0),
    "--tools": ("tools", LIST),
    "--allowedTools": ("allowed_tools", LIST),
    "--allowed-tools": ("allowed_tools", LIST),
    "--disallowedTools": ("disallowed_tools", LIST),
    "--disallowed-tools": ("disallowed_tools", LIST),
    "--settings": ("settings", 1),
    "--add-dir": ("add_dirs", LIST),
    "--mcp-config": ("mcp_config", LIST),
    "--betas": ("betas", LIST),
    "--system-prompt": ("system_prompt", 1),
    "--append-system-prompt": ("append_system_prompt", 1),
    "--session-id": ("session_id", 1),
    "--resume": ("resume", 1),
    "-r": ("resume", 1),
    "--continue": ("continue_latest", 0),
    "-c": ("continue_latest", 0),
    "--permission-prompt-tool": ("permission_prompt_tool", 1),
    "--trust": ("trust", 0),
    "--await-initialize": ("await_initialize", 0),
    "--worktree": ("worktree", OPTIONAL),
    "-w": ("worktree", OPTIONAL),
    "--version": ("version", 0),
    "-v": ("version", 0),
    "--help": ("help", 0),
    "-h": ("help", 0),
    # the window's
    "--demo": ("demo", 0),
    "--theme": ("theme", 1),
    "--executor": ("executor", 1),
    "--claude-path": ("claude_path", 1),
}
# The flags the window understands (the rest need -p); those only it understands are ignored with -p.
WINDOW_FLAGS = frozenset({"--demo", "--theme", "--executor", "--claude-path", "--resume", "-r", "--permission-mode",
                          "--dangerously-skip-permissions"})
WINDOW_ONLY_FLAGS = frozenset({"--demo", "--theme", "--executor", "--claude-path"})
# List flags we parse (so their values never become the prompt) but do not act on: reported as ignored.
_IGNORED_LISTS = ("--betas",)
# Flags of the reference agent that take no value: ignored without swallowing the next argument.
_UNKNOWN_BOOLEAN = {
    "--fork-session", "--strict-mcp-config", "--include-hook-events", "--session-mirror", "--debug", "--ide",
    "--bare", "--no-session-persistence", "--mcp-debug", "--exclude-dynamic-sections",
    "--managed-settings-in-initialize",
}
OUTPUT_FORMATS = ("text", "json", "stream-json")
INPUT_FORMATS = ("text", "stream-json")
PROVIDERS = ("anthropic", "openai")
MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")

USAGE = f"""Usage: {PROG} [FOLDER]            open the desktop window
       {PROG} --demo               open the offline tour (no API key needed)
       {PROG} -p [options] PROMPT  run one prompt headless
       {PROG} host [--status|--stop]
                                   the background host that keeps sessions running when the
                                   window closes (see {PROG} host --help)

Options (window):
  --demo                            the offline tour on a sample project
  --resume SESSION_ID               resume a session of FOLDER
  --theme system|light|dark
  --permission-mode MODE            the window's permission mode; bypassPermissions (also
  --dangerously-skip-permissions    --dangerously-skip-permissions) asks for confirmation first
  --executor inprocess|process|claude
                                    where sessions run: in this window, in a separate process, or
                                    with Claude Code (default: Settings' Run sessions)
  --claude-path PATH                Claude Code's binary (--executor claude)

Options (headless):
  -p, --print                       print the response and exit
  --output-format text|json|stream-json
  --input-format text|stream-json
  --verbose, --include-partial-messages, --replay-user-messages
  --model MODEL, --max-turns N
  --permission-mode default|acceptEdits|plan|bypassPermissions|dontAsk
  --dangerously-skip-permissions
  --provider anthropic|openai      the model API (openai: any chat-completions server, with
                                    OPENAI_BASE_URL / OPENAI_API_KEY; or DESKTOP_AGENT_PROVIDER)
  --mcp-config FILE|JSON...         MCP servers ({{"mcpServers": {{...}}}}), with .mcp.json, settings
  --tools A,B...  --allowedTools RULE...  --disallowedTools RULE...  --add-dir DIR...
                                    list flags take every value up to the next option:
                                    put the prompt first, or after --
  --settings FILE|JSON  --system-prompt TEXT  --append-system-prompt TEXT
  --session-id ID  --resume ID  --continue
  --permission-prompt-tool stdio    ask permissions through control requests on stdio
  --trust                           treat the folder as trusted for this run
  --await-initialize                with stream-json input: read the host's initialize request
                                    (its mcpServers, settings, disallowedTools) before starting
  -w, --worktree [NAME]             run in a new git worktree of the folder (branch agent/NAME,
                                    NAME generated when omitted; an existing one of ours is reused)
  --version
"""


class UsageError(Exception):
    """A bad flag or flag value: one line on stderr, exit 2."""


def eprint(message: str) -> None:
    """One line on stderr, prefixed with the command's name (usage errors, warnings, ``-p``'s errors)."""
    sys.stderr.write(f"{PROG}: {message}\n")
    sys.stderr.flush()


@dataclass
class Options:
    print: bool = False
    output_format: str | None = None
    input_format: str = "text"
    verbose: bool = False
    include_partial: bool = False
    replay_user_messages: bool = False
    model: str | None = None
    provider: str | None = None
    max_turns: int | None = None
    permission_mode: str | None = None
    skip_permissions: bool = False
    tools: list[str] | None = None
    allowed_tools: list[str] = field(default_factory=list)
    disallowed_tools: list[str] = field(default_factory=list)
    settings: str | None = None
    add_dirs: list[str] = field(default_factory=list)
    mcp_config: list[str] = field(default_factory=list)
    betas: list[str] = field(default_factory=list)
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    session_id: str | None = None
    resume: str | None = None
    continue_latest: bool = False
    permission_prompt_tool: str | None = None
    trust: bool = False
    await_initialize: bool = False
    worktree: str | None = None  # "" for --worktree without a name
    version: bool = False
    help: bool = False
    demo: bool = False
    theme: str | None = None
    executor: str | None = None
    claude_path: str | None = None
    positionals: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # the known flags given, as spelled, in order

    @property
    def headless(self) -> bool:
        return self.print or self.input_format == "stream-json" or self.output_format is not None

    @property
    def out_format(self) -> str:
        return self.output_format or "text"

    def window_only(self) -> list[str]:
        """The window's own flags given (``-p`` ignores them), once each."""
        return [f for f in dict.fromkeys(self.flags) if f in WINDOW_ONLY_FLAGS]

    def window(self) -> WindowOptions:
        """The window's options; ``UsageError`` for what only ``-p`` understands or a second FOLDER."""
        for flag in self.unknown + self.flags:
            if flag not in WINDOW_FLAGS:
                raise UsageError(f"option '{flag}' needs -p (the window takes [FOLDER] and the window options; "
                                 f"see --help)")
        if len(self.positionals) > 1:
            raise UsageError(f"the window takes one FOLDER (got {len(self.positionals)} arguments)")
        return WindowOptions(
            folder=self.positionals[0] if self.positionals else None, demo=self.demo, resume=self.resume,
            theme=cast("Theme | None", self.theme),
            permission_mode=cast("PermissionMode | None", self.permission_mode),
            executor=cast("Executor | None", self.executor), claude_path=self.claude_path)


def _is_option(arg: str) -> bool:
    """Where a list flag's values end (commander's ``maybeOption``): ``-x``, ``--x``, ``--``; not ``-`` or ``""``."""
    return len(arg) > 1 and arg[0] == "-"


def parse_args(argv: list[str]) -> Options:
    opts = Options()
    raw: dict[str, Any] = {}
    i = 0
    only_positionals = False
    while i < len(argv):
        arg = argv[i]
        i += 1
        if only_positionals or not arg.startswith("-") or arg == "-":
            opts.positionals.append(arg)
            continue
        if arg == "--":
            only_positionals = True
            continue
        name, eq, inline = arg.partition("=")
        spec = _FLAGS.get(name)
        if spec is None:
            opts.unknown.append(name)
            if not eq and name.startswith("--") and name not in _UNKNOWN_BOOLEAN and i < len(argv) \
                    and not argv[i].startswith("-"):
                i += 1  # its value
            continue
        opts.flags.append(name)
        dest, arity = spec
        if arity == LIST:
            values = raw.setdefault(dest, [])
            raw.setdefault("_flag_" + dest, name)  # the spelling used, for error messages
            if eq:
                values.append(inline)
            else:
                if i >= len(argv) or _is_option(argv[i]):
                    raise UsageError(f"option '{name}' needs a value")
                while i < len(argv) and not _is_option(argv[i]):
                    values.append(argv[i])
                    i += 1
            if name in _IGNORED_LISTS and name not in opts.unknown:
                opts.unknown.append(name)
        elif arity == OPTIONAL:
            if eq:
                raw[dest] = inline
            elif i < len(argv) and argv[i] and not argv[i].startswith("-"):
                raw[dest] = argv[i]
                i += 1
            else:
                raw[dest] = ""
        elif arity == 1:
            if eq:
                value = inline
            elif i < len(argv) and (not argv[i].startswith("-") or argv[i] == "" or argv[i] == "-"):
                value = argv[i]
                i += 1
            elif dest in ("system_prompt", "append_system_prompt") and i < len(argv):
                value = argv[i]
                i += 1
            else:
                raise UsageError(f"option '{name}' needs a value")
            raw[dest] = value
        else:
            if eq:
                raise UsageError(f"option '{name}' takes no value")
            raw[dest] = True

    for dest, value in raw.items():
        if not dest.startswith("_flag_"):
            setattr(opts, dest, value)
    _check_values(opts, raw)
    _rule_lists(opts, raw)
    if opts.permission_prompt_tool is not None and opts.permission_prompt_tool != "stdio":
        raise UsageError(f"--permission-prompt-tool supports only 'stdio' (got '{opts.permission_prompt_tool}')")
    if opts.resume is not None and not opts.resume.strip():
        raise UsageError("--resume needs a session ID")
    if opts.session_id is not None:
        try:
            uuid.UUID(opts.session_id)
        except ValueError:
            raise UsageError(f"--session-id must be a valid UUID (got '{opts.session_id}')") from None
        if opts.resume or opts.continue_latest:
            raise UsageError("--session-id cannot be used with --resume or --continue")
    if opts.worktree:
        from desktop_agent.session.worktrees import WorktreeError, check_name

        try:
            check_name(opts.worktree)
        except WorktreeError as exc:
            raise UsageError(f"--worktree: {exc}") from None
    if opts.input_format == "stream-json" and opts.out_format != "stream-json":
        raise UsageError("--input-format=stream-json requires --output-format=stream-json")
    return opts


def _check_values(opts: Options, raw: dict[str, Any]) -> None:
    """The closed sets and numbers: ``--output-format``, ``--input-format``, ``--max-turns``, ``--provider``,
    ``--permission-mode`` (``manual`` is ``default``; ``--dangerously-skip-permissions`` is bypass), and the
    window's ``--theme`` and ``--executor``."""
    if opts.output_format is not None and opts.output_format not in OUTPUT_FORMATS:
        raise UsageError(f"--output-format must be one of {', '.join(OUTPUT_FORMATS)} (got '{opts.output_format}')")
    if opts.input_format not in INPUT_FORMATS:
        raise UsageError(f"--input-format must be one of {', '.join(INPUT_FORMATS)} (got '{opts.input_format}')")
    if "max_turns" in raw:
        try:
            opts.max_turns = int(raw["max_turns"])
        except ValueError:
            raise UsageError(f"--max-turns must be a positive integer (got '{raw['max_turns']}')") from None
        if opts.max_turns < 1:
            raise UsageError(f"--max-turns must be a positive integer (got '{raw['max_turns']}')")
    if opts.permission_mode == "manual":
        opts.permission_mode = "default"
    if opts.provider is not None and opts.provider not in PROVIDERS:
        raise UsageError(f"--provider must be one of {', '.join(PROVIDERS)} (got '{opts.provider}')")
    if opts.permission_mode is not None and opts.permission_mode not in MODES:
        raise UsageError(f"--permission-mode must be one of {', '.join(MODES)} (got '{opts.permission_mode}')")
    if opts.skip_permissions:
        opts.permission_mode = "bypassPermissions"
    if opts.theme is not None and opts.theme not in THEMES:
        raise UsageError(f"--theme must be one of {', '.join(THEMES)} (got '{opts.theme}')")
    if opts.executor is not None and opts.executor not in EXECUTORS:
        raise UsageError(f"--executor must be one of {', '.join(EXECUTORS)} (got '{opts.executor}')")


_LIST_FLAG_NAMES = {"tools": "--tools", "allowed_tools": "--allowedTools", "disallowed_tools": "--disallowedTools"}


def _rule_lists(opts: Options, raw: dict[str, Any]) -> None:
    """``--tools`` / ``--allowedTools`` / ``--disallowedTools`` values → names and rules (commas and spaces
    outside parentheses also separate them). A value that is not a valid rule or tool name stops the CLI
    (exit 2) naming it: a rule is never dropped, and a prompt after a list flag is never taken silently."""
    if not any(k in raw for k in _LIST_FLAG_NAMES):
        return
    for dest, flag in _LIST_FLAG_NAMES.items():
        if dest not in raw:
            continue
        flag = raw.get("_flag_" + dest, flag)
        values = list(raw[dest])
        if dest == "tools" and [v.strip() for v in values] == ["default"]:
            opts.tools = None
            continue
        setattr(opts, dest, checked_rules(flag, values, tool_name_only=dest == "tools"))


def checked_rules(flag: str, values: list[str], *, tool_name_only: bool = False, hint: bool = True) -> list[str]:
    """A rule list flag's values (or ``initialize``'s ``disallowedTools``) → rules; ``UsageError`` naming the first
    value that is not a valid rule (or tool name): a rule is never dropped."""
    from desktop_agent.permissions.rules import split_rule_list
    from desktop_agent.permissions.settings import rule_problem

    items = split_rule_list(values)
    for item in items:
        problem = rule_problem(item, tool_name_only=tool_name_only)
        if problem:
            what = "tool name" if tool_name_only else "permission rule"
            tail = (f" {flag} takes every value up to the next option: put the prompt before it, or after '--'"
                    if hint else "")
            raise UsageError(f"{flag}: {item!r} is not a valid {what} ({problem}).{tail}")
    return items
