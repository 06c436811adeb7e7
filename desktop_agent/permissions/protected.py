"""The one list of protected paths: files and folders whose content can make a program run later (shell start-up
files, git configuration and hooks, editor and agent configuration, MCP servers) or that hold our own settings,
state and trust, and what each layer does with them.

- ``protected_reason(path)``: why a write to ``path`` needs the person's explicit yes (the decision's safety check,
  ``decisionReason.type == "safetyCheck"``: it asks in every mode that asks, acceptEdits and bypass included, and is
  denied headless without a prompter and in dontAsk). By name anywhere (``PROTECTED_DIRS`` as a path component,
  ``PROTECTED_FILES`` as the last one, compared on ``rules.fold`` text so ``.GIT`` or a full-width ``．git`` match),
  and by place: ``home_protected()`` (``~/.ssh``, ``~/.gitconfig``, ``~/.config/git``, ``$XDG_CONFIG_HOME/git``,
  every shell start-up file in home, ``~/.config/{fish,autostart,systemd,environment.d}``), our state
  (``util.dirs.data_dir()``, Claude Code's config dir) and our stores.
- ``own_store_reason(path)``: our own configuration and trust store (``util.dirs.config_dir()``: settings,
  credentials, trust.json; Claude Code's global config, whose ``hasTrustDialogAccepted`` we read as trust; the
  managed settings dir): a write is denied in every mode, bypass included.
- ``sandbox_protected(writable, allowed)``: inside the bubblewrap sandbox every protected path under a writable
  folder is bound read-only onto itself (a mount point: it cannot be written, removed or renamed — EBUSY), also the
  ones that do not exist yet: an empty directory is created as the mount point (``.git/commondir``: a file holding
  ``.``, which git reads as "the git dir itself"; ``util.placeholders`` makes them, removes them when the last
  command binding them ends (``ProtectedBinds.placeholders``, released by ``sandbox_launch``), sweeps what a killed
  process left, and lets our own atomic writer replace one the person allowed). Every repository's ``.git`` directory found
  in the writable folders (nested ones too, walked at most ``WALK_BUDGET`` entries, ``WALK_SKIP`` folders left
  out, the walk reused ``WALK_TTL_S`` seconds) is bound onto itself (*pinned*: ``mv .git x`` fails), its ``hooks``, ``config`` and ``commondir``
  read-only; a ``.git`` file (worktree, submodule) read-only and the git dir it names pinned the same way;
  ``core.hooksPath`` targets and the files a repository's config includes read-only; every folder between a writable root and one of these is pinned too (a
  folder holding a mount point could otherwise be renamed and made afresh). A path the person allowed
  (``sandbox.filesystem.allowWrite`` naming it or a protected folder holding it) and a protected path that is or
  holds a working directory stay writable.

Limits: a repository a command creates (``git init``, a new ``.git`` file) is protected from the next command
on — at the top of a working folder at once, deeper once the walk is redone (``WALK_TTL_S``) — never within the
command that created it; a protected name that is a symlink
is protected at its target (the link itself can be replaced).
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field

from desktop_agent.permissions.rules import fold
from desktop_agent.permissions.settings import managed_dir
from desktop_agent.util import dirs
from desktop_agent.util.placeholders import make_placeholder, note_existing, sweep_once

PROTECTED_DIRS = frozenset({".git", ".claude", ".vscode", ".idea", ".husky", ".githooks", ".ssh"})
SHELL_STARTUP_FILES = frozenset({
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zprofile",
    ".zshenv", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc", ".mkshrc", ".inputrc", ".xprofile",
    ".xsessionrc",
})
PROTECTED_FILES = SHELL_STARTUP_FILES | frozenset({
    ".npmrc", ".yarnrc", ".mcp.json", ".gitconfig", ".gitmodules", ".gitattributes", ".ripgreprc", ".claude.json",
    ".envrc",
})
# What the sandbox keeps read-only at the top of every writable folder: name → placeholder kind when missing
# ("existing": only when it exists — a missing .husky/.githooks runs nothing until core.hooksPath names it,
# and hooksPath targets are protected existing or not).
WORKDIR_ENTRIES = {".mcp.json": "file", ".envrc": "file", ".claude": "dir", ".vscode": "dir", ".idea": "dir",
                   ".husky": "existing", ".githooks": "existing"}
OWN_STORE_MESSAGE = ("{path} is Desktop Agent's own configuration or trust store: no tool may write it, "
                     "in any permission mode.")
WALK_BUDGET = 20_000
WALK_TTL_S = 10.0
# Folders the walk for nested repositories does not enter: package and tool caches, large and without a
# repository of the person's own (a ``git init`` inside one is a repository a command made: see Limits).
WALK_SKIP = frozenset({"node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache", ".pytest_cache",
                       ".gradle", ".cache"})


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _norm(path: str) -> str:
    return os.path.normpath(os.path.abspath(os.path.expanduser(path)))


def _forms(path: str) -> list[str]:
    """The path as given and with symlinks resolved."""
    p = _norm(path)
    try:
        real = os.path.realpath(p)
    except (OSError, ValueError):
        real = p
    return [p] if real == p else [p, real]


def _home() -> str:
    return os.path.expanduser("~")


def home_protected() -> list[str]:
    """Protected places in the person's home (computed at each call: tests and the CLI change the environment)."""
    home = _home()
    out = [os.path.join(home, n) for n in sorted(SHELL_STARTUP_FILES)]
    out += [os.path.join(home, ".ssh"), os.path.join(home, ".gitconfig")]
    configs = [os.path.join(home, ".config")]
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        configs.append(xdg)
    for c in configs:  # git's own config; what a login starts: fish's start-up, autostart entries, user units
        out += [os.path.join(c, n) for n in ("git", "fish", "autostart", "systemd", "environment.d")]
    return [_norm(p) for p in out]


def own_state() -> list[str]:
    """Our state and the Claude Code configuration we read (a write asks)."""
    return [_norm(str(dirs.data_dir())), _norm(dirs.claude_config_dir())]


def in_agent_worktree(path: str) -> bool:
    """``path`` is inside one of our worktree sessions' checkouts (``<data dir>/worktrees/<repo>/<slug>/…``,
    ``session.worktrees``): the person's work, not our state, as ``.claude/worktrees`` is for Claude Code. The
    registry, its lock and the apply journals (one level up) stay protected; ``.git`` in it does too, by name."""
    root = fold(_norm(os.path.join(str(dirs.data_dir()), "worktrees")))
    fp = fold(path)
    if not _inside(fp, root) or fp == root:
        return False
    rest = [c for c in fp[len(root):].split(os.sep) if c]
    return len(rest) >= 3 and not rest[1].startswith(".trash-")


def own_stores() -> list[str]:
    """Our configuration and the trust records we read (a write is denied in every mode)."""
    legacy = os.path.join(dirs.claude_config_dir(), ".config.json")  # both: which one is read depends on a file
    out = [_norm(str(dirs.config_dir())), _norm(dirs.claude_global_config_path()), _norm(legacy), _norm(managed_dir()),
           _norm(str(dirs.trust_store_path())), _norm(str(dirs.settings_path())),
           _norm(os.path.join(_home(), ".claude.json"))]
    return list(dict.fromkeys(out))


_ENV_KEYS = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "CLAUDE_CONFIG_DIR", "DESKTOP_AGENT_CONFIG_DIR",
             "DESKTOP_AGENT_DATA_DIR", "DESKTOP_AGENT_MANAGED_SETTINGS_DIR")
_anchor_cache: dict[tuple[str | None, ...], tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {}


def _anchors() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(every protected place, our stores) as (path, folded path), for the environment as it is now."""
    key = tuple(os.environ.get(k) for k in _ENV_KEYS)
    hit = _anchor_cache.get(key)
    if hit is None:
        stores = own_stores()
        hit = ([(a, fold(a)) for a in home_protected() + own_state() + stores], [(a, fold(a)) for a in stores])
        if len(_anchor_cache) > 16:
            _anchor_cache.clear()
        _anchor_cache[key] = hit
    return hit


def _under_any(forms: list[str], anchors: list[tuple[str, str]]) -> str | None:
    for p in forms:
        fp = fold(p)
        for a, fa in anchors:
            if _inside(fp, fa):
                return a
    return None


def own_store_reason(path: str, checked: list[str] | None = None) -> str | None:
    """Why ``path`` may never be written by a tool (our configuration, trust store), or None."""
    hit = _under_any(checked or _forms(path), _anchors()[1])
    return None if hit is None else f"{hit} is Desktop Agent's own configuration or trust store"


def protected_reason(path: str, checked: list[str] | None = None) -> str | None:
    """Why writing ``path`` needs explicit approval, or None."""
    forms = checked or _forms(path)
    for p in forms:
        comps = [fold(c) for c in p.split(os.sep) if c]
        for i, c in enumerate(comps[:-1] if comps else []):
            if c in PROTECTED_DIRS:
                if c == ".claude" and i + 1 < len(comps) and comps[i + 1] == "worktrees":
                    continue
                return f"{c}/ is a protected directory"
        if comps and (comps[-1] in PROTECTED_FILES or comps[-1] in PROTECTED_DIRS):
            return f"{comps[-1]} is a protected file"
    hit = _under_any(forms, _anchors()[0])
    if hit is not None and hit == _norm(str(dirs.data_dir())) and all(in_agent_worktree(p) for p in forms):
        return None
    return None if hit is None else f"{hit} is protected"


# --------------------------------------------------------------------------------------------------- git


def dot_git(work_tree: str) -> str | None:
    """The git dir of a work tree: its ``.git`` directory, or where a ``.git`` file's ``gitdir:`` points
    (worktrees, submodules); None when it has neither."""
    dot = os.path.join(work_tree, ".git")
    if os.path.isdir(dot):
        return dot
    if not os.path.isfile(dot):
        return None
    try:
        with open(dot, encoding="utf-8", errors="replace") as fh:
            line = fh.read(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    return os.path.normpath(os.path.join(work_tree, line[len("gitdir:"):].strip()))


_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"[^"]*")?\s*\]\s*(.*)$')
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*=\s*(.*?)\s*$")


def _config_targets(config: str, work_tree: str) -> list[tuple[str, str]]:
    """What a git config file points at that also starts programs: ``core.hooksPath`` (relative to the work
    tree) and ``include.path`` / ``includeIf.*.path`` (relative to the file), as (path, kind) for the sandbox."""
    try:
        with open(config, encoding="utf-8", errors="replace") as fh:
            lines = fh.read(1 << 20).splitlines()
    except OSError:
        return []
    out: list[tuple[str, str]] = []
    section = ""
    for line in lines:
        m = _SECTION.match(line)
        if m:
            section, line = m.group(1).lower(), m.group(2)
        k = _KEY.match(line)
        if not k:
            continue
        key, value = k.group(1).lower(), k.group(2).strip().strip('"')
        if not value or value == "/dev/null":
            continue
        if section == "core" and key == "hookspath":
            out.append((_norm(os.path.join(work_tree, os.path.expanduser(value))), "dir"))
        elif section in ("include", "includeif") and key == "path":
            out.append((_norm(os.path.join(os.path.dirname(config), os.path.expanduser(value))), "existing"))
    return out


_walk_cache: dict[tuple[str, ...], tuple[float, list[str]]] = {}
_walk_lock = threading.Lock()


def work_trees(roots: list[str]) -> list[str]:
    """Every folder under ``roots`` (each root included) holding a ``.git`` entry; at most ``WALK_BUDGET`` entries
    looked at, the walk reused for ``WALK_TTL_S`` seconds (the roots themselves are looked at every time)."""
    key = tuple(roots)
    now = time.monotonic()
    own = [r for r in roots if os.path.lexists(os.path.join(r, ".git"))]  # never from the cache
    with _walk_lock:
        hit = _walk_cache.get(key)
        if hit is not None and now - hit[0] <= WALK_TTL_S:
            return list(dict.fromkeys(own + hit[1]))
    found: list[str] = []
    budget = WALK_BUDGET
    for root in roots:
        stack = [root]
        while stack and budget > 0:
            d = stack.pop()
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            budget -= len(entries)
            for e in entries:
                if e.name == ".git":
                    found.append(d)
                elif e.name not in WALK_SKIP and e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
    with _walk_lock:
        if len(_walk_cache) > 32:
            _walk_cache.clear()
        _walk_cache[key] = (now, found)
    return found


def _git_dir_entries(gitdir: str, main: bool) -> tuple[list[str], list[tuple[str, str]]]:
    """(pinned, [(path, kind)]) for one git dir: it is pinned; hooks, config, commondir read-only. ``kind``:
    "hooks" (created as ``git init`` would when missing), "existing" (skipped when missing) or "commondir" (created
    holding ``.`` when missing, in a main git dir)."""
    ro: list[tuple[str, str]] = [(os.path.join(gitdir, "hooks"), "hooks" if main else "existing"),
                                 (os.path.join(gitdir, "config"), "existing")]
    ro.append((os.path.join(gitdir, "commondir"), "commondir" if main else "existing"))
    return [gitdir], ro


def _repo_entries(work_tree: str) -> tuple[list[str], list[tuple[str, str]]]:
    dot = os.path.join(work_tree, ".git")
    pinned: list[str] = []
    ro: list[tuple[str, str]] = []
    gitdirs: list[str] = []
    if os.path.isdir(dot) and not os.path.islink(dot):
        gitdirs.append(dot)
        p, r = _git_dir_entries(dot, main=True)
    else:
        ro.append((dot, "existing"))
        target = dot_git(work_tree)
        if target is None or not os.path.isdir(target):
            return pinned, ro
        gitdirs.append(target)
        p, r = _git_dir_entries(target, main=False)
        try:
            with open(os.path.join(target, "commondir"), encoding="utf-8", errors="replace") as fh:
                common = os.path.normpath(os.path.join(target, fh.read(4096).strip()))
            if os.path.isdir(common):
                gitdirs.append(common)
                p2, r2 = _git_dir_entries(common, main=True)
                p, r = p + p2, r + r2
        except OSError:
            pass
    pinned += p
    ro += r
    for g in gitdirs:
        ro += _config_targets(os.path.join(g, "config"), work_tree)
    return pinned, ro


# --------------------------------------------------------------------------------------------------- sandbox


@dataclass
class ProtectedBinds:
    """What the sandbox does with the protected paths: ``pinned`` dirs are bound writable onto themselves (they
    cannot be renamed), ``read_only`` ones read-only onto themselves (existing, or placeholders made for them)."""

    pinned: list[str] = field(default_factory=list)
    read_only: list[str] = field(default_factory=list)
    placeholders: list[str] = field(default_factory=list)  # references taken (``util.placeholders``): release them


def _allowed(path: str, allowed: list[str], working: list[str]) -> bool:
    if any(_inside(w, path) for w in working):  # the person opened it (or something inside it)
        return True
    for a in allowed:
        if a == path or (_inside(path, a) and protected_reason(a) is not None):
            return True
    return False


def sandbox_protected(writable: list[str], allowed: list[str] | None = None) -> ProtectedBinds:
    """The protected paths under the (real, absolute) writable folders, placeholders created for missing ones."""
    allowed = [os.path.realpath(a) for a in (allowed or [])]
    sweep_once()  # what a killed agent process left (once per process)
    cands: list[tuple[str, str]] = []
    pinned: list[str] = []
    for wd in writable:
        cands += [(os.path.join(wd, n), kind) for n, kind in WORKDIR_ENTRIES.items()]
    for tree in work_trees(writable):
        p, r = _repo_entries(tree)
        pinned += p
        cands += r
    cands += [c for c in _real_places() if any(_inside(c[0], w) for w in writable)]
    out = ProtectedBinds()
    seen: set[str] = set()
    for path, kind in sorted(cands, key=lambda c: len(c[0])):  # a folder before what is inside it
        real = os.path.realpath(path) if os.path.islink(path) else path  # its parents are real already
        if real in seen or not any(_inside(real, w) and real != w for w in writable) \
                or any(_inside(real, r) for r in out.read_only):
            continue
        if _allowed(real, allowed, writable):
            seen.add(real)
            continue
        if not os.path.lexists(real):
            if not _placeholder(real, kind, out.placeholders):
                continue  # another candidate for the same path may still make one (hooksPath = .githooks)
        else:
            note_existing(real, kind, out.placeholders)
            if not os.path.lexists(real) and not _placeholder(real, kind, out.placeholders):
                continue  # the last command of another process binding it just removed it: made afresh
        if os.path.exists(real):
            seen.add(real)
            out.read_only.append(real)
    pins = [g for g in dict.fromkeys(os.path.realpath(x) for x in pinned)
            if any(_inside(g, w) and g != w for w in writable) and not _allowed(g, allowed, writable)]
    out.pinned = _with_parents(pins + out.read_only, pins, out.read_only, writable)
    return out


def _with_parents(held: list[str], pins: list[str], read_only: list[str], writable: list[str]) -> list[str]:
    """``pins`` plus every folder between a writable root and a held path: a folder holding a mount point can be
    renamed (the mount moves with it) and a new one made in its place — ``mv ~/.config c2`` then a fresh
    ``~/.config/git/config`` — so those folders are mount points too. Parents first (bubblewrap binds in order)."""
    out = set(pins)
    for path in held:
        root = max((w for w in writable if _inside(path, w) and path != w), key=len, default=None)
        if root is None:
            continue
        d = os.path.dirname(path)
        while d != root and _inside(d, root) and d not in out:
            out.add(d)
            d = os.path.dirname(d)
    return sorted((p for p in out if not any(_inside(p, r) for r in read_only) and os.path.isdir(p)), key=len)


_places_cache: dict[tuple[str | None, ...], list[tuple[str, str]]] = {}


def _real_places() -> list[tuple[str, str]]:
    """The places of ``home_protected``, ``own_state`` and ``own_stores`` with their folders' symlinks resolved,
    each with its placeholder kind; computed once per environment."""
    key = tuple(os.environ.get(k) for k in _ENV_KEYS)
    hit = _places_cache.get(key)
    if hit is None:
        hit = [(_resolve_parent(p), "file" if os.path.basename(p) in PROTECTED_FILES else "dir")
               for p in home_protected()]
        hit += [(_resolve_parent(p), "dir") for p in own_state() + own_stores()]
        if len(_places_cache) > 16:
            _places_cache.clear()
        _places_cache[key] = hit
    return hit


def _resolve_parent(path: str) -> str:
    """``path`` with its folder's symlinks resolved (the name itself is looked at on each use)."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _placeholder(path: str, kind: str, held: list[str]) -> bool:
    """The mount point for a protected path that does not exist yet (``util.placeholders``): "hooks" a real,
    permanent hooks dir (as ``git init`` makes it), "existing" none (skipped), "commondir" a file holding ``.``
    in a git dir, "file"/"dir" an empty directory (invisible to ``git status`` / ``git add -A``)."""
    if kind == "existing":
        return False
    if kind == "hooks":
        try:
            os.makedirs(path, exist_ok=True)
        except OSError:
            return False
        return True
    if kind == "commondir" and not os.path.isfile(os.path.join(os.path.dirname(path), "HEAD")):
        return False
    return make_placeholder(path, kind, held)
