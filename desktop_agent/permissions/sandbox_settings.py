"""The settings ``sandbox`` block (``SandboxSettings``), merged over the settings sources: scalars from the highest
source, lists merged. Settings a folder could use to loosen the sandbox (``enabled: false``, ``excludedCommands``,
``network.allowedDomains``, ``filesystem.allowWrite``) count from ``.claude/settings*.json`` only once the folder is
trusted; tightening ones always count (``network.deniedDomains`` too). ``load_sandbox_settings`` reads them once per
permission context, the ``--settings FILE|JSON`` layer included (``PermissionContext.flag_source``).
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass
from typing import Any, Iterable

from desktop_agent.permissions import settings as settings_mod
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.rules import PathPattern, compile_path_pattern


@dataclass(frozen=True)
class SandboxSettings:
    """The settings ``sandbox`` block, merged over the sources (scalars: highest source; lists: merged)."""

    enabled: bool | None = None
    fail_if_unavailable: bool = False
    allow_unsandboxed_commands: bool = True
    excluded_commands: tuple[str, ...] = ()
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()  # ``network.deniedDomains`` (the reference's name): win over allowed ones
    allow_write: tuple[str, ...] = ()  # absolute paths
    deny_write: tuple[PathPattern, ...] = ()
    deny_read: tuple[PathPattern, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def network(self) -> bool:
        return bool(self.allowed_domains)


def _fs_pattern(content: str, root: str, cwd: str, home: str) -> PathPattern:
    """A ``sandbox.filesystem`` path: ``//abs``, ``~/home``, ``/`` relative to the settings file's dir, else cwd."""
    return compile_path_pattern(content, "deny", root, cwd, home)


def _str_list(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []


def settings_from_sources(sources: Iterable[Any], *, trusted: bool, cwd: str, home: str) -> SandboxSettings:
    """Merge the ``sandbox`` blocks of settings sources (highest precedence first)."""
    enabled: bool | None = None
    fail: bool | None = None
    allow_unsandboxed: bool | None = None
    excluded: list[str] = []
    domains: list[str] = []
    denied: list[str] = []
    allow_write: list[str] = []
    deny_write: list[PathPattern] = []
    deny_read: list[PathPattern] = []
    warnings: list[str] = []
    for src in sources:
        block = src.data.get("sandbox") if isinstance(src.data, dict) else None
        if block is None:
            continue
        where = src.path or src.source
        if not isinstance(block, dict):
            warnings.append(f"'sandbox' in {where} must be an object; it was ignored.")
            continue
        held_back = src.source in settings_mod.PROJECT_SOURCES and not trusted  # may only tighten
        root = os.path.dirname(os.path.dirname(src.path)) if src.path and src.source in \
            settings_mod.PROJECT_SOURCES else (os.path.dirname(src.path) if src.path else cwd)
        value = block.get("enabled")
        if isinstance(value, bool) and enabled is None and not (held_back and value is False):
            enabled = value
        value = block.get("failIfUnavailable")
        if isinstance(value, bool) and fail is None and not (held_back and value is False):
            fail = value
        value = block.get("allowUnsandboxedCommands")
        if isinstance(value, bool) and allow_unsandboxed is None and not (held_back and value is True):
            allow_unsandboxed = value
        if not held_back:
            excluded += [c.strip() for c in _str_list(block.get("excludedCommands"))]
        network = block.get("network")
        if isinstance(network, dict):
            if not held_back:
                domains += _str_list(network.get("allowedDomains"))
            denied += _str_list(network.get("deniedDomains"))  # tightening: counts from every source
        fs = block.get("filesystem")
        if isinstance(fs, dict):
            if not held_back:
                for p in _str_list(fs.get("allowWrite")):
                    pp = _fs_pattern(p, root, cwd, home)
                    allow_write.append(os.path.normpath(os.path.join(pp.root, pp.glob)))
            deny_write += [_fs_pattern(p, root, cwd, home) for p in _str_list(fs.get("denyWrite"))]
            deny_read += [_fs_pattern(p, root, cwd, home) for p in _str_list(fs.get("denyRead"))]
    return SandboxSettings(enabled=enabled, fail_if_unavailable=bool(fail),
                           allow_unsandboxed_commands=allow_unsandboxed is not False,
                           excluded_commands=tuple(dict.fromkeys(excluded)), allowed_domains=tuple(domains),
                           denied_domains=tuple(dict.fromkeys(denied)),
                           allow_write=tuple(dict.fromkeys(allow_write)), deny_write=tuple(deny_write),
                           deny_read=tuple(deny_read), warnings=tuple(warnings))


_loaded: weakref.WeakKeyDictionary[PermissionContext, SandboxSettings] = weakref.WeakKeyDictionary()


def load_sandbox_settings(pc: PermissionContext | None) -> SandboxSettings:
    """The sandbox settings of a permission context (read once per context; none without one)."""
    if pc is None:
        return SandboxSettings()
    cached = _loaded.get(pc)
    if cached is not None:
        return cached
    warnings: list[str] = []
    try:
        # the --settings layer (inline JSON or a file) as the context was loaded with it (``flag_source``)
        sources = settings_mod.collect_sources(pc.original_cwd, None, warnings, pc.project_dir,
                                               flag=getattr(pc, "flag_source", None))
    except Exception as exc:  # unreadable settings: the defaults (sandbox on), never off
        sources, warnings = [], [f"Could not read the sandbox settings: {exc}"]
    result = settings_from_sources(sources, trusted=bool(pc.trusted), cwd=pc.original_cwd, home=pc.home)
    _loaded[pc] = result
    return result
