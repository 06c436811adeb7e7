"""The paths a command's arguments name: ``extract_paths`` ((path, "read" / "write" / "cd") for the commands we
know), ``git_paths`` (pathspecs, ``-C``, ``REV:path``), ``recursive_targets`` (the directories a recursive reader
walks), and how the shell turns a word into paths on the disk (``resolve_word``, ``glob_expand``, ``git_root``).
"""

from __future__ import annotations

import glob as globmod
import os
import re

from desktop_agent.shell.vocabulary import SHELLS
from desktop_agent.shell.words import command_name_base, long_opt_hits, short_flag


def _non_options(args: list[str]) -> list[str]:
    out, ended = [], False
    for a in args:
        if not ended and a == "--":
            ended = True
        elif ended or not a.startswith("-") or a == "-":
            if a != "-":
                out.append(a)
    return out


def _grep_paths(args: list[str]) -> list[str]:
    has_pattern_opt = any(a in ("-e", "-f", "--regexp", "--file") or a.startswith(("--regexp=", "--file="))
                          for a in args)
    value_opts = {"-e", "-f", "-A", "-B", "-C", "-m", "--regexp", "--file", "-g", "--glob", "-t", "--type",
                  "--max-count", "-d", "-D", "--include", "--exclude", "-T", "--exclude-dir", "--pre",
                  "--ignore-file", "--exclude-from", "-M", "--max-columns", "-j", "--threads", "-E", "--encoding",
                  "--type-add", "--sort", "--sortr", "--color", "--colors", "--context-separator"}
    out: list[str] = []
    skip = False
    pattern_seen = has_pattern_opt
    ended = False
    for a in args:
        if skip:
            skip = False
            continue
        if not ended and a == "--":
            ended = True
            continue
        if not ended and a in value_opts:
            skip = True
            continue
        if not ended and a.startswith("-") and a != "-":
            continue
        if not pattern_seen:
            pattern_seen = True
            continue
        out.append(a)
    return out


_READERS = frozenset({
    "ls", "cat", "head", "tail", "wc", "stat", "du", "file", "tree", "less", "more", "diff", "nl", "realpath",
    "readlink", "cmp", "md5sum", "sha1sum", "sha256sum", "sha512sum", "cksum", "b2sum", "strings", "od", "hexdump",
    "xxd", "tac", "rev", "sort", "uniq", "cut", "paste", "base64", "base32", "column", "fold", "fmt", "expand",
    "unexpand", "comm", "join", "iconv", "zcat", "bzcat", "xzcat", "zless", "jq", "yq", "bat", "view", "look",
    "source", ".", "tr", "pr", "split", "csplit", "shuf", "sum", "lsattr", "getfacl", "cat-file",
})


# options naming a file that is read, for any command
_FILE_OPTS_READ = ("--files0-from", "--from-file", "--to-file", "--file", "--exclude-from", "--ignore-file",
                   "--reference", "--rcfile", "--init-file", "--orderfile", "--contents", "--pathspec-from-file",
                   "--magic-file", "--files-from", "--fromfile", "--arg-file")


def extract_paths(argv: list[str]) -> list[tuple[str, str]]:
    """(path, op) for the commands we know; op is "read", "write" or "cd"."""
    if not argv:
        return []
    head, args = command_name_base(argv[0]), argv[1:]
    out: list[tuple[str, str]] = []
    for i, a in enumerate(args):  # options that name a file, whatever the command
        for opt in _FILE_OPTS_READ:
            if a == opt and i + 1 < len(args):
                out.append((args[i + 1], "read"))
            elif a.startswith(opt + "="):
                out.append((a.split("=", 1)[1], "read"))
        if a == "--target-directory" and i + 1 < len(args):
            out.append((args[i + 1], "write"))
        elif a.startswith("--target-directory="):
            out.append((a.split("=", 1)[1], "write"))
        if head in ("cp", "mv", "install", "ln") and a.startswith("-t") and not a.startswith("--"):
            target = a[2:] or (args[i + 1] if i + 1 < len(args) else "")
            if target:
                out.append((target, "write"))
        if head in ("date",) and a[:2] in ("-f", "-r") and not a.startswith("--"):
            target = a[2:] or (args[i + 1] if i + 1 < len(args) else "")
            if target:
                out.append((target, "read"))
        if head in ("grep", "egrep", "fgrep", "rg") and a.startswith("-f") and not a.startswith("--"):
            target = a[2:] or (args[i + 1] if i + 1 < len(args) else "")
            if target:
                out.append((target, "read"))
        if head == "dd" and a.startswith(("if=", "of=")):
            out.append((a[3:], "read" if a.startswith("if=") else "write"))
    if head in ("cd", "pushd"):
        operands = _non_options(args)
        return [(operands[0] if operands else "~", "cd")]
    if head in _READERS:
        return out + [(p, "read") for p in _non_options(args)]
    if head in ("grep", "egrep", "fgrep", "rg", "ag", "ack"):
        return out + [(p, "read") for p in _grep_paths(args)]
    if head in SHELLS:
        files = [a for a in args if not a.startswith(("-", "+"))]
        return out + ([(files[0], "read")] if files and not any(a.startswith("-") and "c" in a for a in args) else [])
    if head == "find":
        i = 0
        while i < len(args) and args[i] in ("-H", "-L", "-P", "-D") or (i < len(args) and args[i].startswith("-O")):
            i += 2 if args[i] == "-D" else 1
        found = []
        for a in args[i:]:
            if a.startswith("-") or a in ("(", "!", ")"):
                break
            found.append((a, "read"))
        return out + (found or [(".", "read")])
    if head in ("touch", "mkdir", "rm", "rmdir", "tee", "mv", "shred", "truncate", "unlink"):
        return out + [(p, "write") for p in _non_options(args)]
    if head in ("cp", "ln", "install", "rsync"):
        ps = _non_options(args)
        if any(op == "write" for _p, op in out):  # -t DIR: every operand is a source
            return out + [(p, "read") for p in ps if not any(p == w for w, _o in out)]
        return out + [(p, "read") for p in ps[:-1]] + [(p, "write") for p in ps[-1:]]
    if head in ("chmod", "chown", "chgrp"):
        return out + [(p, "write") for p in _non_options(args)[1:]]
    if head == "sed":
        inplace = any(a == "-i" or a.startswith("-i") or a.startswith("--in-place") for a in args)
        ps = _non_options(args)
        has_script_opt = any(a in ("-e", "-f") for a in args)
        files = ps if has_script_opt else ps[1:]
        return out + [(p, "write" if inplace else "read") for p in files]
    return out


def git_paths(argv: list[str]) -> tuple[str | None, list[tuple[str, str]]]:
    """git: (the -C directory or None, [(path, op)]): every operand may be a pathspec, and ``REV:path`` reads
    ``path`` (relative to the repository root; ``REV:./path`` to the current directory) — op "gitroot"."""
    i, cdir = 1, None
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "-C" and i + 1 < len(argv):
            cdir = argv[i + 1]
            i += 1
        elif argv[i] in ("-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path"):
            i += 1
        i += 1
    out: list[tuple[str, str]] = []
    if i >= len(argv):
        return cdir, out
    for a in argv[i + 1:]:
        if a.startswith("-"):
            if "=" in a and long_opt_hits(a, _FILE_OPTS_READ + ("--output",)):
                out.append((a.split("=", 1)[1], "write" if a.startswith("--out") else "read"))
            continue
        out.append((a, "read"))
        if ":" in a and not a.startswith(":/"):
            rest = a.split(":", 1)[1]
            if rest:
                out.append((rest, "read" if rest.startswith(("./", "../")) else "gitroot"))
        elif a.startswith(":/") and len(a) > 2:
            out.append((a[2:], "gitroot"))
    return cdir, out


def recursive_targets(argv: list[str]) -> list[str]:
    """The directories a recursive reader walks (``grep -r``, ``rg``, ``find``, ``ls -R``, ``git grep``...)."""
    if not argv:
        return []
    head, args = command_name_base(argv[0]), argv[1:]
    if head in ("grep", "egrep", "fgrep"):
        rec = short_flag(args, "rR") or any(a.startswith(("--recursive", "--dereference-recursive",
                                                           "--directories=recurse", "-drecurse")) for a in args) \
            or ("-d" in args and "recurse" in args)
        return (_grep_paths(args) or ["."]) if rec else []
    if head in ("rg", "ag", "ack"):
        return _grep_paths(args) or ["."]
    if head == "find":
        return [p for p, _op in extract_paths(argv) if _op == "read"]
    if head == "ls" and (short_flag(args, "R") or "--recursive" in args):
        return _non_options(args) or ["."]
    if head in ("tree", "du"):
        return _non_options(args) or ["."]
    if head == "diff" and (short_flag(args, "r") or "--recursive" in args):
        return _non_options(args)
    if head in ("cp", "rsync", "scp") and (short_flag(args, "rRa") or "--recursive" in args or "--archive" in args):
        return [p for p, op in extract_paths(argv) if op == "read"] or _non_options(args)
    if head in ("tar", "zip", "7z", "7za", "cpio", "pax", "bsdtar", "gtar"):
        return _non_options(args)  # archivers read their operands recursively (an archive file is not walked)
    if head == "git":
        j = 1
        while j < len(argv) and argv[j].startswith("-"):
            j += 2 if argv[j] in ("-C", "-c", "--git-dir", "--work-tree") else 1
        sub, rest = (argv[j], argv[j + 1:]) if j < len(argv) else ("", [])
        if sub == "grep":
            return ["."]
        if _git_shows_content(sub, rest) and "--" not in rest:
            return [":gitroot"]  # file contents from anywhere in the repository (and its history)
    return []


_GIT_NAMES_ONLY = frozenset({"--stat", "--name-only", "--name-status", "--shortstat", "--numstat", "--no-patch",
                             "-s", "--summary", "--dirstat", "--raw", "--quiet", "--exit-code"})


def _git_shows_content(sub: str, rest: list[str]) -> bool:
    """``git log -p``, ``git show``, ``git diff``, ``git cat-file``, ``git archive``...: contents of files that
    no pathspec names (a Read deny rule cannot be checked against them)."""
    if any(a in _GIT_NAMES_ONLY for a in rest):
        return False
    if sub in ("log", "whatchanged", "reflog"):
        return any(a in ("-p", "-u", "--patch", "-L", "--full-diff", "--cc", "-c") or a.startswith(("-L", "--patch"))
                   for a in rest)
    if sub == "stash":
        return bool(rest) and rest[0] == "show" and any(a in ("-p", "-u", "--patch") for a in rest)
    return sub in ("show", "diff", "cat-file", "archive", "format-patch", "bundle", "fast-export", "blame",
                   "difftool", "range-diff", "annotate")


def resolve_word(word: str, base: str) -> str | None:
    """An absolute path for a literal word, or None when it cannot be known (``~user``)."""
    if word.startswith("~"):
        if word == "~" or word.startswith("~/"):
            word = os.path.expanduser("~") + word[1:]
        else:
            return None
    m = re.search(r"[*?\[]", word)
    if m:  # a glob: check the fixed directory part
        word = word[:m.start()]
        word = word.rsplit("/", 1)[0] if "/" in word else "."
        word = word or "/"
    return os.path.normpath(os.path.join(base, word))


def glob_expand(pattern: str, conservative: bool, limit: int = 400) -> list[str]:
    """The shell's expansion of an absolute glob on the disk (dot files only when the pattern starts with a dot,
    unless the glob rules may have been changed: then everything, recursively for ``**``)."""
    try:
        hits = globmod.glob(pattern, recursive=conservative, include_hidden=conservative)
    except (OSError, ValueError, re.error, RecursionError):
        return []
    return [os.path.normpath(h) for h in hits[:limit]]


def git_root(start: str) -> str:
    d = start
    for _ in range(64):
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return start
