"""The bashlex table cache (``shell.bashlex_tables``): built once, then loaded; a corrupt, foreign, malformed or
not-private cache is rebuilt, never used. Each case is a fresh Python process (bashlex is imported once per process)
that imports it through ``import_bashlex`` and reports what it did, a digest of the parser tables bashlex ended up with
(after its own in-place corrections) and the parse of a command."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """import hashlib, json
from desktop_agent.shell import bashlex_tables as b
bashlex = b.import_bashlex()
from bashlex import parser
tables = json.dumps({"action": sorted((k, sorted(v.items())) for k, v in parser.yaccparser.action.items()),
                     "goto": sorted((k, sorted(v.items())) for k, v in parser.yaccparser.goto.items())})
tree = bashlex.parse("cat a | grep -v b && rm -rf $(echo x) > out; (cd d; ls)")
print(json.dumps({"status": b.last_status.get("status"), "why": b.last_status.get("why", ""),
                  "tables": hashlib.sha256(tables.encode()).hexdigest(), "tree": [t.dump() for t in tree]}))
"""


def probe(cache: Path, **env: str) -> dict:
    full = dict(os.environ, PYTHONPATH=str(ROOT), DESKTOP_AGENT_CACHE_DIR=str(cache), **env)
    proc = subprocess.run([sys.executable, "-c", PROBE], env=full, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    """bashlex as it is without any cache."""
    return probe(tmp_path_factory.mktemp("none"), DESKTOP_AGENT_BASHLEX_CACHE="0")


def files(cache: Path) -> tuple[Path, Path]:
    data = cache / "bashlex-tables-v1.json"
    return data, Path(str(data) + ".sha256")


def rewrite(cache: Path, doc: object, *, fix_digest: bool = True) -> None:
    data, digest = files(cache)
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    data.write_bytes(raw)
    if fix_digest:
        digest.write_text(hashlib.sha256(raw).hexdigest() + "\n")


def test_built_once_then_loaded_with_the_same_tables(tmp_path, reference):
    cache = tmp_path / "cache"
    first = probe(cache)
    assert first["status"] == "built"
    data, digest = files(cache)
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    assert oct(data.stat().st_mode & 0o777) == "0o600" and oct(digest.stat().st_mode & 0o777) == "0o600"
    assert digest.read_text().strip() == hashlib.sha256(data.read_bytes()).hexdigest()
    doc = json.loads(data.read_bytes())
    assert doc["format"] == 1 and len(doc["key"]) == 64 and set(doc["tables"]) == {"action", "goto"}
    second = probe(cache)
    assert second["status"] == "loaded", second["why"]
    for run in (first, second):
        assert run["tables"] == reference["tables"] and run["tree"] == reference["tree"]


@pytest.mark.parametrize("damage", ["truncated", "not_json", "foreign_key", "old_format", "out_of_range_state",
                                    "unknown_token", "bad_reduce", "pickle_bytes", "digest_missing"])
def test_a_bad_cache_is_rebuilt_never_used(tmp_path, reference, damage):
    cache = tmp_path / "cache"
    probe(cache)
    data, digest = files(cache)
    doc = json.loads(data.read_bytes())
    action = doc["tables"]["action"]
    if damage == "truncated":  # a torn write: the recorded digest no longer matches
        data.write_bytes(data.read_bytes()[:1000])
    elif damage == "not_json":
        rewrite(cache, b"\x80\x04\x95not json at all")
    elif damage == "pickle_bytes":  # a pickle is never unpickled: it is not JSON
        import pickle

        rewrite(cache, pickle.dumps(doc))
    elif damage == "foreign_key":  # another bashlex, grammar or Python wrote it
        rewrite(cache, dict(doc, key="0" * 64))
    elif damage == "old_format":
        rewrite(cache, dict(doc, format=0))
    elif damage == "out_of_range_state":
        state = next(i for i, row in enumerate(action) if row)
        tok = next(iter(action[state]))
        action[state][tok] = len(action) + 5
        rewrite(cache, doc)
    elif damage == "unknown_token":
        action[0]["NOT_A_TOKEN"] = 1
        rewrite(cache, doc)
    elif damage == "bad_reduce":
        action[0][next(iter(action[0]))] = -100000
        rewrite(cache, doc)
    elif damage == "digest_missing":
        digest.unlink()
    run = probe(cache)
    assert run["status"] == "built", run
    assert run["tables"] == reference["tables"] and run["tree"] == reference["tree"]
    assert probe(cache)["status"] == "loaded"  # rebuilt and written again, whole


def test_a_cache_others_could_write_is_not_trusted(tmp_path, reference):
    cache = tmp_path / "cache"
    probe(cache)
    data, digest = files(cache)
    data.chmod(0o666)
    assert probe(cache)["status"] == "built"
    cache.chmod(0o777)
    run = probe(cache)
    assert run["status"] == "built" and run["why"] == "no private cache directory"
    cache.chmod(0o700)
    assert probe(cache)["status"] == "loaded"


def test_a_symlinked_cache_file_is_not_followed(tmp_path, reference):
    cache = tmp_path / "cache"
    probe(cache)
    data, _ = files(cache)
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_bytes(data.read_bytes())
    elsewhere.chmod(0o600)
    data.unlink()
    data.symlink_to(elsewhere)
    run = probe(cache)
    assert run["status"] == "built" and run["tables"] == reference["tables"]
    assert not data.is_symlink()  # replaced by a file of its own


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give the cache to another user")
def test_a_cache_of_another_user_is_not_trusted(tmp_path, reference):
    cache = tmp_path / "cache"
    probe(cache)
    data, digest = files(cache)
    os.chown(data, 65534, 65534)
    assert probe(cache)["status"] == "built"
    os.chown(cache, 65534, 65534)
    assert probe(cache)["why"] == "no private cache directory"
