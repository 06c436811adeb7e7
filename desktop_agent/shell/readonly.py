"""Read-only means *proven* read-only (SPEC §3.10, App. B §B.2, issue 12): a real parse, no substitution, no
opaque construct, and every simple command on the read-only list with no option that names a program or a file.
Owns ``simple_command_read_only``, ``is_read_only_command`` and ``is_concurrency_safe_command`` (read-only and no
``cd``, which changes the shell's cwd for later calls).
"""

from __future__ import annotations

from desktop_agent.shell.analysis import Analysis, analyze
from desktop_agent.shell.parse import SimpleCommand, parse_command
from desktop_agent.shell.vocabulary import (DEV_FILES, FIND_UNSAFE, GIT_READ_ONLY, GIT_SAFE_GLOBAL, GIT_UNSAFE_OPTS,
                                            READ_ONLY_COMMANDS, WRAPPERS)
from desktop_agent.shell.words import has_brace, has_glob, long_opt_hits, safe_assignment, short_flag


def _git_read_only(argv: list[str]) -> bool:
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] not in GIT_SAFE_GLOBAL:
            return False  # -c, -C, --git-dir, --exec-path, --work-tree...: not provably read-only
        i += 1
    if i >= len(argv):
        return False
    sub, rest = argv[i], argv[i + 1:]
    if any(long_opt_hits(a, GIT_UNSAFE_OPTS) for a in rest):
        return False
    if any(a.startswith("-O") for a in rest) and sub in ("grep", "log", "diff", "show", "whatchanged"):
        return False  # git grep -O<pager> runs a program; diff -O<orderfile> reads a file
    if sub == "grep" and any(a == "-f" or (a.startswith("-f") and not a.startswith("--")) for a in rest):
        return False
    if sub == "blame" and any(a == "-S" or a.startswith("--contents") for a in rest):
        return False
    if sub == "cat-file" and any(a in ("--filters", "--textconv", "--batch-command") for a in rest):
        return False
    if sub in GIT_READ_ONLY:
        return True
    if sub == "reflog":
        return not rest or rest[0] in ("show", "exists") or (rest[0].startswith("-") and "expire" not in rest
                                                             and "delete" not in rest)
    if sub == "branch":
        return all(a in ("-a", "-r", "-v", "-vv", "--list", "-l", "--show-current", "--all", "--remotes")
                   for a in rest)
    if sub == "remote":
        return all(a in ("-v", "--verbose") for a in rest)
    if sub == "tag":
        return all(a in ("-l", "--list") for a in rest)
    if sub == "config":
        return bool(rest) and rest[0] in ("--get", "--get-all", "--list", "-l") and not any(
            a in ("-f", "--file", "--blob", "--includes") or a.startswith(("--file=", "--blob=")) for a in rest)
    if sub == "stash":
        return bool(rest) and rest[0] in ("list", "show")
    return False


# Read-only commands whose arguments may be built at run time (no argument of theirs names a file or option
# that could run code).
_DYNAMIC_ARGS_OK = frozenset({"echo", "true", "false", "sleep", "basename", "dirname", "pwd", "which", "type",
                              "uname", "whoami", "id"})


def simple_command_read_only(cmd: SimpleCommand) -> bool:
    if any(r.is_output and r.target not in DEV_FILES for r in cmd.redirects):
        return False
    if any(r.dynamic for r in cmd.redirects if r.target is not None):
        return False
    if not all(safe_assignment(a) for a in cmd.assignments):
        return False
    argv = cmd.argv
    if not argv:
        return not cmd.assignments and not any(r.is_output for r in cmd.redirects)
    raw0 = cmd.raw[0] if cmd.raw else argv[0]
    if cmd.dynamic[:1] == [True] or (raw0 not in ("[",) and (has_glob(raw0) or has_brace(raw0))):
        return False
    head = argv[0]
    if head in WRAPPERS:
        return False  # a wrapper runs its arguments: not proven read-only
    if any(cmd.dynamic[1:]) and head not in _DYNAMIC_ARGS_OK:
        return False  # a path or option built at run time
    args = argv[1:]
    if any(long_opt_hits(a, ("--files0-from",)) for a in args):
        return False
    if head == "git":
        return _git_read_only(argv)
    if head not in READ_ONLY_COMMANDS:
        return False
    if head == "find" and any(a in FIND_UNSAFE or a in ("-L", "-follow") for a in args):
        return False
    if head == "rg" and (any(a.startswith(("--pre", "--file", "--follow", "--search-zip", "--ignore-file"))
                             for a in args) or short_flag(args, "fLz")):
        return False
    if head in ("grep", "egrep", "fgrep") and (short_flag(args, "fR") or any(
            a.startswith(("--file", "--dereference-recursive", "--exclude-from")) for a in args)):
        return False
    if head == "tree" and (any(a.startswith("-o") or a == "-l" or a.startswith("--fromfile") for a in args)):
        return False
    if head == "date" and any(a in ("-s", "--set", "-f") or a.startswith(("--set", "--file", "-f"))
                              or (a.startswith("-") and not a.startswith("--") and "f" in a[1:]) for a in args):
        return False
    if head == "du" and (any(a.startswith(("--dereference", "--exclude-from")) for a in args) or
                         short_flag(args, "LX")):
        return False
    if head == "diff" and any(a.startswith(("--from-file", "--to-file", "--exclude-from")) or a == "-X"
                              for a in args):
        return False
    if head == "hostname" and any(not a.startswith("-") for a in args):
        return False
    if head == "file" and any(a in ("-C", "--compile", "-m", "-f") or a.startswith(("--magic-file", "--files-from"))
                              for a in args):
        return False
    if head in ("printf",) and any(a == "-v" or a.startswith("-v") for a in args[:1]):
        return False
    if head in ("test", "[") and any(a in ("-v", "-R") for a in args):
        return False
    return True


def parts_for_approval(an: Analysis) -> list[SimpleCommand]:
    return [*an.parsed.commands, *an.extra_parts] if an.parsed.ok else []


def is_read_only_command(command: str) -> bool:
    """Proven read-only (SPEC §3.10, App. B §B.2, issue 12): a real parse, no substitution or opaque construct,
    and every part on the read-only list with no option that names a program or a file."""
    if not command.strip():
        return False
    try:
        an = analyze(command)
    except RecursionError:
        return False
    if not an.parsed.ok or not an.parsed.commands or an.opaque or an.not_ro:
        return False
    return all(simple_command_read_only(c) and id(c) not in an.part_not_ro for c in parts_for_approval(an))


def is_concurrency_safe_command(command: str) -> bool:
    """Read-only commands may share a batch — except a `cd`, which changes the shell's cwd for later calls and must
    run in order so its context change is applied (the streaming executor applies context modifiers only for unsafe
    tools)."""
    if not is_read_only_command(command):
        return False
    return not any(cmd.argv[:1] == ["cd"] for cmd in parse_command(command).commands)
