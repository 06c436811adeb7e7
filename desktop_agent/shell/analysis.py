"""``analyze`` (cached per command text): the commands that really run — wrappers stripped (``env -S``,
``setsid``, ``timeout``, ``xargs``, ``chroot``, ``sudo``…), scripts fed to shells (``sh -c``, ``bash -lc``, ``eval``,
``| sh``, ``sh <<< …``, ``sh <<EOF``), substitutions, brace and glob expansions of a command name — and the reasons
the command is not provably read-only, or cannot be known at all ("opaque").
"""

from __future__ import annotations

import glob as globmod
import re
from dataclasses import dataclass, field
from functools import lru_cache

from desktop_agent.shell.parse import ParsedCommand, SimpleCommand, fallback_parts, parse_command
from desktop_agent.shell.path_args import extract_paths
from desktop_agent.shell.scan import Scan, scan_expanding, scan_shell
from desktop_agent.shell.vocabulary import (EVAL_BUILTINS, FIND_UNSAFE, GIT_OPAQUE_GLOBAL, GLOB_CHARS,
                                            INLINE_CODE_FLAGS, INTERPRETERS, OPAQUE_BUILTINS, SHELLS, WRAPPERS)
from desktop_agent.shell.words import (brace_expand, command_name_base, has_brace, has_glob, runner_env, skip_opts,
                                       unquoted_text)


@dataclass
class Analysis:
    parsed: ParsedCommand
    scan: Scan
    nested: list[SimpleCommand] = field(default_factory=list)  # what also runs: for deny/ask and path checks
    extra_parts: list[SimpleCommand] = field(default_factory=list)  # substitutions the parse did not see
    opaque: list[str] = field(default_factory=list)  # why the commands that run cannot be known
    not_ro: list[str] = field(default_factory=list)  # why the whole command is not read-only
    part_not_ro: set[int] = field(default_factory=set)  # id() of parts that are not read-only
    glob_options: bool = False  # shopt/set/GLOBIGNORE: the glob rules may be changed


def _expanded_argv(cmd: SimpleCommand) -> list[str]:
    """argv with brace expansion applied to unquoted braces, and a glob command name matched on the disk."""
    words: list[str] = []
    for w, r in zip(cmd.argv, cmd.raw):
        words.extend(brace_expand(w) if has_brace(r) and unquoted_text(r) == r else [w])
    if words and GLOB_CHARS.search(words[0]):
        try:
            hits = sorted(globmod.glob(words[0]))[:8]
        except (OSError, ValueError, re.error):
            hits = []
        if hits:
            words = [hits[0], *hits[1:], *words[1:]]
    return [w for w in words if w != ""]


def _synthetic(argv: list[str], like: SimpleCommand | None = None, raw: list[str] | None = None) -> SimpleCommand:
    raw = list(raw if raw is not None else argv)
    cmd = SimpleCommand(list(argv), raw, [], [], [("$" in r or "`" in r) for r in raw], " ".join(raw))
    if like is not None:
        cmd.stdin_script, cmd.stdin_kind, cmd.pipe_from = like.stdin_script, like.stdin_kind, like.pipe_from
        cmd.dynamic = list(like.dynamic[len(like.argv) - len(argv):]) if len(like.argv) >= len(argv) else cmd.dynamic
    return cmd


@lru_cache(maxsize=1024)
def analyze(command: str) -> Analysis:
    """What ``command`` runs and why it is not provably read-only (cached: do not mutate the result)."""
    return _analyze(command, 0)


def _analyze(command: str, depth: int) -> Analysis:
    parsed = parse_command(command)
    scan = scan_shell(command)
    an = Analysis(parsed, scan)
    if depth > 3:
        an.opaque.append("it nests scripts too deeply")
        return an
    if not scan.ok:
        an.opaque.append("its quoting could not be followed")
    if not parsed.ok:
        an.opaque.append("it could not be parsed")
    if scan.arith:
        an.not_ro.append("it uses arithmetic expansion")
    if scan.subs:
        an.not_ro.append("it uses command or process substitution")
    if scan.ansi_c:
        an.not_ro.append("it uses $'…' quoting")
    parts = parsed.commands if parsed.ok else fallback_parts(command)
    known = {tuple(p.argv) for p in parts}
    for sub in scan.subs[:32]:
        inner = parse_command(sub)
        sub_parts = inner.commands if inner.ok else fallback_parts(sub)
        if not inner.ok:
            an.opaque.append(f"the substitution `{sub.strip()}` could not be parsed")
        for p in sub_parts:
            if tuple(p.argv) not in known:
                known.add(tuple(p.argv))
                an.extra_parts.append(p)
    if scan.quoted_code and (scan.param or any(p.argv and command_name_base(p.argv[0]) in EVAL_BUILTINS
                                               for p in [*parts, *an.extra_parts])):
        an.opaque.append("a quoted string holds a command substitution the shell may evaluate")
    for p in [*parts, *an.extra_parts]:
        _inspect(p, an, depth)
    return an


def _merge_script(script: str, like: SimpleCommand, an: Analysis, depth: int, why: str) -> None:
    """A script that a shell (or ``eval``, ``su -c``, ``watch``…) runs: its commands count as nested."""
    sub = _analyze(script, depth + 1)
    parts = sub.parsed.commands if sub.parsed.ok else fallback_parts(script)
    an.nested.extend(parts)
    an.nested.extend(sub.extra_parts)
    an.nested.extend(sub.nested)
    an.opaque.extend(sub.opaque)
    an.part_not_ro.add(id(like))
    if not sub.parsed.ok:
        an.opaque.append(f"the script {why} could not be parsed")


def _stdin_script(p: SimpleCommand) -> tuple[str | None, str | None]:
    """(script, reason-if-unknown) for what a shell reads on stdin."""
    if p.stdin_kind in ("heredoc", "herestring"):
        if p.stdin_script is None:
            return None, "its input is built at run time"
        return p.stdin_script, None
    if p.stdin_kind == "pipe":
        src = p.pipe_from
        if src is None or not src.argv:
            return None, "it reads a script from a pipe"
        head = command_name_base(src.argv[0])
        if head in ("echo", "printf") and not any(src.dynamic[1:]) and not any(r.is_output for r in src.redirects):
            args = [a for a in src.argv[1:] if not (head == "echo" and a in ("-n", "-e", "-E"))]
            text = " ".join(args)
            if head == "printf" or "-e" in src.argv[1:]:
                text = text.replace("\\n", "\n").replace("\\t", "\t")
            return text, None
        if head == "cat" and len(src.argv) == 1 and src.stdin_script is not None:
            return src.stdin_script, None
        return None, f"it reads a script from `{src.text}`"
    if p.stdin_kind == "file":
        return None, "it reads a script from a file"
    return None, None


def _inspect(p: SimpleCommand, an: Analysis, depth: int) -> None:
    pid = id(p)
    for a in p.assignments:
        name = a.partition("=")[0]
        if runner_env(name):
            an.opaque.append(f"it sets {name}, which can make programs run other commands")
        if name.startswith("GLOBIGNORE"):
            an.glob_options = True
    if not p.argv:
        return
    if p.dynamic[0] or p.raw[0].startswith(("<(", ">(")):
        an.opaque.append(f"the command name in `{p.text}` is built at run time")
        an.part_not_ro.add(pid)
    elif p.raw[0] not in ("[", "[[") and (has_glob(p.raw[0]) or has_brace(p.raw[0])):
        an.opaque.append(f"the command name in `{p.text}` is expanded by the shell")
        an.part_not_ro.add(pid)
        words = _expanded_argv(p)
        if words:
            exp = _synthetic(words)
            an.nested.append(exp)
            if depth < 3:
                _inspect(exp, an, depth + 1)
    argv = p.argv
    head = command_name_base(argv[0])
    if head in ("shopt", "set"):
        an.glob_options = True
    if head in WRAPPERS and not (head == "command" and len(argv) > 1 and argv[1] in ("-v", "-V")):
        an.part_not_ro.add(pid)
        _inspect_wrapper(p, head, an, depth)
        return
    if head in SHELLS:
        _inspect_shell(p, head, an, depth)
        return
    if head == "eval":
        an.part_not_ro.add(pid)
        if any(p.dynamic[1:]):
            an.opaque.append("`eval` runs a string built at run time")
        _merge_script(" ".join(argv[1:]), p, an, depth, "given to eval")
        return
    if head in ("source", "."):
        an.part_not_ro.add(pid)
        an.opaque.append(f"`{head}` runs the commands of a file")
        return
    if head in INTERPRETERS or re.fullmatch(r"(python|pypy|perl|ruby|node|php|lua)[\d.]*", head):
        inline = any(a in INLINE_CODE_FLAGS or re.match(r"^-[A-Za-z]*[ce]$", a) for a in argv[1:])
        files = [a for a in argv[1:] if not a.startswith("-")]
        if inline or (not files and p.stdin_kind in ("heredoc", "herestring", "pipe")):
            an.opaque.append(f"`{head}` is given code that cannot be checked")
        return
    if head in ("awk", "gawk", "mawk", "nawk", "busybox"):
        prog = " ".join(argv[1:])
        if head == "busybox" or re.search(r"system|\||getline|>\s*\"|print\s*>", prog):
            an.opaque.append(f"`{head}` may run other commands")
        return
    if head == "sed":
        script = " ".join(a for a in argv[1:] if not a.startswith("-"))
        if re.search(r"(^|[;{}\n]|[\d$/])\s*!?\s*e(\s|;|$)", script) or \
                re.search(r"s(.)(?:(?!\1).)*\1(?:(?!\1).)*\1[gpimIM\d]*e", script):
            an.opaque.append("`sed` runs a command (the `e` command or flag)")
        return
    if head == "find":
        _inspect_find(p, an, depth)
        return
    if head == "git":
        i = 1
        while i < len(argv) and argv[i].startswith("-"):
            a = argv[i]
            if a in GIT_OPAQUE_GLOBAL or any(a.startswith(o + "=") for o in GIT_OPAQUE_GLOBAL if o.startswith("--")) \
                    or (a.startswith("-c") and len(a) > 2):
                an.opaque.append(f"`git {a}` can make git run other programs")
                value = a[2:] if a.startswith("-c") and len(a) > 2 else (argv[i + 1] if i + 1 < len(argv) else "")
                m = re.match(r"^alias\.[^=]+=!(.+)$", value, re.S)
                if m:  # git -c alias.x='!rm x' x: the alias is a shell script
                    _merge_script(m.group(1), p, an, depth, "of a git alias")
            if a in ("-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path",
                     "--super-prefix"):
                i += 1
            i += 1
        return
    if head in ("trap",):
        an.part_not_ro.add(pid)
        rest = [a for a in argv[1:] if not a.startswith("-")]
        if rest:
            _merge_script(rest[0], p, an, depth, "given to trap")
        return
    if head == "alias":
        an.part_not_ro.add(pid)
        for a in argv[1:]:
            if "=" in a:
                _merge_script(a.partition("=")[2], p, an, depth, "of an alias")
        return
    if head in OPAQUE_BUILTINS:
        an.part_not_ro.add(pid)
        if head not in ("shopt", "set", "history"):
            an.opaque.append(f"`{head}` can change or run the commands that follow")
        return
    if head in EVAL_BUILTINS:
        for a in argv[1:]:
            if "[" in a or head in ("let", "[[") or "$" in a or "`" in a:
                sc = scan_expanding(a)
                if sc.subs or not sc.ok:
                    an.part_not_ro.add(pid)
                    an.opaque.append(f"`{head}` evaluates a command substitution in `{a}`")
                    for s in sc.subs:
                        _merge_script(s, p, an, depth, "in an array subscript")
        if head in ("declare", "typeset", "local", "export", "readonly"):
            for a in argv[1:]:
                if "=" in a and runner_env(a.partition("=")[0]):
                    an.opaque.append(f"it sets {a.partition('=')[0]}, which can make programs run other commands")
        return


def _inspect_wrapper(p: SimpleCommand, head: str, an: Analysis, depth: int) -> None:
    """A wrapper runs its arguments: every later non-option word may start the wrapped command."""
    argv, raw = p.argv, p.raw
    if depth >= 3:
        an.opaque.append(f"`{head}` wraps too many layers")
        return
    if any(p.dynamic[1:]):
        an.opaque.append(f"`{head}` runs a command built at run time")
    scripts: list[str] = []
    words = list(argv)
    for i, a in enumerate(argv[1:], 1):  # a string the wrapper splits or gives to a shell
        if head == "env" and (a.startswith("-S") or a.startswith("--split-string")):
            val = a[2:] if a.startswith("-S") and a != "-S" else (a.partition("=")[2] if "=" in a else None)
            if val is None and i + 1 < len(argv):
                val = argv[i + 1]
            if val:
                scripts.append(" ".join([val, *argv[i + 2 if a in ("-S", "--split-string") else i + 1:]]))
        if a in ("-c", "--command", "--session-command") and head in ("su", "runuser", "sg", "script", "flock") \
                and i + 1 < len(argv):
            scripts.append(argv[i + 1])
        if head in ("sudo", "doas") and a in ("-s", "-i", "--shell", "--login"):
            scripts.append(" ".join(argv[i + 1:]))
    if head == "watch":
        j = skip_opts(argv, 1, WRAPPERS["watch"])
        scripts.append(" ".join(argv[j:]))
    for s in scripts:
        if s.strip():
            _merge_script(s, p, an, depth, f"given to {head}")
    count = 0
    for i in range(1, len(words)):
        w = words[i]
        if w.startswith("-") or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w):
            continue
        count += 1
        if count > 12:
            break
        sub = _synthetic(words[i:], p, raw[i:])
        an.nested.append(sub)
        if any(ch.isspace() for ch in w):  # `watch 'rm x'`, `flock f 'rm x'`: a string some wrappers run
            _merge_script(" ".join(words[i:]), p, an, depth, f"given to {head}")
        _inspect(sub, an, depth + 1)
    if head in ("chroot", "sudo", "su", "doas", "runuser", "unshare", "nsenter", "script", "sg") and count <= 1:
        an.opaque.append(f"`{head}` may start a shell")


def _inspect_shell(p: SimpleCommand, head: str, an: Analysis, depth: int) -> None:
    argv = p.argv
    an.part_not_ro.add(id(p))
    if head == "busybox":
        if len(argv) > 1:
            sub = _synthetic(argv[1:], p, p.raw[1:])
            an.nested.append(sub)
            _inspect(sub, an, depth + 1)
        return
    i, cflag = 1, False
    while i < len(argv):
        a = argv[i]
        if a in ("--", "-"):
            i += 1
            break
        if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if a.startswith("--"):
            i += 1
            continue
        if a[:1] in "-+" and len(a) > 1:
            if "c" in a[1:]:
                cflag = True
            i += 1
            continue
        break
    rest = argv[i:]
    if cflag:
        if not rest:
            return
        if p.dynamic[i] if i < len(p.dynamic) else False:
            an.opaque.append(f"`{head} -c` runs a script built at run time")
        _merge_script(rest[0], p, an, depth, f"given to {head} -c")
        return
    if rest:
        an.opaque.append(f"`{head}` runs the script file {rest[0]}")
        return
    script, why = _stdin_script(p)
    if script is not None:
        _merge_script(script, p, an, depth, f"fed to {head}")
    elif why:
        an.opaque.append(f"`{head}` {why}")


def _inspect_find(p: SimpleCommand, an: Analysis, depth: int) -> None:
    argv = p.argv
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in FIND_UNSAFE or a in ("-L", "-follow"):
            an.part_not_ro.add(id(p))
        if a == "-delete":  # find -delete removes what it finds: an `rm` for the deny rules
            roots = [w for _w, op in extract_paths(argv) if op == "read" for w in [_w]] or ["."]
            an.nested.append(_synthetic(["rm", "-r", *roots]))
        if a in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(argv) and argv[j] not in (";", "+", "\\;"):
                j += 1
            inner = argv[i + 1:j]
            if inner:
                sub = _synthetic(inner, None, p.raw[i + 1:j])
                an.nested.append(sub)
                _inspect(sub, an, depth + 1)
            i = j
        i += 1
