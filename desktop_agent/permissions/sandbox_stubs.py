"""Command deny rules held by the sandbox: every program a ``Bash(...)`` deny rule names has each of its binaries
replaced, inside the sandbox, by a stub that refuses (exit 126) and names the rule. ``denied_programs`` reads
the rules, ``stub_binds`` finds the binaries and writes the stubs; ``sandbox_policy.SandboxPolicy`` binds them.

Which rules: a rule that names a program and nothing else — ``Bash(rm)``, ``Bash(rm:*)``, ``Bash(rm *)``,
``Bash(/usr/bin/rm:*)`` (the program ``rm``). The sandbox stops that program whatever its arguments. A rule with
arguments (``Bash(git push:*)``, ``Bash(rm -rf:*)``) or a pattern in the name (``Bash(r*)``) is the static
analysis' alone: a stub cannot tell ``git push`` from ``git status`` once ``git -C x push`` or a script is in
between. Shell builtins (``kill``, ``echo``, ``exec``...) have no binary to replace.

Which binaries: the name in every ``PATH`` directory of the shell and in ``/bin``, ``/usr/bin``, ``/sbin``,
``/usr/sbin``, ``/usr/local/bin``, ``/usr/local/sbin`` (and ``EXTRA_DIRS``: ``/usr/libexec``, git's
``/usr/lib/git-core``...), symlinks resolved (``/bin`` -> ``/usr/bin`` on Debian; the
stub lands on the file, so every link to it is covered), and every other name in those directories that is the
same file (a hard link: ``perl`` and ``perl5.36.0``). The stub is a read-only bind of a small script over the
binary, so no route runs the program: a wrapper (``env``, ``xargs``, ``find -exec``, ``tar
--checkpoint-action=exec``, ``vim -c '!...'``), a script in any interpreter (``os.system``, ``subprocess``,
``exec``), the dynamic loader (``ld-linux.so /bin/rm`` reads the stub: not an ELF file), a copy (``cp /bin/rm
./r`` copies the stub), a symlink, a bash loadable builtin of that name (``enable -f /usr/lib/bash/rm rm``:
``/dev/null`` is bound over the loadable). The stub file itself lives in a directory of this process that the sandbox
hides (``/tmp`` is private) and that no sandboxed command can write.

Not stubbed: the shell that runs the command (the sandbox starts it; a rule naming it — ``Bash(bash:*)`` —
stays the analysis'). Limits: a copy of the program made before the session or living outside those directories
(``~/.pyenv/versions/*/bin/python3`` behind a stubbed shim, a multi-call ``busybox rm``), and whatever another
program does with its own system calls (Python's ``os.unlink`` is not ``rm``: that is for path rules).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import stat
import tempfile
import threading
from typing import Any

from desktop_agent.util import fileio

STANDARD_DIRS = ("/bin", "/usr/bin", "/sbin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin")
# where packages keep a second copy of a program (Debian's /usr/lib/git-core/git is not /usr/bin/git)
EXTRA_DIRS = ("/usr/libexec", "/usr/local/libexec", "/usr/lib/git-core", "/usr/libexec/git-core", "/usr/games",
              "/usr/local/games", "/snap/bin")
# bash's loadable builtins (package bash-builtins: `enable -f /usr/lib/bash/rm rm` makes `rm` a builtin)
LOADABLE_DIRS = ("/usr/local/lib/bash", "/usr/lib/bash", "/opt/local/lib/bash", "/usr/pkg/lib/bash", "/opt/pkg/lib/bash")
STUB_EXIT = 126
_PROGRAM = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+@-]*")


def program_of_rule(content: str) -> str | None:
    """The program a Bash rule content names with no arguments (``rm``, ``rm:*``, ``rm *``, ``/usr/bin/rm:*``),
    else None."""
    text = (content or "").strip()
    for tail in (":*", " *"):
        if text.endswith(tail):
            text = text[:-len(tail)].rstrip()
            break
    if not text or any(c.isspace() for c in text):
        return None
    name = os.path.basename(text) if text.startswith("/") else text
    return name if _PROGRAM.fullmatch(name) and name not in (".", "..") else None


def denied_programs(pc: Any) -> dict[str, str]:
    """Program name -> the first deny rule naming it (as written, ``Bash(rm:*)``)."""
    out: dict[str, str] = {}
    if pc is None:
        return out
    for rule in pc.content_rules("deny", "Bash"):
        name = program_of_rule(rule.content or "")
        if name and name not in out:
            out[name] = f"Bash({(rule.content or '').strip()})"
    return out


def _search_dirs(path_env: str) -> list[str]:
    out: list[str] = []
    for d in [*path_env.split(os.pathsep), *STANDARD_DIRS, *EXTRA_DIRS]:
        if d.startswith("/") and d not in out:
            out.append(d)
    return out


_inode_cache: dict[tuple[str, int], dict[int, list[str]]] = {}
_cache_lock = threading.Lock()


def _inodes(directory: str) -> dict[int, list[str]]:
    """inode -> names of the files in ``directory`` (``scandir``: no stat per entry), cached by the dir's mtime."""
    try:
        mtime = os.stat(directory).st_mtime_ns
    except OSError:
        return {}
    key = (directory, mtime)
    with _cache_lock:
        hit = _inode_cache.get(key)
    if hit is not None:
        return hit
    table: dict[int, list[str]] = {}
    try:
        with os.scandir(directory) as it:
            for entry in it:
                table.setdefault(entry.inode(), []).append(entry.path)
    except OSError:
        pass
    with _cache_lock:
        if len(_inode_cache) > 256:
            _inode_cache.clear()
        _inode_cache[key] = table
    return table


def binaries(name: str, path_env: str) -> list[str]:
    """Every file the program ``name`` is on this machine: its match in each search dir (real path), and every
    other name in those dirs that is the same file (hard links)."""
    dirs = _search_dirs(path_env)
    found: dict[tuple[int, int], str] = {}
    out: list[str] = []
    for d in dirs:
        candidate = os.path.join(d, name)
        try:
            st = os.stat(candidate)  # most are missing: one failed stat, no realpath
            real = os.path.realpath(candidate)
        except (OSError, ValueError):
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if (st.st_dev, st.st_ino) not in found:
            found[(st.st_dev, st.st_ino)] = real
        if real not in out:
            out.append(real)
    for (dev, ino), real in list(found.items()):
        try:
            if os.stat(real).st_nlink < 2:
                continue
        except OSError:
            continue
        for d in dirs:
            for other in _inodes(d).get(ino, []):
                try:
                    st = os.lstat(other)
                except OSError:
                    continue
                if st.st_dev == dev and st.st_ino == ino and stat.S_ISREG(st.st_mode):
                    r = os.path.realpath(other)
                    if r not in out:
                        out.append(r)
    return out


_stub_dir: str | None = None
_stub_lock = threading.Lock()


def stub_dir() -> str:
    """This process's directory of stub scripts (0700; hidden inside the sandbox by the private /tmp)."""
    global _stub_dir
    with _stub_lock:
        if _stub_dir is None or not os.path.isdir(_stub_dir):
            base = "/tmp" if os.path.isdir("/tmp") else None  # private inside the sandbox
            _stub_dir = os.path.realpath(tempfile.mkdtemp(prefix="desktop-agent-stubs-", dir=base))
            atexit.register(shutil.rmtree, _stub_dir, True)
        return _stub_dir


def stub_text(name: str, rule: str, interpreter: str) -> str:
    message = (f"desktop-agent: {name} is denied by the permission rule {rule}; "
               "the sandbox does not run it.").replace("'", "'\\''")
    return f"#!{interpreter}\nprintf '%s\\n' '{message}' >&2\nexit {STUB_EXIT}\n"


def write_stub(name: str, rule: str, interpreter: str) -> str:
    """The stub file for (name, rule), written once (atomically) into ``stub_dir``; read-only, executable."""
    text = stub_text(name, rule, interpreter)
    digest = hashlib.sha256(text.encode()).hexdigest()[:20]
    directory = stub_dir()
    path = os.path.join(directory, f"stub-{digest}")
    if os.path.isfile(path):
        return path
    fileio.write_bytes_atomic(path, text.encode(), fsync=False, mode=0o555)
    return path


def loadables(name: str, loadables_path: str = "") -> list[str]:
    """bash loadable builtins named like the program (``/usr/lib/bash/rm``): ``/dev/null`` goes over them, so
    ``enable -f`` cannot load one."""
    out: list[str] = []
    for d in [*loadables_path.split(os.pathsep), *LOADABLE_DIRS]:
        if not d.startswith("/"):
            continue
        for candidate in (os.path.join(d, name), os.path.join(d, name + ".so")):
            try:
                if not stat.S_ISREG(os.stat(candidate).st_mode):
                    continue
                real = os.path.realpath(candidate)
                if real not in out:
                    out.append(real)
            except (OSError, ValueError):
                continue
    return out


def stub_binds(pc: Any, path_env: str, shell: str, loadables_path: str = "") -> tuple[list[tuple[str, str]], list[str]]:
    """(stub file, binary path) pairs for every program a deny rule names — ``/dev/null`` for a bash loadable
    builtin of that name — and notes (what was left alone)."""
    programs = denied_programs(pc)
    if not programs:
        return [], []
    try:
        shell_real = os.path.realpath(shell)
        shell_id = (os.stat(shell_real).st_dev, os.stat(shell_real).st_ino)
    except (OSError, ValueError):
        shell_real, shell_id = shell, None
    binds: list[tuple[str, str]] = []
    notes: list[str] = []
    taken: set[str] = set()
    for name, rule in programs.items():
        for binary in binaries(name, path_env):
            if binary in taken:
                continue
            try:
                st = os.stat(binary)
            except OSError:
                continue
            if binary == shell_real or (st.st_dev, st.st_ino) == shell_id:
                notes.append(f"{binary} runs the command itself: {rule} is held by the command analysis only.")
                continue
            taken.add(binary)
            binds.append((write_stub(name, rule, shell_real), binary))
        for lib in loadables(name, loadables_path):
            if lib not in taken:
                taken.add(lib)
                binds.append((os.devnull, lib))
    return binds, notes


def stub_args(binds: list[tuple[str, str]]) -> list[str]:
    args: list[str] = []
    for src, dst in binds:
        args += ["--ro-bind", src, dst]
    return args
