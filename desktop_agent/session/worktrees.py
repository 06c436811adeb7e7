"""Worktree sessions: a git worktree per session on a branch ``agent/<slug>``, and a lifecycle that loses nothing.

Plain git plumbing, every command through ``util.git_env.git_safety_env`` (a repository's config starts no program).

**Where.** ``<data dir>/worktrees/<repo>-<hash of its common git dir>/<slug>`` (``util.dirs.data_dir()``), not under
the repository's ``.git/``: (1) a path with a ``.git`` component is a protected path for us and for Claude Code
(SPEC: writes to ``.git`` are never auto-approved; the sandbox pins every ``.git`` and binds its parts read-only), so
a worktree under ``.git/`` would make every write of the session a protected write; (2) tools that walk the folder
skip ``.git`` and the data directory alike, but an IDE's file watcher or a ``find`` from the repository root would
see neither, and ``git worktree list`` lists both the same; (3) ``git worktree add`` writes a fresh checkout either
way (objects are shared through the common dir, no hardlinks), and applying a review writes through a temp file in
the folder's own directory, so the partition does not matter; (4) deleting the repository would silently delete a
worktree under its ``.git`` with the session's unapplied work; ours outlive it, and the registry says which
repository they belonged to (they are never removed automatically when it is gone). Claude Code puts its own under
``.claude/worktrees`` in the folder (shown as untracked unless ignored): never touched here.

**Ours only.** A worktree is touched only when the registry (``<data dir>/worktrees/registry.json``, written
atomically under an ``fcntl`` lock on ``registry.lock``, so windows, hosts and CLIs in other processes serialise)
names it, it sits under our directory, its git admin dir points back at it and it still has ``agent/<slug>``
checked out. The person's own worktrees and another agent's are never listed, pruned or swept (no ``git worktree
prune``: it would drop every worktree whose directory is missing, an unmounted disk's too).

**Removal** (archive, delete, cleanup) refuses (``Refused``) a worktree that is locked (``git worktree lock``), or any
live process's working directory, root or open file (``/proc/*/cwd``, ``/proc/*/root``, ``/proc/*/fd/*``); cleanup
also refuses one that is dirty (tracked changes, untracked non-ignored files) or has commits its base and the
folder's HEAD lack. Before any removal a snapshot commit (``refs/desktop-agent/archive/<slug>``: every tracked and
untracked file, ignored ones too up to ``IGNORED_BUDGET`` bytes, exact bytes and modes — built with ``hash-object
--no-filters`` through a temporary index; parents: the branch tip and the previous snapshot) is taken; then the
directory is renamed aside (atomic), checked again for use (renamed back if in use) and snapshotted again if it
changed meanwhile, and only then deleted. A kill -9 at any point leaves the directory in place or aside with the
registry saying where (``removing``): the next call renames it back. **Restore** checks out the branch with
``--no-checkout`` and writes the snapshot's blobs itself (no filter, no line-ending conversion): byte-identical,
untracked files included; the index is the branch tip's, so the changes show as unstaged (staging is not kept).
Empty directories are not kept (git has no tree for them); a nested repository or a submodule's own work tree makes
removal refuse.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal

from desktop_agent.util import dirs, fileio
from desktop_agent.util.git_env import git_safety_env

BRANCH_PREFIX = "agent/"
SNAPSHOT_PREFIX = "refs/desktop-agent/archive/"
IGNORED_BUDGET = 64 * 1024 * 1024
State = Literal["creating", "active", "removing", "restoring", "archived", "deleted"]
_STAGED = re.compile(rb"^([0-7]{6}) ([0-9a-f]{40,64}) [0-3]\t")
log = logging.getLogger(__name__)
_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_IDENTITY = {"GIT_AUTHOR_NAME": "Desktop Agent", "GIT_AUTHOR_EMAIL": "desktop-agent@localhost",
             "GIT_COMMITTER_NAME": "Desktop Agent", "GIT_COMMITTER_EMAIL": "desktop-agent@localhost"}
_ADJ = ("amber", "brisk", "calm", "deft", "eager", "fleet", "gentle", "hardy", "keen", "lucid", "merry", "nimble",
        "quiet", "rapid", "steady", "tidy", "vivid", "wise")
_NOUN = ("otter", "falcon", "maple", "harbor", "comet", "badger", "cedar", "lantern", "meadow", "pebble", "quartz",
         "river", "sparrow", "thistle", "willow", "yarrow")


class WorktreeError(Exception):
    """Not a git repository, a bad name, a git failure: nothing was changed."""


class Refused(WorktreeError):
    """A removal refused, with the reason (dirty, locked, in use, …): the worktree is untouched."""


@dataclass
class Worktree:
    slug: str
    repo: str          # the main checkout (its top level), realpath
    common_dir: str    # the repository's common git dir, realpath
    path: str          # the worktree's directory
    branch: str        # agent/<slug>
    base: str          # the folder's HEAD commit when it was created
    state: State = "creating"
    snapshot: str | None = None
    created: float = 0.0
    trash: str | None = None  # while ``removing``: where the directory was renamed to
    admin: str | None = None  # <common>/worktrees/<id>
    prior: State | None = None  # while ``restoring``: the state it goes back to if the restore is cut short

    @property
    def key(self) -> str:
        return f"{self.common_dir}\0{self.slug}"

    @property
    def snapshot_ref(self) -> str:
        return SNAPSHOT_PREFIX + self.slug


@dataclass
class CleanupReport:
    removed: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)  # slug → why


# ------------------------------------------------------------------------------------------------ git


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"})
    if extra:
        env.update(extra)
    return git_safety_env(env)


def git(args: list[str], cwd: str, *, input: bytes | None = None, env: dict[str, str] | None = None,
        check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """``git args`` in ``cwd`` with the clean environment; ``WorktreeError`` with git's message on failure."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, env=_env(env), timeout=120)
    if check and proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed ({proc.returncode})"
        raise WorktreeError(msg)
    return proc


def _out(args: list[str], cwd: str, **kw: Any) -> str:
    return git(args, cwd, **kw).stdout.decode("utf-8", "surrogateescape").strip()


_REPOS: dict[str, tuple[str, str]] = {}


def repository_of(folder: str) -> tuple[str, str]:
    """(top level of the checkout holding ``folder``, its common git dir), both realpaths (remembered while both
    still exist)."""
    folder = os.path.realpath(folder)
    known = _REPOS.get(folder)
    if known and os.path.isdir(known[1]) and os.path.isdir(known[0]):
        return known
    proc = git(["rev-parse", "--show-toplevel", "--git-common-dir"], folder, check=False)
    if proc.returncode != 0:
        raise WorktreeError(f"{folder} is not in a git repository")
    top, common = proc.stdout.decode("utf-8", "surrogateescape").splitlines()[:2]
    common = os.path.realpath(os.path.join(folder, common))  # relative to where git ran, not to the top level
    _REPOS[folder] = (os.path.realpath(top), common)
    return _REPOS[folder]


# ------------------------------------------------------------------------------------------------ registry


def root_dir() -> Path:
    return dirs.data_dir() / "worktrees"


def _registry_path() -> Path:
    return root_dir() / "registry.json"


@contextlib.contextmanager
def _locked() -> Iterator[dict[str, Worktree]]:
    """The registry, read under an exclusive ``fcntl`` lock and written back atomically when the block ends."""
    root = root_dir()
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / "registry.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        entries = _read_registry()
        before = json.dumps({k: asdict(v) for k, v in entries.items()}, sort_keys=True)
        try:
            yield entries
        finally:  # what was done is written even when a step raised (a record must never be lost)
            after = json.dumps({k: asdict(v) for k, v in entries.items()}, sort_keys=True)
            if after != before:
                _write_registry(entries)
    finally:
        os.close(fd)


def _read_registry() -> dict[str, Worktree]:
    try:
        data = json.loads(_registry_path().read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # never start afresh over a registry we cannot read: refuse
        raise WorktreeError(f"cannot read the worktree registry {_registry_path()}: {exc}") from exc
    out: dict[str, Worktree] = {}
    for item in data.get("worktrees", []):
        try:
            wt = Worktree(**item)
        except TypeError:
            continue
        out[wt.key] = wt
    return out


def _write_registry(entries: dict[str, Worktree]) -> None:
    data = {"version": 1, "worktrees": [asdict(w) for w in entries.values()]}
    fileio.write_bytes_atomic(str(_registry_path()), json.dumps(data, indent=1).encode(), mode=0o600)


def _save(entries: dict[str, Worktree], wt: Worktree) -> None:
    """Record ``wt`` now (mid-operation), so a kill -9 after this leaves the registry saying what is on disk."""
    entries[wt.key] = wt
    _write_registry(entries)


def list_worktrees(folder: str | None = None) -> list[Worktree]:
    """Our worktrees (of ``folder``'s repository, or all), interrupted operations finished first."""
    common = repository_of(folder)[1] if folder else None
    with _locked() as entries:
        for wt in list(entries.values()):
            if common is None or wt.common_dir == common:
                _recover(entries, wt)
        return sorted((w for w in entries.values() if common is None or w.common_dir == common),
                      key=lambda w: w.created)


def get(folder: str, slug: str) -> Worktree:
    _, common = repository_of(folder)
    with _locked() as entries:
        wt = entries.get(f"{common}\0{slug}")
        if wt is None:
            raise WorktreeError(f"no worktree session named {slug!r} in this repository")
        _recover(entries, wt)
        return entries[wt.key] if wt.key in entries else wt


# ------------------------------------------------------------------------------------------------ create


def _repo_dir(repo: str, common: str) -> Path:
    name = re.sub(r"[^A-Za-z0-9._-]", "-", os.path.basename(repo))[:40] or "repo"
    return root_dir() / f"{name}-{hashlib.sha256(common.encode()).hexdigest()[:10]}"


def check_name(name: str) -> str:
    if not _SLUG.match(name) or ".." in name or name.endswith(".lock") or name.endswith("."):
        raise WorktreeError(f"invalid worktree name {name!r}: letters, digits, '.', '_' and '-' (at most 64)")
    return name


def create(folder: str, name: str | None = None) -> Worktree:
    """A new worktree of ``folder``'s repository on a new branch ``agent/<slug>`` from the folder's HEAD."""
    folder = os.path.realpath(folder)
    proc = git(["rev-parse", "--show-toplevel", "--git-common-dir", "HEAD"], folder, check=False)
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if proc.returncode != 0 or len(lines) < 3 or not re.fullmatch(r"[0-9a-f]{40,64}", lines[2]):
        repository_of(folder)  # not a repository: its own message
        raise WorktreeError("the repository has no commit yet: a worktree starts from the folder's HEAD")
    repo = os.path.realpath(lines[0])
    common = os.path.realpath(os.path.join(folder, lines[1]))
    base = lines[2]
    with _locked() as entries:
        slug = check_name(name) if name else None
        for _ in range(50):
            candidate = slug or f"{secrets.choice(_ADJ)}-{secrets.choice(_NOUN)}-{secrets.token_hex(2)}"
            taken = f"{common}\0{candidate}" in entries or bool(_out(
                ["for-each-ref", "--format=%(refname)", f"refs/heads/{BRANCH_PREFIX}{candidate}",
                 SNAPSHOT_PREFIX + candidate], repo))
            if not taken:
                slug = candidate
                break
            if slug:
                raise WorktreeError(f"a worktree session or branch named {slug!r} already exists")
        else:
            raise WorktreeError("could not pick a free worktree name")
        assert slug is not None
        parent = _repo_dir(repo, common)
        parent.mkdir(parents=True, exist_ok=True)
        path = str(parent / slug)
        if os.path.lexists(path):
            raise WorktreeError(f"{path} already exists")
        wt = Worktree(slug=slug, repo=repo, common_dir=common, path=path, branch=BRANCH_PREFIX + slug, base=base,
                      state="creating", created=time.time())
        _save(entries, wt)
        # parallel checkout (one worker per core): most of the time of a big checkout is writing its files
        git(["-c", "checkout.workers=0", "worktree", "add", "-q", "-b", wt.branch, path, base], repo)
        wt.admin = _admin_dir(path)
        wt.state = "active"
        entries[wt.key] = wt
        return wt


def _admin_dir(path: str) -> str | None:
    try:
        text = Path(path, ".git").read_text("utf-8", "surrogateescape").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    return os.path.realpath(os.path.join(path, text[len("gitdir:"):].strip()))


def enter(folder: str, name: str | None = None) -> Worktree:
    """The worktree a session started with ``--worktree [name]`` runs in: ours named ``name`` when active (restored
    when archived), else a new one."""
    if name:
        _, common = repository_of(folder)
        with _locked() as entries:
            wt = entries.get(f"{common}\0{check_name(name)}")
            if wt is not None:
                _recover(entries, wt)
                wt = entries.get(wt.key)
        if wt is not None and wt.state == "active" and os.path.isdir(wt.path):
            return wt
        if wt is not None and wt.state in ("archived", "deleted"):
            return restore(folder, name)
    return create(folder, name)


def session_dir(folder: str, wt: Worktree) -> str:
    """Where in ``wt`` a session started in ``folder`` works: the same subdirectory when the worktree has it."""
    rel = os.path.relpath(os.path.realpath(folder), wt.repo)
    inner = os.path.normpath(os.path.join(wt.path, rel)) if not rel.startswith("..") else wt.path
    return inner if os.path.isdir(inner) else wt.path


# ------------------------------------------------------------------------------------------------ checks


def processes_using(path: str) -> list[tuple[int, str]]:
    """Live processes whose working directory, root or an open file is ``path`` or under it: (pid, what)."""
    real = os.path.realpath(path)
    prefix = real.rstrip("/") + "/"
    hits: list[tuple[int, str]] = []

    def inside(target: str) -> bool:
        target = target.removesuffix(" (deleted)")
        return target == real or target.startswith(prefix)

    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return hits
    for pid in pids:
        base = f"/proc/{pid}"
        for what in ("cwd", "root"):
            with contextlib.suppress(OSError):
                if inside(os.readlink(f"{base}/{what}")):
                    hits.append((int(pid), what))
        try:
            fds = os.listdir(f"{base}/fd")
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                target = os.readlink(f"{base}/fd/{fd}")
                if inside(target):
                    hits.append((int(pid), f"fd {fd} {target}"))
                    break
    return hits


def _is_ours(wt: Worktree, path: str | None = None) -> str | None:
    """Why ``wt`` is not (any more) ours to touch, or None."""
    path = path or wt.path
    if not wt.branch.startswith(BRANCH_PREFIX) or wt.branch != BRANCH_PREFIX + wt.slug:
        return "its branch is not agent/<name>"
    if os.path.dirname(os.path.realpath(path)) != os.path.realpath(_repo_dir(wt.repo, wt.common_dir)):
        return "it is not in our worktrees directory"
    admin = _admin_dir(path)
    if admin is None or not admin.startswith(wt.common_dir.rstrip("/") + "/worktrees/"):
        return "its .git file does not name this repository's worktree admin directory"
    try:
        gitdir = Path(admin, "gitdir").read_text("utf-8", "surrogateescape").strip()
    except OSError:
        return "git does not know it as a worktree"
    if os.path.realpath(os.path.dirname(gitdir)) not in (os.path.realpath(wt.path), os.path.realpath(path)):
        return "git's record of it names another directory"
    try:
        head = Path(admin, "HEAD").read_text().strip()
    except OSError:
        return "it has no HEAD"
    if head != f"ref: refs/heads/{wt.branch}":
        return f"it no longer has {wt.branch} checked out"
    return None


def dirty(path: str) -> bool:
    out = git(["status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=none"], path).stdout
    return bool(out.strip(b"\0"))


def unique_commits(wt: Worktree, path: str | None = None) -> int:
    """Commits of the worktree's HEAD that neither its base nor the folder's HEAD (``main-worktree/HEAD``) has."""
    here = path or wt.path
    proc = git(["rev-list", "--count", "HEAD", "--not", wt.base, "main-worktree/HEAD"], here, check=False)
    if proc.returncode != 0:  # the folder's HEAD is unborn (an orphan branch): against the base alone
        return int(_out(["rev-list", "--count", "HEAD", "--not", wt.base], here) or 0)
    return int(proc.stdout.decode().strip() or 0)


def refusal(wt: Worktree, *, cleanup: bool, path: str | None = None) -> str | None:
    """Why ``wt`` must not be removed now (None: it may be, after a snapshot)."""
    path = path or wt.path
    why = _is_ours(wt, path)
    if why:
        return f"not ours to remove: {why}"
    admin = _admin_dir(path)
    if admin and os.path.exists(os.path.join(admin, "locked")):
        return "it is locked (git worktree lock)"
    users = processes_using(path)
    if users:
        pid, what = users[0]
        return f"it is in use by process {pid} ({what})"
    if cleanup:
        if dirty(path):
            return "it has uncommitted changes or untracked files"
        n = unique_commits(wt, path)
        if n:
            return f"it has {n} commit(s) its base does not have"
    return None


# ------------------------------------------------------------------------------------------------ snapshot


def _tree_of(git_dir: str, work: str, *, ignored: bool = True) -> str:
    """A tree of every file under ``work`` as git sees it (tracked, untracked, and ignored ones within budget unless
    ``ignored`` is False — a review leaves out what the project ignores): exact bytes (``--no-filters``) and modes,
    through a temporary index. ``Refused`` for what a tree cannot keep."""
    gd = ["--git-dir", git_dir, "--work-tree", work]
    entries: dict[bytes, tuple[str, str | None]] = {}
    gitlinks: dict[bytes, str] = {}
    others: list[bytes] = []  # untracked, ignored ones too
    listing = [*gd, "ls-files", "-z", "-s", "--others"] + ([] if ignored else ["--exclude-standard"])
    for rec in git(listing, work).stdout.split(b"\0"):
        if not rec:
            continue
        m = _STAGED.match(rec)
        if m is None:
            others.append(rec)
            continue
        name = rec[m.end():]
        if m.group(1) == b"160000":
            gitlinks[name] = m.group(2).decode()
        entries[name] = ("", None)
    total = 0
    for p in others:
        with contextlib.suppress(OSError):
            total += os.lstat(os.path.join(os.fsencode(work), p)).st_size
    if ignored and total > IGNORED_BUDGET:  # only ignored files may make it too big: untracked ones are always kept
        listed = git([*gd, "ls-files", "-z", "--others", "--ignored", "--exclude-standard"], work).stdout
        big = sum(os.lstat(os.path.join(os.fsencode(work), p)).st_size for p in listed.split(b"\0") if p)
        if big > IGNORED_BUDGET:
            raise Refused(f"its ignored files hold {big // (1024 * 1024)} MiB (more than a snapshot keeps): "
                          "remove them or move them out first")
    for p in others:
        if p.endswith(b"/"):
            raise Refused(f"it holds a nested repository ({os.fsdecode(p)})")
        entries[p] = ("", None)
    regular: list[bytes] = []
    lines: list[bytes] = []
    for name in sorted(entries):
        if name in gitlinks:
            if os.path.exists(os.path.join(os.fsencode(work), name, b".git")) and dirty(
                    os.fsdecode(os.path.join(os.fsencode(work), name))):
                raise Refused(f"its submodule {os.fsdecode(name)} has changes")
            lines.append(b"160000 " + gitlinks[name].encode() + b"\t" + name)
            continue
        full = os.path.join(os.fsencode(work), name)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            continue  # deleted (or a folder on its way became a file)
        if os.path.islink(full):
            sha = _out([*gd, "hash-object", "-w", "--no-filters", "--stdin"], work, input=os.readlink(full))
            lines.append(b"120000 " + sha.encode() + b"\t" + name)
        elif os.path.isfile(full):
            regular.append(name)
            mode = b"100755" if st.st_mode & 0o100 else b"100644"
            lines.append(mode + b" @\t" + name)
        # a directory in place of a tracked file's name: its files are listed on their own
    shas: list[str] = []
    plain = [n for n in regular if b"\n" not in n]
    if plain:
        out = git([*gd, "hash-object", "-w", "--no-filters", "--stdin-paths"], work,
                  input=b"".join(os.path.join(os.fsencode(work), n) + b"\n" for n in plain)).stdout
        shas = out.decode().split()
    by_name = dict(zip(plain, shas))
    for n in regular:
        if n not in by_name:  # a name with a line break: one at a time
            with open(os.path.join(os.fsencode(work), n), "rb") as fh:
                by_name[n] = _out([*gd, "hash-object", "-w", "--no-filters", "--stdin"], work, input=fh.read())
    final = []
    for line in lines:
        meta, _, name = line.partition(b"\t")
        if meta.endswith(b" @"):
            meta = meta[:-1] + by_name[name].encode()
        final.append(meta + b"\t" + name)
    index = os.path.join(git_dir, f"desktop-agent-snapshot-{os.getpid()}-{secrets.token_hex(4)}.index")
    try:
        git(["--git-dir", git_dir, "update-index", "-z", "--index-info"], work, input=b"\0".join(final) + b"\0",
            env={"GIT_INDEX_FILE": index})
        return _out(["--git-dir", git_dir, "write-tree"], work, env={"GIT_INDEX_FILE": index})
    finally:
        with contextlib.suppress(OSError):
            os.unlink(index)


def _refs(wt: Worktree) -> tuple[str, str, str, str]:
    """(branch tip, last snapshot, its tree, its first parent); '' for what does not exist. One git call."""
    out = _out(["for-each-ref", "--format=%(refname) %(objectname) %(tree) %(parent)", f"refs/heads/{wt.branch}",
                wt.snapshot_ref], wt.repo)
    tip = snap = tree = parent = ""
    for line in out.splitlines():
        parts = line.split()
        if parts[0] == f"refs/heads/{wt.branch}":
            tip = parts[1]
        elif parts[0] == wt.snapshot_ref:
            snap, tree, parent = (parts[1:] + ["", "", ""])[:3]
    return tip, snap, tree, parent


def snapshot(wt: Worktree, path: str | None = None) -> str:
    """Commit the worktree's whole state to ``refs/desktop-agent/archive/<slug>`` (unchanged when the last snapshot
    already holds it); its sha. The worktree's HEAD is its branch (``_is_ours`` checked it)."""
    path = path or wt.path
    admin = _admin_dir(path)
    if admin is None:
        raise WorktreeError(f"{path} is not a worktree")
    tree = _tree_of(admin, path)
    head, prev, prev_tree, prev_head = _refs(wt)
    if not head:
        raise WorktreeError(f"{wt.branch} is missing")
    if prev and prev_tree == tree and prev_head == head:
        return prev
    parents = ["-p", head] + (["-p", prev] if prev else [])
    sha = _out(["commit-tree", tree, *parents, "-m", f"desktop-agent snapshot of {wt.branch}"], wt.repo,
               env=_IDENTITY)
    git(["update-ref", "-m", "desktop-agent snapshot", wt.snapshot_ref, sha, prev], wt.repo)
    return sha


def _signature(path: str) -> list[tuple[str, int, int, int, int, int]]:
    """Every entry under ``path`` with its inode, size, mode, mtime and ctime: equal twice means nothing was
    written, created, removed or renamed in between (the second snapshot is then the first)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                st = os.lstat(full)
                out.append((os.path.relpath(full, path), st.st_ino, st.st_size, st.st_mode, st.st_mtime_ns, st.st_ctime_ns))
        dirnames.sort()
    return out


# ------------------------------------------------------------------------------------------------ removal


def _remove(entries: dict[str, Worktree], wt: Worktree, *, cleanup: bool) -> None:
    """Snapshot, rename aside, check again, delete (the module docstring). ``Refused`` leaves it in place."""
    why = refusal(wt, cleanup=cleanup)
    if why:
        raise Refused(why)
    admin = _admin_dir(wt.path)
    sig = _signature(wt.path)
    first = snapshot(wt)
    wt.snapshot = first
    trash = os.path.join(os.path.dirname(wt.path), f".trash-{wt.slug}-{secrets.token_hex(4)}")
    wt.state, wt.trash, wt.admin = "removing", trash, admin
    _save(entries, wt)
    os.rename(wt.path, trash)
    try:
        users = processes_using(trash)
        if users:
            raise Refused(f"it is in use by process {users[0][0]} ({users[0][1]})")
        if admin and os.path.exists(os.path.join(admin, "locked")):
            raise Refused("it is locked (git worktree lock)")
        tip, snap, _tree, parent = _refs(wt)
        if _signature(trash) != sig or tip != parent or snap != first:
            # written (or committed) between the first look and the rename
            if cleanup:
                raise Refused("it changed while being cleaned up")
            wt.snapshot = snapshot(wt, trash)
    except BaseException:
        os.rename(trash, wt.path)
        wt.state, wt.trash = "active", None
        _save(entries, wt)
        raise
    wt.state = "archived"
    _save(entries, wt)  # the snapshot is recorded before a byte is deleted
    shutil.rmtree(trash)
    if admin and os.path.isdir(admin):
        shutil.rmtree(admin)
    wt.trash = None
    entries[wt.key] = wt


def _recover(entries: dict[str, Worktree], wt: Worktree) -> None:
    """Finish what a killed process left: a ``removing`` directory renamed back (or its deletion finished when the
    snapshot had been recorded), a half-made ``creating`` entry completed or dropped."""
    if wt.state == "removing":
        if wt.trash and os.path.isdir(wt.trash):
            if os.path.lexists(wt.path):  # something made the path again meanwhile: keep both, say so
                raise WorktreeError(f"{wt.slug}: {wt.path} was made again while the worktree was aside in "
                                    f"{wt.trash}; move one of them away")
            os.rename(wt.trash, wt.path)
        wt.state, wt.trash = "active", None
        if not os.path.isdir(wt.path):  # nothing to bring back: it is archived (the snapshot was taken first)
            wt.state = "archived"
        _save(entries, wt)
    elif wt.state == "archived" and wt.trash:
        if os.path.isdir(wt.trash):
            shutil.rmtree(wt.trash)
        if wt.admin and os.path.isdir(wt.admin) and not os.path.lexists(wt.path):
            shutil.rmtree(wt.admin)
        wt.trash = None
        _save(entries, wt)
    elif wt.state in ("creating", "restoring"):
        # the registry's lock is held for the whole of a create or a restore, so an entry still in this state was
        # left by a process that died; nobody was handed the worktree. Its git may live on (an orphan still
        # writing): then it is left for a later call.
        if os.path.lexists(wt.path) and processes_using(wt.path):
            return
        if wt.state == "creating":
            if os.path.isdir(wt.path) and _admin_dir(wt.path) and _is_ours(wt) is None and not dirty(wt.path):
                wt.state, wt.admin = "active", _admin_dir(wt.path)  # git had finished: it is whole
                _save(entries, wt)
                return
            sources = [wt.base]
        else:
            tip, snap, _tree, _parent = _refs(wt)
            sources = [c for c in (snap, tip) if c]
        if os.path.lexists(wt.path) and not _only_bytes_of(wt.path, wt.repo, sources):
            log.warning("worktree %s: an interrupted %s left %s with bytes of its own; left as it is", wt.slug,
                        "creation" if wt.state == "creating" else "restore", wt.path)
            return
        # a half checkout holding nothing but bytes git wrote from the commit (whole files or a file cut short):
        # it goes, and the entry is as before the call (a restore can be tried again)
        _drop_checkout(wt)
        if wt.state == "restoring":
            wt.state, wt.prior = wt.prior or "archived", None
            _save(entries, wt)
            return
        ref = f"refs/heads/{wt.branch}"
        tip = git(["rev-parse", "--verify", "-q", ref], wt.repo, check=False).stdout.decode().strip()
        if tip == wt.base:  # the branch add made and nothing else: no commit of anyone's is on it
            git(["update-ref", "-d", ref, wt.base], wt.repo, check=False)
        del entries[wt.key]
        _write_registry(entries)


def _drop_checkout(wt: Worktree) -> None:
    """Remove ``wt``'s directory and git's admin directory for it (the one whose ``gitdir`` names it)."""
    if os.path.lexists(wt.path):
        if os.path.isdir(wt.path) and not os.path.islink(wt.path):
            shutil.rmtree(wt.path)
        else:
            os.unlink(wt.path)
    admins = Path(wt.common_dir, "worktrees")
    with contextlib.suppress(OSError):
        for admin in admins.iterdir():
            with contextlib.suppress(OSError):
                gitdir = (admin / "gitdir").read_text("utf-8", "surrogateescape").strip()
                if os.path.realpath(os.path.dirname(gitdir)) == os.path.realpath(wt.path):
                    shutil.rmtree(admin)


def _only_bytes_of(path: str, repo: str, commits: list[str]) -> bool:
    """Every file and link under ``path`` (its ``.git`` file aside) holds the bytes one of ``commits`` has at that
    name, or the start of them (a file git was writing when it was killed): removing it loses nothing."""
    blobs: dict[bytes, set[bytes]] = {}
    for commit in commits:
        for rec in git(["ls-tree", "-r", "-z", "--full-tree", commit], repo).stdout.split(b"\0"):
            meta, _, name = rec.partition(b"\t")
            if rec and meta.split(b" ")[1] == b"blob":
                blobs.setdefault(name, set()).add(meta.split(b" ")[2])
    root = os.fsencode(path)
    found: list[bytes] = []
    for dirpath, dirnames, filenames in os.walk(root):
        names = filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        for name in names:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if rel == b".git":
                continue
            if rel not in blobs:
                return False
            found.append(rel)
    if not found:
        return True
    for rel in found:
        full = os.path.join(root, rel)
        data = os.readlink(full) if os.path.islink(full) else Path(os.fsdecode(full)).read_bytes()
        if not any(_blob(repo, sha).startswith(data) for sha in blobs[rel]):
            return False
    return True


def _blob(repo: str, sha: bytes) -> bytes:
    return git(["cat-file", "blob", sha.decode()], repo).stdout


def _entry(entries: dict[str, Worktree], folder: str, slug: str) -> Worktree:
    _, common = repository_of(folder)
    wt = entries.get(f"{common}\0{slug}")
    if wt is None:
        raise WorktreeError(f"no worktree session named {slug!r} in this repository")
    _recover(entries, wt)
    if wt.key not in entries:
        raise WorktreeError(f"no worktree session named {slug!r} in this repository")
    return entries[wt.key]


def archive(folder: str, slug: str) -> Worktree:
    """Remove the worktree, keeping its branch and a snapshot of every file (``Refused`` when it is locked or in
    use)."""
    with _locked() as entries:
        wt = _entry(entries, folder, slug)
        if wt.state != "active":
            raise WorktreeError(f"{slug} is {wt.state}, not active")
        _remove(entries, wt, cleanup=False)
        return wt


def restore(folder: str, slug: str) -> Worktree:
    """Bring an archived (or deleted) worktree back as its snapshot left it, byte for byte."""
    with _locked() as entries:
        wt = _entry(entries, folder, slug)
        if wt.state not in ("archived", "deleted"):
            raise WorktreeError(f"{slug} is {wt.state}: only an archived worktree can be restored")
        tip, snap, _tree, parent = _refs(wt)
        if not snap:
            raise WorktreeError(f"the snapshot {wt.snapshot_ref} is missing")
        if os.path.lexists(wt.path):
            raise WorktreeError(f"{wt.path} already exists")
        if not tip:
            git(["update-ref", f"refs/heads/{wt.branch}", parent, ""], wt.repo)
        wt.prior, wt.state = wt.state, "restoring"
        _save(entries, wt)  # a kill -9 from here on leaves an entry that says a half checkout may be there
        try:
            fast = not _filters_may_apply(wt, snap)
            if fast:  # git's own (parallel) checkout writes the blobs' bytes as they are: only the differences are ours
                git(["-c", "checkout.workers=0", "worktree", "add", "-q", wt.path, wt.branch], wt.repo)
            else:
                git(["worktree", "add", "-q", "--no-checkout", wt.path, wt.branch], wt.repo)
            if fast:
                _overlay(wt.path, snap)
            else:
                _write_tree(wt.path, snap)
                git(["read-tree", "HEAD"], wt.path)
            admin = _admin_dir(wt.path)
            git(["update-index", "-q", "--refresh"], wt.path, check=False)
        except BaseException:
            # the snapshot is untouched; the half-written checkout goes, so a retry starts clean
            adm = _admin_dir(wt.path)
            shutil.rmtree(wt.path, ignore_errors=True)
            if adm:
                shutil.rmtree(adm, ignore_errors=True)
            wt.state, wt.prior = wt.prior or "archived", None
            raise
        wt.state, wt.admin, wt.snapshot, wt.prior = "active", admin, snap, None
        entries[wt.key] = wt
        return wt


def _filters_may_apply(wt: Worktree, snap: str) -> bool:
    """Could a checkout write other bytes than a blob holds (line-ending conversion, clean/smudge filters)? Any
    attributes file (in the tree, the repository's ``info/attributes``, the person's or the system's) or
    ``core.autocrlf`` / ``core.eol`` / ``filter.*`` configuration says it could."""
    cfg = git(["config", "--get-regexp", r"^(core\.(autocrlf|eol|attributesfile)|filter\..*)$"], wt.repo,
              check=False).stdout.decode("utf-8", "replace").split("\n")
    if any(line.strip() and line.strip().lower() != "core.autocrlf false" for line in cfg):
        return True
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    if any(os.path.exists(p) for p in (os.path.join(wt.common_dir, "info", "attributes"),
                                       os.path.join(xdg, "git", "attributes"), "/etc/gitattributes")):
        return True
    names = git(["ls-tree", "-r", "-z", "--name-only", snap], wt.repo).stdout.split(b"\0")
    return any(n == b".gitattributes" or n.endswith(b"/.gitattributes") for n in names)


def _overlay(path: str, snap: str) -> None:
    """``path`` (a checkout of the snapshot's branch) made the snapshot: what differs written, what it lacks
    removed (exact bytes and modes)."""
    raw = git(["diff-tree", "-r", "-z", "--no-renames", "HEAD", snap], path).stdout.split(b"\0")
    items: list[tuple[bytes, bytes, bytes]] = []
    root = os.fsencode(path)
    for meta, name in zip(raw[0::2], raw[1::2]):
        if not meta.startswith(b":"):
            continue
        _om, nm, _os, nsha, status = meta[1:].split(b" ")
        if status == b"D":
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                os.unlink(os.path.join(root, name))
            continue
        full = os.path.join(root, name)
        if os.path.lexists(full) and (os.path.islink(full) or not os.path.isdir(full)):
            os.unlink(full)
        items.append((nm, nsha, name))
    _write_tree(path, snap, items)


def _write_tree(path: str, commit: str, only: list[tuple[bytes, bytes, bytes]] | None = None) -> None:
    """Every file of ``commit``'s tree (or the ``only`` (mode, sha, name) given) written under ``path`` with its
    exact bytes and mode (no filters)."""
    items: list[tuple[bytes, bytes, bytes]] = []
    if only is not None:
        items = [it for it in only if it[0] != b"160000"]
    else:
        listing = git(["ls-tree", "-r", "-z", "--full-tree", commit], path).stdout.split(b"\0")
        for rec in listing:
            if not rec:
                continue
            meta, _, name = rec.partition(b"\t")
            mode, kind, sha = meta.split(b" ")
            if kind == b"blob":
                items.append((mode, sha, name))
    if not items:
        return
    proc = subprocess.run(["git", "cat-file", "--batch"], cwd=path, capture_output=True, env=_env(), timeout=300,
                          input=b"".join(sha + b"\n" for _, sha, _ in items))
    if proc.returncode != 0:
        raise WorktreeError(proc.stderr.decode("utf-8", "replace"))
    data, pos = proc.stdout, 0
    root = os.fsencode(path)
    for mode, _sha, name in items:
        nl = data.index(b"\n", pos)
        size = int(data[pos:nl].split(b" ")[2])
        body = data[nl + 1:nl + 1 + size]
        pos = nl + 1 + size + 1
        full = os.path.join(root, name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if os.path.isdir(full) and not os.path.islink(full):  # a folder in the checkout, a file in the snapshot
            shutil.rmtree(full)
        if mode == b"120000":
            os.symlink(body, full)
            continue
        with open(full, "wb") as fh:
            fh.write(body)
        os.chmod(full, 0o755 if mode == b"100755" else 0o644)


def delete(folder: str, slug: str) -> Worktree:
    """Archive (when active; refusals stand) and delete the branch ``agent/<slug>``; the snapshot ref stays, so
    nothing of it is lost (``restore`` still brings it back)."""
    with _locked() as entries:
        wt = _entry(entries, folder, slug)
        if wt.state == "active":
            _remove(entries, wt, cleanup=False)
        if wt.state != "archived" or not wt.snapshot:
            raise Refused(f"{slug} is {wt.state}: it is deleted only once archived")
        tip, snap, _tree, kept = _refs(wt)
        if tip:
            if kept != tip or snap != wt.snapshot:  # the branch moved since the snapshot (someone's commit): keep it
                raise Refused(f"{wt.branch} has commits the snapshot does not hold")
            git(["update-ref", "-d", f"refs/heads/{wt.branch}", tip], wt.repo)
        wt.state = "deleted"
        entries[wt.key] = wt
        return wt


def cleanup(folder: str) -> CleanupReport:
    """Remove our worktrees of ``folder``'s repository that hold nothing of their own: clean, no commits of their
    own, not locked, not in use (each with a snapshot first). Every other worktree is kept, with the reason."""
    report = CleanupReport()
    _, common = repository_of(folder)
    with _locked() as entries:
        for wt in list(entries.values()):
            if wt.common_dir != common:
                continue
            _recover(entries, wt)
            if wt.key not in entries or wt.state != "active":
                continue
            if not os.path.isdir(wt.path):
                report.kept[wt.slug] = "its directory is missing"
                continue
            try:
                _remove(entries, wt, cleanup=True)
                report.removed.append(wt.slug)
            except WorktreeError as exc:
                report.kept[wt.slug] = str(exc)
    return report


__all__ = ["BRANCH_PREFIX", "SNAPSHOT_PREFIX", "CleanupReport", "Refused", "Worktree", "WorktreeError", "archive",
           "check_name", "cleanup", "create", "delete", "dirty", "enter", "session_dir", "get", "git", "list_worktrees", "processes_using",
           "refusal", "repository_of", "restore", "root_dir", "snapshot", "unique_commits"]
