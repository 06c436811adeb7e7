"""Checkpoints: a shadow git store per project that snapshots the folder, and the three-way restore built on it.

Owns ``CheckpointStore`` (one per project folder; ``CheckpointStore.open(cwd)``) and what it returns
(``Snapshot``, ``RestorePlan``, ``FilePlan``, ``RestoreResult``). DESIGN.md §1 "Checkpoints"; Zed's
``git_store`` checkpoints (a tree built through a temporary index) are the anchor.

**Where.** ``<data_dir>/checkpoints/<sha256(realpath)[:16]>/``: ``store.git`` (a bare repository: our own
``GIT_DIR``, never the person's), ``index`` (our stat cache of the folder), ``lock`` (``flock``: one writer per
project across processes), ``journal.json`` (a restore in progress) and ``project.json``. When the folder is inside a
git repository, ``store.git/objects/info/alternates`` names that repository's object directory, so blobs the person
already committed are not copied (read only: git never writes into an alternate). Nothing of the person's is ever
written: not their index, refs, config, hooks, stash or worktrees (every git command runs with ``GIT_DIR`` set to
ours, ``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``, ``util.git_env`` overrides, ``core.hooksPath=/dev/null``).

**A snapshot** copies our ``index`` (a split index, ``core.splitIndex``: its entries in ``store.git/sharedindex.*``, so
a snapshot writes a small file rather than every entry; with its mtime: git's racy-clean check reads it) to a
temporary ``GIT_INDEX_FILE``; git lists which tracked files' stat changed (``diff-files``) while we look at the folders
through ``dirs.json``, our folder cache (each non-ignored folder's ctime, mtime, inode and names): one lstat a
folder, and only a folder whose stat moved (or that was listed within ``DIR_RACY_NS`` of a look) is listed again;
a name new in it is asked about with ``check-ignore`` (the folder's ``.gitignore`` files, the person's
``info/exclude`` and ``~/.config/git/ignore`` exclude), new folders are entered level by level. A changed ignore
file (or other exclude rules) means a full walk (``ls-files --others --directory``) and a rebuilt cache; the
cache is written after the index (an older cache only costs a look at more names). Only those paths are
hashed (``update-index``; the first snapshot is a ``git add -A``) and lstat'd, plus the few whose ctime fell in the
last snapshot's second (``racy.json``: git compares ctime to the second). ``$GIT_DIR/info/attributes`` turns off
every conversion and filter, so the bytes are the bytes. Files of ``max_file_bytes`` (2 MB) or more are left out
unless ``include`` lists them (remembered in ``large.json`` so they are not hashed again). The commit's tree is
``w/`` (the folder) plus ``meta.json`` (what git trees cannot hold: empty folders, hard-link groups, permission bits
other than git's two, the large files left out); the commit, that tree and ``meta.json`` are written as loose
objects by us, the ref as a file (we hold the lock; no ref is ever packed). ``last.json`` names the snapshot our
stat cache reflects: a snapshot that changed nothing adds no tree. Every 40 new commits the store is repacked (by the
snapshot before a prompt: off the turn's path; local objects only). Refs: ``refs/da/tip`` (the last state seen at a seam or left by a restore),
``refs/da/msg/<uuid>`` (the state just before that user message), ``refs/da/restore/<id>`` (the state just before a
restore: what "Undo restore" goes back to), ``refs/da/probe/<sha>`` (a dry run's look at the folder).

**After a tool call**, once a whole look ended with every folder of the cache watched before it began, the folder
watch (``session.folder_watch``, inotify) names what changed instead: no ``diff-files`` (a stat of every tracked
file) and no folder scan, only the named paths (``check-ignore`` leaves the ignored ones out) and the folders whose
names changed listed again. An overflow, a folder made, removed or renamed, an ignore file, or a folder of the cache
it does not watch (another process's look entered it) means the whole look, which re-arms it. The snapshot before a
prompt, a dry run's and a restore's always look at everything (what inotify cannot see, an ``mmap`` write or one
through a hard link from an unwatched folder, is taken there). ``last.json``, ``racy.json``, ``dirs.json`` and
``index`` are replaced without renaming over the old file (``_replace_aside``: ext4 flushes a file renamed over
another, 1–2 ms each), and a snapshot that changed nothing rewrites none of them.

**After a Write or an Edit** (``snapshot(only=[path])``) only that file is looked at: the last snapshot with it brought
up to date, named ``refs/da/tool/<tool_use_id>`` like every call's snapshot that changed something (its parent is the
state just before the call); the person's edits meanwhile are taken by the next whole snapshot (their stat is unlike
the cache's). **One change's revert** (``revert_change``, the changes panel's Revert) is a restore of that call's
paths only, to the snapshot before it, three-way over the one after it; undoing it (the panel's Redo) is that
restore undone on the same paths (``strict``: refused where the file moved since).

**A restore** to commit T is three-way with base A = the tip (what the agent left) and ours W = a fresh snapshot of
the folder now: a path the person did not touch since A takes T's version; a path only the person changed keeps
theirs; a path both changed is merged line by line (``git merge-file``) when both are text and that is clean, else a
conflict, left untouched. ``plan`` is the dry run (files, +/- per file, conflicts); ``restore`` applies it through a
journal: new content is written into a staging folder inside the project, the journal is marked committed
(atomic rename), then removals, folders, renames, hard links and chmods follow, each step idempotent. ``open`` replays a
committed journal or rolls an uncommitted one back, so after a kill -9 the folder is fully before or fully after
once the store is opened again. Paths whose parent is no longer a real folder inside the project, non-regular
files in the way, and symlinks that lead out of the project are refused and counted (``skipped_links``).
``undo(restore_id)`` restores the snapshot taken just before that restore (byte-identical when nothing changed since).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import shutil
import stat
import struct
import subprocess
import threading
import time
import uuid as uuid_mod
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Literal

from desktop_agent.session.folder_watch import FolderWatch
from desktop_agent.util import dirs
from desktop_agent.util.git_env import git_safety_env

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 2 * 1024 * 1024
TIP = "refs/da/tip"
STAGING_PREFIX = ".desktop-agent-restore-"
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_ATTRIBUTES = "* -text -eol -crlf -filter -ident -working-tree-encoding -export-subst\n"
_AUTHOR = {"GIT_AUTHOR_NAME": "desktop-agent", "GIT_AUTHOR_EMAIL": "checkpoints@desktop-agent.invalid",
           "GIT_COMMITTER_NAME": "desktop-agent", "GIT_COMMITTER_EMAIL": "checkpoints@desktop-agent.invalid",
           "GIT_AUTHOR_DATE": "1700000000 +0000", "GIT_COMMITTER_DATE": "1700000000 +0000"}
_CONFIG = (("core.autocrlf", "false"), ("core.safecrlf", "false"), ("core.symlinks", "true"),
           ("core.filemode", "true"), ("core.quotepath", "off"), ("core.ignorecase", "false"),
           ("core.precomposeunicode", "false"), ("core.checkStat", "default"), ("core.trustctime", "true"),
           ("core.untrackedCache", "false"), ("core.splitIndex", "false"), ("index.version", "2"),
           ("gc.auto", "0"), ("core.bigFileThreshold", "512m"), ("feature.manyFiles", "false"),
           ("advice.addIgnoredFile", "false"), ("core.sparseCheckout", "false"), ("repack.writeBitmaps", "false"),
           ("pack.writeBitmaps", "false"), ("repack.updateServerInfo", "false"))
PACK_EVERY = 40  # new commits between two repacks of the store (trees of successive snapshots delta well)

Kind = Literal["turn", "tool", "probe", "restore-before", "restore-after", "manual"]


class CheckpointError(Exception):
    """The store cannot do what was asked (a broken store, an unknown checkpoint, git missing)."""


# ---------------------------------------------------------------------------------------------- git plumbing


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
                "GIT_OPTIONAL_LOCKS": "0", "GIT_ATTR_NOSYSTEM": "1", "LC_ALL": "C", "GIT_NO_REPLACE_OBJECTS": "1",
                "GIT_LITERAL_PATHSPECS": "0", **_AUTHOR})
    env.update(extra)
    return git_safety_env(env)


def _config_args(split: bool = False) -> list[str]:
    out: list[str] = []
    for key, value in _CONFIG:
        out += ["-c", f"{key}={value}"]
    if split:  # the later -c wins
        out += ["-c", "core.splitIndex=true"]
    return out


def _stat_cache(index: str | None) -> bool:
    """``index`` is the snapshots' stat cache (``index``) or a snapshot's copy of it (``index.tmp.*``): a split
    index (``core.splitIndex``), so that updating a few entries of a 20,000-file index writes a small file beside the
    shared one (``store.git/sharedindex.<sha>``) instead of the whole index, twice a snapshot. Every other index of
    ours (a plan's, a merge's) is whole."""
    if index is None:
        return False
    name = os.path.basename(index)
    return name == "index" or name.startswith("index.tmp.")


class _Git:
    def __init__(self, git_dir: str, work_tree: str | None) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree

    def env(self, index: str | None = None) -> dict[str, str]:
        extra = {"GIT_DIR": self.git_dir}
        if self.work_tree:
            extra["GIT_WORK_TREE"] = self.work_tree
        extra["GIT_INDEX_FILE"] = index or os.path.join(self.git_dir, "no-index")
        return _clean_env(extra)

    def run(self, *args: str, index: str | None = None, input: bytes | None = None, ok: tuple[int, ...] = (0,),
            cwd: str | None = None) -> bytes:
        proc = subprocess.run(["git", *_config_args(_stat_cache(index)), *args], env=self.env(index), input=input,
                              capture_output=True, cwd=cwd or self.work_tree or self.git_dir)
        if proc.returncode not in ok:
            raise CheckpointError(f"git {args[0]} failed ({proc.returncode}): "
                                  f"{proc.stderr.decode('utf-8', 'replace').strip()[:500]}")
        return proc.stdout

    def start(self, *args: str, index: str | None = None) -> subprocess.Popen[bytes]:
        return subprocess.Popen(["git", *_config_args(_stat_cache(index)), *args], env=self.env(index),
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=self.work_tree or self.git_dir)

    def finish(self, proc: subprocess.Popen[bytes], what: str, ok: tuple[int, ...] = (0,)) -> bytes:
        out, err = proc.communicate()
        if proc.returncode not in ok:
            raise CheckpointError(f"git {what} failed ({proc.returncode}): "
                                  f"{err.decode('utf-8', 'replace').strip()[:500]}")
        return out

    def text(self, *args: str, **kw: Any) -> str:
        return self.run(*args, **kw).decode("utf-8", "surrogateescape").strip()


def _person_objects_dir(cwd: str) -> str | None:
    """The object directory of the repository ``cwd`` is in (read through ``rev-parse`` with a clean environment:
    the repository's config starts no program), or None."""
    env = _clean_env({})
    try:
        proc = subprocess.run(["git", *_config_args(), "rev-parse", "--git-common-dir"], cwd=cwd, env=env,
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    common = proc.stdout.decode("utf-8", "surrogateescape").strip()
    path = os.path.join(cwd, common) if not os.path.isabs(common) else common
    objects = os.path.realpath(os.path.join(path, "objects"))
    return objects if os.path.isdir(objects) else None


def _person_git_dir(cwd: str) -> str | None:
    env = _clean_env({})
    try:
        proc = subprocess.run(["git", *_config_args(), "rev-parse", "--absolute-git-dir"], cwd=cwd, env=env,
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode("utf-8", "surrogateescape").strip() if proc.returncode == 0 else None


# ---------------------------------------------------------------------------------------------- the index file


@dataclass(frozen=True)
class _Stat:
    ctime: tuple[int, int]
    mtime: tuple[int, int]
    dev: int
    ino: int
    mode: int  # git's mode (0o100644, 0o100755, 0o120000, 0o160000)
    size: int
    sha: str


def read_index(path: str) -> dict[str, _Stat]:
    """The entries of a git index file (versions 2 and 3), path → cached stat; {} when it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return {}
    if len(data) < 12 or data[:4] != b"DIRC":
        return {}
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3):
        return {}
    out: dict[str, _Stat] = {}
    pos = 12
    unpack = struct.Struct(">IIIIIIIIII20sH").unpack_from
    try:
        for _ in range(count):
            cs, cn, ms, mn, dev, ino, mode, _uid, _gid, size, sha, flags = unpack(data, pos)
            head = 62
            if flags & 0x4000:
                head += 2
            name_end = data.index(b"\0", pos + head)
            name = data[pos + head:name_end].decode("utf-8", "surrogateescape")
            length = name_end - pos
            pos += (length + 8) & ~7
            if (flags >> 12) & 3:  # a conflict stage: not ours
                continue
            out[name] = _Stat((cs, cn), (ms, mn), dev, ino, mode, size, sha.hex())
    except (struct.error, ValueError):
        return {}
    return out


# ---------------------------------------------------------------------------------------------- results


@dataclass
class Snapshot:
    commit: str
    tree: str
    changed: bool  # False: the folder was as the tip already, nothing was added
    duration_ms: float
    files: int = 0  # entries in the folder's tree


@dataclass
class FilePlan:
    path: str  # relative to the project, '/'-separated
    action: Literal["restore", "delete", "create", "mode", "link", "merge", "mkdir", "rmdir"]
    insertions: int = 0
    deletions: int = 0


@dataclass
class RestorePlan:
    target: str
    base: str
    current: str
    files: list[FilePlan] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    insertions: int = 0
    deletions: int = 0
    skipped_links: int = 0
    result_tree: str = ""
    # internal: what to write
    _entries: dict[str, tuple[str, str] | None] = field(default_factory=dict, repr=False)  # path → (mode, sha)
    _meta: dict[str, Any] = field(default_factory=dict, repr=False)
    _skipped: set[str] = field(default_factory=set, repr=False)

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]


@dataclass
class RestoreResult:
    restore_id: str
    before: str  # the snapshot taken just before: undo goes back to it
    after: str
    files: list[FilePlan]
    conflicts: list[str]
    insertions: int
    deletions: int
    skipped_links: int
    duration_ms: float = 0.0


# ---------------------------------------------------------------------------------------------- the store


def store_root(cwd: str) -> Path:
    real = os.path.realpath(cwd)
    return dirs.data_dir() / "checkpoints" / hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]


_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


def _umask() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


class CheckpointStore:
    """The shadow store of one project folder. Thread-safe and process-safe (every operation holds the lock)."""

    def __init__(self, cwd: str, root: Path, include: tuple[str, ...], max_file_bytes: int) -> None:
        self.cwd = os.path.realpath(cwd)
        self.root = root
        self.git_dir = str(root / "store.git")
        self.index_path = str(root / "index")
        self.include = include
        self.max_file_bytes = max_file_bytes
        self.git = _Git(self.git_dir, self.cwd)
        self._umask = _umask()
        with _THREAD_LOCKS_GUARD:
            self._tlock = _THREAD_LOCKS.setdefault(str(root), threading.Lock())

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, cwd: str | os.PathLike[str], *, include: tuple[str, ...] | list[str] = (),
             max_file_bytes: int = MAX_FILE_BYTES, root: str | os.PathLike[str] | None = None) -> CheckpointStore:
        cwd = os.fspath(cwd)
        if not os.path.isdir(cwd):
            raise CheckpointError(f"not a folder: {cwd}")
        base = Path(root) if root is not None else store_root(cwd)
        self = cls(cwd, base, tuple(include), max_file_bytes)
        with self._locked():
            self._init()
            self._recover()
        return self

    def close(self) -> None:
        """Let go of the folder watch's inotify instance (a user has only ``max_user_instances`` of them, 128 by
        default): after a running snapshot, under the same lock. The store stays usable; it looks at everything
        from then on."""
        with self._tlock:
            watch, self._watch, self._watch_tried = self._watch, None, True
            if watch is not None:
                watch.close()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._tlock:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(str(self.root / "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)

    def _init(self) -> None:
        gd = Path(self.git_dir)
        if not (gd / "HEAD").exists():
            tmp = self.root / f"store.git.init-{uuid_mod.uuid4().hex[:8]}"
            subprocess.run(["git", *_config_args(), "init", "-q", "--bare", str(tmp)], env=_clean_env({}),
                           capture_output=True, check=True, cwd=str(self.root))
            if (tmp / "hooks").exists():
                shutil.rmtree(tmp / "hooks", ignore_errors=True)
            try:
                os.rename(tmp, gd)
            except OSError:
                shutil.rmtree(tmp, ignore_errors=True)
                if not (gd / "HEAD").exists():
                    raise
        (gd / "info").mkdir(exist_ok=True)
        (gd / "objects" / "info").mkdir(parents=True, exist_ok=True)
        attrs = gd / "info" / "attributes"
        if not attrs.exists() or attrs.read_text() != _ATTRIBUTES:
            _write_atomic(attrs, _ATTRIBUTES.encode())
        objects = _person_objects_dir(self.cwd)
        alternates = gd / "objects" / "info" / "alternates"
        want = (objects + "\n") if objects else ""
        have = alternates.read_text() if alternates.exists() else ""
        if want != have:
            if want:
                _write_atomic(alternates, want.encode())
            elif alternates.exists():
                alternates.unlink()
        project = self.root / "project.json"
        if not project.exists():
            _write_atomic(project, json.dumps({"cwd": self.cwd}).encode())
        # leftovers of a killed snapshot: temporary indexes and ref locks (we hold the lock: nobody else writes)
        for p in self.root.glob("index.tmp.*"):
            p.unlink(missing_ok=True)
        self._drop_probes()
        for p in list(gd.glob("refs/**/*.lock")) + [gd / "packed-refs.lock", gd / "HEAD.lock"]:
            if p.exists():
                p.unlink(missing_ok=True)

    # ------------------------------------------------------------------ refs

    def _ref(self, name: str) -> str | None:
        if name == TIP:  # a loose ref file we write (the store packs no refs): no git process
            try:
                sha = Path(self.git_dir, name).read_text().strip()
            except OSError:
                sha = ""
            if len(sha) == 40 and all(c in "0123456789abcdef" for c in sha) and _loose_commit(self.git_dir, sha):
                return sha  # a loose commit of ours; a packed one (or anything odd) asks git
        out = self.git.run("rev-parse", "-q", "--verify", f"{name}^{{commit}}", ok=(0, 1)).decode().strip()
        return out or None

    def tip(self) -> str | None:
        with self._locked():
            return self._ref(TIP)

    def checkpoint_for(self, message_id: str) -> str | None:
        """The snapshot taken just before the user message ``message_id``, or None."""
        if not _safe_ref_part(message_id):
            return None
        with self._locked():
            return self._ref(f"refs/da/msg/{message_id}")

    def message_ids(self) -> list[str]:
        with self._locked():
            out = self.git.text("for-each-ref", "--format=%(refname)", "refs/da/msg/")
        return [line.rsplit("/", 1)[1] for line in out.splitlines() if line]

    # ------------------------------------------------------------------ snapshots

    def snapshot(self, kind: Kind = "manual", *, label: str = "", message_id: str | None = None,
                 move_tip: bool = True, tool_use_id: str | None = None, only: list[str] | None = None) -> Snapshot:
        """Snapshot the folder (see the module docstring); ``message_id`` also names it as that message's
        checkpoint. A folder unchanged since the tip adds no tree or commit. ``tool_use_id`` (after a tool call
        that changed the folder) names the new snapshot ``refs/da/tool/<id>``: its parent is the state just before
        that call, so one change can be reverted on its own (``revert_change``). ``only`` (relative paths): the
        call wrote just these (Write, Edit): the snapshot is the last one with them brought up to date, without a
        look at the rest of the folder (no ``diff-files``, no folder scan; what else changed is taken by the next
        whole snapshot); a path that cannot be taken so (behind a link, an ignore file) means a whole snapshot."""
        if message_id is not None and not _safe_ref_part(message_id):
            raise CheckpointError(f"not a usable message id: {message_id!r}")
        with self._locked():
            self._recover()
            snap = self._snapshot(kind, label, move_tip, only)
            if message_id is not None:
                self._write_ref(f"refs/da/msg/{message_id}", snap.commit)
            if tool_use_id is not None and snap.changed and _safe_ref_part(tool_use_id):
                self._write_ref(f"refs/da/tool/{tool_use_id}", snap.commit)
            return snap

    def _targetable(self, rel: str) -> bool:
        """A path a snapshot of it alone can take: inside the folder through real folders only, not git's or ours,
        not an ignore file (a changed one can change what is ignored anywhere)."""
        return self._safe_path(rel) and os.path.basename(rel) != ".gitignore" \
            and "/.git/" not in f"/{rel}/" and not rel.startswith(STAGING_PREFIX)

    def change_commits(self, tool_use_id: str) -> tuple[str, str] | None:
        """The snapshots just before and just after the tool call ``tool_use_id`` changed the folder, or None."""
        if not _safe_ref_part(tool_use_id):
            return None
        with self._locked():
            after = self._ref(f"refs/da/tool/{tool_use_id}")
            if after is None:
                return None
            before = self.git.run("rev-parse", "-q", "--verify", f"{after}^1^{{commit}}", ok=(0, 1)).decode().strip()
        return (before, after) if before else None

    def _snapshot(self, kind: str, label: str, move_tip: bool, only: list[str] | None = None) -> Snapshot:
        """One snapshot (the lock held); a stat cache git cannot read (its shared index lost, a torn file) is
        dropped and the snapshot made from nothing (every file hashed once more: slower, the same result).
        ``only``: the paths a call wrote (see ``snapshot``)."""
        if only is not None:
            if not only or not all(self._targetable(p) for p in only):
                only = None
            else:
                try:
                    return self._snapshot_once(kind, label, move_tip, only)
                except CheckpointError as exc:  # the whole look then
                    log.info("checkpoint of %s alone failed (%s): the whole folder instead", only, exc)
        try:
            return self._snapshot_once(kind, label, move_tip)
        except CheckpointError as exc:
            if not os.path.exists(self.index_path):
                raise
            log.warning("checkpoint stat cache unusable, rebuilt: %s", exc)
            os.unlink(self.index_path)
            return self._snapshot_once(kind, label, move_tip)

    def _snapshot_once(self, kind: str, label: str, move_tip: bool, only: list[str] | None = None) -> Snapshot:
        """One snapshot (the lock held). Three git processes when files changed (``diff-files``, ``update-index``,
        ``write-tree``; ``check-ignore`` too when names appeared), one when nothing did; the commit, its tree and ``meta.json`` are written as
        loose objects and the ref as a file by us (we hold the lock; the store packs no refs)."""
        t0 = time.perf_counter()
        started = time.time()
        self._kind = kind
        tip = self._ref(TIP)
        # the snapshot our stat cache reflects (the tip, or a dry run's or a restore's since)
        last, last_top, prev_meta = self._last()
        if last is None and tip is not None:
            last, last_top, prev_meta = tip, self.git.text("rev-parse", f"{tip}^{{tree}}"), self._meta(tip)
        tmp_index = os.path.join(str(self.root), f"index.tmp.{os.getpid()}.{threading.get_ident()}")
        self._racy_bytes = b""  # unknown until read (racy.json is written unless it is known to hold the same)
        _unaside(self.index_path)
        fresh = not os.path.exists(self.index_path) or last is None or not prev_meta
        self._pending_dirs = None
        self._look = "targeted"  # which look this snapshot takes: targeted (Write/Edit), watched or whole
        self._dc_spoiled = False
        try:
            released = self._sync_excludes()
            targeted = only is not None and not fresh
            if targeted:
                # a call that names what it wrote (Write, Edit): only those paths are looked at; what else changed
                # (the person's edits meanwhile) is seen by the next whole snapshot, their stat being unlike the cache's
                assert only is not None
                shutil.copy2(self.index_path, tmp_index)
                ignored = self._ignored(only, tmp_index)
                changed = {p for p in only if p not in ignored or self._included(p)} | set(released)
                empty_dirs = sorted(d for d in prev_meta.get("emptyDirs") or []
                                    if not any(p.startswith(d + "/") for p in changed))
            else:
                dirty_proc = None
                dc = None if fresh else self._load_dirs()
                watched = self._watched_look(kind, dc, tmp_index) if dc is not None else None
                if self._dc_spoiled:  # a watched look given up half-way: the cache from nothing
                    dc = None
                self._look = "watched" if watched is not None else "whole"
                if watched is None:
                    self._arm_watch(dc)
                if not fresh and watched is None:
                    shutil.copy2(self.index_path, tmp_index)  # its mtime kept: git's racy-clean check depends on it
                    # tracked files' stat (git, lstat of every entry) beside the look at the folders (us, one lstat a
                    # folder; only those whose ctime moved are listed again)
                    dirty_proc = self.git.start("diff-files", "--name-only", "-z", index=tmp_index)
                try:
                    new_files: list[str] | None = None
                    if watched is not None:
                        new_files = watched[1]
                    elif dc is not None:
                        new_files = self._scan_dirs(dc, tmp_index)
                    full = new_files is None
                    if full:  # no usable folder cache: a full walk (ours before git's: see _scan_dirs)
                        dc = self._rebuild_dirs(tmp_index)
                        new_files = [] if fresh else self._walk_untracked(tmp_index)
                finally:
                    dirty = self.git.finish(dirty_proc, "diff-files", ok=(0, 1)) if dirty_proc is not None else b""
                changed = {p for p in dirty.decode("utf-8", "surrogateescape").split("\0") if p}
                if watched is not None:
                    changed |= watched[0]
                if not full and any(p == ".gitignore" or p.endswith("/.gitignore") for p in changed):
                    # an ignore file changed: what is ignored may have changed anywhere
                    dc = self._rebuild_dirs(tmp_index)
                    new_files = self._walk_untracked(tmp_index)
                assert dc is not None and new_files is not None
                self._pending_dirs = dc
                if fresh:
                    if tip is not None:
                        self.git.run("read-tree", f"{tip}:w", index=tmp_index)
                    self.git.run("add", "-A", "--ignore-errors", "--", ".", index=tmp_index, ok=(0, 1))
                    listed = self.git.run("ls-files", "-z", index=tmp_index)
                    changed = {p for p in listed.decode("utf-8", "surrogateescape").split("\0") if p}
                else:
                    changed |= set(new_files)
                    changed |= set(released)
                empty_dirs = sorted(rel for rel, entry in dc["dirs"].items() if rel and not entry[3])
            if self.include and not targeted:  # ignored files the settings list: added by name
                specs = [f":(glob){p}" for p in self.include]
                raw = self.git.run("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--", *specs,
                                   index=tmp_index)
                changed |= {p for p in raw.decode("utf-8", "surrogateescape").split("\0") if p}
            changed = {p for p in changed if not p.startswith(STAGING_PREFIX)}
            racy = self._racy() if not fresh else set()
            stats = self._lstat(changed | racy)
            large = sorted(p for p, st in stats.items() if st is not None and stat.S_ISREG(st.st_mode)
                           and st.st_size >= self.max_file_bytes and not self._included(p))
            write = sorted(p for p in changed if p not in large)
            if write and not fresh:
                gone = [p for p in write if stats.get(p) is None or stat.S_ISDIR(stats[p].st_mode)]  # type: ignore
                present = [p for p in write if p not in set(gone)]
                if gone:  # deleted, or a folder now (a file replaced by a folder): out of the index first
                    self.git.run("update-index", "--force-remove", "-z", "--stdin", index=tmp_index,
                                 input=b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in gone))
                if present:
                    self.git.run("update-index", "--add", "--remove", "--replace", "-z", "--stdin", index=tmp_index,
                                 input=b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in present))
            if large:
                self._note_large(large)
                self.git.run("update-index", "--force-remove", "-z", "--stdin", index=tmp_index,
                             input=b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in large))
            meta = self._next_meta(prev_meta, stats, large, empty_dirs, fresh)
            if last is not None and not fresh and not write and not large and meta == prev_meta:
                # git wrote nothing into the copy of the stat cache: the cache is kept as it is
                return self._done(last, last_top, prev_meta, False, tip, move_tip, tmp_index, started, stats, t0,
                                  index_written=False)
            tree = self.git.text("write-tree", index=tmp_index)
            meta_blob = self._write_object("blob", _meta_bytes(meta))
            top = self._write_object("tree", _tree_bytes([("40000", "w", tree), ("100644", "meta.json", meta_blob)]))
            if last is not None and top == last_top:
                return self._done(last, top, meta, False, tip, move_tip, tmp_index, started, stats, t0)
            commit = self._write_object("commit", _commit_bytes(top, tip or last, f"{kind}: {label}".strip()))
            if not move_tip:
                self._write_ref(f"refs/da/probe/{commit}", commit)  # kept reachable
            return self._done(commit, top, meta, True, tip, move_tip, tmp_index, started, stats, t0)
        finally:
            if os.path.exists(tmp_index):
                os.unlink(tmp_index)

    _watch: FolderWatch | None = None
    _watch_tried = False
    _watch_from: frozenset[str] = frozenset()

    def _arm_watch(self, dc: dict[str, Any] | None) -> None:
        """Before a whole look: the folder watch (``session.folder_watch``) on every folder of the cache, its queue
        emptied (what it held is seen by this look). It is armed only once a whole look ends with no folder it did
        not watch before that look began (``_settle_watch``)."""
        if not self._watch_tried:
            self._watch_tried = True
            self._watch = FolderWatch.create(self.cwd)
        w = self._watch
        self._watch_from = frozenset()
        if w is None:
            return
        w.armed = False
        if dc is None:
            return
        want = set(dc["dirs"])
        w.forget([r for r in list(w._rel) if r not in want])
        if w.watch(sorted(want)):
            w.drain()
            self._watch_from = frozenset(want)

    def _settle_watch(self) -> None:
        """After a snapshot: the watch is armed when every folder the snapshot's cache holds was watched before
        the look (a folder entered later could have had a file made in it before its watch). A snapshot of named
        files only (Write, Edit) drains nothing and leaves it as it was."""
        w = self._watch
        if w is None or self._look == "targeted":
            return
        dc = self._pending_dirs
        if dc is None:
            w.armed = False
        elif self._look == "watched":
            w.armed = w.covers(dc["dirs"])
        else:
            w.armed = bool(self._watch_from) and set(dc["dirs"]) <= self._watch_from
        self._watch_from = frozenset()

    def _watched_look(self, kind: str, dc: dict[str, Any], tmp_index: str) -> tuple[set[str], list[str]] | None:
        """After a tool call, with the watch armed: what changed from the watch's events instead of a stat of every
        file (the paths the events name, not ignored; the new names of the folders whose names changed), or None
        (then the whole look). Only after a tool call: the snapshot before a prompt and every snapshot a dry run
        or a restore takes look at everything (what inotify cannot see, an ``mmap`` write, is taken there)."""
        w = self._watch
        if kind != "tool" or w is None or not w.armed:
            return None
        if not w.covers(dc["dirs"]):  # another process's look entered folders we do not watch
            w.armed = False
            return None
        ch = w.drain()
        w.armed = False  # until this snapshot is kept (_settle_watch): the events drained are in no other place
        if not ch.complete or any(os.path.basename(p) == ".gitignore" for p in ch.paths) \
                or any(r not in dc["dirs"] for r in ch.dirs):
            return None
        shutil.copy2(self.index_path, tmp_index)
        new_files = self._scan_dirs(dc, tmp_index, only=ch.dirs)
        if new_files is None:  # the cache is half brought up to date: not to be used
            self._dc_spoiled = True
            return None
        fresh_names = set(new_files)
        paths = [p for p in ch.paths if not p.startswith(STAGING_PREFIX) and p not in fresh_names]
        ignored = self._ignored(paths, tmp_index)
        return {p for p in paths if p not in ignored}, new_files

    def _done(self, commit: str, top: str | None, meta: dict[str, Any], changed: bool, tip: str | None,
              move_tip: bool, tmp_index: str, started: float, stats: dict[str, os.stat_result | None],
              t0: float, index_written: bool = True) -> Snapshot:
        """Record which snapshot the new stat cache reflects (before the cache itself: a kill in between only
        costs the next snapshot a look at more files), move the tip, keep the cache."""
        if move_tip and tip != commit:
            self._write_ref(TIP, commit)
        unpacked = self._unpacked + (1 if changed else 0)
        # loose objects into one pack (local only: the person's objects stay theirs), at the snapshot before a
        # prompt (it runs beside the model request, off the turn's path) unless far too many wait
        if unpacked >= PACK_EVERY and (self._kind == "turn" or unpacked >= 4 * PACK_EVERY):
            try:
                self.git.run("repack", "-d", "-l", "-q")
                unpacked = 0
            except CheckpointError as exc:
                log.warning("checkpoint store repack failed: %s", exc)
        last = json.dumps({"commit": commit, "top": top, "meta": meta, "unpacked": unpacked}).encode(
            "utf-8", "surrogateescape")
        if last != self._last_bytes:  # a snapshot that changed nothing writes nothing again
            _write_state(self.root / "last.json", last)
            self._last_bytes = last
        self._keep_index(tmp_index, started, stats, index_written)
        self._keep_dirs(self._pending_dirs)
        self._settle_watch()
        self._pending_dirs = None
        return Snapshot(commit, "", changed, (time.perf_counter() - t0) * 1000)

    _unpacked = 0
    _look = "targeted"
    _dc_spoiled = False
    _last_bytes = b""
    _racy_bytes = b""
    _kind = ""
    _pending_dirs: dict[str, Any] | None = None
    _dirs_edited = False
    _dirs_mem: tuple[tuple[int, int, int], dict[str, Any]] | None = None  # (dirs.json's signature, its folders)
    _dirs_read: dict[str, Any] | None = None  # the folder cache the last read gave, and dirs.json's signature then
    _dirs_sig: tuple[int, int, int] = (0, 0, 0)
    _excludes_key = ""

    def _has_object(self, sha: str) -> bool:
        if Path(self.git_dir, "objects", sha[:2], sha[2:]).exists():
            return True
        return subprocess.run(["git", *_config_args(), "cat-file", "-e", sha], env=self.git.env(),
                              capture_output=True, cwd=self.git_dir).returncode == 0

    def _last(self) -> tuple[str | None, str | None, dict[str, Any]]:
        self._last_bytes = b""  # what the file holds, once read (another process may have written it)
        try:
            raw = _read_state(self.root / "last.json")
            self._last_bytes = raw
            data = json.loads(raw)
            commit, top, meta = data["commit"], data["top"], data["meta"]
            self._unpacked = int(data.get("unpacked") or 0)
            if isinstance(commit, str) and isinstance(top, str) and isinstance(meta, dict) \
                    and self._has_object(commit):
                return commit, top, meta
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return None, None, {}

    def _others(self, index: str) -> list[str]:
        raw = self.git.run("ls-files", "-z", "--others", "--exclude-standard", "--directory", index=index)
        return [p for p in raw.decode("utf-8", "surrogateescape").split("\0") if p and not p.startswith(STAGING_PREFIX)]

    def _walk_untracked(self, index: str) -> list[str]:
        """Every untracked non-ignored file, through git's own walk of the folder (no folder cache to trust)."""
        others = self._others(index)
        new_files = [p for p in others if not p.endswith("/")]
        new_dirs = [p for p in others if p.endswith("/")]
        if new_dirs:  # the files of new folders (their .gitignore files apply)
            raw = self.git.run("ls-files", "-z", "--others", "--exclude-standard", "--", *new_dirs, index=index)
            new_files += [p for p in raw.decode("utf-8", "surrogateescape").split("\0")
                          if p and not p.endswith("/")]  # a nested repository stays out
        return new_files

    # ------------------------------------------------------------------ the folder cache

    # A folder listed within this long before a look is listed again at the next one: its ctime could still move
    # without changing (timestamps are coarser than the clock; some file systems keep whole seconds).
    DIR_RACY_NS = 3_000_000_000

    def _list_dir(self, rel: str) -> list[str]:
        """The names in a folder, folders with a trailing ``/`` (never followed through a link); ``.git`` and our
        staging folders left out, as git leaves them."""
        out = []
        try:
            with os.scandir(os.path.join(self.cwd, rel) if rel else self.cwd) as it:
                for entry in it:
                    name = entry.name
                    if name == ".git" or (not rel and name.startswith(STAGING_PREFIX)):
                        continue
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    out.append(name + "/" if is_dir else name)
        except OSError:
            return []
        out.sort()
        return out

    def _ignored(self, paths: list[str], index: str) -> set[str]:
        """Which of ``paths`` git's exclude rules leave out (``check-ignore``; tracked paths never are)."""
        if not paths:
            return set()
        # "./" before each path: read as a plain path, never as pathspec magic
        raw = self.git.run("check-ignore", "-z", "--stdin", index=index, ok=(0, 1),
                           input=b"".join(b"./" + p.encode("utf-8", "surrogateescape") + b"\0" for p in paths))
        return {p[2:] if p.startswith("./") else p for p in raw.decode("utf-8", "surrogateescape").split("\0") if p}

    def _enter(self, dc: dict[str, Any], rels: list[str], index: str, files: list[str] | None) -> None:
        """Folders new to the cache (not ignored), level by level: listed (stat first, then the names: a name
        added in between moves the ctime, so it is seen next time), their untracked files into ``files``, their
        sub-folders asked about and entered in turn. A nested repository stays out, as git leaves it."""
        dirs = dc["dirs"]
        while rels:
            candidates: list[str] = []
            new_names: list[str] = []
            for rel in rels:
                full = os.path.join(self.cwd, rel) if rel else self.cwd
                try:
                    st = os.lstat(full)
                except OSError:
                    continue
                if not stat.S_ISDIR(st.st_mode) or (rel and os.path.lexists(os.path.join(full, ".git"))):
                    continue
                names = self._list_dir(rel)
                dirs[rel] = [st.st_ctime_ns, st.st_mtime_ns, st.st_ino, names]
                for name in names:
                    path = f"{rel}/{name}" if rel else name
                    (candidates if name.endswith("/") else new_names).append(path.rstrip("/"))
            if files is not None:
                ignored = self._ignored(new_names + candidates, index)
                files.extend(p for p in new_names if p not in ignored)
            else:
                ignored = self._ignored(candidates, index)
            rels = [d for d in candidates if d not in ignored and d not in dirs]

    def _rebuild_dirs(self, index: str) -> dict[str, Any]:
        """The folder cache from nothing: every folder git would walk into, listed."""
        dc: dict[str, Any] = {"v": 1, "key": self._excludes_key, "dirs": {}}
        self._enter(dc, [""], index, None)
        return dc

    def _scan_dirs(self, dc: dict[str, Any], index: str, only: set[str] | None = None) -> list[str] | None:
        """The untracked files that appeared since the cache was made, looking only at folders: one lstat each,
        and only a folder whose ctime (or mtime, or inode) moved — or that was listed too recently to trust — is
        listed again; a name new in it is asked about (``check-ignore``). None when an ignore file appeared or
        went (the caller walks everything)."""
        dirs: dict[str, list[Any]] = dc["dirs"]
        racy_after = time.time_ns() - self.DIR_RACY_NS
        moved: list[tuple[str, os.stat_result]] = []
        gone: list[str] = []
        base = self.cwd.rstrip("/") + "/"
        lstat, isdir = os.lstat, stat.S_ISDIR
        # ``only``: the folders whose names the watch saw change (each listed again, whatever its stat says)
        items = dirs.items() if only is None else [(r, [None, None, None, None]) for r in only if r in dirs]
        for rel, entry in items:
            try:
                st = lstat(base + rel)
            except OSError:
                gone.append(rel)
                continue
            if not isdir(st.st_mode):
                gone.append(rel)
            elif st.st_ctime_ns != entry[0] or st.st_mtime_ns != entry[1] or st.st_ino != entry[2] \
                    or entry[0] >= racy_after or entry[1] >= racy_after:
                moved.append((rel, st))

        def drop(rel: str) -> None:
            self._dirs_edited = True
            prefix = rel + "/"
            for d in [d for d in dirs if d == rel or d.startswith(prefix)]:
                del dirs[d]

        for rel in gone:
            if rel == "":
                return None
            drop(rel)
        new_paths: list[str] = []
        new_dirs: list[str] = []
        for rel, st in moved:
            if rel not in dirs:
                continue
            if rel and os.path.lexists(os.path.join(self.cwd, rel, ".git")):  # became a nested repository
                drop(rel)
                continue
            old = dirs[rel][3]
            names = self._list_dir(rel)
            entry = [st.st_ctime_ns, st.st_mtime_ns, st.st_ino, names]
            if entry != dirs[rel]:
                dirs[rel] = entry
                self._dirs_edited = True
            if names == old:
                continue
            old_set, now_set = set(old), set(names)
            for name in old_set - now_set:
                if name == ".gitignore":
                    return None
                if name.endswith("/"):
                    drop(f"{rel}/{name[:-1]}" if rel else name[:-1])
            for name in now_set - old_set:
                if name == ".gitignore":
                    return None
                path = f"{rel}/{name}" if rel else name
                (new_dirs if name.endswith("/") else new_paths).append(path.rstrip("/"))
        files: list[str] = []
        if new_paths or new_dirs:
            ignored = self._ignored(new_paths + new_dirs, index)
            files = [p for p in new_paths if p not in ignored]
            self._enter(dc, [d for d in new_dirs if d not in ignored and d not in dirs], index, files)
            self._dirs_edited = True
        return files

    def _load_dirs(self) -> dict[str, Any] | None:
        """The folder cache (kept in memory while its file is the one we read or wrote), or None when there is
        none, it is unreadable or it was made under other exclude rules."""
        path = self.root / "dirs.json"
        _unaside(path)
        try:
            st = os.stat(path)
        except OSError:
            return None
        sig = (st.st_ino, st.st_mtime_ns, st.st_size)
        cached = self._dirs_mem
        if cached is not None and cached[0] == sig:
            dc = cached[1]
        else:
            try:
                dc = json.loads(path.read_bytes().decode("utf-8", "surrogateescape"))
            except (OSError, ValueError):
                return None
        if not isinstance(dc, dict) or dc.get("v") != 1 or dc.get("key") != self._excludes_key \
                or not isinstance(dc.get("dirs"), dict) or "" not in dc["dirs"]:
            return None
        self._dirs_mem = None  # the scan edits it in place: kept again only once written (_keep_dirs)
        self._dirs_sig, self._dirs_read, self._dirs_edited = sig, dc, False
        return dc

    def _keep_dirs(self, dc: dict[str, Any] | None) -> None:
        """The folder cache this snapshot saw, written after the stat cache (a cache older than the index only
        costs a look at more names; a newer one could hide a file)."""
        if dc is None:
            return
        path = self.root / "dirs.json"
        if dc is self._dirs_read and not self._dirs_edited:
            st = os.stat(path)
            if (st.st_ino, st.st_mtime_ns, st.st_size) == self._dirs_sig:  # unchanged: not written again
                self._dirs_mem = (self._dirs_sig, dc)
                return
        _write_state(path, json.dumps(dc, separators=(",", ":")).encode("utf-8", "surrogateescape"))
        st = os.stat(path)
        self._dirs_mem = ((st.st_ino, st.st_mtime_ns, st.st_size), dc)

    def _lstat(self, paths: set[str]) -> dict[str, os.stat_result | None]:
        out: dict[str, os.stat_result | None] = {}
        for p in paths:
            try:
                out[p] = os.lstat(os.path.join(self.cwd, p))
            except OSError:
                out[p] = None
        return out

    def _racy(self) -> set[str]:
        """Paths whose ctime fell in the second of the last snapshot or later: git compares ctime to the second,
        so a chmod or a hard link made within it is not seen; these are looked at again."""
        self._racy_bytes = b""
        try:
            raw = _read_state(self.root / "racy.json")
            self._racy_bytes = raw
            data = json.loads(raw)
            return {p for p in data if isinstance(p, str)}
        except (OSError, ValueError):
            return set()

    def _keep_index(self, tmp_index: str, started: float, stats: dict[str, os.stat_result | None],
                    written: bool = True) -> None:
        """Our stat cache becomes the one just built, with the paths still in git's racy second. ``written``
        False: git wrote nothing into the copy (a snapshot that changed nothing), so the cache stays as it is (the
        copy is byte-identical, mtime included) and the copy is dropped by the caller."""
        racy = sorted(p for p, st in stats.items() if st is not None and st.st_ctime >= int(started) - 1)
        data = json.dumps(racy).encode("utf-8", "surrogateescape")
        if data != self._racy_bytes:
            _write_state(self.root / "racy.json", data)
            self._racy_bytes = data
        if written:
            _replace_aside(tmp_index, self.index_path)

    def _write_object(self, kind: str, body: bytes) -> str:
        """A loose object of the store (written once; temp file + rename, as git does)."""
        import zlib

        data = f"{kind} {len(body)}\0".encode() + body
        sha = hashlib.sha1(data).hexdigest()
        path = Path(self.git_dir, "objects", sha[:2], sha[2:])
        if path.exists():
            return sha
        path.parent.mkdir(exist_ok=True)
        _write_atomic(path, zlib.compress(data, 1))
        return sha

    def _drop_probes(self) -> None:
        """``refs/da/probe/*`` only keep a dry run's (or a restore's) look at the folder reachable while it is
        used (loose ref files we wrote; the store packs no refs)."""
        probes = Path(self.git_dir, "refs", "da", "probe")
        try:
            names = os.listdir(probes)
        except OSError:
            return
        for name in names:
            Path(probes, name).unlink(missing_ok=True)

    def _write_ref(self, name: str, sha: str) -> None:
        path = Path(self.git_dir, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, f"{sha}\n".encode())

    def _sync_excludes(self) -> list[str]:
        """Our ``info/exclude``: the person's ``info/exclude`` plus the large files left out (each re-checked).
        Returns the large files no longer left out (smaller now, or listed by the settings): looked at again.
        ``_excludes_key`` names the exclude rules the folder cache was made under (the person's rules and the
        per-user ignore file; the large files are not part of it)."""
        lines: list[str] = []
        if not hasattr(self, "_person_gd"):
            self._person_gd = _person_git_dir(self.cwd)
        person = self._person_gd
        if person:
            try:
                lines.append(Path(person, "info", "exclude").read_text(errors="replace"))
            except OSError:
                pass
        key = hashlib.sha256("\n".join(lines).encode("utf-8", "surrogateescape"))
        for candidate in _user_ignore_files():
            try:
                st = os.stat(candidate)
                key.update(f"{candidate}:{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_size}".encode(
                    "utf-8", "surrogateescape"))
            except OSError:
                key.update(f"{candidate}:-".encode("utf-8", "surrogateescape"))
        self._excludes_key = key.hexdigest()
        large_file = self.root / "large.json"
        try:
            large = json.loads(large_file.read_text())
        except (OSError, ValueError):
            large = []
        keep = []
        for rel in large:
            try:
                if os.lstat(os.path.join(self.cwd, rel)).st_size >= self.max_file_bytes and not self._included(rel):
                    keep.append(rel)
            except OSError:
                pass
        if keep != large:
            _write_atomic(large_file, json.dumps(keep).encode())
        for rel in keep:
            lines.append("/" + _glob_escape(rel))
        text = "\n".join(lines) + "\n"
        target = Path(self.git_dir, "info", "exclude")
        try:
            same = target.read_text() == text
        except OSError:
            same = False
        if not same:
            _write_atomic(target, text.encode("utf-8", "surrogateescape"))
        return [rel for rel in large if rel not in keep]

    def _note_large(self, large: list[str]) -> None:
        large_file = self.root / "large.json"
        try:
            known = json.loads(large_file.read_text())
        except (OSError, ValueError):
            known = []
        _write_atomic(large_file, json.dumps(sorted(set(known) | set(large))).encode())

    def _included(self, rel: str) -> bool:
        import fnmatch

        return any(fnmatch.fnmatchcase(rel, pat) for pat in self.include)

    def _next_meta(self, prev: dict[str, Any], stats: dict[str, os.stat_result | None], large: list[str],
                   empty: list[str], fresh: bool) -> dict[str, Any]:
        """``meta.json``: the previous one with the looked-at paths brought up to date. Permission bits other than
        git's two defaults; hard-link groups (all links of an inode change its ctime together, so a group is only
        ever re-formed among the looked-at paths); the large files left out; the empty folders."""
        modes: dict[str, str] = {} if fresh else dict(prev.get("modes") or {})
        links = [] if fresh else [g for g in (prev.get("links") or []) if not any(p in stats for p in g)]
        by_ino: dict[tuple[int, int], list[str]] = {}
        for path, st in stats.items():
            modes.pop(path, None)
            if st is None or not stat.S_ISREG(st.st_mode) or path in large:
                continue
            perm = stat.S_IMODE(st.st_mode)
            git_mode = 0o100755 if perm & 0o100 else 0o100644
            if perm != self._default_perm(git_mode):
                modes[path] = format(perm, "o")
            if st.st_nlink > 1:
                by_ino.setdefault((st.st_dev, st.st_ino), []).append(path)
        links += [sorted(g) for g in by_ino.values() if len(g) > 1]
        prev_large = [] if fresh else [p for p in (prev.get("large") or []) if p not in stats]
        return {"v": 1, "emptyDirs": empty, "links": sorted(links), "modes": modes,
                "large": sorted(set(prev_large) | set(large))}

    def _default_perm(self, git_mode: int) -> int:
        return (0o777 if git_mode == 0o100755 else 0o666) & ~self._umask

    def _meta(self, commit: str) -> dict[str, Any]:
        last, _top, meta = self._last()
        if last == commit:
            return meta
        try:
            raw = self.git.run("cat-file", "blob", f"{commit}:meta.json")
            meta = json.loads(raw)
            return meta if isinstance(meta, dict) else {}
        except (CheckpointError, ValueError):
            return {}

    # ------------------------------------------------------------------ restore

    def plan(self, target: str) -> RestorePlan:
        """The dry run of a restore to ``target``: what would change, with +/- per file and the conflicts.
        Writes nothing in the folder (a snapshot of it is added to the store, not to the tip)."""
        with self._locked():
            self._recover()
            current = self._snapshot("probe", "dry run", move_tip=False)
            try:
                return self._plan(self._resolve(target), current.commit)
            finally:
                self._drop_probes()

    def _resolve(self, target: str) -> str:
        commit = self._ref(target) if _safe_commitish(target) else None
        if commit is None:
            raise CheckpointError(f"no such checkpoint: {target}")
        return commit

    def _plan(self, target: str, current: str, base: str | None = None, paths: list[str] | None = None,
              strict: bool = False) -> RestorePlan:
        """The three-way plan (see the module docstring). ``base`` (default: the tip) is what the agent left;
        ``paths`` limits the restore to those paths (and what is under them); ``strict``: a path the person changed
        since ``base`` is a conflict, never merged."""
        base = base or self._ref(TIP) or current
        plan = RestorePlan(target=target, base=base, current=current)
        a_t = _diff_tree(self.git, base, target)
        scope = _scope(paths)
        if scope is not None:
            a_t = {p: v for p, v in a_t.items() if scope(p)}
        a_w = _diff_tree(self.git, base, current)
        result: dict[str, tuple[str, str] | None] = {}
        merged: set[str] = set()
        for path, (a, t) in a_t.items():
            w = a_w[path][1] if path in a_w else a
            if w == a:
                result[path] = t
            elif w == t:
                continue
            elif strict:
                plan.conflicts.append(path)
            else:
                blob = self._merge(path, a, w, t)
                if blob is None:
                    plan.conflicts.append(path)
                else:
                    result[path] = blob
                    merged.add(path)
        # a folder that would have to become a file while holding what the snapshot does not know: a conflict
        w_tree = f"{current}:w"
        for path, entry in list(result.items()):
            if entry is None:
                continue
            full = os.path.join(self.cwd, path)
            if os.path.isdir(full) and not os.path.islink(full):
                known = set(self.git.run("ls-tree", "-r", "-z", "--name-only", w_tree, "--", path + "/")
                            .decode("utf-8", "surrogateescape").split("\0")) - {""}
                going = {p for p in known if p in result and result[p] is None}
                present = set(_walk_files(full, path))
                if not present <= going or known - going:
                    plan.conflicts.append(path)
                    del result[path]
        # metadata: permission bits, empty folders, hard links
        meta_a, meta_t, meta_w = self._meta(base), self._meta(target), self._meta(current)
        plan._meta = {"target": meta_t, "base": meta_a, "current": meta_w}
        plan._entries = result
        # the +/- counts: the changed paths as they are now against what they would hold, as two small trees
        # (building the whole result tree meant reading every entry of the folder into an index)
        now = {p: (a_w[p][1] if p in a_w else a_t[p][0]) for p in result}
        pair = self._pair_trees(now, result)
        if pair is None:
            plan.result_tree = self._result_tree(current, result)
            counts = _numstat(self.git, f"{current}:w", plan.result_tree)
        else:
            counts = _numstat(self.git, *pair)
        actions: dict[str, FilePlan] = {}
        for path, entry in sorted(result.items()):
            w_has = path in a_w and a_w[path][1] is not None or (path not in a_w and a_t[path][0] is not None)
            if entry is None:
                action = "delete"
            elif path in merged:
                action = "merge"
            elif not w_has:
                action = "create"
            else:
                action = "restore"
            ins, dels = counts.get(path, (0, 0))
            actions[path] = FilePlan(path, action, ins, dels)  # type: ignore[arg-type]
        conflicted = set(plan.conflicts)  # a conflict changes nothing in that path, its bits neither
        perms = {p: v for p, v in self._mode_changes(result, meta_a, meta_t, current).items() if p not in conflicted}
        dirs = self._dir_changes(meta_a, meta_t, meta_w, result)
        links = self._link_changes(meta_t, result, target)
        if scope is not None:  # only what the paths hold
            perms = {p: v for p, v in perms.items() if scope(p)}
            dirs = ([d for d in dirs[0] if scope(d)], [d for d in dirs[1] if scope(d)])
            links = [g for g in links if all(scope(p) for p in g)]
        plan._meta["perms"], plan._meta["dirs"], plan._meta["links"] = perms, dirs, links
        for path in perms:
            if path not in result:
                actions.setdefault(path, FilePlan(path, "mode"))
        for d in dirs[0]:
            actions.setdefault(d, FilePlan(d, "mkdir"))
        for d in dirs[1]:
            actions.setdefault(d, FilePlan(d, "rmdir"))
        for group in plan._meta["links"]:
            for p in group[1:]:
                actions.setdefault(p, FilePlan(p, "link"))
        plan.files = [actions[p] for p in sorted(actions)]
        plan.insertions = sum(f.insertions for f in plan.files)
        plan.deletions = sum(f.deletions for f in plan.files)
        plan.conflicts.sort()
        return plan

    def _merge(self, path: str, a: tuple[str, str] | None, w: tuple[str, str] | None,
               t: tuple[str, str] | None) -> tuple[str, str] | None:
        """A clean line merge of the person's version ``w`` and the checkpoint's ``t`` over ``a``, or None."""
        if a is None or w is None or t is None or not (a[0] == w[0] == t[0]) or a[0] not in ("100644", "100755"):
            return None
        blobs = []
        for entry in (w, a, t):
            data = self.git.run("cat-file", "blob", entry[1])
            if b"\0" in data[:8000]:
                return None
            blobs.append(data)
        tmp = self.root / "tmp"
        tmp.mkdir(exist_ok=True)
        names = []
        for i, data in enumerate(blobs):
            p = tmp / f"merge-{os.getpid()}-{threading.get_ident()}-{i}"
            p.write_bytes(data)
            names.append(str(p))
        try:
            proc = subprocess.run(["git", *_config_args(), "merge-file", "-p", *names], capture_output=True,
                                  env=_clean_env({}), cwd=str(tmp))
        finally:
            for n in names:
                os.unlink(n)
        if proc.returncode != 0:
            return None
        sha = self.git.text("hash-object", "-w", "--stdin", input=proc.stdout)
        return (w[0], sha)

    def _pair_trees(self, now: dict[str, tuple[str, str] | None],
                    then: dict[str, tuple[str, str] | None]) -> tuple[str, str] | None:
        """Two trees holding only the given paths (as loose tree objects of the store), or None when the paths do
        not make a tree (a path both a file and a folder's prefix in one of them)."""
        def build(entries: dict[str, tuple[str, str] | None]) -> str | None:
            root: dict[str, Any] = {}
            for path, entry in entries.items():
                if entry is None:
                    continue
                node = root
                parts = path.split("/")
                for part in parts[:-1]:
                    node = node.setdefault(part, {})
                    if not isinstance(node, dict):
                        return None
                if parts[-1] in node:
                    return None
                node[parts[-1]] = entry

            def write(node: dict[str, Any]) -> str:
                items = [("40000", name, write(v)) if isinstance(v, dict) else (v[0].lstrip("0") or "0", name, v[1])
                         for name, v in node.items()]
                return self._write_object("tree", _tree_bytes(items))

            return write(root)

        a, b = build(now), build(then)
        return None if a is None or b is None else (a, b)

    def _result_tree(self, current: str, result: dict[str, tuple[str, str] | None]) -> str:
        idx = os.path.join(str(self.root), f"index.plan.{os.getpid()}.{threading.get_ident()}")
        try:
            self.git.run("read-tree", f"{current}:w", index=idx)
            lines = []
            for path, entry in result.items():
                if entry is None:
                    lines.append(f"0 {'0' * 40}\t{path}")
                else:
                    lines.append(f"{entry[0]} {entry[1]}\t{path}")
            if lines:
                self.git.run("update-index", "-z", "--index-info", index=idx,
                             input=b"".join(l.encode("utf-8", "surrogateescape") + b"\0" for l in lines))
            return self.git.text("write-tree", index=idx)
        finally:
            if os.path.exists(idx):
                os.unlink(idx)

    def _mode_changes(self, result: dict[str, tuple[str, str] | None], meta_a: dict[str, Any],
                      meta_t: dict[str, Any], current: str) -> dict[str, int]:
        """Paths whose permission bits go back to the checkpoint's: those written now, and those whose bits alone
        changed since the base (chmod) when the person left them as the base had them."""
        out: dict[str, int] = {}
        ma, mt = meta_a.get("modes") or {}, meta_t.get("modes") or {}
        candidates = sorted(p for p in set(ma) | set(mt) if p not in result and ma.get(p) != mt.get(p))
        t_modes = _tree_modes(self.git, f"{current}:w", candidates) if candidates else {}
        for path, entry in result.items():
            if entry is not None and entry[0] in ("100644", "100755"):
                want = int(mt[path], 8) if path in mt else self._default_perm(int(entry[0], 8))
                out[path] = want
        for path in set(ma) | set(mt):
            if path in result or ma.get(path) == mt.get(path):
                continue
            gm = t_modes.get(path)
            if gm not in ("100644", "100755"):
                continue
            try:
                have = stat.S_IMODE(os.lstat(os.path.join(self.cwd, path)).st_mode)
            except OSError:
                continue
            base_perm = int(ma[path], 8) if path in ma else self._default_perm(int(gm, 8))
            if have == base_perm:
                out[path] = int(mt[path], 8) if path in mt else self._default_perm(int(gm, 8))
        return out

    def _dir_changes(self, meta_a: dict[str, Any], meta_t: dict[str, Any], meta_w: dict[str, Any],
                     result: dict[str, tuple[str, str] | None]) -> tuple[list[str], list[str]]:
        ea, et, ew = set(meta_a.get("emptyDirs") or []), set(meta_t.get("emptyDirs") or []), \
            set(meta_w.get("emptyDirs") or [])
        make = sorted(d for d in et - ea if d not in ew or not os.path.isdir(os.path.join(self.cwd, d)))
        make = [d for d in make if not os.path.isdir(os.path.join(self.cwd, d))]
        remove = sorted((ea - et) & ew, key=lambda d: -d.count("/"))
        return make, remove

    def _link_changes(self, meta_t: dict[str, Any], result: dict[str, tuple[str, str] | None],
                      target: str) -> list[list[str]]:
        """Hard-link groups of the checkpoint that the folder will not hold as such after the writes."""
        out = []
        for group in meta_t.get("links") or []:
            if not isinstance(group, list) or len(group) < 2:
                continue
            try:
                inos = {os.lstat(os.path.join(self.cwd, p)).st_ino for p in group if p not in result}
                written = [p for p in group if p in result]
            except OSError:
                inos, written = {-1, -2}, []
            if written or len(inos) > 1:
                out.append(list(group))
        return out

    def restore(self, target: str, *, base: str | None = None, paths: list[str] | None = None,
                strict: bool = False) -> RestoreResult:
        """Restore the folder to checkpoint ``target`` (a commit or ref of the store), three-way (see the module
        docstring; ``base``, ``paths`` and ``strict`` as ``_plan`` takes them). A snapshot is taken just before;
        ``undo(result.restore_id)`` goes back to it."""
        t0 = time.perf_counter()
        with self._locked():
            self._recover()
            commit = self._resolve(target)
            base_commit = self._resolve(base) if base is not None else None
            before = self._snapshot("restore-before", f"before restoring {commit[:12]}", move_tip=False)
            plan = self._plan(commit, before.commit, base_commit, paths, strict)
            rid = uuid_mod.uuid4().hex[:16]
            self._write_ref(f"refs/da/restore/{rid}", before.commit)
            self._drop_probes()  # the restore ref keeps the snapshot before
            record: dict[str, Any] = {"id": rid, "target": commit, "before": before.commit, "conflicts": plan.conflicts}
            if paths is not None:
                record["paths"] = list(paths)
            skipped = self._apply(plan, commit, before.commit, record)
            files = [f for f in plan.files if f.path not in skipped]
            record["files"] = [f.path for f in files]
            record["skippedLinks"] = len(skipped)
            after = self._finish(record)
            return RestoreResult(rid, before.commit, after, files, plan.conflicts,
                                 sum(f.insertions for f in files), sum(f.deletions for f in files), len(skipped),
                                 (time.perf_counter() - t0) * 1000)

    def _finish(self, record: dict[str, Any]) -> str:
        """After a restore's last step (or its replay): the snapshot of the result becomes the tip, the record is
        appended, the journal goes."""
        after = self._snapshot("restore-after", f"restored {str(record.get('target'))[:12]}", move_tip=True)
        record = dict(record, after=after.commit, time=time.time())
        with open(self.root / "restores.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        (self.root / "journal.json").unlink(missing_ok=True)
        return after.commit

    def undo(self, restore_id: str, *, strict: bool = False) -> RestoreResult:
        """Put the folder back as it was just before restore ``restore_id``. A restore of some paths only (a
        change's revert) is undone on those paths only, three-way over what that restore left (``strict``: a path
        changed since is a conflict)."""
        if not _safe_ref_part(restore_id):
            raise CheckpointError(f"no such restore: {restore_id}")
        record = next((r for r in reversed(self.restores()) if r.get("id") == restore_id), None)
        paths = record.get("paths") if isinstance(record, dict) else None
        if isinstance(paths, list) and isinstance(record, dict) and isinstance(record.get("after"), str):
            return self.restore(f"refs/da/restore/{restore_id}", base=record["after"],
                                paths=[str(p) for p in paths], strict=strict)
        return self.restore(f"refs/da/restore/{restore_id}", strict=strict)

    def revert_change(self, tool_use_id: str, paths: list[str]) -> RestoreResult | None:
        """Revert what the tool call ``tool_use_id`` did to ``paths`` (relative, '/'-separated): those paths back to
        the snapshot before the call, three-way over the snapshot after it (the person's later edits are kept, or
        the path is a conflict and left as it is). None when the store holds no snapshot of that call."""
        commits = self.change_commits(tool_use_id)
        if commits is None:
            return None
        before, after = commits
        return self.restore(before, base=after, paths=paths)

    def restores(self) -> list[dict[str, Any]]:
        try:
            lines = (self.root / "restores.jsonl").read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def diff_stats(self, old: str, new: str) -> tuple[list[str], int, int]:
        """Files, insertions and deletions between two checkpoints (the conversation's markers)."""
        with self._locked():
            counts = _numstat(self.git, f"{old}:w", f"{new}:w")
        return sorted(counts), sum(c[0] for c in counts.values()), sum(c[1] for c in counts.values())

    # ------------------------------------------------------------------ applying a plan through the journal

    def _apply(self, plan: RestorePlan, target: str, current: str, record: dict[str, Any]) -> set[str]:
        meta_t, meta_a, meta_w = plan._meta["target"], plan._meta["base"], plan._meta["current"]
        del meta_w
        result = plan._entries
        skipped: set[str] = set()
        perms = plan._meta["perms"]
        make_dirs, remove_dirs = plan._meta["dirs"]
        link_groups = plan._meta["links"]
        rid = uuid_mod.uuid4().hex[:12]
        staging_rel = f"{STAGING_PREFIX}{rid}"
        staging = os.path.join(self.cwd, staging_rel)
        journal: dict[str, Any] = {"state": "preparing", "staging": staging_rel, "ops": []}
        self._write_journal(journal)
        os.mkdir(staging, 0o700)
        ops: list[list[Any]] = []
        removals, places, links, chmods = [], [], [], []
        n = 0
        blobs = {entry[1] for entry in result.values() if entry is not None}
        contents = _cat_blobs(self.git, blobs)
        for path, entry in sorted(result.items()):
            if not self._safe_path(path):
                skipped.add(path)
                continue
            full = os.path.join(self.cwd, path)
            if entry is None:
                removals.append(["unlink", path])
                continue
            mode, sha = entry
            data = contents[sha]
            if mode == "120000":
                if _link_leaves(self.cwd, path, data):
                    skipped.add(path)
                    continue
                n += 1
                tmp_name = f"{n}"
                os.symlink(os.fsdecode(data), os.path.join(staging, tmp_name))
            elif mode in ("100644", "100755"):
                n += 1
                tmp_name = f"{n}"
                perm = perms.get(path, self._default_perm(int(mode, 8)))
                fd = os.open(os.path.join(staging, tmp_name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                             0o600)
                try:
                    os.write(fd, data) if len(data) < 1 << 30 else None
                    os.fchmod(fd, perm)
                finally:
                    os.close(fd)
            else:  # a submodule or anything else: not ours to write
                skipped.add(path)
                continue
            if os.path.isdir(full) and not os.path.islink(full):
                pass  # removed by the unlinks and rmdirs of its files (checked in the plan)
            places.append(["place", tmp_name, path])
            _crash_point(f"prepare{len(places)}")
        for path, perm in perms.items():
            if path not in result and self._safe_path(path):
                chmods.append(["chmod", path, perm])
        for group in link_groups:
            src = group[0]
            for other in group[1:]:
                if self._safe_path(other) and self._safe_path(src):
                    n += 1
                    links.append(["link", src, other, f"{n}"])
        # a file replaced by a folder (or the reverse): folders in the way of a file go once emptied, the
        # folders a file needs are made
        rmdirs: set[str] = set(remove_dirs)
        for path in [op[1] for op in removals] + list(remove_dirs):
            parent = os.path.dirname(path)
            while parent:
                rmdirs.add(parent)
                parent = os.path.dirname(parent)
        mkdirs: set[str] = set()
        for path in [op[2] for op in places] + [d + "/x" for d in make_dirs]:
            parent = os.path.dirname(path)
            while parent:
                mkdirs.add(parent)
                parent = os.path.dirname(parent)
        keep_dirs = set(mkdirs) | set(meta_t.get("emptyDirs") or [])
        ops += sorted(removals, key=lambda op: -op[1].count("/"))
        ops += [["rmdir", d] for d in sorted(rmdirs - keep_dirs, key=lambda d: -d.count("/"))]
        ops += [["mkdir", d] for d in sorted(mkdirs, key=lambda d: d.count("/"))]
        ops += places + links + chmods
        record = dict(record, files=sorted(set(plan.paths) - skipped), skippedLinks=len(skipped))
        journal = {"state": "committed", "staging": staging_rel, "ops": ops, "restore": record}
        self._write_journal(journal)
        _crash_point("committed")
        self._replay(journal)
        plan._skipped = skipped
        return skipped

    def _safe_path(self, rel: str) -> bool:
        """Every parent of ``rel`` inside the project is a real folder (or does not exist yet), never a link,
        and what is at ``rel`` now is a regular file, a symlink, a folder or nothing."""
        if not rel or rel.startswith("/") or any(part in ("", ".", "..") for part in rel.split("/")):
            return False
        if rel.split("/")[0] == ".git" or rel.startswith(STAGING_PREFIX):
            return False
        cur = self.cwd
        parts = rel.split("/")
        for part in parts[:-1]:
            cur = os.path.join(cur, part)
            try:
                st = os.lstat(cur)
            except FileNotFoundError:
                return True
            except OSError:
                return False
            if stat.S_ISLNK(st.st_mode):
                return False
            if not stat.S_ISDIR(st.st_mode):
                return True  # a file where a folder must go: removed first
        try:
            st = os.lstat(os.path.join(self.cwd, rel))
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode)

    def _write_journal(self, journal: dict[str, Any]) -> None:
        _write_atomic(self.root / "journal.json", json.dumps(journal).encode(), fsync=True)

    def _recover(self) -> None:
        """A restore a kill interrupted: rolled back before its commit point, replayed after it."""
        path = self.root / "journal.json"
        try:
            journal = json.loads(path.read_text())
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            journal = {"state": "preparing"}
        if journal.get("state") == "committed":
            self._replay(journal)
            if isinstance(journal.get("restore"), dict):
                self._finish(journal["restore"])
            path.unlink(missing_ok=True)
            return
        staging = journal.get("staging")
        if isinstance(staging, str) and staging.startswith(STAGING_PREFIX) and "/" not in staging:
            shutil.rmtree(os.path.join(self.cwd, staging), ignore_errors=True)
        path.unlink(missing_ok=True)

    def _replay(self, journal: dict[str, Any]) -> None:
        staging_rel = str(journal.get("staging") or "")
        if not staging_rel.startswith(STAGING_PREFIX) or "/" in staging_rel:
            raise CheckpointError("a corrupt restore journal")
        staging = os.path.join(self.cwd, staging_rel)
        for i, op in enumerate(journal.get("ops") or []):
            _crash_point(f"op{i}")
            kind = op[0]
            if kind == "unlink":
                full = os.path.join(self.cwd, op[1])
                try:
                    st = os.lstat(full)
                    if not stat.S_ISDIR(st.st_mode):
                        os.unlink(full)
                except (FileNotFoundError, NotADirectoryError):
                    pass
            elif kind == "rmdir":
                full = os.path.join(self.cwd, op[1])
                try:
                    if os.path.isdir(full) and not os.path.islink(full):
                        os.rmdir(full)
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT, errno.ENOTDIR):
                        raise
            elif kind == "mkdir":
                full = os.path.join(self.cwd, op[1])
                try:
                    os.mkdir(full)
                except FileExistsError:
                    pass
                except OSError as exc:  # something the plan did not foresee is in the way: left as it is
                    log.warning("restore: cannot make %s: %s", op[1], exc)
            elif kind == "place":
                src = os.path.join(staging, op[1])
                if os.path.lexists(src):
                    dst = os.path.join(self.cwd, op[2])
                    try:
                        # the old file goes first: ext4 (auto_da_alloc) flushes a file renamed over another one,
                        # about 1 ms a file; a kill in between is replayed from the committed journal
                        if not stat.S_ISDIR(os.lstat(dst).st_mode):
                            os.unlink(dst)
                    except (FileNotFoundError, NotADirectoryError):
                        pass
                    except OSError as exc:
                        log.warning("restore: cannot replace %s: %s", op[2], exc)
                    try:
                        os.replace(src, dst)
                    except OSError as exc:
                        log.warning("restore: cannot write %s: %s", op[2], exc)
            elif kind == "link":
                src, dst = os.path.join(self.cwd, op[1]), os.path.join(self.cwd, op[2])
                try:
                    if os.path.lexists(dst) and os.path.samestat(os.lstat(src), os.lstat(dst)):
                        continue
                    tmp = os.path.join(staging, op[3])
                    if os.path.lexists(tmp):
                        os.unlink(tmp)
                    os.link(src, tmp)
                    os.replace(tmp, dst)
                except FileNotFoundError:
                    pass
            elif kind == "chmod":
                full = os.path.join(self.cwd, op[1])
                try:
                    if not os.path.islink(full):
                        os.chmod(full, int(op[2]))
                except FileNotFoundError:
                    pass
        shutil.rmtree(staging, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- helpers


def _loose_commit(git_dir: str, sha: str) -> bool:
    import zlib

    try:
        with open(os.path.join(git_dir, "objects", sha[:2], sha[2:]), "rb") as fh:
            head = zlib.decompressobj().decompress(fh.read(256), 16)
    except (OSError, zlib.error):
        return False
    return head.startswith(b"commit ")


def _crash_point(name: str) -> None:
    """Tests kill the process here (``DESKTOP_AGENT_CHECKPOINT_CRASH=<name>``); nothing otherwise."""
    if os.environ.get("DESKTOP_AGENT_CHECKPOINT_CRASH") == name:
        os.kill(os.getpid(), 9)


def _safe_ref_part(value: str) -> bool:
    return bool(value) and len(value) <= 128 and all(c.isalnum() or c in "-_" for c in value)


def _safe_commitish(value: str) -> bool:
    if all(c in "0123456789abcdef" for c in value) and 4 <= len(value) <= 64:
        return True
    return value.startswith("refs/da/") and all(_safe_ref_part(p) for p in value[len("refs/da/"):].split("/"))


def _scope(paths: list[str] | None) -> Any:
    """A test of whether a path is one of ``paths`` or under one of them (None: every path is)."""
    if paths is None:
        return None
    exact = {p.strip("/") for p in paths}
    prefixes = tuple(p + "/" for p in exact)
    return lambda rel: rel in exact or rel.startswith(prefixes)


def _glob_escape(rel: str) -> str:
    out = []
    for c in rel:
        out.append("\\" + c if c in "*?[]\\!# " else c)
    return "".join(out)


def _aside(path: str | os.PathLike[str]) -> str:
    return os.fspath(path) + ".old"


def _unaside(path: str | os.PathLike[str]) -> None:
    """A state file a kill left moved aside (``_replace_aside``: the old one out, the new one not yet in) is put
    back: the state before that write, which every reader handles (an older stat cache only costs a look at more
    files)."""
    if not os.path.lexists(path) and os.path.lexists(_aside(path)):
        try:
            os.rename(_aside(path), path)
        except OSError:
            pass


def _replace_aside(src: str, path: str | os.PathLike[str]) -> None:
    """``os.replace(src, path)`` without renaming over an existing file: on ext4 (``auto_da_alloc``) a rename that
    replaces a file flushes the new one's data first, 1–2 ms each, several times a snapshot. The old file is moved
    aside (``path.old``), the new one renamed in, the old one removed; a kill in between leaves ``path.old``, which
    ``_unaside`` puts back before the file is read."""
    old = _aside(path)
    try:
        os.rename(path, old)
    except FileNotFoundError:
        pass
    os.rename(src, path)
    try:
        os.unlink(old)
    except FileNotFoundError:
        pass


def _write_state(path: Path, data: bytes) -> None:
    """One of the snapshot's own state files (``last.json``, ``racy.json``, ``dirs.json``), written through a
    temporary file and ``_replace_aside``; read back through ``_read_state``."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    _replace_aside(str(tmp), path)


def _read_state(path: Path) -> bytes:
    _unaside(path)
    return path.read_bytes()


def _write_atomic(path: Path, data: bytes, fsync: bool = False) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if fsync:
        dfd = os.open(str(path.parent), os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _tree_bytes(entries: list[tuple[str, str, str]]) -> bytes:
    """A tree object's body: ``mode name\\0<20-byte id>`` per entry, sorted as git sorts (folders as ``name/``)."""
    def key(e: tuple[str, str, str]) -> bytes:
        return e[1].encode() + (b"/" if e[0] == "40000" else b"")
    return b"".join(f"{m} {n}".encode() + b"\0" + bytes.fromhex(sha) for m, n, sha in sorted(entries, key=key))


def _commit_bytes(tree: str, parent: str | None, message: str) -> bytes:
    who = f"{_AUTHOR['GIT_AUTHOR_NAME']} <{_AUTHOR['GIT_AUTHOR_EMAIL']}> {_AUTHOR['GIT_AUTHOR_DATE']}"
    head = f"tree {tree}\n" + (f"parent {parent}\n" if parent else "") + f"author {who}\ncommitter {who}\n"
    return (head + "\n" + message.replace("\0", "") + "\n").encode("utf-8", "surrogateescape")


def _meta_bytes(meta: dict[str, Any]) -> bytes:
    return json.dumps(meta, sort_keys=True, separators=(",", ":")).encode("utf-8", "surrogateescape")


def _diff_tree(git: _Git, a: str, b: str) -> dict[str, tuple[tuple[str, str] | None, tuple[str, str] | None]]:
    """Paths that differ between the folder trees of two snapshots: path → ((mode, sha) | None, ... | None)."""
    raw = git.run("diff-tree", "-r", "-z", "--no-renames", "--raw", "--no-abbrev", f"{a}:w", f"{b}:w")
    out: dict[str, tuple[tuple[str, str] | None, tuple[str, str] | None]] = {}
    parts = raw.split(b"\0")
    i = 0
    while i + 1 < len(parts):
        head = parts[i].decode()
        path = parts[i + 1].decode("utf-8", "surrogateescape")
        i += 2
        if not head.startswith(":"):
            continue
        m1, m2, s1, s2, _status = head[1:].split(" ")
        old = None if m1 == "000000" else (m1, s1)
        new = None if m2 == "000000" else (m2, s2)
        out[path] = (old, new)
    return out


def _numstat(git: _Git, a: str, b: str) -> dict[str, tuple[int, int]]:
    raw = git.run("diff-tree", "-r", "-z", "--no-renames", "--numstat", "--no-textconv", "--no-ext-diff", a, b)
    out: dict[str, tuple[int, int]] = {}
    parts = raw.split(b"\0")
    for i in range(0, len(parts) - 1):
        head = parts[i].decode("utf-8", "surrogateescape")
        if "\t" not in head:
            continue
        ins, dels, path = head.split("\t", 2)
        out[path] = (int(ins) if ins.isdigit() else 0, int(dels) if dels.isdigit() else 0)
    return out


def _tree_modes(git: _Git, tree: str, paths: list[str]) -> dict[str, str]:
    raw = git.run("ls-tree", "-r", "-z", "--full-tree", tree, "--", *[f":(literal){p}" for p in paths])
    out: dict[str, str] = {}
    for item in raw.split(b"\0"):
        if not item:
            continue
        head, path = item.split(b"\t", 1)
        out[path.decode("utf-8", "surrogateescape")] = head.split(b" ")[0].decode()
    return out


def _cat_blobs(git: _Git, shas: set[str]) -> dict[str, bytes]:
    if not shas:
        return {}
    order = sorted(shas)
    raw = git.run("cat-file", "--batch", input="".join(f"{s}\n" for s in order).encode())
    out: dict[str, bytes] = {}
    pos = 0
    for sha in order:
        nl = raw.index(b"\n", pos)
        head = raw[pos:nl].decode().split(" ")
        if len(head) < 3 or head[1] == "missing":
            raise CheckpointError(f"the checkpoint is incomplete: object {sha} is missing")
        size = int(head[2])
        out[sha] = raw[nl + 1:nl + 1 + size]
        pos = nl + 1 + size + 1
    return out


def _walk_files(full: str, rel: str) -> Iterator[str]:
    for root, dirnames, files in os.walk(full):
        sub = os.path.relpath(root, full)
        base = rel if sub == "." else f"{rel}/{sub}"
        for name in files:
            yield f"{base}/{name}"
        for name in list(dirnames):
            if os.path.islink(os.path.join(root, name)):
                yield f"{base}/{name}"
                dirnames.remove(name)


def _user_ignore_files() -> list[str]:
    """The per-user ignore file git reads with no ``core.excludesFile`` set (``$XDG_CONFIG_HOME/git/ignore``,
    else ``~/.config/git/ignore``)."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    out = [os.path.join(xdg, "git", "ignore")] if xdg else []
    home = os.environ.get("HOME")
    if home:
        out.append(os.path.join(home, ".config", "git", "ignore"))
    return out


def _link_leaves(cwd: str, rel: str, target: bytes) -> bool:
    """A symlink at ``rel`` pointing at ``target`` would lead out of the project."""
    dest = os.fsdecode(target)
    if os.path.isabs(dest):
        resolved = os.path.normpath(dest)
    else:
        resolved = os.path.normpath(os.path.join(cwd, os.path.dirname(rel), dest))
    return not (resolved == cwd or resolved.startswith(cwd.rstrip("/") + "/"))


__all__ = ["CheckpointError", "CheckpointStore", "FilePlan", "MAX_FILE_BYTES", "RestorePlan", "RestoreResult",
           "Snapshot", "read_index", "store_root"]
