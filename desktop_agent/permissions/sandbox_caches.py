"""Caches that work inside the sandbox: one cache directory per project under our data dir, writable inside the
sandbox (home stays read-only), and the variables that send the common tools' caches there (``cache_env``).

The directory: ``<data dir>/sandbox-cache/<project name>-<sha256 of its real path, 12 hex>``. Per project, so a
command of one project cannot plant a wheel or a tarball that another project's ``pip``/``npm`` would pick up; only
sandboxed shells get these variables (a command run outside the sandbox keeps the person's own caches, so what a
sandboxed command wrote there is never used outside it).

What is redirected, and why:
- ``XDG_CACHE_HOME``: the default of most tools (pip's ``~/.cache/pip``, Go's ``~/.cache/go-build``, node-gyp,
  pre-commit, ruff, mypy's home caches...).
- ``PIP_CACHE_DIR``, ``npm_config_cache`` (npm's ``~/.npm``: its cache and ``_logs``), ``YARN_CACHE_FOLDER``,
  ``npm_config_store_dir`` (pnpm's store), ``GOCACHE``, ``GOMODCACHE``, ``DENO_DIR``, ``BUN_INSTALL_CACHE_DIR``:
  explicitly, so a tool's own config pointing into the read-only home does not win.
- **Not** ``GOPATH`` (``go install`` puts binaries in ``GOPATH/bin``: a binary installed into a cache no one's
  ``PATH`` names would be a silent surprise; with ``GOMODCACHE`` and ``GOCACHE`` set, ``go build`` writes nothing
  else under it), **not** ``CARGO_TARGET_DIR`` (the target dir is in the project, which is writable, and people
  look for their binaries there).
- ``CARGO_HOME``: it holds config (``config.toml``: mirrors, registries), credentials, installed binaries
  (``bin/``) *and* the download caches (``registry/``, ``git/``), and cargo has no separate variable for the
  caches. So the sandbox gets a **shadow** ``CARGO_HOME`` in the cache directory: ``registry/`` and ``git/`` are
  real (writable) there, ``config.toml``/``config`` and ``bin`` are symlinks to the person's own (read-only inside,
  as home is), ``credentials.toml`` is not linked (a sandboxed ``cargo publish`` finds no token).
A variable already pointing into a writable directory of the sandbox (the project) is left alone.

Inside the sandbox only the cache *subdirectories* are writable (``writable_dirs``); the cache root and the shadow
``CARGO_HOME`` itself are bound read-only over them first. So a command cannot swap ``cargo`` or
``cargo/config.toml`` for a symlink into the person's home — this process (unsandboxed) creates those entries and
would follow such a link.
"""

from __future__ import annotations

import hashlib
import os
import threading

from desktop_agent.util import dirs
from desktop_agent.util.paths import is_inside

CACHE_VARS = {
    "XDG_CACHE_HOME": "xdg",
    "PIP_CACHE_DIR": "pip",
    "npm_config_cache": "npm",
    "YARN_CACHE_FOLDER": "yarn",
    "npm_config_store_dir": "pnpm-store",
    "GOCACHE": "go-build",
    "GOMODCACHE": "go-mod",
    "DENO_DIR": "deno",
    "BUN_INSTALL_CACHE_DIR": "bun",
}
CARGO_LINKS = ("config.toml", "config", "bin")

_lock = threading.Lock()
_made: set[str] = set()


def cache_dir(project_dir: str) -> str:
    """The project's cache directory (created, 0700)."""
    real = os.path.realpath(project_dir)
    name = os.path.basename(real.rstrip("/")) or "root"
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:40]
    path = os.path.join(str(dirs.data_dir()), "sandbox-cache", f"{safe}-{digest}")
    with _lock:
        if path not in _made or not os.path.isdir(path):
            os.makedirs(path, mode=0o700, exist_ok=True)
            for sub in [*CACHE_VARS.values(), "cargo", "cargo/registry", "cargo/git"]:
                target = os.path.join(path, sub)
                if os.path.islink(target):  # not ours (an older build's sandbox could write here): never followed
                    os.unlink(target)
                if not os.path.isdir(target):
                    os.mkdir(target, 0o700)
            _made.add(path)
    return os.path.realpath(path)


def writable_dirs(cache: str) -> list[str]:
    """The directories a sandboxed command may write in (the cache root and ``cargo/`` stay read-only)."""
    return [os.path.join(cache, sub) for sub in (*CACHE_VARS.values(), "cargo/registry", "cargo/git")]


def read_only_dirs(cache: str) -> list[str]:
    return [cache, os.path.join(cache, "cargo")]


def _shadow_cargo(cache: str, env: dict[str, str]) -> str:
    real_home = env.get("CARGO_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cargo")
    shadow = os.path.join(cache, "cargo")
    if os.path.realpath(real_home) == os.path.realpath(shadow):
        return shadow
    for name in CARGO_LINKS:
        src, dst = os.path.join(real_home, name), os.path.join(shadow, name)
        try:
            if os.path.lexists(src):
                if os.path.islink(dst) and os.readlink(dst) == src:
                    continue
                if os.path.lexists(dst) and not os.path.islink(dst):
                    continue  # something real there (made inside): left as it is
                tmp = f"{dst}.{os.getpid()}.tmp"
                os.symlink(src, tmp)
                os.replace(tmp, dst)
            elif os.path.islink(dst):
                os.unlink(dst)
        except OSError:
            continue
    return shadow


def cache_env(env: dict[str, str], cache: str, writable: list[str]) -> dict[str, str]:
    """``env`` with the caches sent into ``cache`` (see the module docstring)."""
    out = dict(env)
    for var, sub in CACHE_VARS.items():
        current = out.get(var) or ""
        if current.startswith("/") and any(is_inside(os.path.realpath(current), w) for w in writable):
            continue
        out[var] = os.path.join(cache, sub)
    current = out.get("CARGO_HOME") or ""
    if not (current.startswith("/") and any(is_inside(os.path.realpath(current), w) for w in writable)):
        out["CARGO_HOME"] = _shadow_cargo(cache, env)
    return out
