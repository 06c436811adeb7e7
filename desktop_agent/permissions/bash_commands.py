"""Bash command analysis: a real parse (bashlex), fail-closed read-only classification, rule matching, path checks.

- ``scan_shell`` is a lexical pass of our own over the command text (quotes, ``$(…)``, backquotes, ``${…}``,
  ``$((…))``, process substitution, here-documents with quoted and unquoted delimiters, comments): it finds
  every place the shell would run a command or expand something, also where bashlex does not look (inside
  ``${x:-$(…)}``, in an unquoted here-document's body, in arithmetic).
- ``parse_command`` flattens a command line into simple commands — through lists (``&&``, ``||``, ``;``,
  ``&``, newlines), pipelines (each command knows what feeds its stdin), subshells, groups, loops and
  command/process substitutions — keeping each word's literal value and source text, assignments,
  redirections and here-document / here-string bodies. Anything bashlex cannot parse is "unparsed", and an
  unparsed command is never allowed (it is asked, or denied where a deny rule could match).
- ``analyze`` (cached per command text): the commands that really run, for deny/ask matching — wrappers
  stripped (``env -S``, ``setsid``, ``timeout``, ``xargs``, ``chroot``, ``sudo``…), scripts fed to shells
  (``sh -c``, ``bash -lc``, ``eval``, ``| sh``, ``sh <<< …``, ``sh <<EOF``), substitutions, brace and glob
  expansions of a command name — and the reasons the command is not provably read-only, or cannot be checked
  against the deny rules at all ("opaque").
- ``is_read_only_command``: read-only means *proven* read-only: a real parse, no substitution, no opaque
  construct, and every simple command on the read-only list with no option that names a program or a file.
- ``check_bash_permission`` (§4.8, App. B §B.2): deny rules (on every form above) → ask rules → an opaque
  command where a deny rule could match (denied in bypassPermissions/dontAsk, asked otherwise, with a sentence
  saying it could not be checked) → path constraints (paths resolved as the shell would: brace and glob
  expansion against the file system, ``..`` after symlinked parents, ``cd`` earlier in the command; deny rules
  on paths; a path that cannot be resolved or a recursive read over a denied path → denied/asked the same
  way; outside the working dirs → ask; ``cd`` then a write → ask; critical ``rm`` and protected files → ask
  with ``safetyCheck``) → every part read-only or matched by an allow rule → allow; otherwise passthrough
  with ``This command requires approval`` (or the multi-part text) and narrow suggestions.
"""

from __future__ import annotations

import fnmatch
import glob as globmod
import os
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.paths import (in_working_dirs, is_inside, matching_path_rule, paths_to_check,
                                             protected_reason)
from desktop_agent.permissions.rules import CombinedBashMatcher, bash_pattern_matches
from desktop_agent.core.permission import DecisionReason, PermissionDecision, PermissionUpdate, RuleValue

REQUIRES_APPROVAL = "This command requires approval"

READ_ONLY_COMMANDS = frozenset({
    "ls", "cat", "echo", "pwd", "head", "tail", "grep", "egrep", "fgrep", "rg", "find", "wc", "which", "diff",
    "stat", "du", "cd", "true", "false", "test", "[", "basename", "dirname", "realpath", "readlink", "file",
    "tree", "whoami", "date", "uname", "printf", "nl", "cmp", "type", "id", "hostname", "df", "sleep",
})
GIT_READ_ONLY = frozenset({"status", "log", "diff", "show", "blame", "rev-parse", "ls-files", "describe",
                           "shortlog", "grep", "ls-tree", "cat-file", "whatchanged", "merge-base",
                           "rev-list", "count-objects", "check-ignore", "name-rev"})
# git global options that are harmless; anything else before the subcommand is not provably read-only.
GIT_SAFE_GLOBAL = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects",
                             "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs"})
# git global options that make git run programs or read another configuration: the command is opaque.
GIT_OPAQUE_GLOBAL = ("-c", "--config-env", "--exec-path")
# options (any git subcommand) that name a program to run or a file to write or read
GIT_UNSAFE_OPTS = ("--output", "--ext-diff", "--textconv", "--open-files-in-pager", "--exec", "--upload-pack",
                   "--receive-pack", "--no-index", "--orderfile", "--contents", "--pathspec-from-file", "--run",
                   "--extcmd", "--tool", "--file", "--config")
FIND_UNSAFE = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})
SAFE_ENV_VARS = frozenset({
    "GOEXPERIMENT", "GOOS", "GOARCH", "CGO_ENABLED", "GO111MODULE", "RUST_BACKTRACE", "RUST_LOG", "NODE_ENV",
    "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_DEBUG", "LANG",
    "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_TIME", "CHARSET", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TZ",
    "LS_COLORS", "LSCOLORS", "GREP_COLOR", "GREP_COLORS", "GCC_COLORS", "TIME_STYLE", "BLOCK_SIZE", "BLOCKSIZE",
})
# Variables that make programs run something else (a pager, an editor, a preload, a config): setting one makes
# the command opaque to the deny rules.
_RUNNER_ENV = frozenset({
    "PAGER", "MANPAGER", "EDITOR", "VISUAL", "BROWSER", "LESSOPEN", "LESSCLOSE", "BASH_ENV", "ENV", "PATH", "IFS",
    "CDPATH", "GLOBIGNORE", "PROMPT_COMMAND", "PS4", "SHELLOPTS", "BASHOPTS", "PYTHONSTARTUP", "PYTHONPATH",
    "PYTHONHOME", "NODE_OPTIONS", "PERL5OPT", "PERL5LIB", "RUBYOPT", "RUBYLIB", "TAR_OPTIONS", "SHELL", "TMPDIR",
    "HOME", "XDG_CONFIG_HOME", "SSH_ASKPASS", "SUDO_ASKPASS", "ZDOTDIR", "INPUTRC", "RIPGREP_CONFIG_PATH",
    "GREP_OPTIONS", "BASH_XTRACEFD", "FIGNORE", "HISTFILE", "EXECIGNORE",
})
_RUNNER_ENV_PREFIX = ("GIT_", "LD_", "DYLD_", "BASH_FUNC_", "NPM_CONFIG_", "PIP_")
# Commands whose "allow for session" suggestion is the exact command, never a prefix.
NO_PREFIX_SUGGESTION = frozenset({
    "sh", "bash", "zsh", "fish", "dash", "ksh", "python", "python3", "node", "ruby", "perl", "php", "eval", "exec",
    "sudo", "su", "doas", "env", "xargs", "ssh", "watch", "setsid", "nohup", "source", ".", "rm", "curl", "wget",
})
ACCEPT_EDITS_COMMANDS = frozenset({"mkdir", "touch", "mv", "cp"})
_DEV_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "yash", "fish", "ash", "rbash", "busybox"})
# Interpreters of other languages: inline code (-c/-e, stdin, a here-document) cannot be checked.
_INTERPRETERS = frozenset({
    "python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua",
    "luajit", "tclsh", "wish", "expect", "R", "Rscript", "julia", "osascript", "pwsh", "powershell", "groovy",
    "irb", "jshell", "scala", "ghci", "runghc", "guile", "racket", "sbcl", "clisp", "elixir", "erl", "escript",
})
_INLINE_CODE_FLAGS = frozenset({"-c", "-e", "-E", "--eval", "--command", "-r", "--run", "-p", "--print", "-x"})
# Wrappers that run their arguments as a command: (options taking a separate value).
_WRAPPERS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string", "-a", "--argv0"}),
    "setsid": frozenset(),
    "nohup": frozenset(),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "xargs": frozenset({"-n", "-I", "-i", "-P", "-L", "-l", "-d", "-E", "-e", "-s", "-a", "--max-args",
                        "--max-procs", "--delimiter", "--arg-file", "--eof", "--max-lines", "--max-chars",
                        "--replace", "--process-slot-var"}),
    "chroot": frozenset({"--userspec", "--groups"}),
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-U", "-r", "-t", "-D", "-R", "-T", "--user", "--group",
                       "--host", "--prompt", "--chdir", "--chroot", "--role", "--type", "--close-from",
                       "--other-user", "--command-timeout"}),
    "doas": frozenset({"-u", "-C"}),
    "su": frozenset({"-c", "--command", "-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w",
                     "--whitelist-environment", "--session-command"}),
    "runuser": frozenset({"-u", "--user", "-g", "--group", "-G", "-c", "--command", "-s", "--shell", "-w"}),
    "unshare": frozenset({"-S", "--setuid", "-G", "--setgid", "-R", "--root", "-w", "--wd", "--propagation",
                          "--setgroups", "--map-user", "--map-group", "--map-users", "--map-groups"}),
    "nsenter": frozenset({"-t", "--target", "-S", "--setuid", "-G", "--setgid", "-N", "--net-socket"}),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "noglob": frozenset(),
    "exec": frozenset({"-a"}),
    "flock": frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}),
    "watch": frozenset({"-n", "--interval", "-d", "-q", "--equexit", "-g"}),
    "taskset": frozenset(),
    "chrt": frozenset(),
    "prlimit": frozenset({"-p", "--pid"}),
    "setpriv": frozenset({"--reuid", "--regid", "--groups", "--inh-caps", "--ambient-caps", "--bounding-set",
                          "--securebits", "--pdeathsig", "--selinux-label", "--apparmor-profile"}),
    "strace": frozenset({"-e", "-o", "-p", "-s", "-u", "-E", "-a", "-b", "-P", "-I", "-X"}),
    "ltrace": frozenset({"-e", "-o", "-p", "-s", "-u", "-a", "-n"}),
    "fakeroot": frozenset({"-l", "--lib", "--faked", "-s", "-i"}),
    "sg": frozenset({"-c"}),
    "script": frozenset({"-c", "--command", "-E", "--echo", "-I", "-O", "-B", "-T", "-t", "-m"}),
    "numactl": frozenset(),
    "caffeinate": frozenset({"-t", "-w"}),
    "unbuffer": frozenset(),
    "systemd-run": frozenset({"-u", "--unit", "-p", "--property", "-E", "--setenv", "--uid", "--gid",
                              "--working-directory", "--slice", "--description"}),
    "pkexec": frozenset({"--user"}),
    "firejail": frozenset(),
    "proot": frozenset({"-r", "-b", "-w", "-0"}),
    "dbus-run-session": frozenset({"--config-file", "--dbus-daemon"}),
    "xvfb-run": frozenset({"-n", "-s", "-f", "-e", "-p"}),
    "parallel": frozenset({"-j", "--jobs", "-S", "--sshlogin", "--joblog", "-a", "--arg-file"}),
    "catchsegv": frozenset(),
    "valgrind": frozenset(),
    "faketime": frozenset({"-f"}),
    "torsocks": frozenset(),
    "proxychains": frozenset({"-f"}),
    "proxychains4": frozenset({"-f"}),
    "nohup.exe": frozenset(),
}
# Wrappers whose option-skipping is exact: ``strip_wrappers`` (SPEC App. B §B.2) strips these for rule matching.
_SPEC_WRAPPERS = frozenset({"timeout", "time", "nice", "nohup", "stdbuf", "command", "builtin", "noglob"})
# Builtins that evaluate array subscripts (and so command substitutions) in their arguments, or run strings.
_EVAL_BUILTINS = frozenset({"printf", "test", "[", "[[", "let", "declare", "typeset", "local", "export", "readonly",
                            "read", "unset", "mapfile", "readarray", "wait", "eval", "trap", "alias", "source", "."})
# Builtins that make later commands run something else, or run stored commands.
_OPAQUE_BUILTINS = frozenset({"hash", "enable", "bind", "complete", "compgen", "fc", "coproc", "shopt", "set",
                              "history", "command_not_found_handle", "exec"})
_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass
class Redirect:
    op: str
    target: str | None  # None for fd duplication (2>&1) and here-documents
    dynamic: bool = False
    raw: str | None = None

    @property
    def is_output(self) -> bool:
        return ">" in self.op and self.target is not None


@dataclass
class SimpleCommand:
    argv: list[str]  # literal values (quotes removed), assignments excluded
    raw: list[str]  # source text of each argv word
    assignments: list[str]
    redirects: list[Redirect]
    dynamic: list[bool]  # per argv word: contains an expansion or substitution
    text: str
    stdin_script: str | None = None  # a here-document body or here-string fed on stdin
    stdin_kind: str = ""  # "", "heredoc", "herestring", "file", "pipe"
    pipe_from: "SimpleCommand | None" = None  # the command whose output is piped into this one (if simple)

    def stripped(self, any_env: bool) -> tuple[list[str], list[str], bool]:
        """argv/raw without leading env assignments and wrapper commands. The bool says whether every
        assignment could be stripped (``any_env`` strips all of them; otherwise only safe ones)."""
        clean = all(_safe_assignment(a) for a in self.assignments)
        argv, raw = strip_wrappers(self.argv, self.raw)
        return argv, raw, (any_env or clean)


@dataclass
class ParsedCommand:
    ok: bool
    commands: list[SimpleCommand] = field(default_factory=list)
    error: str | None = None


def _safe_assignment(assign: str) -> bool:
    name, _, value = assign.partition("=")
    return name in SAFE_ENV_VARS and "$" not in value and "`" not in value


def _runner_env(name: str) -> bool:
    name = name.split("[", 1)[0].rstrip("+")
    return name in _RUNNER_ENV or name.startswith(_RUNNER_ENV_PREFIX)


# --------------------------------------------------------------------------- lexical scan
@dataclass
class Scan:
    ok: bool = True
    subs: list[str] = field(default_factory=list)  # bodies of $(…), `…`, <(…), >(…) where the shell runs them
    arith: bool = False  # $((…)), $[…], ((…))
    param: bool = False  # $name, ${…} where the shell expands them
    quoted_code: bool = False  # $( or ` inside single quotes or a quoted here-document: code a builtin may run
    ansi_c: bool = False  # $'…'
    heredocs: list[tuple[str, bool, str]] = field(default_factory=list)  # (delimiter, quoted, body)
    quoted_heredoc_spans: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, bare delimiter)


class _ScanError(Exception):
    pass


class _Scanner:
    def __init__(self, s: str, out: Scan, top: bool = True):
        self.s, self.n, self.out, self.top = s, len(s), out, top
        self.pending: list[tuple[str, bool, bool]] = []

    def _literal_code(self, text: str) -> None:
        if "$(" in text or "`" in text or "$((" in text or "$[" in text:
            self.out.quoted_code = True

    def seq(self, i: int, stop: str | None) -> int:
        s = self.s
        depth = 0
        word_start = True
        while i < self.n:
            c = s[i]
            if stop == "`" and c == "`":
                return i + 1
            if c == "\\":
                i += 2
                word_start = False
                continue
            if c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    raise _ScanError("unterminated single quote")
                self._literal_code(s[i + 1:j])
                i, word_start = j + 1, False
                continue
            if c == '"':
                i, word_start = self.dquote(i + 1), False
                continue
            if c == "$":
                i, word_start = self.dollar(i), False
                continue
            if c == "`":
                j = self.seq(i + 1, "`")
                self.out.subs.append(s[i + 1:j - 1])
                i, word_start = j, False
                continue
            if c in "<>" and i + 1 < self.n and s[i + 1] == "(":
                j = self.seq(i + 2, ")")
                self.out.subs.append(s[i + 2:j - 1])
                i, word_start = j, False
                continue
            if s.startswith("<<", i) and not s.startswith("<<<", i):
                i, word_start = self.heredoc_op(i + 2), False
                continue
            if c == "#" and word_start:
                j = s.find("\n", i)
                i = self.n if j < 0 else j
                continue
            if c == "\n":
                i = self.bodies(i + 1)
                word_start = True
                continue
            if c == "(":
                if word_start and s.startswith("((", i):
                    self.out.arith = True
                depth += 1
            elif c == ")":
                if stop == ")" and depth == 0:
                    return i + 1
                depth = max(0, depth - 1)
            word_start = c in " \t;&|(){}!"
            i += 1
        if stop is not None:
            raise _ScanError(f"unterminated {stop}")
        if self.pending:
            self.bodies(self.n)
        return i

    def dquote(self, i: int) -> int:
        s = self.s
        while i < self.n:
            c = s[i]
            if c == "\\":
                i += 2
            elif c == '"':
                return i + 1
            elif c == "$":
                i = self.dollar(i)
            elif c == "`":
                j = self.seq(i + 1, "`")
                self.out.subs.append(s[i + 1:j - 1])
                i = j
            else:
                i += 1
        raise _ScanError("unterminated double quote")

    def dollar(self, i: int) -> int:
        s = self.s
        nxt = s[i + 1] if i + 1 < self.n else ""
        if s.startswith("$((", i):
            self.out.arith = True
            return self.seq(i + 2, ")")
        if nxt == "(":
            j = self.seq(i + 2, ")")
            self.out.subs.append(s[i + 2:j - 1])
            return j
        if nxt == "[":
            self.out.arith = True
            j = s.find("]", i)
            if j < 0:
                raise _ScanError("unterminated $[")
            _Scanner(s[i + 2:j], self.out, top=False).expanding_text()
            return j + 1
        if nxt == "{":
            self.out.param = True
            return self.brace(i + 2)
        if nxt == "'":
            self.out.ansi_c = True
            j = i + 2
            while j < self.n and s[j] != "'":
                j += 2 if s[j] == "\\" else 1
            if j >= self.n:
                raise _ScanError("unterminated $'")
            self._literal_code(s[i + 2:j])
            return j + 1
        if nxt == '"':
            return self.dquote(i + 2)
        if nxt and (nxt.isalnum() or nxt in "_@*#?-$!"):
            self.out.param = True
            return i + 2
        return i + 1

    def brace(self, i: int) -> int:
        """Inside ${…}: quotes are not trusted to stop anything (conservative)."""
        s = self.s
        depth = 1
        while i < self.n:
            c = s[i]
            if c == "\\":
                i += 2
                continue
            if c == '"':
                i = self.dquote(i + 1)
                continue
            if c == "$":
                i = self.dollar(i)
                continue
            if c == "`":
                j = self.seq(i + 1, "`")
                self.out.subs.append(s[i + 1:j - 1])
                i = j
                continue
            if c == "'":
                self._literal_code(s[i:])
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise _ScanError("unterminated ${")

    def heredoc_op(self, i: int) -> int:
        s = self.s
        strip = False
        if i < self.n and s[i] == "-":
            strip, i = True, i + 1
        while i < self.n and s[i] in " \t":
            i += 1
        start = i
        quoted = False
        delim = ""
        while i < self.n and s[i] not in " \t\n;&|<>()":
            c = s[i]
            if c in "'\"":
                quoted = True
                j = s.find(c, i + 1)
                if j < 0:
                    raise _ScanError("unterminated here-document delimiter")
                delim += s[i + 1:j]
                i = j + 1
                continue
            if c == "\\":
                quoted = True
                delim += s[i + 1:i + 2]
                i += 2
                continue
            delim += c
            i += 1
        if not delim:
            raise _ScanError("here-document without a delimiter")
        if quoted and self.top:
            self.out.quoted_heredoc_spans.append((start, i, delim))
        self.pending.append((delim, quoted, strip))
        return i

    def bodies(self, i: int) -> int:
        s = self.s
        for delim, quoted, strip in self.pending:
            lines: list[str] = []
            while i < self.n:
                j = s.find("\n", i)
                line = s[i:] if j < 0 else s[i:j]
                i = self.n if j < 0 else j + 1
                if (line.lstrip("\t") if strip else line) == delim:
                    break
                lines.append(line)
            body = "\n".join(lines)
            self.out.heredocs.append((delim, quoted, body))
            if quoted:
                self._literal_code(body)
            else:
                _Scanner(body, self.out, top=False).expanding_text()
        self.pending = []
        return i

    def expanding_text(self) -> None:
        """A here-document body (unquoted delimiter) or arithmetic text: only \\, $ and ` are special."""
        s = self.s
        i = 0
        while i < self.n:
            c = s[i]
            if c == "\\":
                i += 2
            elif c == "$":
                i = self.dollar(i)
            elif c == "`":
                j = self.seq(i + 1, "`")
                self.out.subs.append(s[i + 1:j - 1])
                i = j
            else:
                i += 1


@lru_cache(maxsize=2048)
def scan_shell(text: str) -> Scan:
    """Where ``text`` makes the shell run or expand something (cached: callers must not mutate the result)."""
    out = Scan()
    try:
        _Scanner(text, out).seq(0, None)
    except (_ScanError, RecursionError):
        out.ok = False
    return out


def scan_expanding(text: str) -> Scan:
    """``text`` as the shell would expand it in an arithmetic context (array subscripts of ``printf -v``)."""
    out = Scan()
    try:
        _Scanner(text, out, top=False).expanding_text()
    except (_ScanError, RecursionError):
        out.ok = False
    return out


# --------------------------------------------------------------------------- parsing
def parse_command(command: str) -> ParsedCommand:
    """The flattened parse of ``command`` (cached: the result is shared, callers must not mutate it)."""
    return _parse_cached(command)


def _bashlex_text(command: str) -> str | None:
    """bashlex cannot parse a quoted here-document delimiter (``<<'EOF'``): the same text with the delimiter
    unquoted and padded to the same length (positions stay valid), or None when there is none."""
    spans = scan_shell(command).quoted_heredoc_spans
    if not spans:
        return None
    text = command
    for start, end, delim in sorted(spans, reverse=True):
        if len(delim) > end - start:
            return None
        text = text[:start] + delim.ljust(end - start) + text[end:]
    return text


@lru_cache(maxsize=2048)
def _parse_cached(command: str) -> ParsedCommand:
    import bashlex  # a missing parser is a start-up error, never a silent fallback

    src = command
    try:
        trees = bashlex.parse(command)
    except Exception as exc:  # bashlex raises its own errors and sometimes plain ones
        alt = _bashlex_text(command)
        if alt is None:
            return ParsedCommand(False, error=str(exc) or type(exc).__name__)
        try:
            trees = bashlex.parse(alt)
            src = alt
        except Exception as exc2:
            return ParsedCommand(False, error=str(exc2) or type(exc2).__name__)
    out: list[SimpleCommand] = []
    try:
        for t in trees:
            _walk(t, src, out)
    except Exception as exc:  # an unexpected node shape (or nesting too deep): treat as unparsable
        return ParsedCommand(False, error=str(exc) or type(exc).__name__)
    return ParsedCommand(True, out)


def _word_info(node: Any, src: str, out: list[SimpleCommand]) -> tuple[str, str, bool]:
    dynamic = False
    for part in getattr(node, "parts", None) or []:
        kind = part.kind
        if kind in ("commandsubstitution", "processsubstitution"):
            dynamic = True
            _walk(part.command, src, out)
        elif kind == "tilde":
            pass
        else:
            dynamic = True
    raw = src[node.pos[0]:node.pos[1]]
    if "`" in raw or "$(" in raw or "${" in raw or "$'" in raw or '$"' in raw or re.search(r"\$[\w@*#?!$-]", raw):
        # a `$` inside single quotes is literal: only when the word has no single-quoted part can we be sure
        dynamic = dynamic or "'" not in raw or "$'" in raw or '"' in raw or "`" in raw
    return node.word, raw, dynamic


def _heredoc_body(part: Any) -> str:
    hd = getattr(part, "heredoc", None)
    value = getattr(hd, "value", "") if hd is not None else ""
    lines = value.split("\n")
    return "\n".join(lines[:-1]) if len(lines) > 1 else ""


def _walk(node: Any, src: str, out: list[SimpleCommand]) -> None:
    kind = node.kind
    if kind == "command":
        argv: list[str] = []
        raw: list[str] = []
        dyn: list[bool] = []
        assigns: list[str] = []
        redirects: list[Redirect] = []
        pending: list[SimpleCommand] = []
        stdin_script, stdin_kind = None, ""
        for part in node.parts:
            if part.kind == "assignment" and not argv:
                assigns.append(part.word)
                for sub in getattr(part, "parts", None) or []:
                    if sub.kind in ("commandsubstitution", "processsubstitution"):
                        _walk(sub.command, src, pending)
            elif part.kind in ("word", "assignment"):
                w, r, d = _word_info(part, src, pending)
                argv.append(w)
                raw.append(r)
                dyn.append(d)
            elif part.kind == "redirect":
                target = part.output
                if part.type in ("<<", "<<-"):
                    redirects.append(Redirect(part.type, None))
                    stdin_script, stdin_kind = _heredoc_body(part), "heredoc"
                elif isinstance(target, int) or target is None:
                    redirects.append(Redirect(part.type, None))
                else:
                    w, r, d = _word_info(target, src, pending)
                    if part.type == "<<<":
                        redirects.append(Redirect(part.type, None))
                        stdin_script, stdin_kind = (None if d else w), "herestring"
                    elif part.type in (">&", "<&") and w.isdigit() or w == "-":
                        redirects.append(Redirect(part.type, None))
                    else:
                        redirects.append(Redirect(part.type, w, d, r))
                        if part.type == "<":
                            stdin_kind = "file"
            else:
                _walk(part, src, pending)
        out.append(SimpleCommand(argv, raw, assigns, redirects, dyn, src[node.pos[0]:node.pos[1]],
                                 stdin_script=stdin_script, stdin_kind=stdin_kind))
        out.extend(pending)
        return
    if kind == "pipeline":
        prev: SimpleCommand | None = None
        first = True
        for part in node.parts:
            if part.kind == "pipe":
                continue
            start = len(out)
            _walk(part, src, out)
            head = out[start] if len(out) > start else None
            if not first and head is not None:
                if part.kind == "command":
                    head.stdin_kind = head.stdin_kind or "pipe"
                    head.pipe_from = prev
                else:  # a compound fed by a pipe: every command in it may read the stream
                    for c in out[start:]:
                        c.stdin_kind = c.stdin_kind or "pipe"
            prev = head if part.kind == "command" else None
            first = False
        return
    if kind in ("operator", "pipe", "reservedword", "heredoc", "tilde", "parameter"):
        return
    if kind == "word":
        _word_info(node, src, out)
        return
    if kind == "redirect":  # on a compound: (...) > file
        target = node.output
        if not isinstance(target, int) and target is not None and node.type not in ("<<", "<<-", "<<<"):
            w, r, d = _word_info(target, src, out)
            out.append(SimpleCommand([], [], [], [Redirect(node.type, w, d, r)], [], src[node.pos[0]:node.pos[1]]))
        return
    children = list(getattr(node, "parts", None) or []) + list(getattr(node, "list", None) or [])
    children += list(getattr(node, "redirects", None) or [])
    if kind == "function":
        body = getattr(node, "body", None)
        if body is not None:
            children.append(body)
    for child in children:
        if isinstance(child, list):
            for c in child:
                _walk(c, src, out)
        elif hasattr(child, "kind"):
            _walk(child, src, out)


# --------------------------------------------------------------------------- wrappers
def _skip_opts(argv: list[str], i: int, with_value: set[str] | frozenset[str]) -> int:
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if argv[i] == "--":
            return i + 1
        if argv[i] in with_value:
            i += 1
        i += 1
    return i


def strip_wrappers(argv: list[str], raw: list[str]) -> tuple[list[str], list[str]]:
    """Drop ``timeout``, ``time``, ``nice``, ``nohup``, ``stdbuf``, ``command``, ``builtin``, ``noglob`` and bare
    ``xargs`` (with their options) from the front, repeatedly (for allow-rule matching, SPEC App. B §B.2)."""
    changed = True
    while changed and argv:
        changed = False
        head = argv[0]
        i = 0
        if head == "timeout":
            i = _skip_opts(argv, 1, {"-s", "--signal", "-k", "--kill-after"})
            i += 1  # the duration
        elif head == "time":
            i = _skip_opts(argv, 1, set())
        elif head == "nice":
            i = _skip_opts(argv, 1, {"-n", "--adjustment"})
        elif head == "stdbuf":
            i = _skip_opts(argv, 1, {"-i", "-o", "-e"})
        elif head in ("nohup", "builtin", "noglob"):
            i = 1
        elif head == "command":
            if len(argv) > 1 and argv[1] in ("-v", "-V"):
                break
            i = _skip_opts(argv, 1, set())
        elif head == "xargs" and len(argv) > 1 and not argv[1].startswith("-"):
            i = 1
        if 0 < i < len(argv):
            argv, raw = argv[i:], raw[i:]
            changed = True
    return argv, raw


def split_command(command: str) -> list[str]:
    """The sub-commands of a command line as source text (for the dialog); the whole line when unparsable."""
    parsed = parse_command(command)
    if not parsed.ok:
        return [command]
    return [c.text for c in parsed.commands if c.argv or c.redirects] or [command]


def strip_for_deny(argv: list[str], raw: list[str]) -> tuple[list[str], list[str]]:
    """Every wrapper with its options and ``VAR=`` arguments, and a path on the command name (``/bin/rm`` →
    ``rm``): deny and ask rules must not be dodged by a prefix."""
    changed = True
    while changed and argv:
        changed = False
        argv, raw = strip_wrappers(argv, raw)
        head = _base(argv[0]) if argv else ""
        if head in _WRAPPERS:
            i = _skip_opts(argv, 1, _WRAPPERS[head])
            while i < len(argv) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[i]):
                i += 1
            if head == "timeout" or head == "chroot" or head == "flock" or head == "chrt":
                i += 1  # the duration / the new root / the lock file / the priority
            elif head == "taskset" and i < len(argv) and argv[i - 1:i] != ["-c"]:
                i += 1  # the mask
            if 0 < i < len(argv):
                argv, raw, changed = argv[i:], raw[i:], True
    if argv and "/" in argv[0] and not any(ch.isspace() for ch in argv[0]):
        base = argv[0].rsplit("/", 1)[1]
        if base:
            argv, raw = [base, *argv[1:]], [base, *raw[1:]]
    return argv, raw


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1] if "/" in word and not word.endswith("/") else word


# --------------------------------------------------------------------------- analysis
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


def _unquoted(raw: str) -> str:
    """The characters of a word's source text that are outside quotes (escaped characters dropped)."""
    out, i, q = [], 0, ""
    while i < len(raw):
        c = raw[i]
        if q:
            if c == q:
                q = ""
            elif c == "\\" and q == '"':
                i += 1
        elif c in "'\"":
            q = c
        elif c == "\\":
            i += 1
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _has_glob(raw: str) -> bool:
    return _GLOB_CHARS.search(_unquoted(raw)) is not None


def _has_brace(raw: str) -> bool:
    u = _unquoted(raw)
    return "{" in u and "}" in u and ("," in u or ".." in u)


def brace_expand(word: str, limit: int = 64) -> list[str]:
    """Bash brace expansion of a (quote-free) word: ``{a,b}x`` → ``ax bx``, ``{1..3}``; capped at ``limit``."""
    m = None
    depth = 0
    start = -1
    for i, c in enumerate(word):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                body = word[start + 1:i]
                alts = _split_top(body)
                if len(alts) > 1:
                    m = (start, i, alts)
                    break
                r = re.fullmatch(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?", body)
                if r:
                    a, b = r.group(1), r.group(2)
                    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
                        lo, hi = int(a), int(b)
                        step = 1 if hi >= lo else -1
                        seq = [str(x) for x in range(lo, hi + step, step)][:limit]
                    elif a.isalpha() and b.isalpha():
                        step = 1 if ord(b) >= ord(a) else -1
                        seq = [chr(x) for x in range(ord(a), ord(b) + step, step)][:limit]
                    else:
                        seq = [body]
                    m = (start, i, seq)
                    break
    if m is None:
        return [word]
    s, e, alts = m
    out: list[str] = []
    for alt in alts:
        for w in brace_expand(word[:s] + alt + word[e + 1:], limit):
            out.append(w)
            if len(out) >= limit:
                return out
    return out


def _split_top(body: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for c in body:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    return parts


def _expanded_argv(cmd: SimpleCommand) -> list[str]:
    """argv with brace expansion applied to unquoted braces, and a glob command name matched on the disk."""
    words: list[str] = []
    for w, r in zip(cmd.argv, cmd.raw):
        words.extend(brace_expand(w) if _has_brace(r) and _unquoted(r) == r else [w])
    if words and _GLOB_CHARS.search(words[0]):
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
    parts = parsed.commands if parsed.ok else _fallback_parts(command)
    known = {tuple(p.argv) for p in parts}
    for sub in scan.subs[:32]:
        inner = parse_command(sub)
        sub_parts = inner.commands if inner.ok else _fallback_parts(sub)
        if not inner.ok:
            an.opaque.append(f"the substitution `{sub.strip()}` could not be parsed")
        for p in sub_parts:
            if tuple(p.argv) not in known:
                known.add(tuple(p.argv))
                an.extra_parts.append(p)
    if scan.quoted_code and (scan.param or any(p.argv and _base(p.argv[0]) in _EVAL_BUILTINS
                                               for p in [*parts, *an.extra_parts])):
        an.opaque.append("a quoted string holds a command substitution the shell may evaluate")
    for p in [*parts, *an.extra_parts]:
        _inspect(p, an, depth)
    return an


def _merge_script(script: str, like: SimpleCommand, an: Analysis, depth: int, why: str) -> None:
    """A script that a shell (or ``eval``, ``su -c``, ``watch``…) runs: its commands count as nested."""
    sub = _analyze(script, depth + 1)
    parts = sub.parsed.commands if sub.parsed.ok else _fallback_parts(script)
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
        head = _base(src.argv[0])
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
        if _runner_env(name):
            an.opaque.append(f"it sets {name}, which can make programs run other commands")
        if name.startswith("GLOBIGNORE"):
            an.glob_options = True
    if not p.argv:
        return
    if p.dynamic[0] or p.raw[0].startswith(("<(", ">(")):
        an.opaque.append(f"the command name in `{p.text}` is built at run time")
        an.part_not_ro.add(pid)
    elif p.raw[0] not in ("[", "[[") and (_has_glob(p.raw[0]) or _has_brace(p.raw[0])):
        an.opaque.append(f"the command name in `{p.text}` is expanded by the shell")
        an.part_not_ro.add(pid)
        words = _expanded_argv(p)
        if words:
            exp = _synthetic(words)
            an.nested.append(exp)
            if depth < 3:
                _inspect(exp, an, depth + 1)
    argv, raw = p.argv, p.raw
    head = _base(argv[0])
    if head in ("shopt", "set"):
        an.glob_options = True
    if head in _WRAPPERS and not (head == "command" and len(argv) > 1 and argv[1] in ("-v", "-V")):
        an.part_not_ro.add(pid)
        _inspect_wrapper(p, head, an, depth)
        return
    if head in _SHELLS:
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
    if head in _INTERPRETERS or re.fullmatch(r"(python|pypy|perl|ruby|node|php|lua)[\d.]*", head):
        inline = any(a in _INLINE_CODE_FLAGS or re.match(r"^-[A-Za-z]*[ce]$", a) for a in argv[1:])
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
    if head in _OPAQUE_BUILTINS:
        an.part_not_ro.add(pid)
        if head not in ("shopt", "set", "history"):
            an.opaque.append(f"`{head}` can change or run the commands that follow")
        return
    if head in _EVAL_BUILTINS:
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
                if "=" in a and _runner_env(a.partition("=")[0]):
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
        j = _skip_opts(argv, 1, _WRAPPERS["watch"])
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


# --------------------------------------------------------------------------- read-only
def _long_opt_hits(a: str, opts: tuple[str, ...]) -> bool:
    """``a`` is one of ``opts`` (also ``--opt=value`` and git's unambiguous abbreviations such as ``--out=``)."""
    if not a.startswith("--"):
        return False
    name = a.split("=", 1)[0]
    return any(name == o or (len(name) >= 5 and o.startswith(name)) for o in opts if o.startswith("--"))


def _git_read_only(argv: list[str]) -> bool:
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] not in GIT_SAFE_GLOBAL:
            return False  # -c, -C, --git-dir, --exec-path, --work-tree...: not provably read-only
        i += 1
    if i >= len(argv):
        return False
    sub, rest = argv[i], argv[i + 1:]
    if any(_long_opt_hits(a, GIT_UNSAFE_OPTS) for a in rest):
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


def _short_flag(args: list[str], letters: str) -> bool:
    return any(a.startswith("-") and not a.startswith("--") and any(c in a[1:] for c in letters) for a in args
               if a != "-")


def simple_command_read_only(cmd: SimpleCommand) -> bool:
    if any(r.is_output and r.target not in _DEV_FILES for r in cmd.redirects):
        return False
    if any(r.dynamic for r in cmd.redirects if r.target is not None):
        return False
    if not all(_safe_assignment(a) for a in cmd.assignments):
        return False
    argv = cmd.argv
    if not argv:
        return not cmd.assignments and not any(r.is_output for r in cmd.redirects)
    raw0 = cmd.raw[0] if cmd.raw else argv[0]
    if cmd.dynamic[:1] == [True] or (raw0 not in ("[",) and (_has_glob(raw0) or _has_brace(raw0))):
        return False
    head = argv[0]
    if head in _WRAPPERS:
        return False  # a wrapper runs its arguments: not proven read-only
    if any(cmd.dynamic[1:]) and head not in _DYNAMIC_ARGS_OK:
        return False  # a path or option built at run time
    args = argv[1:]
    if any(_long_opt_hits(a, ("--files0-from",)) for a in args):
        return False
    if head == "git":
        return _git_read_only(argv)
    if head not in READ_ONLY_COMMANDS:
        return False
    if head == "find" and any(a in FIND_UNSAFE or a in ("-L", "-follow") for a in args):
        return False
    if head == "rg" and (any(a.startswith(("--pre", "--file", "--follow", "--search-zip", "--ignore-file"))
                             for a in args) or _short_flag(args, "fLz")):
        return False
    if head in ("grep", "egrep", "fgrep") and (_short_flag(args, "fR") or any(
            a.startswith(("--file", "--dereference-recursive", "--exclude-from")) for a in args)):
        return False
    if head == "tree" and (any(a.startswith("-o") or a == "-l" or a.startswith("--fromfile") for a in args)):
        return False
    if head == "date" and any(a in ("-s", "--set", "-f") or a.startswith(("--set", "--file", "-f"))
                              or (a.startswith("-") and not a.startswith("--") and "f" in a[1:]) for a in args):
        return False
    if head == "du" and (any(a.startswith(("--dereference", "--exclude-from")) for a in args) or
                         _short_flag(args, "LX")):
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


def _parts_for_approval(an: Analysis) -> list[SimpleCommand]:
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
    return all(simple_command_read_only(c) and id(c) not in an.part_not_ro for c in _parts_for_approval(an))


# --------------------------------------------------------------------------- rule matching
def _forms(cmd: SimpleCommand, for_deny: bool) -> list[str]:
    forms: list[str] = []
    full = " ".join([*cmd.assignments, *cmd.raw]).strip()
    if full:
        forms.append(full)
    argv, raw, stripped_env = cmd.stripped(any_env=for_deny)
    if stripped_env and raw:
        forms.append(" ".join(raw))
        if for_deny:  # also the literal values (quotes removed), so quoting cannot dodge a deny
            forms.append(" ".join(argv))
            dargv, draw = strip_for_deny(cmd.argv, cmd.raw)
            if dargv:
                forms.append(" ".join(draw))
                forms.append(" ".join(dargv))
    return forms


def _nested_parts(parts: list[SimpleCommand], depth: int = 0) -> list[SimpleCommand]:
    """Commands run by the given parts' wrappers and scripts (for deny/ask matching); see ``analyze``."""
    out: list[SimpleCommand] = []
    for part in parts:
        an = Analysis(ParsedCommand(True, [part]), Scan())
        _inspect(part, an, depth)
        out.extend(an.nested)
    return out


def _dynamic_command_name(part: SimpleCommand) -> bool:
    """True when the command name itself is built at run time (``$a x``, ``$(echo rm) x``, ``rm${IFS}x``):
    no deny rule can be checked against it."""
    _argv, raw = strip_for_deny(part.argv, part.raw)
    if not raw:
        return False
    return any(ch in raw[0] for ch in "$`") or raw[0].startswith(("<(", ">("))


def _match_rules(rules: Any, forms: list[str]) -> Any | None:
    """The first rule matching any form; ``rules`` is a list or a ``CombinedBashMatcher``."""
    if isinstance(rules, CombinedBashMatcher):
        return rules.first_match(forms)
    for r in rules:
        for f in forms:
            if bash_pattern_matches(r.content, f):
                return r
    return None


def _bash_rules(pc: Any, behavior: str) -> Any:
    rules = pc.content_rules(behavior, "Bash")
    if not rules:
        return []
    if hasattr(pc, "cached"):
        return pc.cached(("bashmatch", behavior), lambda: CombinedBashMatcher(rules))
    return rules


def _fallback_parts(command: str) -> list[SimpleCommand]:
    """A crude split for deny matching when the real parse fails (deny must still hold)."""
    out: list[SimpleCommand] = []
    for piece in re.split(r"&&|\|\||[;&|\n]|\$\(|`|\)|\(|<<<|\{|\}", command):
        piece = piece.strip()
        if not piece:
            continue
        try:
            words = shlex.split(piece)
        except ValueError:
            words = piece.split()
        assigns = []
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            assigns.append(words.pop(0))
        out.append(SimpleCommand(words, list(words), assigns, [], [False] * len(words), piece))
    return out


# --------------------------------------------------------------------------- path extraction
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
    head, args = _base(argv[0]), argv[1:]
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
    if head in _SHELLS:
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


def _git_paths(argv: list[str]) -> tuple[str | None, list[tuple[str, str]]]:
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
            if "=" in a and _long_opt_hits(a, _FILE_OPTS_READ + ("--output",)):
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


def _recursive_targets(argv: list[str]) -> list[str]:
    """The directories a recursive reader walks (``grep -r``, ``rg``, ``find``, ``ls -R``, ``git grep``...)."""
    if not argv:
        return []
    head, args = _base(argv[0]), argv[1:]
    if head in ("grep", "egrep", "fgrep"):
        rec = _short_flag(args, "rR") or any(a.startswith(("--recursive", "--dereference-recursive",
                                                           "--directories=recurse", "-drecurse")) for a in args) \
            or ("-d" in args and "recurse" in args)
        return (_grep_paths(args) or ["."]) if rec else []
    if head in ("rg", "ag", "ack"):
        return _grep_paths(args) or ["."]
    if head == "find":
        return [p for p, _op in extract_paths(argv) if _op == "read"]
    if head == "ls" and (_short_flag(args, "R") or "--recursive" in args):
        return _non_options(args) or ["."]
    if head in ("tree", "du"):
        return _non_options(args) or ["."]
    if head == "diff" and (_short_flag(args, "r") or "--recursive" in args):
        return _non_options(args)
    if head in ("cp", "rsync", "scp") and (_short_flag(args, "rRa") or "--recursive" in args or "--archive" in args):
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


_CRITICAL_TOP = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc",
                           "/root", "/sbin", "/srv", "/sys", "/usr", "/var", "/System", "/Users", "/Library",
                           "/Applications", "/private", "/tmp"})


def _is_critical(path: str, ctx: Any) -> bool:
    p = os.path.normpath(path)
    if p in _CRITICAL_TOP or p.count("/") <= 1:
        return True
    home = os.path.normpath(os.path.expanduser("~"))
    if p == home or is_inside(home, p):
        return True
    for wd in ctx_working_dirs(ctx):
        if is_inside(wd, p):  # the working dir itself or one of its ancestors
            return True
    return False


def _is_critical_word(word: str, path: str, ctx: Any) -> bool:
    """``rm`` of a critical directory, or of everything in one (``rm -rf *``, ``rm -rf ~/*``)."""
    if re.search(r"[*?\[]", word):
        last = word.rstrip("/").rsplit("/", 1)[-1]
        return last in ("*", ".*", "**", "*.*", ".[!.]*") and _is_critical(path, ctx)
    return _is_critical(path, ctx)


def ctx_working_dirs(ctx: Any) -> list[str]:
    from desktop_agent.permissions.paths import working_dirs

    return working_dirs(ctx)


def _resolve(word: str, base: str) -> str | None:
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


def _glob_expand(pattern: str, conservative: bool, limit: int = 400) -> list[str]:
    """The shell's expansion of an absolute glob on the disk (dot files only when the pattern starts with a dot,
    unless the glob rules may have been changed: then everything, recursively for ``**``)."""
    try:
        hits = globmod.glob(pattern, recursive=conservative, include_hidden=conservative)
    except (OSError, ValueError, re.error, RecursionError):
        return []
    return [os.path.normpath(h) for h in hits[:limit]]


def _deny_literals(pc: Any) -> list[tuple[str, bool]]:
    """(literal path or bare name, anchored) of Read/Edit deny rules without wildcards (cached per rule set)."""
    def build() -> list[tuple[str, bool]]:
        out: list[tuple[str, bool]] = []
        for name in ("Read", "Edit"):
            for r in pc.content_rules("deny", name):
                try:
                    pp = r.path_pattern(pc.original_cwd, pc.home)
                except Exception:
                    continue
                g = (pp.glob or "").rstrip("/")
                for tail in ("/**", "/*"):
                    if g.endswith(tail):
                        g = g[:-len(tail)]
                if not g or _GLOB_CHARS.search(g):
                    continue
                out.append((os.path.normpath(os.path.join(pp.root, g)), True) if pp.anchored else (g, False))
        return out

    return pc.cached(("bash-deny-literals",), build) if hasattr(pc, "cached") else build()


def _candidates(word: str, rawword: str, bases: list[str], conservative: bool, pc: Any) -> list[str] | None:
    """Every absolute path ``word`` may name, as the shell would expand it from any of ``bases``."""
    if word.startswith("~"):
        if word == "~" or word.startswith("~/"):
            word = os.path.expanduser("~") + word[1:]
        else:
            return None
    words = brace_expand(word) if _has_brace(rawword) else [word]
    globbing = _has_glob(rawword)
    out: list[str] = []
    for w in words:
        if not w:
            continue
        for base in bases:
            if not base and not os.path.isabs(w):
                return None
            p = os.path.join(base, w)
            if globbing and _GLOB_CHARS.search(w):
                out.extend(_glob_expand(p, conservative))
                fixed = _resolve(w, base)
                if fixed:
                    out.append(fixed)
                out.append(os.path.normpath(p))
                low = os.path.normpath(p).casefold()
                for lit, anchored in (_deny_literals(pc) if pc is not None and hasattr(pc, "content_rules") else []):
                    cand = lit if anchored else os.path.join(os.path.dirname(os.path.normpath(p)), lit)
                    if fnmatch.fnmatchcase(cand.casefold(), low):
                        out.append(cand)
            else:
                out.append(os.path.normpath(p))
                if ".." in w.split("/"):
                    try:
                        out.append(os.path.realpath(p))  # `..` after a symlinked parent, as the kernel resolves it
                    except (OSError, ValueError):
                        pass
    seen: list[str] = []
    for p in out:
        if p not in seen:
            seen.append(p)
    return seen[:600]


def _git_root(start: str) -> str:
    d = start
    for _ in range(64):
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return start


def _dir_has_denied(directory: str, pc: Any, limit: int = 4000) -> bool:
    """A bounded walk: does ``directory`` hold a path a Read deny rule covers? (True when too big to tell.)"""
    if not os.path.isdir(directory):
        return False
    if matching_path_rule(pc, directory, "read", "deny", is_dir=True) is not None:
        return True
    seen = 0
    skip_git = not any(".git" in (r.content or "") for r in pc.content_rules("deny", "Read"))
    for root, dirs, files in os.walk(directory):
        if skip_git and ".git" in dirs:
            dirs.remove(".git")
        for name in dirs:
            if matching_path_rule(pc, os.path.join(root, name), "read", "deny", is_dir=True) is not None:
                return True
        for name in files:
            if matching_path_rule(pc, os.path.join(root, name), "read", "deny", is_dir=False) is not None:
                return True
        seen += len(dirs) + len(files)
        if seen > limit:
            return True
    return False


@dataclass
class _PathFinding:
    kind: str  # deny, unverifiable, safety, ask
    message: str
    path: str | None = None
    rule: Any = None
    suggestion: PermissionUpdate | None = None


def check_path_constraints(command: str, ctx: ToolUseContext,
                           parsed: ParsedCommand | None = None) -> PermissionDecision:
    """§4.8 on its own: deny / ask / passthrough for the paths a command touches."""
    parsed = parsed or parse_command(command)
    if not parsed.ok:
        return PermissionDecision(behavior="passthrough", message=REQUIRES_APPROVAL)
    findings = _path_findings(command, parsed, ctx)
    mode = getattr(ctx.permission_context, "mode", "default")
    return _findings_decision(command, findings, mode) or PermissionDecision(behavior="passthrough")


def _unverifiable_sentence(what: str) -> str:
    return f"{what}, so the command could not be checked against the deny rules."


def _path_findings(command: str, parsed: ParsedCommand, ctx: ToolUseContext,
                   an: Analysis | None = None) -> list[_PathFinding]:
    pc = ctx.permission_context
    an = an if an is not None else analyze(command)
    has_rules = pc is not None and hasattr(pc, "content_rules")
    read_deny = has_rules and bool(pc.content_rules("deny", "Read"))
    edit_deny = read_deny or (has_rules and bool(pc.content_rules("deny", "Edit")))
    findings: list[_PathFinding] = []
    curs: list[str] = [ctx.cwd] if ctx.cwd else [""]
    cd_seen = False
    for cmd in [*parsed.commands, *an.extra_parts, *an.nested]:
        argv, raw = strip_wrappers(cmd.argv, cmd.raw)
        dyn = cmd.dynamic[len(cmd.argv) - len(argv):] if len(cmd.dynamic) >= len(argv) else [False] * len(argv)
        info: dict[str, tuple[str, bool]] = {}
        for w, r, d in zip(argv, raw, dyn):
            info.setdefault(w, (r, d))
        items: list[tuple[str, str, str, bool]] = []
        for w, op in extract_paths(argv):
            r, d = info.get(w, (w, "$" in w or "`" in w))
            items.append((w, op, r, d))
        bases = curs
        if argv and _base(argv[0]) == "git":
            cdir, gitems = _git_paths(argv)
            if cdir is not None:
                r, d = info.get(cdir, (cdir, "$" in cdir))
                items.append((cdir, "read", r, d))
                cdir_cands = None if d else _candidates(cdir, r, curs, an.glob_options, pc)
                bases = cdir_cands if cdir_cands else [""]
            for w, op in gitems:
                r, d = info.get(w, (w, "$" in w or "`" in w))
                if op == "gitroot":
                    items.append((os.path.join(_git_root(bases[0] or ctx.cwd or "/"), w), "read", w, d))
                else:
                    items.append((w, op, r, d))
        items += [(r.target, "write" if r.is_output else "read", r.raw or r.target, r.dynamic)
                  for r in cmd.redirects if r.target is not None]
        head = _base(argv[0]) if argv else ""
        for word, op, rawword, dynamic in items:
            if word in _DEV_FILES:
                continue
            relevant = read_deny if op in ("read", "cd") else edit_deny
            cands = None if dynamic else _candidates(word, rawword, bases, an.glob_options, pc)
            if cands is None or not cands:
                if relevant:
                    findings.append(_PathFinding("unverifiable", _unverifiable_sentence(
                        f"{REQUIRES_APPROVAL}: the path {word} is only known when the command runs")))
                elif bases == [""] and not dynamic:
                    findings.append(_PathFinding("ask", f"{REQUIRES_APPROVAL}: {word} is relative to an unknown "
                                                 "directory."))
                else:
                    findings.append(_PathFinding("ask", f"{REQUIRES_APPROVAL}: the path {word} cannot be confirmed "
                                                 "safe before the command runs."))
                if op == "cd":
                    curs = [*curs, ""] if "" not in curs else curs
                continue
            rule_op = "edit" if op == "write" else "read"
            deny_hit = None
            if has_rules:
                for path in cands:
                    rule = matching_path_rule(pc, path, rule_op, "deny")
                    if rule is not None:
                        deny_hit = (path, rule)
                        break
            if deny_hit is not None:
                findings.append(_PathFinding("deny", f"Permission to use Bash with command {command} has been "
                                             "denied.", deny_hit[0], deny_hit[1]))
                continue
            if op == "write" and cd_seen:
                findings.append(_PathFinding("ask", "Compound commands that change directory and then write to a "
                                             "file require approval, because the target cannot be resolved "
                                             "reliably."))
                continue
            safety = None
            for path in cands if op == "write" else []:
                if head in ("rm", "rmdir") and word not in [r.target for r in cmd.redirects] \
                        and _is_critical_word(word, path, ctx):
                    safety = _PathFinding("safety", f"Dangerous {head} operation on {path} requires explicit "
                                          "approval.", path)
                    break
                if protected_reason(path):
                    safety = _PathFinding("safety", f"Claude requested permissions to edit {path} which is a "
                                          "sensitive file.", path)
                    break
            if safety is not None:
                findings.append(safety)
                continue
            for path in cands:
                if not in_working_dirs(path, ctx):
                    allowed = has_rules and matching_path_rule(pc, path, rule_op, "allow") is not None
                    if not allowed:
                        # narrow: an existing file's directory, else the path itself (a dir, or nothing yet)
                        target = os.path.dirname(path) if os.path.isfile(path) or op == "write" else path
                        tool = "Edit" if op == "write" else "Read"
                        sugg = PermissionUpdate(type="addRules", behavior="allow", destination="session",
                                                rules=[RuleValue(tool_name=tool,
                                                                 rule_content="/" + target.rstrip("/") + "/**")])
                        verb = "write to" if op == "write" else "read from"
                        findings.append(_PathFinding("ask", f"{REQUIRES_APPROVAL}: it would {verb} {path}, which "
                                                     "is outside the allowed working directories.", path,
                                                     suggestion=sugg))
                        break
            if op == "cd":
                cd_seen = True
                curs = [*curs, *[c for c in cands if c not in curs]]
        if read_deny:
            for word in _recursive_targets(argv):
                r, d = info.get(word, (word, "$" in word))
                if word == ":gitroot":
                    root = _git_root(bases[0] or ctx.cwd or "/")
                    cands = [root] if os.path.isdir(os.path.join(root, ".git")) else []
                else:
                    cands = None if d else _candidates(word, r, bases, an.glob_options, pc)
                for c in cands or []:
                    if _dir_has_denied(c, pc):
                        findings.append(_PathFinding("unverifiable", _unverifiable_sentence(
                            f"{REQUIRES_APPROVAL}: `{head}` would read every file under {c}, which holds a path "
                            "a Read deny rule covers"), c))
                        break
    return findings


def _unverifiable_decision(command: str, message: str, mode: str, path: str | None = None) -> PermissionDecision:
    """Not provable where a deny rule could match: denied in bypassPermissions/dontAsk, asked otherwise (as a
    safety check, so that neither an allow rule nor a mode can skip the question)."""
    if mode in ("bypassPermissions", "dontAsk"):
        why = message.split(": ", 1)[1] if message.startswith(REQUIRES_APPROVAL + ": ") else message
        return PermissionDecision(
            behavior="deny", message=f"Permission to use Bash with command {command} has been denied. "
                                     f"{why[:1].upper()}{why[1:]}",
            blocked_path=path, decision_reason=DecisionReason(type="safetyCheck", reason=why))
    return PermissionDecision(behavior="ask", message=message, blocked_path=path,
                              decision_reason=DecisionReason(type="safetyCheck", reason=message), suggestions=[])


def _findings_decision(command: str, findings: list[_PathFinding], mode: str = "default") -> PermissionDecision | None:
    for kind in ("deny", "unverifiable", "safety", "ask"):
        hits = [f for f in findings if f.kind == kind]
        if not hits:
            continue
        first = hits[0]
        if kind == "deny":
            return PermissionDecision(behavior="deny", message=first.message, blocked_path=first.path,
                                      decision_reason=DecisionReason(type="rule", rule=first.rule.rule))
        if kind == "unverifiable":
            return _unverifiable_decision(command, first.message, mode, first.path)
        suggestions = [f.suggestion for f in findings if f.suggestion is not None]
        reason = DecisionReason(type="safetyCheck", reason=first.message) if kind == "safety" else \
            DecisionReason(type="workingDir" if first.path else "other", reason=first.message)
        return PermissionDecision(behavior="ask", message=first.message, blocked_path=first.path,
                                  decision_reason=reason, suggestions=suggestions)
    return None


def _always_prompts(argv: list[str]) -> bool:
    """``watch``, ``setsid``, ``find -exec/-delete``...: no allow rule approves these (App. B §B.2)."""
    head = argv[0]
    if head in ("watch", "setsid"):
        return True
    return head == "find" and any(a in FIND_UNSAFE for a in argv[1:])


# --------------------------------------------------------------------------- suggestions
def suggest_rule(cmd: SimpleCommand) -> str:
    argv, raw, _ = cmd.stripped(any_env=False)
    text = " ".join([*[a for a in cmd.assignments if not _safe_assignment(a)], *raw]).strip() or cmd.text
    if len(argv) >= 2 and argv[0] not in NO_PREFIX_SUGGESTION and all(_safe_assignment(a) for a in cmd.assignments) \
            and re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", argv[1]) and not any(cmd.dynamic[:2]):
        return f"Bash({raw[0]} {raw[1]}:*)"
    return "Bash(" + text.replace("*", "\\*") + ")"  # exact: a literal * must not become a wildcard


# --------------------------------------------------------------------------- the check
def check_bash_permission(input: dict[str, Any], ctx: ToolUseContext) -> PermissionDecision:
    command = str(input.get("command", "")).strip()
    pc = ctx.permission_context
    if pc is None or not hasattr(pc, "content_rules"):
        if is_read_only_command(command):
            return PermissionDecision(behavior="allow", updated_input=input)
        return PermissionDecision(behavior="passthrough", message=REQUIRES_APPROVAL, updated_input=input)
    try:
        decision = _decide(command, input, ctx, pc)
    except RecursionError:
        decision = _unverifiable_decision(command, _unverifiable_sentence(
            f"{REQUIRES_APPROVAL}: the command is nested too deeply to analyse"), getattr(pc, "mode", "default"))
    decision.updated_input = input
    return decision


def _has_path_deny(pc: Any) -> bool:
    return bool(pc.content_rules("deny", "Read")) or bool(pc.content_rules("deny", "Edit"))


def _decide(command: str, input: dict[str, Any], ctx: ToolUseContext, pc: Any) -> PermissionDecision:
    an = analyze(command)
    parsed = an.parsed
    parts = parsed.commands if parsed.ok else _fallback_parts(command)
    whole = SimpleCommand([command], [command], [], [], [False], command)
    deny_rules = _bash_rules(pc, "deny")
    ask_rules = _bash_rules(pc, "ask")
    allow_rules = _bash_rules(pc, "allow")
    mode = getattr(pc, "mode", "default")

    nested = [*an.extra_parts, *an.nested]
    # 1. deny rules: any part (VAR= prefixes and wrappers stripped), what wrappers and scripts run, the whole line
    if deny_rules:
        for part in [whole, *parts, *nested]:
            rule = _match_rules(deny_rules, _forms(part, for_deny=True))
            if rule is not None:
                return PermissionDecision(behavior="deny",
                                          message=f"Permission to use Bash with command {command} has been denied.",
                                          decision_reason=DecisionReason(type="rule", rule=rule.rule))
    # 2. ask rules
    if ask_rules:
        for part in [whole, *parts, *nested]:
            rule = _match_rules(ask_rules, _forms(part, for_deny=True))
            if rule is not None:
                return PermissionDecision(behavior="ask", message=REQUIRES_APPROVAL,
                                          decision_reason=DecisionReason(type="rule", rule=rule.rule),
                                          suggestions=_suggest(parts if parsed.ok else [], command))
    # 2b. what runs cannot be known (a name built at run time, a script from a file or a pipe, an interpreter's
    # inline code, a wrapper of a shell...): where a deny rule could match, denied in bypass/dontAsk and asked
    # otherwise, as a safety check that neither an allow rule nor the mode can skip.
    path_deny = _has_path_deny(pc)
    if an.opaque and (deny_rules or ask_rules or path_deny):
        message = _unverifiable_sentence(f"{REQUIRES_APPROVAL}: {an.opaque[0]}")
        if deny_rules or path_deny:
            return _unverifiable_decision(command, message, mode)
        return PermissionDecision(behavior="ask", message=REQUIRES_APPROVAL,
                                  decision_reason=DecisionReason(type="safetyCheck", reason=an.opaque[0]),
                                  suggestions=[])
    if not parsed.ok:
        exact = _match_rules([r for r in pc.content_rules("allow", "Bash") if "*" not in (r.content or "")],
                             [command])
        if exact is not None:
            return PermissionDecision(behavior="allow", decision_reason=DecisionReason(type="rule", rule=exact.rule))
        return PermissionDecision(behavior="passthrough", message=REQUIRES_APPROVAL,
                                  decision_reason=DecisionReason(type="other",
                                                                 reason="the command could not be parsed"),
                                  suggestions=_suggest([], command))
    if not parsed.commands:
        return PermissionDecision(behavior="passthrough", message=REQUIRES_APPROVAL)

    # 3. path constraints
    findings = _path_findings(command, parsed, ctx, an)
    path_decision = _findings_decision(command, findings, mode)
    if path_decision is not None and (path_decision.behavior == "deny" or (
            path_decision.decision_reason is not None and path_decision.decision_reason.type == "safetyCheck"
            and any(f.kind == "unverifiable" for f in findings))):
        return path_decision

    # 4. every part read-only, allowed by a rule, or (acceptEdits) a file command inside the working dirs
    whole_not_ro = bool(an.not_ro or an.opaque)
    unapproved: list[SimpleCommand] = []
    redirect_suggestions: list[PermissionUpdate] = []
    matched_rule = None
    for part in _parts_for_approval(an):
        if not part.argv and not part.redirects:
            continue
        bare = SimpleCommand(part.argv, part.raw, part.assignments, [r for r in part.redirects if not r.is_output],
                             part.dynamic, part.text, part.stdin_script, part.stdin_kind, part.pipe_from)
        ro = not whole_not_ro and id(part) not in an.part_not_ro and simple_command_read_only(bare)
        ok = (ro and bool(part.argv)) or (not part.argv and not part.assignments)
        argv, _raw, _ = part.stripped(any_env=False)
        if not ok and argv and not _always_prompts(argv):
            rule = _match_rules(allow_rules, _forms(part, for_deny=False))
            if rule is not None:
                ok, matched_rule = True, matched_rule or rule
            elif mode == "acceptEdits" and argv[0] in ACCEPT_EDITS_COMMANDS \
                    and all(_safe_assignment(a) for a in part.assignments):
                ok = True  # its paths were checked above (inside the working dirs)
        # output redirections are writes: acceptEdits inside the working dirs, or an Edit allow rule
        for r in part.redirects:
            if not r.is_output or r.target in _DEV_FILES:
                continue
            cands = None if r.dynamic else _candidates(r.target, r.raw or r.target,  # type: ignore[arg-type]
                                                       [ctx.cwd], an.glob_options, pc)
            if not cands:
                ok = False
                continue
            if all((mode == "acceptEdits" and in_working_dirs(p, ctx)) or
                   matching_path_rule(pc, p, "edit", "allow") is not None for p in cands):
                continue
            ok = False
            from desktop_agent.permissions.paths import write_suggestions

            redirect_suggestions.extend(write_suggestions(cands[0], ctx))
        if not ok:
            unapproved.append(part)

    if path_decision is not None:  # ask (safety or outside): merge the parts' suggestions in
        path_decision.suggestions = [*path_decision.suggestions, *_suggest(unapproved, command),
                                     *redirect_suggestions]
        return path_decision
    if not unapproved:
        reason = DecisionReason(type="rule", rule=matched_rule.rule) if matched_rule is not None else \
            DecisionReason(type="other", reason="read-only command")
        return PermissionDecision(behavior="allow", decision_reason=reason)
    real_parts = [p for p in _parts_for_approval(an) if p.argv or p.redirects]
    if len(real_parts) > 1:
        message = ("This Bash command contains multiple operations. The following parts require approval: "
                   + ", ".join(p.text for p in unapproved))
    else:
        message = REQUIRES_APPROVAL
    return PermissionDecision(behavior="passthrough", message=message,
                              suggestions=[*_suggest(unapproved, command), *redirect_suggestions])


def _suggest(parts: list[SimpleCommand], command: str) -> list[PermissionUpdate]:
    rules: list[str] = []
    for p in parts:
        if not p.argv:
            continue
        r = suggest_rule(p)
        if r not in rules:
            rules.append(r)
    if not parts:
        rules = [f"Bash({command})"]
    rules = rules[:5]
    if not rules:
        return []
    from desktop_agent.permissions.rules import parse_rule

    return [PermissionUpdate(type="addRules", behavior="allow", destination="localSettings",
                             rules=[parse_rule(r) for r in rules])]
