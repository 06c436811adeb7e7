"""The command tables the shell analysis knows: read-only commands and git subcommands, wrappers that run their
arguments (with their options that take a value), shells, interpreters, builtins that evaluate or run strings,
environment variables that are harmless or make programs run something else.
"""

from __future__ import annotations

import re


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
RUNNER_ENV = frozenset({
    "PAGER", "MANPAGER", "EDITOR", "VISUAL", "BROWSER", "LESSOPEN", "LESSCLOSE", "BASH_ENV", "ENV", "PATH", "IFS",
    "CDPATH", "GLOBIGNORE", "PROMPT_COMMAND", "PS4", "SHELLOPTS", "BASHOPTS", "PYTHONSTARTUP", "PYTHONPATH",
    "PYTHONHOME", "NODE_OPTIONS", "PERL5OPT", "PERL5LIB", "RUBYOPT", "RUBYLIB", "TAR_OPTIONS", "SHELL", "TMPDIR",
    "HOME", "XDG_CONFIG_HOME", "SSH_ASKPASS", "SUDO_ASKPASS", "ZDOTDIR", "INPUTRC", "RIPGREP_CONFIG_PATH",
    "GREP_OPTIONS", "BASH_XTRACEFD", "FIGNORE", "HISTFILE", "EXECIGNORE",
})


RUNNER_ENV_PREFIX = ("GIT_", "LD_", "DYLD_", "BASH_FUNC_", "NPM_CONFIG_", "PIP_")


DEV_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "yash", "fish", "ash", "rbash", "busybox"})


# Interpreters of other languages: inline code (-c/-e, stdin, a here-document) cannot be checked.
INTERPRETERS = frozenset({
    "python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua",
    "luajit", "tclsh", "wish", "expect", "R", "Rscript", "julia", "osascript", "pwsh", "powershell", "groovy",
    "irb", "jshell", "scala", "ghci", "runghc", "guile", "racket", "sbcl", "clisp", "elixir", "erl", "escript",
})


INLINE_CODE_FLAGS = frozenset({"-c", "-e", "-E", "--eval", "--command", "-r", "--run", "-p", "--print", "-x"})


# Wrappers that run their arguments as a command: (options taking a separate value).
WRAPPERS: dict[str, frozenset[str]] = {
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


# Builtins that evaluate array subscripts (and so command substitutions) in their arguments, or run strings.
EVAL_BUILTINS = frozenset({"printf", "test", "[", "[[", "let", "declare", "typeset", "local", "export", "readonly",
                            "read", "unset", "mapfile", "readarray", "wait", "eval", "trap", "alias", "source", "."})


# Builtins that make later commands run something else, or run stored commands.
OPAQUE_BUILTINS = frozenset({"hash", "enable", "bind", "complete", "compgen", "fc", "coproc", "shopt", "set",
                              "history", "command_not_found_handle", "exec"})


GLOB_CHARS = re.compile(r"[*?\[]")
