"""Worktree sessions on a big repository: ``.venv/bin/python bench/bench_worktrees.py [--files 20000] [--runs 5]``.

A repository of ``--files`` files (nested folders, ~200 bytes each, one commit) in a temp dir. Measured, median of
``--runs``: ``session.worktrees.create`` (registry lock + write, ``git worktree add`` of a new ``agent/<slug>``
branch: the checkout) against the baseline of plain ``git worktree add -b`` in the same run (the ratio is our
overhead); ``archive`` of a worktree with 10 edited and 10 new files (snapshot of all tracked and untracked files
through a temporary index, rename aside, /proc scan, delete); ``restore`` (byte-identical: every blob written by us);
``review.load`` of the same change. Target (issue 24): create ≤ 1.5 s on two cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import report, result  # noqa: E402

ID = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}


def make_repo(root: Path, n: int) -> Path:
    repo = root / "repo"
    for i in range(n):
        d = repo / f"pkg{i % 50}" / f"mod{(i // 50) % 20}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"file{i}.py").write_text(f"# file {i}\n" + "def f():\n    return %d\n" % i * 8)
    env = {**os.environ, **ID}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "big"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)
    return repo


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-worktrees-"))
    os.environ["DESKTOP_AGENT_DATA_DIR"] = str(work / "data")
    from desktop_agent.session import review, worktrees

    try:
        t0 = time.perf_counter()
        repo = make_repo(work, a.files)
        print(f"repository: {a.files} files, made in {time.perf_counter() - t0:.1f} s")
        base, ours, arch, rest, load = [], [], [], [], []
        for r in range(a.runs):
            t = time.perf_counter()
            subprocess.run(["git", "worktree", "add", "-q", "-b", f"plain{r}", str(work / f"plain{r}")], cwd=repo,
                           check=True, capture_output=True)
            base.append(time.perf_counter() - t)
            t = time.perf_counter()
            wt = worktrees.create(str(repo), f"bench{r}")
            ours.append(time.perf_counter() - t)
            for i in range(10):
                p = Path(wt.path, f"pkg{i}", "mod0", f"file{i}.py")
                p.write_text(p.read_text() + "# edited\n")
                Path(wt.path, f"new{i}.txt").write_text("new\n")
            t = time.perf_counter()
            review.load(str(repo), wt.slug)
            load.append(time.perf_counter() - t)
            t = time.perf_counter()
            worktrees.archive(str(repo), wt.slug)
            arch.append(time.perf_counter() - t)
            t = time.perf_counter()
            worktrees.restore(str(repo), wt.slug)
            rest.append(time.perf_counter() - t)
        med = statistics.median
        print(f"git worktree add (baseline)   median {med(base):.3f} s  (min {min(base):.3f})")
        print(f"worktrees.create              median {med(ours):.3f} s  (min {min(ours):.3f})  "
              f"ratio {med(ours) / med(base):.2f}x  target <= 1.5 s: {'met' if med(ours) <= 1.5 else 'NOT met'}")
        print(f"review.load (20 changed files) median {med(load):.3f} s")
        print(f"worktrees.archive             median {med(arch):.3f} s")
        print(f"worktrees.restore             median {med(rest):.3f} s")
        print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")
        # the baseline (plain ``git worktree add``) shows as the ratio; the target is the absolute one
        report([result(f"worktrees.create on {a.files:,} files (baseline: plain git worktree add)", ours,
                       target=1.5, baseline=base)])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
