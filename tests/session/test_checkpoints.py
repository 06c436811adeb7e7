"""The shadow checkpoint store on real folders and real git repositories: every kind of Bash side effect restored
with full fidelity and undone byte for byte, the three-way restore keeping the person's later edits, the person's
``.git`` untouched, links leading out refused, and kill -9 during a snapshot and a restore."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desktop_agent.session.checkpoints import CheckpointStore, read_index, store_root
from tests.session.checkpoint_helpers import bash, git, git_dir_digest, make_repo, manifest

ROOT = Path(__file__).resolve().parents[2]

BASE_FILES = {
    "README.md": "hello\n", "src/app.py": "print(1)\nprint(2)\nprint(3)\n", "src/util.py": "x = 1\n",
    "docs/a.md": "a\n", "docs/b.md": "b\n", "run.sh": "#!/bin/sh\necho run\n", "data/keep.txt": "keep\n",
}

# (name, command run by "the agent"): each is restored to the snapshot before it, then undone
CORPUS = [
    ("rm", "rm README.md"),
    ("rm -r", "rm -r docs"),
    ("mv", "mv src/util.py src/helpers.py"),
    ("sed -i", "sed -i 's/print/echo/' src/app.py"),
    ("cp over a file", "cp README.md src/util.py"),
    ("chmod", "chmod 600 data/keep.txt && chmod +x src/app.py && chmod 640 run.sh"),
    ("ln -s", "ln -s ../README.md docs/readme-link && ln -sf src/app.py app-link"),
    ("ln", "ln README.md hard-readme && ln -f src/app.py src/util.py"),
    ("mkdir/rmdir", "mkdir -p new/empty/deep && rmdir data/empty"),
    ("git checkout -- file", "git checkout -- src/app.py"),
    ("generator of 500 files", "mkdir gen && for i in $(seq 1 500); do echo \"file $i\" > gen/f$i.txt; done"),
    ("a file replaced by a folder", "rm src/util.py && mkdir src/util.py && echo inner > src/util.py/inner.txt"),
    ("a folder replaced by a file", "rm -r docs && echo now-a-file > docs"),
    ("a symlink replaced by a file", "rm link-to-app && echo plain > link-to-app"),
    ("a hard link broken by sed -i", "sed -i 's/keep/kept/' data/keep.txt"),
]


@pytest.fixture
def repo(tmp_path):
    path = make_repo(tmp_path / "proj", BASE_FILES)
    os.chmod(path / "run.sh", 0o755)
    (path / "data" / "empty").mkdir()
    os.symlink("src/app.py", path / "link-to-app")
    os.link(path / "data" / "keep.txt", path / "data" / "keep-hard.txt")
    # an uncommitted edit: the agent's git checkout -- throws it away, the restore brings it back
    (path / "src" / "app.py").write_text("print(1)\nprint(2)\nprint(3)\nprint('uncommitted')\n")
    return path


@pytest.mark.parametrize("name,command", CORPUS, ids=[c[0] for c in CORPUS])
def test_every_side_effect_is_restored_and_the_restore_undone(repo, name, command):
    store = CheckpointStore.open(repo)
    git_before = git_dir_digest(repo / ".git")
    before = manifest(repo)
    store.snapshot("turn", message_id="m1")
    bash(repo, command)
    after = manifest(repo)
    assert after != before, f"{name}: the command changed nothing"
    store.snapshot("tool")

    plan = store.plan("refs/da/msg/m1")
    assert plan.files and not plan.conflicts
    assert manifest(repo) == after, "a dry run wrote nothing"
    result = store.restore("refs/da/msg/m1")
    assert result.skipped_links == 0 and not result.conflicts
    assert manifest(repo) == before, name
    assert sorted(f.path for f in result.files) == sorted(plan.paths)

    store.undo(result.restore_id)
    assert manifest(repo) == after, f"{name}: undo restore is byte-identical"
    # git checkout -- rewrote the person's index stat cache; everything else leaves their .git alone
    if not command.startswith("git "):
        assert git_dir_digest(repo / ".git") == git_before


def test_snapshot_that_changed_nothing_adds_no_tree(repo):
    store = CheckpointStore.open(repo)
    first = store.snapshot("turn")
    objects = sorted(p.name for p in (Path(store.git_dir) / "objects").rglob("*") if p.is_file())
    again = store.snapshot("tool")
    assert not again.changed and again.commit == first.commit
    assert sorted(p.name for p in (Path(store.git_dir) / "objects").rglob("*") if p.is_file()) == objects
    (repo / "README.md").write_text("changed\n")
    assert store.snapshot("tool").changed


def test_store_lives_outside_the_folder_and_shares_objects(repo):
    store = CheckpointStore.open(repo)
    store.snapshot("turn")
    assert Path(store.git_dir).is_relative_to(store_root(str(repo)))
    assert not str(store.git_dir).startswith(str(repo))
    alternates = (Path(store.git_dir) / "objects" / "info" / "alternates").read_text().strip()
    assert alternates == str((repo / ".git" / "objects").resolve())
    # the committed README's blob is the person's: not copied into the store
    sha = git(repo, "rev-parse", "HEAD:README.md").strip()
    assert not (Path(store.git_dir) / "objects" / sha[:2] / sha[2:]).exists()
    assert not (Path(store.git_dir) / "hooks").exists()


def test_a_folder_that_is_not_a_repository(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "a.txt").write_text("one\n")
    store = CheckpointStore.open(folder)
    store.snapshot("turn", message_id="m1")
    bash(folder, "rm a.txt && echo two > b.txt && mkdir d")
    before_restore = manifest(folder)
    store.snapshot("tool")
    store.restore("refs/da/msg/m1")
    assert manifest(folder)["files"].keys() == {"a.txt"}
    assert not (folder / ".git").exists()
    assert not (Path(store.git_dir) / "objects" / "info" / "alternates").exists()
    store.undo(store.restores()[-1]["id"])
    assert manifest(folder) == before_restore


def test_ignored_and_large_files_are_left_out_unless_listed(repo):
    (repo / ".gitignore").write_text("node_modules/\n*.log\n")
    (repo / "node_modules").mkdir()
    (repo / "node_modules" / "dep.js").write_text("dep\n")
    (repo / "big.bin").write_bytes(b"x" * (2 * 1024 * 1024))
    (repo / "build.log").write_text("log\n")
    store = CheckpointStore.open(repo)
    snap = store.snapshot("turn", message_id="m1")
    names = set(git_store(store, "ls-tree", "-r", "--name-only", f"{snap.commit}:w").split())
    assert "node_modules/dep.js" not in names and "build.log" not in names and "big.bin" not in names
    assert "README.md" in names
    meta = json.loads(git_store(store, "cat-file", "blob", f"{snap.commit}:meta.json"))
    assert meta["large"] == ["big.bin"]
    # the agent deletes ignored and large files: not restored (never snapshotted), nothing else disturbed
    bash(repo, "rm -r node_modules big.bin && echo x >> README.md")
    store.snapshot("tool")
    store.restore("refs/da/msg/m1")
    assert (repo / "README.md").read_text() == "hello\n" and not (repo / "big.bin").exists()

    listed = CheckpointStore.open(repo, include=["big.bin", "build.log"])
    (repo / "big.bin").write_bytes(b"y" * (3 * 1024 * 1024))
    snap = listed.snapshot("tool")
    names = set(git_store(listed, "ls-tree", "-r", "--name-only", f"{snap.commit}:w").split())
    assert {"big.bin", "build.log"} <= names


def git_store(store: CheckpointStore, *args: str) -> str:
    return store.git.text(*args)


def test_the_persons_later_edit_is_kept_merged_or_reported(repo):
    store = CheckpointStore.open(repo)
    store.snapshot("turn", message_id="m1")
    # the agent's turn: three files
    bash(repo, "sed -i 's/print(1)/print(100)/' src/app.py && echo agent > src/util.py && rm docs/a.md")
    store.snapshot("tool")
    # the person, after the turn: an edit of their own in a file the agent never touched, an edit at the other
    # end of app.py (merges), and an edit of the very line the agent changed in util.py (a conflict)
    (repo / "README.md").write_text("hello\nperson\n")
    app = (repo / "src" / "app.py").read_text().replace("print('uncommitted')", "print('person')")
    (repo / "src" / "app.py").write_text(app)
    (repo / "src" / "util.py").write_text("person wins\n")
    util_before = (repo / "src" / "util.py").read_bytes()

    plan = store.plan("refs/da/msg/m1")
    assert plan.conflicts == ["src/util.py"]
    assert {f.path: f.action for f in plan.files} == {"src/app.py": "merge", "docs/a.md": "create"}
    result = store.restore("refs/da/msg/m1")
    assert result.conflicts == ["src/util.py"]
    assert (repo / "README.md").read_text() == "hello\nperson\n"  # the person's own file: kept
    assert (repo / "src" / "app.py").read_text() == "print(1)\nprint(2)\nprint(3)\nprint('person')\n"  # merged
    assert (repo / "src" / "util.py").read_bytes() == util_before  # the conflict: untouched
    assert (repo / "docs" / "a.md").read_text() == "a\n"
    before_restore = store.git.run("cat-file", "blob", f"{result.before}:w/src/app.py")
    store.undo(result.restore_id)
    assert (repo / "src" / "app.py").read_bytes() == before_restore


def test_links_leading_out_are_refused_and_counted(repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("secret\n")
    os.symlink(str(outside / "secret"), repo / "out-link")
    store = CheckpointStore.open(repo)
    store.snapshot("turn", message_id="m1")
    # the agent removes the link, and replaces a folder by a link to the outside folder
    bash(repo, f"rm out-link && rm -r docs && ln -s {outside} docs")
    store.snapshot("tool")
    result = store.restore("refs/da/msg/m1")
    assert result.skipped_links == 3  # out-link, docs/a.md, docs/b.md
    assert not os.path.lexists(repo / "out-link")
    assert sorted(os.listdir(outside)) == ["secret"], "nothing was written through the link"
    assert (outside / "secret").read_text() == "secret\n"


def test_hostile_ids_are_refused(repo):
    store = CheckpointStore.open(repo)
    store.snapshot("turn", message_id="m1")
    for bad in ("../../HEAD", "refs/heads/main", "m1;rm -rf /", "", "--all"):
        assert store.checkpoint_for(bad) is None
        with pytest.raises(Exception):
            store.restore(bad)
        with pytest.raises(Exception):
            store.undo(bad)


def test_the_persons_git_is_byte_identical_after_100_turns(repo):
    time.sleep(1.1)  # past git's racy-clean second, so the status below settles the person's stat cache for good
    status_before = git(repo, "status", "--porcelain=v1", "-uall")
    assert git(repo, "status", "--porcelain=v1", "-uall") == status_before
    digest = git_dir_digest(repo / ".git")
    store = CheckpointStore.open(repo)
    for turn in range(100):
        store.snapshot("turn", message_id=f"m{turn}")
        (repo / "gen").mkdir(exist_ok=True)
        (repo / "gen" / f"t{turn % 7}.txt").write_text(f"turn {turn}\n")
        store.snapshot("tool")
    store.restore("refs/da/msg/m50")
    store.restore("refs/da/msg/m0")
    assert git_dir_digest(repo / ".git") == digest
    assert git(repo, "stash", "list") == ""
    assert git(repo, "status", "--porcelain=v1", "-uall") == status_before
    assert git(repo, "worktree", "list").count("\n") == 1
    assert not any(line.startswith("refs/da") for line in git(repo, "for-each-ref").splitlines())


def test_index_reader_matches_git(repo, tmp_path):
    store = CheckpointStore.open(repo)
    store.snapshot("turn")
    # the stat cache is a split index (its entries in store.git/sharedindex.*): read as one whole index
    whole = str(tmp_path / "whole-index")
    env = {**os.environ, "GIT_DIR": store.git_dir, "GIT_INDEX_FILE": whole, "GIT_WORK_TREE": str(repo)}
    assert list(Path(store.git_dir).glob("sharedindex.*")), "the stat cache is split"
    Path(whole).write_bytes(Path(store.index_path).read_bytes())
    subprocess.run(["git", "update-index", "--no-split-index"], env=env, check=True, capture_output=True)
    entries = read_index(whole)
    out = subprocess.run(["git", "ls-files", "-s", "-z"], env={**os.environ, "GIT_DIR": store.git_dir,
                         "GIT_INDEX_FILE": store.index_path, "GIT_WORK_TREE": str(repo)}, capture_output=True,
                         check=True).stdout.decode().split("\0")
    expected = {line.split("\t", 1)[1]: line.split()[1] for line in out if line}
    assert {p: e.sha for p, e in entries.items()} == expected


# ---------------------------------------------------------------------------------------------- kill -9

_WORKER = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
from desktop_agent.session.checkpoints import CheckpointStore
store = CheckpointStore.open(sys.argv[2])
print("ready", flush=True)
if sys.argv[3] == "restore":
    store.restore("refs/da/msg/m1")
else:
    store.snapshot("tool")
print("done", flush=True)
"""


def _spawn(repo: Path, what: str, crash: str | None = None) -> subprocess.Popen[str]:
    env = dict(os.environ)
    if crash:
        env["DESKTOP_AGENT_CHECKPOINT_CRASH"] = crash
    return subprocess.Popen([sys.executable, "-c", _WORKER, str(ROOT), str(repo), what], env=env,
                            stdout=subprocess.PIPE, text=True)


def _prepared(repo: Path) -> tuple[dict, dict]:
    store = CheckpointStore.open(repo)
    before = manifest(repo)
    store.snapshot("turn", message_id="m1")
    bash(repo, "rm -r docs && mv src/util.py src/h.py && chmod 600 README.md && mkdir gen && "
               "for i in $(seq 1 500); do echo $i > gen/f$i.txt; done && rm -r data")
    store.snapshot("tool")
    return before, manifest(repo)


def _assert_whole(repo: Path, before: dict, after: dict) -> str:
    store = CheckpointStore.open(repo)  # opening replays or rolls back the journal
    now = manifest(repo)
    if now not in (before, after):
        diff = {k: (before["files"].get(k), now["files"].get(k)) for k in set(before["files"]) | set(now["files"])
                if before["files"].get(k) != now["files"].get(k)}
        pytest.fail(f"the folder is neither fully before nor fully after: vs before {sorted(diff)[:10]} "
                    f"links {now['links']} vs {before['links']}, empty {now['empty']} vs {before['empty']}")
    assert not any(n.startswith(".desktop-agent-restore-") for n in os.listdir(repo))
    fsck = subprocess.run(["git", "fsck", "--no-dangling"], env={**os.environ, "GIT_DIR": store.git_dir},
                          capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    store.snapshot("tool")  # and it still works
    return "before" if now == before else "after"


@pytest.mark.parametrize("point,outcome", [("prepare1", "after"), ("prepare3", "after"), ("committed", "before"),
                                           ("op0", "before"), ("op3", "before"), ("op250", "before"),
                                           ("op500", "before")])
def test_kill_at_each_step_of_a_restore(repo, point, outcome):
    """Killed while staging: rolled back (the folder as the agent left it); killed after the journal's commit
    point: replayed (the folder as the checkpoint had it), and the restore can be undone."""
    before, after = _prepared(repo)
    proc = _spawn(repo, "restore", crash=point)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert _assert_whole(repo, before, after) == outcome
    if outcome == "before":
        _undo_last(repo)
        assert manifest(repo) == after


def test_kill_at_random_moments_of_restores_and_snapshots(repo):
    rng = random.Random(25)
    before, after = _prepared(repo)
    seen = set()
    for attempt in range(6):
        what = "restore" if attempt % 2 == 0 else "snapshot"
        proc = _spawn(repo, what)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.25))
        proc.kill()
        proc.wait(timeout=30)
        state = _assert_whole(repo, before, after)
        seen.add(state)
        if state == "before":  # set up the "after" state again for the next restore
            _undo_last(repo)
            assert manifest(repo) == after
    assert seen


def _undo_last(repo: Path) -> None:
    store = CheckpointStore.open(repo)
    restores = store.restores()
    store.undo(restores[-1]["id"])


def test_a_hostile_repository_runs_nothing_and_its_attributes_change_no_byte(tmp_path):
    """The person's config names programs (fsmonitor, a clean/smudge filter, hooks) and their attributes ask for
    end-of-line conversion: the store runs none of them and keeps every byte as it is."""
    repo = make_repo(tmp_path / "hostile", {"a.txt": "lf only\n", "b.txt": "crlf\r\nline\r\n"})
    pwned = tmp_path / "pwned"
    with open(repo / ".git" / "config", "a") as fh:
        fh.write(f"[core]\n\tfsmonitor = touch {pwned}-fsmonitor\n\thooksPath = {repo}/hooks\n"
                 f"[filter \"evil\"]\n\tclean = touch {pwned}-clean\n\tsmudge = touch {pwned}-smudge\n"
                 "\trequired = true\n")
    (repo / "hooks").mkdir()
    for hook in ("post-index-change", "reference-transaction", "post-checkout"):
        (repo / "hooks" / hook).write_text(f"#!/bin/sh\ntouch {pwned}-{hook}\n")
        os.chmod(repo / "hooks" / hook, 0o755)
    (repo / ".gitattributes").write_text("* text=auto eol=crlf filter=evil ident\n")
    store = CheckpointStore.open(repo)
    before = manifest(repo)
    store.snapshot("turn", message_id="m1")
    bash(repo, "printf 'changed\\n' > a.txt && rm b.txt && printf '$Id$\\n' > c.txt")
    store.snapshot("tool")
    store.restore("refs/da/msg/m1")
    assert manifest(repo) == before
    assert (repo / "b.txt").read_bytes() == b"crlf\r\nline\r\n" and (repo / "a.txt").read_bytes() == b"lf only\n"
    assert not list(tmp_path.glob("pwned*")), "no program of the repository ran"


def test_a_same_size_edit_in_the_same_second_is_seen(tmp_path):
    """Edits of the same size right after each snapshot are all seen (git's racy-clean check compares a file's mtime
    with its index file's: our stat cache keeps its mtime when it is copied for a snapshot)."""
    folder = tmp_path / "racy"
    folder.mkdir()
    store = CheckpointStore.open(folder)
    for i in range(8):
        (folder / "f.txt").write_text(f"value {i}\n")
        snap = store.snapshot("tool")
        assert snap.changed, i
        assert store.git.run("cat-file", "blob", f"{snap.commit}:w/f.txt") == f"value {i}\n".encode()


@pytest.mark.parametrize("name,command", [c for c in CORPUS if c[0] in
                                          ("mkdir/rmdir", "a file replaced by a folder", "mv", "generator of 500 files")],
                         ids=lambda c: c if isinstance(c, str) else "")
def test_the_folder_cache_sees_new_names_once_it_trusts_a_folder(repo, monkeypatch, name, command):
    """With no racy window, a folder whose ctime did not move is not listed again: only moved ones are."""
    monkeypatch.setattr(CheckpointStore, "DIR_RACY_NS", 0)
    store = CheckpointStore.open(repo)
    before = manifest(repo)
    store.snapshot("turn", message_id="m1")
    time.sleep(0.05)  # past the timestamp granularity
    bash(repo, command)
    after = manifest(repo)
    time.sleep(0.05)
    assert store.snapshot("tool").changed
    assert (store.root / "dirs.json").exists()
    store.restore("refs/da/msg/m1")
    assert manifest(repo) == before, name
    assert after != before


def test_dry_runs_and_restores_leave_no_probe_refs(repo):
    store = CheckpointStore.open(repo)
    store.snapshot("turn", message_id="m1")
    (repo / "README.md").write_text("changed\n")
    store.plan("refs/da/msg/m1")
    result = store.restore("refs/da/msg/m1")
    store.plan("refs/da/msg/m1")
    refs = subprocess.run(["git", "for-each-ref", "--format=%(refname)"], env={**os.environ, "GIT_DIR": store.git_dir},
                          capture_output=True, text=True, check=True).stdout.split()
    assert not [r for r in refs if r.startswith("refs/da/probe/")]
    assert f"refs/da/restore/{result.restore_id}" in refs
    store.undo(result.restore_id)
    assert (repo / "README.md").read_text() == "changed\n"


# ---------------------------------------------------------------------------------------------- one change's revert

def _agent_call(store: CheckpointStore, repo: Path, tool_use_id: str, command: str) -> None:
    bash(repo, command)
    store.snapshot("tool", label=f"Bash {tool_use_id}", tool_use_id=tool_use_id)


def test_revert_change_touches_only_that_change_and_keeps_later_work(repo):
    store = CheckpointStore.open(repo)
    (repo / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    store.snapshot("turn", message_id="m1")
    _agent_call(store, repo, "toolu_a", "sed -i 's/^line 3$/line three/' long.txt")
    _agent_call(store, repo, "toolu_b", "echo later > README.md")
    # the person edits the same file far from the change, and another file
    text = (repo / "long.txt").read_text().replace("line 18\n", "line 18 (mine)\n")
    (repo / "long.txt").write_text(text)
    (repo / "docs" / "a.md").write_text("person\n")
    result = store.revert_change("toolu_a", ["long.txt"])
    assert result is not None and [f.path for f in result.files] == ["long.txt"] and not result.conflicts
    want = "".join(f"line {i}\n" for i in range(1, 21)).replace("line 18\n", "line 18 (mine)\n")
    assert (repo / "long.txt").read_text() == want, "the change undone, the person's edit kept"
    assert (repo / "README.md").read_text() == "later\n", "the later call is not touched"
    assert (repo / "docs" / "a.md").read_text() == "person\n"


def test_revert_change_conflict_writes_nothing_and_a_created_file_is_deleted(repo):
    store = CheckpointStore.open(repo)
    store.snapshot("turn", message_id="m1")
    _agent_call(store, repo, "toolu_edit", "sed -i 's/print(2)/print(22)/' src/app.py")
    _agent_call(store, repo, "toolu_new", "printf 'made\\n' > made.txt && chmod 640 made.txt")
    mine = (repo / "src" / "app.py").read_text().replace("print(22)", "print(222)")
    (repo / "src" / "app.py").write_text(mine)
    before = manifest(repo)
    clash = store.revert_change("toolu_edit", ["src/app.py"])
    assert clash is not None and clash.conflicts == ["src/app.py"] and not clash.files
    assert manifest(repo) == before, "a conflict leaves the file as the person has it"
    created = store.revert_change("toolu_new", ["made.txt"])
    assert created is not None and [(f.path, f.action) for f in created.files] == [("made.txt", "delete")]
    assert not (repo / "made.txt").exists()
    assert store.revert_change("toolu_unknown", ["x"]) is None


def test_a_change_revert_undone_is_byte_identical_and_strict(repo):
    store = CheckpointStore.open(repo)
    store.snapshot("turn", message_id="m1")
    _agent_call(store, repo, "toolu_edit", "sed -i 's/print(3)/print(33)/' src/app.py && chmod 700 src/app.py")
    after = manifest(repo)
    result = store.revert_change("toolu_edit", ["src/app.py"])
    assert result is not None and result.files
    assert "print(33)" not in (repo / "src" / "app.py").read_text()
    (repo / "README.md").write_text("edited after the revert\n")
    store.undo(result.restore_id, strict=True)
    want = dict(after, files=dict(after["files"]))
    want["files"]["README.md"] = manifest(repo)["files"]["README.md"]
    assert manifest(repo) == want, "the change is back byte for byte (mode too); other files untouched"
    # strict: a redo refuses when the file moved since the revert
    again = store.revert_change("toolu_edit", ["src/app.py"])
    assert again is not None and again.files
    (repo / "src" / "app.py").write_text("print('person')\n")
    refused = store.undo(again.restore_id, strict=True)
    assert refused.conflicts == ["src/app.py"] and not refused.files
    assert (repo / "src" / "app.py").read_text() == "print('person')\n"


def test_a_snapshot_of_the_written_file_alone(repo):
    """After a Write or an Edit only the file it names is looked at: the snapshot holds that change, not the person's
    edit made meanwhile (taken by the next whole snapshot), and an ignored or link-reached path means a whole look."""
    (repo / ".gitignore").write_text("build/\n")
    store = CheckpointStore.open(repo)
    first = store.snapshot("turn", message_id="m1")
    (repo / "src" / "app.py").write_text("agent\n")
    (repo / "docs" / "a.md").write_text("the person, meanwhile\n")
    (repo / "fresh").mkdir()
    (repo / "fresh" / "new.txt").write_text("new\n")
    one = store.snapshot("tool", tool_use_id="toolu_w", only=["src/app.py"])
    assert one.changed
    assert store.diff_stats(first.commit, one.commit)[0] == ["src/app.py"], "only the written file"
    created = store.snapshot("tool", tool_use_id="toolu_n", only=["fresh/new.txt"])
    assert store.diff_stats(one.commit, created.commit)[0] == ["fresh/new.txt"]
    whole = store.snapshot("tool")
    assert store.diff_stats(created.commit, whole.commit)[0] == ["docs/a.md"], "the next whole look takes the rest"
    # the per-change revert of the written file is exactly that change
    assert store.change_commits("toolu_w") == (first.commit, one.commit)
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_text("ignored\n")
    assert not store.snapshot("tool", only=["build/out.bin"]).changed, "an ignored file stays out"
    os.symlink("src", repo / "via-link")
    (repo / "src" / "util.py").write_text("through a link\n")
    through = store.snapshot("tool", only=["via-link/util.py"])
    assert store.diff_stats(whole.commit, through.commit)[0] == ["src/util.py", "via-link"], "a whole look instead"
    store.undo(store.restore("refs/da/msg/m1").restore_id)


def _tree_of(store: CheckpointStore, commit: str) -> str:
    return store.git.text("rev-parse", f"{commit}^{{tree}}")


def _whole_look_tree(folder: Path, root: Path, monkeypatch) -> str:
    """The tree a store that never watches makes of ``folder`` from nothing (every file hashed, every folder listed)."""
    monkeypatch.setenv("DESKTOP_AGENT_CHECKPOINT_WATCH", "0")
    try:
        other = CheckpointStore.open(folder, root=root)
        return _tree_of(other, other.snapshot("turn").commit)
    finally:
        monkeypatch.delenv("DESKTOP_AGENT_CHECKPOINT_WATCH")


# the commands that only touch files in folders the watch already has: taken from its events alone
WATCHED = {"rm", "mv", "sed -i", "cp over a file", "chmod", "ln -s", "ln", "git checkout -- file",
           "a symlink replaced by a file", "a hard link broken by sed -i"}


@pytest.mark.parametrize("name,command", CORPUS, ids=[c[0] for c in CORPUS])
def test_a_snapshot_after_a_tool_from_the_folder_watch_is_the_whole_look(repo, tmp_path, monkeypatch, name, command):
    """After a tool call the armed folder watch names what changed (no stat of every file): the snapshot it makes is
    the very tree a store looking at everything from nothing makes, and a restore from it is exact. A folder made,
    removed or renamed falls back to the whole look."""
    store = CheckpointStore.open(repo)
    before = manifest(repo)
    store.snapshot("turn", message_id="m1")
    store.snapshot("tool")  # a whole look with every folder watched before it began: the watch is armed now
    assert store._watch is not None and store._watch.armed
    bash(repo, command)
    snap = store.snapshot("tool")
    assert snap.changed
    assert store._look == ("watched" if name in WATCHED else "whole"), name
    assert _tree_of(store, snap.commit) == _whole_look_tree(repo, tmp_path / "other", monkeypatch), name
    store.restore("refs/da/msg/m1")
    assert manifest(repo) == before, name


def test_the_folder_watch_leaves_ignored_files_out_and_sees_new_ones(repo, tmp_path, monkeypatch):
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore logs")
    store = CheckpointStore.open(repo)
    store.snapshot("turn")
    store.snapshot("tool")
    (repo / "docs" / "run.log").write_text("ignored\n")
    (repo / "docs" / "new.md").write_text("new\n")
    snap = store.snapshot("tool")
    assert store._look == "watched" and snap.changed
    names = store.git.text("ls-tree", "-r", "--name-only", f"{snap.commit}:w").splitlines()
    assert "docs/new.md" in names and "docs/run.log" not in names
    assert _tree_of(store, snap.commit) == _whole_look_tree(repo, tmp_path / "other", monkeypatch)
    (repo / "docs" / "run.log").write_text("still ignored, longer\n")
    again = store.snapshot("tool")
    assert store._look == "watched" and not again.changed, "an ignored file's edit adds no tree"


@pytest.mark.parametrize("watch", ["1", "0"])
def test_a_same_size_rewrite_with_the_same_mtime_is_a_new_tree(tmp_path, monkeypatch, watch):
    """The racy-git case with the persistent stat cache (and with the folder watch, or without it): a file rewritten
    right after a snapshot with the same size and its mtime put back to the very same nanosecond holds other bytes,
    and the next snapshot has them."""
    monkeypatch.setenv("DESKTOP_AGENT_CHECKPOINT_WATCH", watch)
    folder = tmp_path / "racy"
    folder.mkdir()
    (folder / "other.txt").write_text("other\n")
    store = CheckpointStore.open(folder)
    store.snapshot("turn")
    store.snapshot("tool")
    f = folder / "f.txt"
    for i in range(6):
        f.write_text(f"value {i}\n")
        st = f.stat()
        first = store.snapshot("tool")
        assert first.changed
        f.write_text(f"VALUE {i}\n")  # same size, same second
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert f.stat().st_size == st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
        snap = store.snapshot("tool")
        assert snap.changed and snap.commit != first.commit, i
        assert store.git.run("cat-file", "blob", f"{snap.commit}:w/f.txt") == f"VALUE {i}\n".encode()
    if watch == "1":
        assert store._look == "watched"


def test_a_kill_between_moving_the_state_aside_and_putting_the_new_in(repo):
    """``_replace_aside`` moves the old ``index``/``last.json``/``racy.json``/``dirs.json`` to ``<name>.old`` before
    the new one comes in: a kill in between leaves only the old ones, which the next snapshot takes back (the state
    before that snapshot: it then looks at more files, and sees what changed)."""
    store = CheckpointStore.open(repo)
    store.snapshot("turn")
    (repo / "README.md").write_text("changed once\n")
    first = store.snapshot("tool")
    for name in ("index", "last.json", "racy.json", "dirs.json"):
        path = store.root / name
        assert path.exists(), name
        os.rename(path, str(path) + ".old")  # as a kill right after the move aside leaves it
    (repo / "README.md").write_text("changed twice\n")
    (repo / "docs" / "c.md").write_text("c\n")
    again = CheckpointStore.open(repo).snapshot("tool")
    assert again.changed and again.commit != first.commit
    w = f"{again.commit}:w"
    assert store.git.run("cat-file", "blob", f"{w}/README.md") == b"changed twice\n"
    assert store.git.run("cat-file", "blob", f"{w}/docs/c.md") == b"c\n"
    assert not list(store.root.glob("*.old"))
