"""bashlex's LALR tables, built once and kept in the user's cache (``import_bashlex``).

bashlex builds its parser tables from its grammar at every import (``yacc.yacc`` → ``LRTable``: 80–90 ms of CPU on an
idle machine, several times that on a loaded one), in every ``-p`` process that analyses a command. The tables are
data: an action table (state → token → shift state / -reduce rule / 0 accept) and a goto table (state →
non-terminal → state). ``import_bashlex`` imports bashlex with its ``LRTable`` replaced by ``CachedLRTable``, which
takes them from the cache when the cache is trusted, else builds them as bashlex does and writes them for next time.

The cache is security-relevant: these tables decide how a command is parsed, and the permission checks act on that.
So a cache is used only when all of this holds, and is otherwise rebuilt (never trusted):
- it is JSON (data only, no pickle: nothing in it can run), read from ``cache_dir()`` — ``$DESKTOP_AGENT_CACHE_DIR``,
  else ``$XDG_CACHE_HOME/desktop-agent`` (absolute only), else ``~/.cache/desktop-agent`` — a directory this user
  owns that nobody else may write (made 0700), opened without following links, a regular file of this user's not
  writable by group or others;
- the file's sha256 equals the one recorded beside it (``<name>.sha256``: a torn or corrupt write);
- its ``key`` equals this process's: the bashlex version (from its ``.dist-info``), the sha256 of bashlex's grammar
  and table-builder sources (``parser.py``, ``tokenizer.py``, ``yacc.py``), a digest of the grammar as loaded
  (every production, precedence, terminal, the start symbol) and the cache format;
- its structure checks: every state and target in range, every reduce names a production of this grammar, every key
  a terminal or non-terminal of it.
Writing is atomic (a new file made ``O_EXCL`` 0600, fsynced, renamed over the old; the digest after it). A cache that
cannot be written costs the next start-up a rebuild, nothing else.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import stat
import sys
import tempfile
import threading
from types import ModuleType
from typing import Any

FORMAT = 1
_SOURCES = ("parser.py", "tokenizer.py", "yacc.py")
MAX_CACHE_BYTES = 4 * 1024 * 1024

# What the last import did, for tests and the benchmark: "loaded", "built" (no usable cache) and why.
last_status: dict[str, str] = {}


def cache_dir() -> str:
    override = os.environ.get("DESKTOP_AGENT_CACHE_DIR")
    if override:
        return override
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "desktop-agent")


def _package_dir() -> str:
    spec = importlib.util.find_spec("bashlex")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("bashlex is not installed")
    return list(spec.submodule_search_locations)[0]


def bashlex_version(pkg_dir: str) -> str:
    """The installed version, from the ``bashlex-<version>.dist-info`` beside the package (importlib.metadata
    costs more than the tables it would save)."""
    site = os.path.dirname(pkg_dir)
    try:
        names = os.listdir(site)
    except OSError:
        return "unknown"
    for name in sorted(names):
        if name.startswith("bashlex-") and name.endswith((".dist-info", ".egg-info")):
            return name[len("bashlex-"):].rsplit(".", 1)[0].split("-")[0]
    return "unknown"


def source_digest(pkg_dir: str) -> str:
    h = hashlib.sha256()
    for name in _SOURCES:
        with open(os.path.join(pkg_dir, name), "rb") as fh:
            data = fh.read()
        h.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


def grammar_digest(grammar: Any) -> str:
    prods = [(p.name, list(p.prod), list(p.prec) if isinstance(p.prec, tuple) else p.prec, p.func)
             for p in grammar.Productions if p is not None]
    data = {"productions": prods, "precedence": sorted((k, list(v)) for k, v in grammar.Precedence.items()),
            "terminals": sorted(grammar.Terminals), "start": grammar.Start}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def _private_dir(path: str, create: bool) -> bool:
    """``path`` is a directory of this user's that nobody else may write (made 0700 when ``create``)."""
    if create:
        try:
            os.makedirs(path, 0o700, exist_ok=True)
        except OSError:
            return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def _read_private(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022 \
                or st.st_size > MAX_CACHE_BYTES:
            return None
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _write_private(path: str, data: bytes) -> None:
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)  # O_EXCL, 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def cache_path(directory: str | None = None) -> str:
    return os.path.join(directory or cache_dir(), f"bashlex-tables-v{FORMAT}.json")


def _check(tables: Any, grammar: Any) -> tuple[dict[int, dict[str, int]], dict[int, dict[str, int]]] | None:
    """The tables as bashlex uses them, or None when their structure does not fit this grammar."""
    if not isinstance(tables, dict) or set(tables) != {"action", "goto"}:
        return None
    raw_action, raw_goto = tables["action"], tables["goto"]
    if not isinstance(raw_action, list) or not isinstance(raw_goto, list) or not raw_action:
        return None
    nstates, nprods = len(raw_action), len(grammar.Productions)
    terminals = set(grammar.Terminals) | {"$end"}
    nonterminals = set(grammar.Nonterminals)
    action: dict[int, dict[str, int]] = {}
    for state, row in enumerate(raw_action):
        if not isinstance(row, dict):
            return None
        for tok, value in row.items():
            if tok not in terminals or type(value) is not int:
                return None
            if value > 0 and value >= nstates or value < 0 and -value >= nprods:
                return None
        action[state] = dict(row)
    goto: dict[int, dict[str, int]] = {}
    if len(raw_goto) != nstates:
        return None
    for state, row in enumerate(raw_goto):
        if not isinstance(row, dict):
            return None
        for sym, value in row.items():
            if sym not in nonterminals or type(value) is not int or not 0 <= value < nstates:
                return None
        goto[state] = dict(row)
    return action, goto


def _load(path: str, key: str, grammar: Any) -> tuple[dict[int, dict[str, int]], dict[int, dict[str, int]]] | None:
    if not _private_dir(os.path.dirname(path), create=False):
        last_status["why"] = "no private cache directory"
        return None
    data = _read_private(path)
    recorded = _read_private(path + ".sha256")
    if data is None or recorded is None:
        last_status["why"] = "missing or not a private file"
        return None
    if hashlib.sha256(data).hexdigest().encode() != recorded.strip():
        last_status["why"] = "digest mismatch"
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        last_status["why"] = "not JSON"
        return None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != key:
        last_status["why"] = "foreign key"
        return None
    checked = _check(doc.get("tables"), grammar)
    if checked is None:
        last_status["why"] = "bad structure"
    return checked


def _save(path: str, key: str, action: dict[int, dict[str, int]], goto: dict[int, dict[str, int]]) -> None:
    if not _private_dir(os.path.dirname(path), create=True):
        return
    nstates = max(action) + 1
    doc = {"format": FORMAT, "key": key, "tables": {
        "action": [action.get(s, {}) for s in range(nstates)], "goto": [goto.get(s, {}) for s in range(nstates)]}}
    data = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    try:
        _write_private(path, data)
        _write_private(path + ".sha256", hashlib.sha256(data).hexdigest().encode() + b"\n")
    except OSError:
        pass


def _cached_table_class(yacc: ModuleType, pkg_dir: str) -> type:
    base: Any = yacc.LRTable
    version, sources = bashlex_version(pkg_dir), source_digest(pkg_dir)

    class CachedLRTable(base):
        """``LRTable`` whose tables come from the trusted cache when it fits, else are built (and cached)."""

        def __init__(self, grammar: Any, log: Any = None) -> None:
            key = hashlib.sha256(f"{FORMAT}|{version}|{sources}|{grammar_digest(grammar)}|{sys.version_info[:2]}"
                                 .encode()).hexdigest()
            path = cache_path()
            tables = _load(path, key, grammar)
            table: Any = self  # bashlex's attributes, untyped
            if tables is None:
                base.__init__(table, grammar, log)
                # saved now, before bashlex.parser patches a few entries of the built tables in place
                _save(path, key, table.lr_action, table.lr_goto)
                last_status["status"] = "built"
                return
            table.grammar = grammar
            table.log = log or yacc.NullLogger()
            table.lr_action, table.lr_goto = tables
            table.lr_productions = grammar.Productions
            table.lr_goto_cache, table.lr0_cidhash, table._add_count = {}, {}, 0
            table.sr_conflict = table.rr_conflict = 0
            table.conflicts, table.sr_conflicts, table.rr_conflicts = [], [], []
            last_status.update(status="loaded", why="")

    return CachedLRTable


_lock = threading.Lock()  # the window warms the import on a worker thread while a turn may parse


def import_bashlex() -> ModuleType:
    """``bashlex``, its parser tables from the cache when it can be trusted (imported once per process)."""
    module = sys.modules.get("bashlex")
    if module is not None and hasattr(module, "parse"):
        return module
    with _lock:
        return _import_locked()


def _import_locked() -> ModuleType:
    module = sys.modules.get("bashlex")
    if module is not None and hasattr(module, "parse"):
        return module
    if os.environ.get("DESKTOP_AGENT_BASHLEX_CACHE", "1") == "0" or "bashlex.yacc" in sys.modules:
        import bashlex

        last_status.setdefault("status", "built")
        return bashlex
    pkg_dir = _package_dir()
    spec = importlib.util.find_spec("bashlex")
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["bashlex"] = package  # the package's submodules import below it before its own code runs
    try:
        import bashlex.yacc as yacc

        yacc.LRTable = _cached_table_class(yacc, pkg_dir)
        spec.loader.exec_module(package)  # bashlex/__init__: imports bashlex.parser, which builds the parser
    except BaseException:
        for name in [n for n in sys.modules if n == "bashlex" or n.startswith("bashlex.")]:
            del sys.modules[name]
        raise
    return package
