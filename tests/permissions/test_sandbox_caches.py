"""permissions/sandbox_caches.py: the per-project cache folder, what it exports, and that this (unsandboxed) process
never follows a link planted in it."""

from __future__ import annotations

import os

from desktop_agent.permissions import sandbox_caches
from desktop_agent.permissions.sandbox_caches import cache_dir, cache_env, read_only_dirs, writable_dirs


def test_per_project_and_exported(tmp_path, monkeypatch):
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(tmp_path / "data"))
    a, b = cache_dir(str(tmp_path / "p1")), cache_dir(str(tmp_path / "p2"))
    assert a != b and a.startswith(str(tmp_path / "data" / "sandbox-cache"))
    home = tmp_path / "home"
    (home / ".cargo" / "bin").mkdir(parents=True)
    (home / ".cargo" / "config.toml").write_text("[net]\n")
    (home / ".cargo" / "credentials.toml").write_text("token = 'x'\n")
    proj = tmp_path / "p1"
    env = cache_env({"HOME": str(home), "PIP_CACHE_DIR": str(proj / ".pipcache")}, a, [str(proj)])
    assert env["PIP_CACHE_DIR"] == str(proj / ".pipcache")  # already writable inside: kept
    for var in ("XDG_CACHE_HOME", "npm_config_cache", "GOCACHE", "GOMODCACHE", "YARN_CACHE_FOLDER"):
        assert env[var].startswith(a), var
    assert "GOPATH" not in env and "CARGO_TARGET_DIR" not in env
    cargo = env["CARGO_HOME"]
    assert os.readlink(os.path.join(cargo, "config.toml")) == str(home / ".cargo" / "config.toml")
    assert os.readlink(os.path.join(cargo, "bin")) == str(home / ".cargo" / "bin")
    assert not os.path.lexists(os.path.join(cargo, "credentials.toml"))
    assert os.path.join(a, "cargo", "registry") in writable_dirs(a) and os.path.join(a, "cargo") in read_only_dirs(a)
    assert a in read_only_dirs(a) and a not in writable_dirs(a)


def test_a_planted_link_is_never_followed(tmp_path, monkeypatch):
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(tmp_path / "data"))
    victim = tmp_path / "victim"
    victim.mkdir()
    cache = cache_dir(str(tmp_path / "proj"))
    os.rmdir(os.path.join(cache, "cargo", "registry"))
    os.rmdir(os.path.join(cache, "cargo", "git"))
    os.rmdir(os.path.join(cache, "cargo"))
    os.symlink(victim, os.path.join(cache, "cargo"))  # as a sandbox that could write the root would
    sandbox_caches._made.clear()
    again = cache_dir(str(tmp_path / "proj"))
    assert again == cache and not os.path.islink(os.path.join(cache, "cargo"))
    assert os.listdir(victim) == []
