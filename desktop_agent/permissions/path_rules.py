"""Which Read/Edit rule covers a path, for any holder of compiled rules (``rules.RuleSource``; the session's is
``context.PermissionContext``, which answers ``core.permission.ReadPolicy`` with these).

- ``paths_to_check``: a path as given (normalized) and with symlinks resolved. Deny rules fire on either,
  allow rules need both.
- ``matching_rule``: the first deny / ask / allow rule covering a path for a read or an edit (deny also by the
  file's identity, ``permissions.identity``).
- ``opened_denied``: the file actually opened is a denied one; ``read_deny_globs``: ripgrep exclusions.
"""

from __future__ import annotations

import os
import stat

from desktop_agent.permissions.identity import denied_by_identity, denied_folder_of, identities
from desktop_agent.permissions.rules import CombinedPathMatcher, CompiledRule, RuleSource, fold
from desktop_agent.util.paths import is_inside


def paths_to_check(abs_path: str) -> list[str]:
    """The path as given and with symlinks resolved (existing prefix), deduplicated."""
    p = os.path.normpath(abs_path)
    try:
        real = os.path.realpath(p)
    except (OSError, ValueError):
        real = p
    return [p] if real == p else [p, real]


def matching_rule(pc: RuleSource, abs_path: str, op: str, behavior: str,
                       sources: tuple[str, ...] | None = None, checked: list[str] | None = None,
                       is_dir: bool | None = None, identity: bool = True) -> CompiledRule | None:
    """The first ``behavior`` rule covering ``abs_path`` for ``op`` ("read" or "edit").

    deny: Read deny rules (and Edit deny rules for edits) fire on the path *or* its target, and (``identity``)
    on a file or folder that is a denied one under another name (``permissions.identity``).
    ask: Read ask for reads, Edit ask for edits. allow: Edit allow (and Read allow for reads) must cover
    the path *and* its target.
    """
    if behavior == "deny":
        names = ("Edit", "Read") if op == "edit" else ("Read",)
    elif behavior == "ask":
        names = ("Edit",) if op == "edit" else ("Read",)
    else:
        names = ("Edit",) if op == "edit" else ("Read", "Edit")
    key = ("pathmatch", behavior, names, sources)

    def build() -> CombinedPathMatcher | None:
        candidates = [r for name in names for r in pc.content_rules(behavior, name)
                      if sources is None or r.rule.source in sources]
        return CombinedPathMatcher(candidates, pc.original_cwd, pc.home) if candidates else None

    matcher: CombinedPathMatcher | None = pc.cached(key, build)
    if matcher is None:
        return None
    paths = list(checked) if checked else paths_to_check(abs_path)
    if (os.path.isdir(abs_path) if is_dir is None else is_dir):  # a directory (Grep/Glob/ls): `dir/**` rules cover it
        dir_forms = [p.rstrip("/") + "/" for p in paths]
        paths = paths + dir_forms if behavior in ("deny", "ask") else dir_forms
    if behavior in ("deny", "ask"):
        hit = matcher.first_match(paths, [fold(p) for p in paths])
        if hit is None and identity and behavior == "deny" and sources is None:
            hit = denied_by_identity(pc, abs_path, op)
        return hit
    first: CompiledRule | None = None
    for p in paths:  # allow: the link and its target must both be covered
        hit = matcher.first_match([p], [p])
        if hit is None:
            return None
        first = first or hit
    return first


def opened_denied(pc: RuleSource, fd: int, operation: str) -> bool:
    """The file actually opened (``fd``) is denied: by its identity, by a folder it really lies in, or by a
    rule on the path it really has (``/proc/self/fd``) — a name swapped for a symlink between the check and
    the open is caught here."""
    st = os.fstat(fd)
    ids = identities(pc)
    if ids.lookup((st.st_dev, st.st_ino), operation) is not None:
        return True
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return bool(ids.by_identity)  # cannot tell where it is: refuse only when there is something to refuse
    if not real.startswith("/"):
        return False  # a pipe or an anonymous file: nothing a rule names
    if matching_rule(pc, real, operation, "deny", checked=[real], is_dir=stat.S_ISDIR(st.st_mode),
                          identity=False) is not None:
        return True
    return denied_folder_of(ids, real, operation) is not None


def read_deny_globs(search_root: str, pc: RuleSource) -> list[str]:
    """ripgrep ``--glob`` exclusions (``!pattern``) for the Read deny rules of ``pc`` that apply under
    ``search_root``, so Grep never reads the content of a denied file. Best effort: a deny rule anchored *above*
    the search root is translated when its fixed prefix leads into the search root; callers should still drop
    result paths for which ``pc.path_denied(path, "read")`` is true."""
    root = os.path.normpath(search_root)
    out: list[str] = []
    for r in pc.content_rules("deny", "Read"):
        pp = r.path_pattern(pc.original_cwd, pc.home)
        g = pp.glob or "**"
        if not pp.anchored:
            globs = [f"**/{g}", f"**/{g}/**"]
        elif is_inside(pp.root, root):
            rel = os.path.relpath(pp.root, root).replace(os.sep, "/")
            base = g if rel == "." else f"{rel}/{g}"
            globs = [base, f"{base}/**"]
        elif is_inside(root, pp.root):
            rel = os.path.relpath(root, pp.root).replace(os.sep, "/") + "/"
            if not g.startswith(rel):
                continue  # the rule cannot reach into this search root (or needs post-filtering)
            rest = g[len(rel):] or "**"
            globs = [rest, f"{rest}/**"]
        else:
            continue
        for x in globs:
            if "!" + x not in out:
                out.append("!" + x)
    return out
