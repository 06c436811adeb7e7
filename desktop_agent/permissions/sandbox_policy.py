"""What a sandboxed shell may write, read and reach, derived from the permission state (``build_policy``), and the
bubblewrap flags for it (``SandboxPolicy.bwrap_args``, ``base_flags``); the process's private TMPDIR.

The policy (``build_policy``):
- writable: the working directories, ``sandbox.filesystem.allowWrite`` and a private temp dir (``TMPDIR``,
  ``TMP``, ``TEMP`` point at it; one per process, removed at exit). Everything else of ``/`` is bound
  read-only (``/tmp`` too: only ``TMPDIR`` is writable); ``/dev`` is bubblewrap's minimal one and ``/proc``
  the sandbox's own (a new PID namespace: no ``/proc/<agent>/root`` escape, no signals to outside processes).
- masked (unreadable): every path a ``Read(...)`` deny rule names, and ``sandbox.filesystem.denyRead``.
  A file gets ``/dev/null`` bound over it (reading fails with EACCES: binds are ``nodev``), a directory an
  empty read-only tmpfs. ``Read(./secrets/**)`` masks the directory, ``Read(./.env)`` the file. Patterns
  are expanded against the file system when the policy is built: literal paths on every command, glob and
  unanchored patterns (``Read(**/*.pem)``, ``Read(.env)`` at any depth) by walking the working directories
  (at most ``WALK_BUDGET`` entries, result reused for ``WALK_TTL_S`` seconds). **Files created later that a
  glob would match are not masked** until the next walk; files outside the working directories are found
  only for anchored patterns. Symlinks are resolved: the target is masked.
- read-only: every ``Edit(...)`` / ``Write(...)`` deny path (expanded the same way),
  ``sandbox.filesystem.denyWrite``, and the protected paths of ``permissions.protected`` under the writable
  folders (``sandbox_protected``: every repository's ``.git`` pinned with its hooks, config and commondir
  read-only, ``.claude``, ``.mcp.json``, ``.husky``, shell start-up files when home is writable, our own
  configuration and state...), the missing ones too (placeholders, held for this one command:
  ``SandboxPolicy.release`` when it ends).
- network: off (``--unshare-net``; loopback only, inside) unless ``sandbox.network.allowedDomains`` is
  non-empty; then the shell runs in the session's own network namespace (``egress``: still no route out) where
  the egress proxy (``permissions.egress``) listens, and reaches exactly the hosts the rules allow through it
  (``SandboxPolicy.egress``; ``/etc/resolv.conf`` names no server there). The host's network namespace is never
  shared.
- caches (``sandbox_caches``): the project's cache directory, bound writable after the read-only binds.
- capabilities: all dropped (``--cap-drop ALL``): as root inside the sandbox a command could otherwise
  ``umount`` a mask. ``--die-with-parent``; no ``--new-session``: the shell stays in the process group the
  Bash tool created (``start_new_session``), so ``killpg`` on timeout/Stop reaches every process, and the
  PID namespace takes down whatever is left when its first process exits. (``--new-session`` would protect
  against TIOCSTI on a controlling terminal; the shell has none: it is a session leader's child with stdin
  /dev/null.)
- host sockets (``add_socket_policy``, ``sandbox_sockets``): private ``/tmp``, ``/run``, ``/var/tmp``,
  ``$XDG_RUNTIME_DIR`` bound first, what must stay visible bound back, every other visible host socket masked;
  the egress proxy's socket goes in through ``sandbox_sockets.bind_socket``.
- command deny rules (``add_command_stubs``, ``sandbox_stubs``): every binary of a program a ``Bash(...)`` deny
  rule names is covered by a refusing stub, bound after every other mount.
Mount order in ``bwrap_args``: ``/``, the private dirs and their read-only re-binds, the working dirs, read-only
paths, masks, the caches and resolv.conf, socket masks and bound sockets, stubs, then the private dirs sealed
read-only.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.protected import dot_git, sandbox_protected
from desktop_agent.permissions.rules import PathPattern
from desktop_agent.permissions.sandbox_settings import SandboxSettings, load_sandbox_settings
from desktop_agent.permissions.sandbox_sockets import SocketPolicy, socket_args, socket_policy
from desktop_agent.permissions.sandbox_stubs import stub_args, stub_binds, stub_dir
from desktop_agent.util.git_env import git_safety_env
from desktop_agent.util.placeholders import release_placeholders

WALK_BUDGET = 20_000
WALK_TTL_S = 10.0


def base_flags(network: bool) -> list[str]:
    flags = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--cap-drop", "ALL",
             "--die-with-parent"]
    if network:
        flags.append("--share-net")
    return flags


# --------------------------------------------------------------------------------------------------- policy


_tmpdir: str | None = None
_tmpdir_lock = threading.Lock()


def private_tmpdir() -> str:
    """This process's private temp dir for shells (writable inside the sandbox; removed at exit)."""
    global _tmpdir
    with _tmpdir_lock:
        if _tmpdir is None or not os.path.isdir(_tmpdir):
            _tmpdir = os.path.realpath(tempfile.mkdtemp(prefix="desktop-agent-shell-"))
            atexit.register(shutil.rmtree, _tmpdir, True)
        return _tmpdir


@dataclass
class SandboxPolicy:
    writable: list[str] = field(default_factory=list)
    read_only: list[str] = field(default_factory=list)
    masked_files: list[str] = field(default_factory=list)
    masked_dirs: list[str] = field(default_factory=list)
    network: bool = False
    tmpdir: str = ""
    notes: list[str] = field(default_factory=list)
    sockets: SocketPolicy | None = None  # private /tmp, /run...; host sockets masked (add_socket_policy)
    stubs: list[tuple[str, str]] = field(default_factory=list)  # (stub, binary) (add_command_stubs)
    pinned: list[str] = field(default_factory=list)  # .git dirs and the folders above masked/read-only/protected paths
    egress: bool = False  # in the session's network namespace, behind the egress proxy (set by sandbox_launch)
    resolv_conf: str = ""  # with egress: bound over /etc/resolv.conf (a file naming no server)
    caches: list[str] = field(default_factory=list)  # writable, bound after the read-only binds (sandbox_caches)
    caches_ro: list[str] = field(default_factory=list)  # the cache root and cargo/, read-only under them
    placeholders: list[str] = field(default_factory=list)  # placeholder references this policy holds (release())

    def release(self) -> list[str]:
        """The command this policy was built for has ended: drop its placeholder references (``util.placeholders``
        removes each one no other command binds). Idempotent."""
        held, self.placeholders = self.placeholders, []
        return release_placeholders(held) if held else []

    def bwrap_args(self) -> list[str]:
        args = base_flags(self.network or self.egress)  # egress: the namespace nsenter put bubblewrap in
        if self.sockets is not None:
            args += socket_args(self.sockets, "pre")
        for p in self.writable:
            args += ["--bind", p, p]
        for p in self.pinned:  # a mount point cannot be renamed (EBUSY): `mv .git x`, `mv config cfg` fail
            args += ["--bind", p, p]
        for p in self.read_only:
            args += ["--ro-bind", p, p]
        for p in self.masked_files:
            args += ["--ro-bind", "/dev/null", p]
        for p in self.masked_dirs:
            args += ["--tmpfs", p, "--remount-ro", p]
        for p in self.caches_ro:
            args += ["--ro-bind", p, p]
        for p in self.caches:
            args += ["--bind", p, p]
        if self.egress and self.resolv_conf:
            target = _resolv_target()
            if target:
                args += ["--ro-bind", self.resolv_conf, target]
        if self.sockets is not None:
            args += socket_args(self.sockets, "post")
        args += stub_args(self.stubs)
        if self.sockets is not None:
            args += socket_args(self.sockets, "seal")
        return args


def _resolv_target() -> str:
    """Where /etc/resolv.conf really is, when it is a file bubblewrap can bind over (a link into the private
    /run dangles inside anyway)."""
    try:
        real = os.path.realpath("/etc/resolv.conf")
    except (OSError, ValueError):
        return ""
    if not os.path.isfile(real) or any(_inside(real, d) for d in ("/run", "/var/run", "/tmp")):
        return ""
    return real


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


_GLOB_CHARS = re.compile(r"[*?\[\\]")


def _literal_bases(root: str, segments: list[str]) -> list[str]:
    """Existing paths for ``root/segments...``, each segment matched exactly or case-insensitively (deny
    rules fold case)."""
    bases = [root]
    for seg in segments:
        nxt: list[str] = []
        for b in bases:
            exact = os.path.join(b, seg)
            if os.path.lexists(exact):
                nxt.append(exact)
                continue
            try:
                names = os.listdir(b)
            except OSError:
                continue
            nxt += [os.path.join(b, n) for n in names if n.casefold() == seg.casefold()]
        bases = nxt
        if not bases:
            break
    return bases


def _pattern_hit(pp: PathPattern, path: str, is_dir: bool) -> bool:
    return pp.matches(path) or (is_dir and pp.matches(path.rstrip("/") + "/"))


@dataclass
class _Walk:
    budget: int
    truncated: bool = False


def _expand(pp: PathPattern, search_dirs: list[str], walk: _Walk | None) -> list[str]:
    """Existing paths a rule pattern covers (a directory it covers whole is returned, not its content).
    ``walk`` None: only the literal part (no directory walk)."""
    segs = [s for s in pp.glob.split("/") if s] if pp.glob else []
    if pp.anchored:
        i = 0
        while i < len(segs) and not _GLOB_CHARS.search(segs[i]):
            i += 1
        starts = _literal_bases(pp.root, segs[:i])
        if i == len(segs) or (i == len(segs) - 1 and segs[i] in ("**", "*")):
            # literal, or `dir/**`/`dir/*`: the path itself (a `dir/*` rule covers what is in it: mask it whole)
            return [p for p in starts if os.path.lexists(p)]
    else:
        starts = [d for d in search_dirs if os.path.isdir(d)]
    if walk is None:
        return []
    hits: list[str] = []
    for start in starts:
        if _pattern_hit(pp, start, os.path.isdir(start)):
            hits.append(start)
            continue
        for dirpath, dirnames, filenames in os.walk(start):
            if walk.budget <= 0:
                walk.truncated = True
                return hits
            walk.budget -= len(dirnames) + len(filenames)
            keep = []
            for name in dirnames:
                p = os.path.join(dirpath, name)
                if _pattern_hit(pp, p, True):
                    hits.append(p)
                elif name != ".git" or not os.path.isdir(os.path.join(p, "objects")):
                    keep.append(name)
                else:  # a repository: its hooks/config/refs may match, never its objects
                    hits += [q for q in (os.path.join(p, n) for n in ("hooks", "config", "info"))
                             if os.path.lexists(q) and _pattern_hit(pp, q, os.path.isdir(q))]
            dirnames[:] = keep
            hits += [p for p in (os.path.join(dirpath, n) for n in filenames) if _pattern_hit(pp, p, False)]
    return hits


_walk_cache: dict[tuple[Any, ...], tuple[float, list[str], bool]] = {}


def _expand_all(patterns: list[PathPattern], search_dirs: list[str]) -> tuple[list[str], bool]:
    """Every existing path the patterns cover: literal ones now, walked ones cached for WALK_TTL_S."""
    out: list[str] = []
    walked: list[PathPattern] = []
    for pp in patterns:
        out += _expand(pp, search_dirs, None)
        segs = [s for s in pp.glob.split("/") if s] if pp.glob else []
        literal = pp.anchored and (not any(_GLOB_CHARS.search(s) for s in segs) or (
            segs and segs[-1] in ("**", "*") and not any(_GLOB_CHARS.search(s) for s in segs[:-1])))
        if not literal:
            walked.append(pp)
    truncated = False
    if walked:
        key = (tuple((pp.raw, pp.root, pp.glob, pp.anchored) for pp in walked), tuple(search_dirs))
        hit = _walk_cache.get(key)
        now = time.monotonic()
        if hit is None or now - hit[0] > WALK_TTL_S:
            walk = _Walk(WALK_BUDGET)
            found: list[str] = []
            for pp in walked:
                found += _expand(pp, search_dirs, walk)
            hit = (now, found, walk.truncated)
            if len(_walk_cache) > 64:
                _walk_cache.clear()
            _walk_cache[key] = hit
        out += hit[1]
        truncated = hit[2]
    return out, truncated


def _real(path: str) -> str | None:
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    return real if os.path.exists(real) else None


def _path_rules(pc: PermissionContext | None, tools: tuple[str, ...]) -> list[PathPattern]:
    if pc is None:
        return []
    seen: set[int] = set()
    out: list[PathPattern] = []
    cwd, home = pc.original_cwd, pc.home
    for name in tools:
        for rule in pc.content_rules("deny", name):
            if id(rule) in seen:
                continue
            seen.add(id(rule))
            try:
                out.append(rule.path_pattern(cwd, home))
            except Exception:  # an uncompilable rule masks nothing; the permission layer reports it
                continue
    return out


def build_policy(pc: PermissionContext | None, working_dirs: Iterable[str], *, tmpdir: str | None = None,
                 settings: SandboxSettings | None = None) -> SandboxPolicy:
    """The sandbox for one shell, from the permission state (rules, dirs) and the sandbox settings."""
    settings = settings if settings is not None else load_sandbox_settings(pc)
    tmp = tmpdir or private_tmpdir()
    dirs: list[str] = []
    for d in [*working_dirs, *settings.allow_write]:
        real = _real(d)
        if real and os.path.isdir(real) and real not in dirs:
            dirs.append(real)
    policy = SandboxPolicy(tmpdir=tmp)  # never the host's network: egress goes through the proxy (sandbox_launch)
    for d in sorted(dirs, key=len):
        if not any(_inside(d, w) for w in policy.writable):
            policy.writable.append(d)
    if not any(_inside(tmp, w) for w in policy.writable):
        policy.writable.append(tmp)
    search = [d for d in dirs]

    read_only = _protected_binds(policy, tmp, settings)
    edit_hits, t1 = _expand_all([*_path_rules(pc, ("Edit", "Write")), *settings.deny_write], search)
    read_hits, t2 = _expand_all([*_path_rules(pc, ("Read",)), *settings.deny_read], search)
    if t1 or t2:
        policy.notes.append(f"A deny pattern was expanded over the first {WALK_BUDGET} entries of the working "
                            "directories only.")
    read_only += edit_hits

    masked: dict[str, bool] = {}
    for p in read_hits:
        real = _real(p)
        if real and real != "/":
            masked[real] = os.path.isdir(real)
    for gitdir in _repos_tracking(list(masked), policy.writable):
        masked[gitdir] = True
        policy.notes.append(f"{gitdir} is hidden inside the sandbox: git tracks a file a Read deny rule covers, "
                            "and its object store holds that file's content.")
    mask_dirs: list[str] = []
    for p in sorted(masked, key=len):
        if any(_inside(p, d) for d in mask_dirs):
            continue
        if masked[p]:
            mask_dirs.append(p)
        else:
            policy.masked_files.append(p)
    policy.masked_dirs = mask_dirs
    ro: list[str] = []
    for p in sorted({r for r in (_real(x) for x in read_only) if r}, key=len):
        if p == "/" or any(_inside(p, d) for d in ro) or any(_inside(p, d) for d in mask_dirs):
            continue
        if p in masked:
            continue
        if not any(_inside(p, w) for w in policy.writable):
            continue  # already read-only
        ro.append(p)
    policy.read_only = ro
    pin_parents(policy)
    return policy


def pin_parents(policy: SandboxPolicy) -> None:
    """Pin every folder between a working folder and a masked or read-only path (bound onto itself): a command
    cannot rename it (``mv config cfg`` fails with EBUSY), so the next command's masks — made from the names —
    still cover the denied files, and the deny rules' names keep naming them."""
    pins: set[str] = set(policy.pinned)
    guarded = [*policy.masked_files, *policy.masked_dirs, *policy.read_only]
    for path in guarded:
        roots = [w for w in policy.writable if _inside(path, w) and path != w]
        if not roots:
            continue
        root = max(roots, key=len)
        parent = os.path.dirname(path)
        while parent != root and _inside(parent, root):
            pins.add(parent)
            parent = os.path.dirname(parent)
    policy.pinned = sorted((p for p in pins if p not in guarded and p not in policy.writable), key=len)


def _protected_binds(policy: SandboxPolicy, tmp: str, settings: SandboxSettings) -> list[str]:
    """The one list of protected paths (``permissions.protected``) under the writable folders: pinned git dirs
    go to ``policy.pinned``; the read-only ones are returned."""
    binds = sandbox_protected([w for w in policy.writable if w != tmp],
                              [a for a in settings.allow_write if isinstance(a, str)])
    policy.pinned = binds.pinned
    policy.placeholders = binds.placeholders
    return binds.read_only


# --------------------------------------------------------------------------------------------------- git

_TRACKED_CACHE: dict[tuple[str, str, float], bool] = {}


def _git_dir_of(path: str, roots: list[str]) -> tuple[str, str] | None:
    """(work tree, git dir) of the repository holding ``path``, searched up to a working directory."""
    d = path if os.path.isdir(path) else os.path.dirname(path)
    while True:
        gitdir = dot_git(d)
        if gitdir is not None:
            return d, gitdir
        if any(d == r for r in roots) or os.path.dirname(d) == d or not any(_inside(d, r) for r in roots):
            return None
        d = os.path.dirname(d)


def _tracked(work_tree: str, git_dir: str, path: str) -> bool:
    """Does git track ``path`` (or anything under it)? Cached per index state. Fails closed: an error is yes."""
    try:
        stamp = os.stat(os.path.join(git_dir, "index")).st_mtime
    except OSError:
        stamp = 0.0
    rel = os.path.relpath(path, work_tree)
    key = (git_dir, rel, stamp)
    if key not in _TRACKED_CACHE:
        try:
            out = subprocess.run(["git", "-C", work_tree, "ls-files", "-z", "--", rel], capture_output=True,
                                 timeout=5, env=git_safety_env({**os.environ, "GIT_OPTIONAL_LOCKS": "0"}))
            _TRACKED_CACHE[key] = out.returncode != 0 or bool(out.stdout.strip(b"\0"))
        except (OSError, subprocess.SubprocessError):
            _TRACKED_CACHE[key] = True
    return _TRACKED_CACHE[key]


def _repos_tracking(masked: list[str], roots: list[str]) -> list[str]:
    """Git dirs (inside the working directories) whose repository tracks a Read-denied path: a mask over the
    file is not enough there — ``git show HEAD:.env``, ``git cat-file``, ``git log -p`` read it back from the
    object store — so the whole git dir is hidden. Every shell runs sandboxed, so git does not work in
    that repository from Bash while such a rule exists: the price of the guarantee (an untracked or
    ignored ``.env``, the usual case, leaves git alone)."""
    out: list[str] = []
    for path in masked:
        found = _git_dir_of(path, roots)
        if found is None:
            continue
        work_tree, git_dir = found
        real = _real(git_dir)
        if real and real not in out and any(_inside(real, r) for r in roots) and _tracked(work_tree, git_dir, path):
            out.append(real)
    return out


# --------------------------------------------------------------------------------------------------- sockets, stubs


def add_socket_policy(policy: SandboxPolicy, env: dict[str, str], *, cwd: str = "", shell: str = "") -> SandboxPolicy:
    """No host Unix socket inside (``sandbox_sockets``): private /tmp, /run, $XDG_RUNTIME_DIR, /var/tmp with the
    working dirs and TMPDIR bound back, $HOME, the PATH dirs, the cwd and the shell kept visible read-only, every
    other visible host socket masked. The egress proxy's socket goes in with ``sandbox_sockets.bind_socket``."""
    keep = [p for p in (env.get("HOME") or "", cwd, shell, *(env.get("PATH") or "").split(os.pathsep))
            if p.startswith("/")]
    sp = socket_policy(env, shown=list(policy.writable), keep_visible=keep, network=policy.network)
    # a socket under a masked (empty, read-only) dir is gone already; a mount there could not even be made
    sp.masked = [m for m in sp.masked if not any(_inside(m, d) for d in policy.masked_dirs)
                 and m not in policy.masked_files]
    policy.sockets = sp
    return policy


def add_command_stubs(policy: SandboxPolicy, pc: PermissionContext | None, env: dict[str, str],
                      shell: str) -> SandboxPolicy:
    """Every binary of every program a ``Bash(...)`` deny rule names replaced by a refusing stub
    (``sandbox_stubs``). The stub directory is made read-only inside should it lie in a writable dir."""
    binds, notes = stub_binds(pc, env.get("PATH") or os.defpath, shell, env.get("BASH_LOADABLES_PATH") or "")
    policy.stubs = [(src, dst) for src, dst in binds if not any(_inside(dst, d) for d in policy.masked_dirs)
                    and dst not in policy.masked_files]  # a masked binary does not run at all
    policy.notes += notes
    if binds:
        sdir = stub_dir()
        if any(_inside(sdir, w) for w in policy.writable) and sdir not in policy.read_only:
            policy.read_only.append(sdir)
    return policy
