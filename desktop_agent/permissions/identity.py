"""Deny rules bound to the file as well as the name: the device and inode of every file and folder a Read or
Edit deny rule names.

A name can be changed under a rule — ``mv config cfg`` and then ``Read cfg/secrets/k.txt``, or a hard link
``h.txt`` made before the session to ``.env`` — while the file stays the same. So for every deny rule whose
path is literal (``./.env``, ``./secrets/**``, ``/etc/shadow``, ``~/.aws``; the trailing ``/**`` or ``/*`` of
a folder rule included) the identity ``(st_dev, st_ino)`` of what it names is kept, as soon as the rules are
known (``capture``, called when the session is built) and again at every later lookup (so a denied file
created later is bound too). The set only grows: a renamed or deleted name keeps its file denied.

``denied_by_identity`` answers for one path: the rule whose identity the path — the file itself (through
symlinks), or any folder above its real location — has. A rule with a glob before its last segment
(``src/*.key``, ``**/.env``) stays a name rule only: it names no single file.

``path_rules.opened_denied`` applies both to a file already opened. ``multi_link`` tells a regular file with more
than one name: the decision does not count such a file as inside the working folders, since its other names may be
anywhere (the person is asked, as for a file outside). The rules are read through ``rules.RuleSource``.
"""

from __future__ import annotations

import os
import re
import stat
import time
from desktop_agent.permissions.rules import CompiledRule, RuleSource

_GLOB_CHARS = re.compile(r"[*?\[\]{}]")
_TRAILING_ANY = re.compile(r"(/\*\*?)+$")
Identity = tuple[int, int]


REFRESH_S = 0.1  # how often the rules' targets are stat'ed again (a Grep checks thousands of paths)


class DeniedIdentities:
    """The identities of one permission state's denied files and folders, per operation."""

    def __init__(self) -> None:
        self.by_identity: dict[Identity, tuple[CompiledRule, frozenset[str]]] = {}
        self.refreshed = -1.0
        self.targets: object = None  # the rules' target list it was last refreshed from

    def add(self, rule: CompiledRule, path: str, operations: frozenset[str]) -> None:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return
        key = (st.st_dev, st.st_ino)
        if key not in self.by_identity:
            self.by_identity[key] = (rule, operations)
        else:
            known, ops = self.by_identity[key]
            self.by_identity[key] = (known, ops | operations)

    def lookup(self, key: Identity, operation: str) -> CompiledRule | None:
        hit = self.by_identity.get(key)
        if hit is None:
            return None
        rule, ops = hit
        return rule if operation in ops else None


def literal_target(rule: CompiledRule, cwd: str, home: str) -> str | None:
    """The one path a deny rule names, or None when its pattern is a glob (or names a root, which would
    bind every file)."""
    pp = rule.path_pattern(cwd, home)
    stem = _TRAILING_ANY.sub("", getattr(pp, "glob", "") or "")
    if not stem or _GLOB_CHARS.search(stem):
        return None
    path = os.path.normpath(os.path.join(pp.root if pp.anchored else cwd, stem))
    if path in ("/", os.path.normpath(cwd), os.path.normpath(home)):
        return None
    return path


def _ops(tool_name: str) -> frozenset[str]:
    # A Read deny blocks reads and edits (writing reveals nothing new, but the reference blocks both); an Edit
    # deny blocks edits.
    return frozenset({"read", "edit"}) if tool_name == "Read" else frozenset({"edit"})


def identities(pc: RuleSource) -> DeniedIdentities:
    """The state's identity set — kept across rule changes (``lasting``), pruned of what a rule no longer in force
    bound — refreshed with the rules' current targets."""
    ids: DeniedIdentities = pc.lasting(("identities-set",), DeniedIdentities)
    targets: list[tuple[CompiledRule, str]] = pc.cached(("identities-targets",), lambda: [
        (r, t) for name in ("Read", "Edit") for r in pc.content_rules("deny", name)
        if (t := literal_target(r, pc.original_cwd, pc.home)) is not None])
    if ids.targets is not targets:  # the rules changed: keep what the rules still in force bound
        kept = {_key(r) for r, _ in targets}
        ids.by_identity = {k: v for k, v in ids.by_identity.items() if _key(v[0]) in kept}
        ids.targets, ids.refreshed = targets, -1.0
    now = time.monotonic()
    if now - ids.refreshed >= REFRESH_S:
        ids.refreshed = now
        for rule, target in targets:
            ids.add(rule, target, _ops(rule.tool_name))
    return ids


def _key(rule: CompiledRule) -> tuple[str, str, str]:
    return rule.behavior, str(rule.rule.value), rule.rule.source


def capture(pc: RuleSource) -> None:
    """Bind the deny rules to their files now (the session starts): before any command could rename them."""
    identities(pc)


def denied_by_identity(pc: RuleSource, abs_path: str, operation: str) -> CompiledRule | None:
    """The deny rule whose file or folder ``abs_path`` is, or lies in (by identity, whatever its name now)."""
    ids = identities(pc)
    if not ids.by_identity:
        return None
    try:
        st = os.stat(abs_path)
        hit = ids.lookup((st.st_dev, st.st_ino), operation)
        if hit is not None:
            return hit
        real = os.path.realpath(abs_path)
    except (OSError, ValueError):
        # a file to be created: the folders it would be created in decide
        real = os.path.join(os.path.realpath(os.path.dirname(abs_path)), os.path.basename(abs_path))
    return denied_folder_of(ids, real, operation)


def denied_folder_of(ids: DeniedIdentities, real_path: str, operation: str) -> CompiledRule | None:
    """The rule of a denied folder that contains ``real_path`` (a resolved path), by identity."""
    directory = real_path
    while True:
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
        try:
            st = os.stat(directory)
        except (OSError, ValueError):
            continue
        hit = ids.lookup((st.st_dev, st.st_ino), operation)
        if hit is not None:
            return hit


def multi_link(abs_path: str) -> bool:
    """A regular file with more than one name (its other names may lie outside the working folders)."""
    try:
        st = os.stat(abs_path)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1
