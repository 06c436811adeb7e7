"""What the checkpoint tests compare: a folder's full state (bytes, permission bits, symlink targets, hard-link
groups, empty folders) and a person's ``.git`` byte for byte."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

SKIP = {".git"}


def manifest(root: str | os.PathLike[str], skip: set[str] = SKIP) -> dict[str, Any]:
    """path → (kind, perm, content digest or link target); plus hard-link groups and empty folders."""
    root = os.fspath(root)
    files: dict[str, tuple[str, int, str]] = {}
    inodes: dict[tuple[int, int], list[str]] = {}
    empty: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in skip]
            rel_dir = ""
        for name in list(dirnames):
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                dirnames.remove(name)
                filenames.append(name)
        if rel_dir and not dirnames and not filenames:
            empty.append(rel_dir)
        for name in filenames:
            full = os.path.join(dirpath, name)
            rel = f"{rel_dir}/{name}" if rel_dir else name
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                files[rel] = ("link", 0, os.readlink(full))
            else:
                files[rel] = ("file", stat.S_IMODE(st.st_mode), hashlib.sha256(Path(full).read_bytes()).hexdigest())
                inodes.setdefault((st.st_dev, st.st_ino), []).append(rel)
    links = sorted(sorted(g) for g in inodes.values() if len(g) > 1)
    return {"files": files, "links": links, "empty": sorted(empty)}


def git_dir_digest(git_dir: str | os.PathLike[str]) -> dict[str, str]:
    """Every file under a ``.git`` (index, refs, packed-refs, config, logs, hooks, objects) → sha256 and mode."""
    out: dict[str, str] = {}
    for dirpath, _dirs, filenames in os.walk(git_dir):
        for name in filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            data = os.readlink(full).encode() if os.path.islink(full) else Path(full).read_bytes()
            out[os.path.relpath(full, git_dir)] = f"{oct(st.st_mode)}:{hashlib.sha256(data).hexdigest()}"
    return out


def git(cwd: str | os.PathLike[str], *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for rel, text in (files or {"README.md": "hello\n", "src/app.py": "print(1)\n"}).items():
        p = path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "init")
    return path


def bash(cwd: str | os.PathLike[str], command: str) -> None:
    subprocess.run(["bash", "-c", command], cwd=cwd, check=True)


if __name__ == "__main__":  # the TypeScript SDK test asks for a folder's manifest this way
    import json
    import sys

    print(json.dumps(manifest(sys.argv[1]), sort_keys=True))
