"""Review a worktree session's change and apply it to the folder, per file and per hunk — or discard it.

**The change** (``load``): everything in the worktree (commits, uncommitted edits, untracked files — not the ones the
project's ignore rules name, which the archive snapshot keeps but a review does not offer: a tree of the state built
as ``worktrees.snapshot`` builds one) against its *review base* — the commit the worktree started
from, or, once something was applied, ``refs/desktop-agent/applied/<slug>`` (that base plus what was applied), so a
second review shows only what is left. ``git diff-tree -M`` gives every file: edits, new files, deletes, renames,
mode changes, binary files and symlinks. A text file's content is the file's bytes decoded as UTF-8 with
``surrogateescape`` (lossless for any bytes: CRLF, a missing final newline, Latin-1 and a BOM come back exactly),
its hunks ``util.diff.structured_patch`` (the permission dialog's patch). A file with a NUL byte in its first 8,000
bytes (git's rule; UTF-16 too) is binary: one decision for its content.

**Units** — one decision each: a text hunk; ``add`` / ``delete`` (a whole new or removed file); ``binary`` /
``symlink`` (whole content); ``mode`` (the executable bit); ``rename``. ``(file index, unit index)`` names one.

**Apply** (``plan_apply`` — pure, in memory — then ``commit``): for each file with chosen units, the folder's
current bytes ``F`` are merged three-way: a chosen hunk applies where its changed lines of the base are still
unchanged in ``F`` (mapped through the base→``F`` line diff); a hunk whose lines the folder changed too, a file
the folder deleted or created meanwhile, a binary file or mode the folder changed, a rename onto an existing file:
a ``Conflict``, and then **nothing** is written. The folder's own uncommitted edits stay as they are. Writing is
all-or-nothing: every new content is staged in a temp file beside its target, then a journal
(``<data dir>/worktrees/journal-*.json``) names the renames, each target is checked unchanged since it was read,
and the renames run; a kill -9 in between is completed by ``recover()`` from the journal (run before every apply).
A target under a symbolic link or a non-folder of the
folder (an earlier apply could have made one pointing outside), or under a path the same apply deletes, refuses the
whole apply. Bytes, line endings and encoding are the merge's exactly; permission bits are the folder file's, with the
executable bit changed only by a chosen ``mode`` unit.

**Discard** drops the chosen units from the worktree (the base's content, path or mode comes back there), the same
all-or-nothing way. **Leave**: do nothing.

**The model is told** with a ``change-revert`` record (``action: "review"``, ``session.changes``): what was applied
to the folder and what was discarded, per file with hunk counts and line ranges; the session's next prompt starts
with that note.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
from dataclasses import dataclass, field
from typing import Callable, Literal

from desktop_agent.core.messages import change_record_entry
from desktop_agent.session import worktrees as wtmod
from desktop_agent.util import dirs, fileio
from desktop_agent.util.diff import Hunk, line_opcodes, split_lines_keepends, structured_patch

APPLIED_PREFIX = "refs/desktop-agent/applied/"
UnitKind = Literal["hunk", "add", "delete", "binary", "symlink", "mode", "rename"]
Selection = set[tuple[int, int]]


@dataclass
class Unit:
    kind: UnitKind
    hunk: Hunk | None = None  # kind "hunk"


@dataclass
class FileChange:
    status: str                  # A, D, M, R, T (git's letters)
    old_path: str | None         # relative to the checkout (None for A)
    new_path: str | None         # (None for D)
    old_mode: int                # git mode (0o100644, 0o100755, 0o120000), 0 when absent
    new_mode: int
    old: bytes | None
    new: bytes | None
    binary: bool = False
    hunks: list[Hunk] = field(default_factory=list)  # text: old → new (shown also for add/delete)
    units: list[Unit] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def counts(self) -> tuple[int, int]:
        added = sum(1 for h in self.hunks for x in h["lines"] if x.startswith("+"))
        removed = sum(1 for h in self.hunks for x in h["lines"] if x.startswith("-"))
        return added, removed


@dataclass
class Review:
    folder: str        # the main checkout
    worktree: str      # the worktree's directory
    slug: str
    branch: str
    base: str          # the review base commit
    tree: str          # the worktree's whole state
    files: list[FileChange]

    @property
    def unit_count(self) -> int:
        return sum(len(f.units) for f in self.files)

    def all_units(self) -> Selection:
        return {(i, j) for i, f in enumerate(self.files) for j in range(len(f.units))}


@dataclass
class Conflict:
    path: str
    reason: str


@dataclass
class Plan:
    writes: dict[str, tuple[bytes, int | None, bool]] = field(default_factory=dict)  # path → (bytes, perms, link)
    deletes: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    expected: dict[str, bytes | None] = field(default_factory=dict)  # what each touched path held when read
    applied: dict[int, list[int]] = field(default_factory=dict)      # file index → chosen units


# ------------------------------------------------------------------------------------------------ text


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:8000]


def as_text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def as_bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _hunk_ranges(hunk: Hunk, offset: int) -> tuple[int, int, int, int]:
    """The hunk's changed lines (context trimmed): old [s, e) and new [ns, ne), 0-based; ``offset`` is what the
    hunks before it added (as ``util.diff.apply_hunks`` counts)."""
    n_old, n_new = int(hunk["oldLines"]), int(hunk["newLines"])
    if n_old > 0:
        oi = int(hunk["oldStart"]) - 1
        ni = oi + offset
    else:
        ni = int(hunk["newStart"]) - 1
        oi = ni - offset
    lines = hunk["lines"]
    lead = 0
    while lead < len(lines) and lines[lead].startswith(" "):
        lead += 1
    trail = 0
    while trail < len(lines) - lead and lines[len(lines) - 1 - trail].startswith(" "):
        trail += 1
    return oi + lead, oi + n_old - trail, ni + lead, ni + n_new - trail


def merge_hunks(old: str, new: str, hunks: list[Hunk], chosen: list[bool], current: str) -> tuple[str, list[int]]:
    """``current`` (the folder's text, which was ``old`` once) with the chosen hunks of ``old`` → ``new`` applied
    where their lines of ``old`` are unchanged in ``current``. Returns (text, indexes of chosen hunks that
    conflict); with conflicts the text is meaningless."""
    a, b = split_lines_keepends(old), split_lines_keepends(new)
    if current == old:
        f = a
        blocks: list[tuple[int, int, int]] = [(0, len(a), 0)]
        codes = [("equal", 0, len(a), 0, len(a))]
    else:
        f = split_lines_keepends(current)
        codes = line_opcodes(a, f)
        blocks = [(i1, i2, j1) for tag, i1, i2, j1, _ in codes if tag == "equal"]
    edits: list[tuple[int, int, list[str]]] = []
    conflicts: list[int] = []
    offset = 0
    for k, (hunk, take) in enumerate(zip(hunks, chosen)):
        s, e, ns, ne = _hunk_ranges(hunk, offset)
        offset += int(hunk["newLines"]) - int(hunk["oldLines"])
        if not take:
            continue
        spot = None
        for i1, i2, j1 in blocks:
            if i1 <= s and e <= i2:
                if s == e and current != old:  # an insertion at the edge of the folder's own change: ambiguous
                    if (s == i1 and i1 > 0) or (s == i2 and i2 < len(a)):
                        continue
                    if s == i2 and i2 == len(a) and len(f) != j1 + (i2 - i1):
                        continue
                    if s == i1 == 0 and j1 != 0:
                        continue
                # a hunk changing the old last line: the folder must end there too (its final newline is exact)
                if e == len(a) and e > s and j1 + (e - i1) != len(f):
                    continue
                spot = j1 + (s - i1)
                break
        if spot is None:
            conflicts.append(k)
            continue
        edits.append((spot, spot + (e - s), b[ns:ne]))
    if conflicts:
        return current, conflicts
    out = list(f)
    for start, end, lines in sorted(edits, reverse=True):
        out[start:end] = lines
    text = "".join(out)
    return text, []


# ------------------------------------------------------------------------------------------------ load


def _cat(repo: str, shas: list[str]) -> dict[str, bytes]:
    if not shas:
        return {}
    want = list(dict.fromkeys(shas))
    proc = subprocess.run(["git", "cat-file", "--batch"], cwd=repo, capture_output=True, env=wtmod._env(),
                          input="".join(s + "\n" for s in want).encode(), timeout=300)
    if proc.returncode != 0:
        raise wtmod.WorktreeError(proc.stderr.decode("utf-8", "replace"))
    out: dict[str, bytes] = {}
    data, pos = proc.stdout, 0
    for sha in want:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].split(b" ")
        if header[1] == b"missing":
            raise wtmod.WorktreeError(f"object {sha} is missing")
        size = int(header[2])
        out[sha] = data[nl + 1:nl + 1 + size]
        pos = nl + 1 + size + 1
    return out


def review_base(wt: wtmod.Worktree) -> str:
    applied = wtmod.git(["rev-parse", "--verify", "-q", APPLIED_PREFIX + wt.slug], wt.repo,
                        check=False).stdout.decode().strip()
    return applied or wt.base


def build_file(status: str, old_path: str | None, new_path: str | None, old_mode: int, new_mode: int,
               old: bytes | None, new: bytes | None) -> FileChange:
    """One file's change and its units (what the review shows and decides on)."""
    fc = FileChange(status, old_path, new_path, old_mode, new_mode, old, new)
    link = old_mode == 0o120000 or new_mode == 0o120000
    fc.binary = link or is_binary(old or b"") or is_binary(new or b"")
    if not fc.binary:
        fc.hunks = structured_patch(as_text(old or b""), as_text(new or b""))
    if status == "A":
        fc.units = [Unit("add")]
    elif status == "D":
        fc.units = [Unit("delete")]
    else:
        if status == "R" and old_path != new_path:
            fc.units.append(Unit("rename"))
        if old != new:
            if fc.binary:
                fc.units.append(Unit("symlink" if link else "binary"))
            else:
                fc.units.extend(Unit("hunk", h) for h in fc.hunks)
        if old_mode != new_mode and not (link and (old_mode == 0o120000) != (new_mode == 0o120000)):
            fc.units.append(Unit("mode"))
    return fc


def load(folder: str, slug: str) -> Review:
    """The worktree session's whole change against its review base (git and disk work: call it off the Qt
    thread)."""
    wt = wtmod.get(folder, slug)
    if wt.state != "active":
        raise wtmod.WorktreeError(f"{slug} is {wt.state}: restore it to review it")
    admin = wtmod._admin_dir(wt.path)
    if admin is None:
        raise wtmod.WorktreeError(f"{wt.path} is not a worktree")
    tree = wtmod._tree_of(admin, wt.path, ignored=False)  # what the project ignores (caches, builds) is not shown
    base = review_base(wt)
    raw = wtmod.git(["diff-tree", "-r", "-z", "-M", "--raw", "--no-commit-id", base, tree], wt.repo).stdout.split(b"\0")
    items: list[tuple[str, str | None, str | None, int, int, str, str]] = []
    i = 0
    while i < len(raw) - 1:
        meta = raw[i].decode()
        if not meta.startswith(":"):
            i += 1
            continue
        om, nm, osha, nsha, st_ = meta[1:].split(" ")
        letter = st_[0]
        if letter in ("R", "C"):
            p_old, p_new = os.fsdecode(raw[i + 1]), os.fsdecode(raw[i + 2])
            i += 3
        else:
            p_old = p_new = os.fsdecode(raw[i + 1])
            i += 2
        if letter == "C":  # a copy is a new file (diff-tree gives them only with -C)
            letter, om, osha = "A", "000000", "0" * len(osha)
        if int(om, 8) == 0o160000 or int(nm, 8) == 0o160000:
            continue  # a submodule: not ours to apply
        items.append((letter, None if letter == "A" else p_old, None if letter == "D" else p_new,
                      int(om, 8), int(nm, 8), osha, nsha))
    zero = "0" * len(items[0][5]) if items else ""
    blobs = _cat(wt.repo, [s for it in items for s in (it[5], it[6]) if s != zero])
    files = [build_file(letter, po, pn, om, nm, blobs.get(os_) if os_ != zero else None,
                        blobs.get(ns) if ns != zero else None) for letter, po, pn, om, nm, os_, ns in items]
    files.sort(key=lambda f: f.path)
    return Review(folder=wt.repo, worktree=wt.path, slug=wt.slug, branch=wt.branch, base=base, tree=tree,
                  files=files)


# ------------------------------------------------------------------------------------------------ plan


Reader = Callable[[str], "tuple[bytes | None, int]"]  # path → (bytes or None when absent, st_mode or 0)


def read_disk(root: str) -> Reader:
    def read(rel: str) -> tuple[bytes | None, int]:
        full = os.path.join(root, rel)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            return None, 0
        if stat.S_ISLNK(st.st_mode):
            return os.fsencode(os.readlink(full)), st.st_mode
        if not stat.S_ISREG(st.st_mode):
            return b"\0<not a regular file>", st.st_mode
        with open(full, "rb") as fh:
            return fh.read(), st.st_mode
    return read


def _exec(mode: int) -> bool:
    return bool(mode & 0o100)


def _kind_of(st_mode: int) -> int:
    """The git mode a file on disk has."""
    if stat.S_ISLNK(st_mode):
        return 0o120000
    return 0o100755 if _exec(st_mode) else 0o100644


def _new_perms(current_st: int, git_mode: int, chosen_mode: bool) -> int | None:
    """Permission bits to write: the folder file's, with the executable bit changed only by a chosen mode unit;
    None (the writer's default) for a new file that is not executable."""
    umask = fileio._umask()
    if current_st:
        perms = stat.S_IMODE(current_st)
        if chosen_mode:
            perms = (perms | (0o111 & ~umask)) if _exec(git_mode) else perms & ~0o111
        return perms
    return (0o777 & ~umask) if _exec(git_mode) else None


def plan_apply(review_files: list[FileChange], selected: Selection, read: Reader) -> Plan:
    """What applying ``selected`` units to a folder whose files ``read`` gives would write — or the conflicts."""
    plan = Plan()
    claimed: dict[str, int] = {}
    for fi, fc in enumerate(review_files):
        chosen = [j for j in range(len(fc.units)) if (fi, j) in selected]
        if not chosen:
            continue
        plan.applied[fi] = chosen
        kinds = {fc.units[j].kind for j in chosen}
        src = fc.old_path if fc.old_path is not None else fc.new_path
        assert src is not None

        def conflict(reason: str) -> None:
            plan.conflicts.append(Conflict(fc.path, reason))

        if "add" in kinds:
            path = fc.new_path or ""
            cur, cur_st = read(path)
            plan.expected[path] = cur
            if cur is None:
                plan.writes[path] = (fc.new or b"", _new_perms(0, fc.new_mode, True), fc.new_mode == 0o120000)
            elif cur != fc.new or _kind_of(cur_st) != fc.new_mode:
                conflict("the folder has a different file at this path")
            continue
        if "delete" in kinds:
            cur, cur_st = read(src)
            plan.expected[src] = cur
            if cur is None:
                continue
            if cur != fc.old or _kind_of(cur_st) != fc.old_mode:
                conflict("the folder changed this file since: it is not deleted")
                continue
            plan.deletes.append(src)
            continue
        cur, cur_st = read(src)
        plan.expected[src] = cur
        if cur is None:
            conflict("the folder deleted this file meanwhile")
            continue
        cur_kind = _kind_of(cur_st)
        if (cur_kind == 0o120000) != (fc.old_mode == 0o120000):
            conflict("the folder changed this file's type")
            continue
        result = cur
        if kinds & {"binary", "symlink"}:
            if cur == fc.old:
                result = fc.new or b""
            elif cur != fc.new:
                conflict("the folder changed this binary file too")
                continue
        hunk_units = [j for j, u in enumerate(fc.units) if u.kind == "hunk"]
        if "hunk" in kinds:
            choose = [j in chosen for j in hunk_units]
            text, bad = merge_hunks(as_text(fc.old or b""), as_text(fc.new or b""), fc.hunks, choose, as_text(cur))
            if bad:
                conflict("the folder changed the same lines: " + ", ".join(
                    f"hunk {k + 1} (lines {fc.hunks[k]['oldStart']}\u2013"
                    f"{int(fc.hunks[k]['oldStart']) + max(int(fc.hunks[k]['oldLines']) - 1, 0)})" for k in bad))
                continue
            result = as_bytes(text)
        chosen_mode = "mode" in kinds
        if chosen_mode and _exec(cur_st) != _exec(fc.old_mode) and _exec(cur_st) != _exec(fc.new_mode):
            conflict("the folder changed this file's mode")
            continue
        target = src
        if "rename" in kinds:
            target = fc.new_path or src
            there, _ = read(target)
            plan.expected[target] = there
            if there is not None:
                conflict(f"the folder already has a file at {target}")
                continue
            plan.deletes.append(src)
        perms = _new_perms(cur_st, fc.new_mode if chosen_mode else (_kind_of(cur_st)), chosen_mode)
        if result != cur or target != src or (chosen_mode and perms != stat.S_IMODE(cur_st)):
            link = fc.new_mode == 0o120000 if "symlink" in kinds else cur_kind == 0o120000
            plan.writes[target] = (result, None if link else perms if cur_kind != 0o120000 else
                                   _new_perms(0, fc.new_mode, True), link)
    for path in list(plan.writes) + plan.deletes:
        claimed[path] = claimed.get(path, 0) + 1
    for path, n in claimed.items():
        if n > 1:
            plan.conflicts.append(Conflict(path, "two changes of this review write this path"))
    return plan


def plan_discard(review_files: list[FileChange], selected: Selection, read: Reader) -> Plan:
    """What dropping ``selected`` units from the worktree writes there (the base's content, path or mode back)."""
    plan = Plan()
    for fi, fc in enumerate(review_files):
        chosen = [j for j in range(len(fc.units)) if (fi, j) in selected]
        if not chosen:
            continue
        plan.applied[fi] = chosen
        kinds = {fc.units[j].kind for j in chosen}
        where = fc.new_path if fc.new_path is not None else fc.old_path
        assert where is not None
        cur, cur_st = read(where)
        plan.expected[where] = cur
        if cur != fc.new and fc.status != "D":
            plan.conflicts.append(Conflict(fc.path, "the worktree changed this file since the review was loaded"))
            continue
        if "add" in kinds:
            plan.deletes.append(where)
            continue
        if "delete" in kinds:
            if cur is not None:
                plan.conflicts.append(Conflict(fc.path, "the worktree has this file again"))
                continue
            plan.writes[where] = (fc.old or b"", _new_perms(0, fc.old_mode, True), fc.old_mode == 0o120000)
            continue
        result = fc.new or b""
        if kinds & {"binary", "symlink"}:
            result = fc.old or b""
        hunk_units = [j for j, u in enumerate(fc.units) if u.kind == "hunk"]
        if "hunk" in kinds:
            keep = [j not in chosen for j in hunk_units]
            from desktop_agent.util.diff import apply_hunks

            result = as_bytes(apply_hunks(as_text(fc.old or b""), as_text(fc.new or b""), fc.hunks, keep))
        mode = fc.old_mode if "mode" in kinds else fc.new_mode
        target = where
        if "rename" in kinds and fc.old_path:
            target = fc.old_path
            there, _ = read(target)
            plan.expected[target] = there
            if there is not None:
                plan.conflicts.append(Conflict(fc.path, f"the worktree already has a file at {target}"))
                continue
            plan.deletes.append(where)
        link = (fc.old_mode if kinds & {"symlink"} else fc.new_mode) == 0o120000
        perms = None if link else _new_perms(0 if stat.S_ISLNK(cur_st) else cur_st, mode,
                                             "mode" in kinds or stat.S_ISLNK(cur_st))
        plan.writes[target] = (result, perms, link)
    return plan


# ------------------------------------------------------------------------------------------------ commit


def _journal_dir() -> str:
    path = str(dirs.data_dir() / "worktrees")
    os.makedirs(path, exist_ok=True)
    return path


def recover() -> int:
    """Finish the applies a killed process left half-renamed (journals whose writer is gone); how many."""
    done = 0
    root = _journal_dir()
    for name in os.listdir(root):
        if not (name.startswith("journal-") and name.endswith(".json")):
            continue
        try:
            pid = int(name.split("-")[1])
        except (IndexError, ValueError):
            continue
        if pid != os.getpid() and fileio._pid_running(pid):
            continue
        path = os.path.join(root, name)
        try:
            ops = json.loads(open(path, "rb").read())["ops"]
        except (OSError, ValueError, KeyError):
            continue
        _run_ops(ops)
        os.unlink(path)
        done += 1
    return done


def _run_ops(ops: list[dict[str, str]]) -> None:
    for op in ops:
        if op.get("tmp"):
            if os.path.lexists(op["tmp"]):
                os.replace(op["tmp"], op["target"])
        elif os.path.lexists(op["target"]):
            os.unlink(op["target"])


def unsafe_target(root: str, rel: str) -> str | None:
    """Why writing or deleting ``rel`` under ``root`` could reach outside it, or None: an absolute path or ``..``,
    or a folder on the way that is a symbolic link (the worktree could have made one in an earlier apply; the
    folder's own links are not followed either) or not a folder."""
    parts = rel.split("/")
    if os.path.isabs(rel) or any(p in ("", ".", "..") for p in parts):
        return f"{rel}: not a plain path inside the folder"
    here = root
    for part in parts[:-1]:
        here = os.path.join(here, part)
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return None  # made fresh by the writer
        if stat.S_ISLNK(st.st_mode):
            return f"{rel}: {os.path.relpath(here, root)} is a symbolic link"
        if not stat.S_ISDIR(st.st_mode):
            return f"{rel}: {os.path.relpath(here, root)} is not a folder"
    return None


def commit(root: str, plan: Plan, read: Reader | None = None) -> None:
    """Write ``plan`` under ``root`` all-or-nothing (the module docstring); ``WorktreeError`` when a target changed
    since it was read, or could lead outside ``root`` (nothing written then)."""
    if plan.conflicts:
        raise wtmod.WorktreeError("the plan has conflicts: nothing was written")
    deleted = set(plan.deletes)
    for rel in list(plan.writes) + plan.deletes:
        why = unsafe_target(root, rel)
        if why is None and any(rel.startswith(d + "/") for d in deleted):
            why = f"{rel}: a file on its way is deleted by the same apply (apply the two in turn)"
        if why:
            raise wtmod.WorktreeError(f"nothing was written: {why}")
    recover()
    read = read or read_disk(root)
    staged: list[dict[str, str]] = []
    made_dirs: list[str] = []
    try:
        for rel, (data, perms, link) in plan.writes.items():
            target = os.path.join(root, rel)
            parent = os.path.dirname(target)
            if not os.path.isdir(parent):
                missing = parent
                while not os.path.isdir(os.path.dirname(missing)):
                    missing = os.path.dirname(missing)
                os.makedirs(parent)
                made_dirs.append(missing)
            tmp = os.path.join(parent, f".{os.path.basename(rel)}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
            if link:
                os.symlink(data, tmp)
            else:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.chmod(tmp, perms if perms is not None else 0o666 & ~fileio._umask())
            staged.append({"tmp": tmp, "target": target})
        for rel in plan.deletes:
            if rel not in plan.writes:
                staged.append({"tmp": "", "target": os.path.join(root, rel)})
        for rel, was in plan.expected.items():  # nothing changed under us since the plan read it
            if read(rel)[0] != was:
                raise wtmod.WorktreeError(f"{rel} changed while applying: nothing was written; review again")
        journal = os.path.join(_journal_dir(), f"journal-{os.getpid()}-{secrets.token_hex(4)}.json")
        fileio.write_bytes_atomic(journal, json.dumps({"root": root, "ops": staged}).encode())
    except BaseException:
        for op in staged:
            if op["tmp"] and os.path.lexists(op["tmp"]):
                os.unlink(op["tmp"])
        for d in reversed(made_dirs):
            with_suppress_rmdirs(d)
        raise
    _run_ops(staged)
    os.unlink(journal)


def with_suppress_rmdirs(path: str) -> None:
    try:
        os.removedirs(path)
    except OSError:
        pass


# ------------------------------------------------------------------------------------------------ actions


@dataclass
class Outcome:
    ok: bool
    conflicts: list[Conflict]
    record: dict[str, object] | None
    sentence: str


def _entries(review: Review, applied: dict[int, list[int]]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for fi, units in sorted(applied.items()):
        fc = review.files[fi]
        hunks = [fc.units[j].hunk for j in units if fc.units[j].kind == "hunk"]
        ranges = []
        offset = 0
        chosen_hunks = {id(h) for h in hunks}
        for h in fc.hunks:  # the changed lines (context trimmed), numbered as in the worktree's file
            _s, _e, ns, ne = _hunk_ranges(h, offset)
            offset += int(h["newLines"]) - int(h["oldLines"])
            if id(h) in chosen_hunks:
                ranges.append([ns + 1, max(ne, ns + 1)])
        kinds = sorted({fc.units[j].kind for j in units} - {"hunk"})
        out.append({"path": fc.path, "oldPath": fc.old_path if fc.old_path != fc.path else None,
                    "hunks": len(hunks), "totalHunks": sum(1 for u in fc.units if u.kind == "hunk"),
                    "ranges": ranges, "kinds": kinds})
    return out


def _mark_applied(review: Review, plan: Plan) -> None:
    """``refs/desktop-agent/applied/<slug>``: the review base plus what was applied (the next review's base)."""
    lines: list[bytes] = []
    for fi, units in plan.applied.items():
        fc = review.files[fi]
        kinds = {fc.units[j].kind for j in units}
        if "add" in kinds:
            new_path, data, mode = fc.new_path, fc.new, fc.new_mode
        elif "delete" in kinds:
            assert fc.old_path is not None
            lines.append(b"0 " + b"0" * 40 + b"\t" + os.fsencode(fc.old_path))
            continue
        else:
            data = fc.old or b""
            if kinds & {"binary", "symlink"}:
                data = fc.new or b""
            if "hunk" in kinds:
                from desktop_agent.util.diff import apply_hunks

                hunk_units = [j for j, u in enumerate(fc.units) if u.kind == "hunk"]
                data = as_bytes(apply_hunks(as_text(fc.old or b""), as_text(fc.new or b""), fc.hunks,
                                            [j in units for j in hunk_units]))
            mode = fc.new_mode if "mode" in kinds or kinds & {"symlink"} else fc.old_mode
            new_path = fc.new_path if "rename" in kinds else fc.old_path
            if new_path != fc.old_path and fc.old_path:
                lines.append(b"0 " + b"0" * 40 + b"\t" + os.fsencode(fc.old_path))
        assert new_path is not None
        sha = wtmod._out(["hash-object", "-w", "--no-filters", "--stdin"], review.folder, input=data or b"")
        lines.append(f"{mode:o} {sha}".encode() + b"\t" + os.fsencode(new_path))
    if not lines:
        return
    common = wtmod.repository_of(review.folder)[1]
    index = os.path.join(common, f"desktop-agent-applied-{os.getpid()}-{secrets.token_hex(3)}.index")
    try:
        env = {"GIT_INDEX_FILE": index}
        wtmod.git(["read-tree", review.base], review.folder, env=env)
        wtmod.git(["update-index", "-z", "--index-info"], review.folder, input=b"\0".join(lines) + b"\0", env=env)
        tree = wtmod._out(["write-tree"], review.folder, env=env)
    finally:
        if os.path.exists(index):
            os.unlink(index)
    sha = wtmod._out(["commit-tree", tree, "-p", review.base, "-m", f"desktop-agent: applied from {review.branch}"],
                     review.folder, env=wtmod._IDENTITY)
    wtmod.git(["update-ref", APPLIED_PREFIX + review.slug, sha], review.folder)


def apply(review: Review, selected: Selection) -> Outcome:
    """Apply the chosen units to the folder (three-way, all or nothing). ``ok`` False with the conflicts when any:
    then nothing was written."""
    plan = plan_apply(review.files, selected, read_disk(review.folder))
    if plan.conflicts:
        return Outcome(False, plan.conflicts, None, "")
    commit(review.folder, plan)
    _mark_applied(review, plan)
    record = review_record(review, applied=_entries(review, plan.applied), discarded=[], left=_left(review, selected))
    from desktop_agent.session.changes import describe

    return Outcome(True, [], record, describe(record))


def discard(review: Review, selected: Selection) -> Outcome:
    """Drop the chosen units from the worktree (all or nothing)."""
    plan = plan_discard(review.files, selected, read_disk(review.worktree))
    if plan.conflicts:
        return Outcome(False, plan.conflicts, None, "")
    commit(review.worktree, plan)
    record = review_record(review, applied=[], discarded=_entries(review, plan.applied), left=_left(review, selected))
    from desktop_agent.session.changes import describe

    return Outcome(True, [], record, describe(record))


def _left(review: Review, selected: Selection) -> int:
    return sum(1 for i, f in enumerate(review.files) for j in range(len(f.units)) if (i, j) not in selected)


def review_record(review: Review, *, applied: list[dict[str, object]], discarded: list[dict[str, object]],
                  left: int) -> dict[str, object]:
    """The ``change-revert`` record (``action: "review"``) that tells the model with its next message."""
    return change_record_entry("review", outcome="applied" if applied else "discarded", toolUseId="review",
                               tool="review", filePath=review.worktree, folder=review.folder,
                               branch=review.branch, added=0, removed=0, applied=applied, discarded=discarded,
                               left=left)


__all__ = ["APPLIED_PREFIX", "Conflict", "FileChange", "Outcome", "Plan", "Review", "Unit", "apply", "build_file",
           "commit", "discard", "load", "merge_hunks", "plan_apply", "plan_discard", "read_disk", "recover",
           "review_record"]
