"""What an SDK host may change in a running session (SPEC App. D.5): the flag-settings layer, two settings-file keys,
and the Read-before-Edit state.

``FlagLayer`` is the session's flag settings (``--settings``, or ``initialize``'s ``settings`` under
``--await-initialize``). ``apply_flag_settings(session, layer, settings)`` is the SDK's ``applyFlagSettings``:
top-level keys shallow-merged into the layer, ``null`` clearing one. In a running session it takes ``permissions``
(``allow``, ``deny``, ``ask``, ``defaultMode``, ``additionalDirectories``, ``disableBypassPermissionsMode``) and
``model``; any other key, or any other ``permissions`` key, is refused by name (we would not enforce it). The new
layer goes through the same loading as ``--settings`` (``permissions.settings``): a settings file that has become
unreadable, or any entry the loader reports (a malformed rule, a mode we do not know, a value of the wrong type), is
a ``HostRequestError`` and nothing changes — stricter than the reference, which drops a bad entry. The flag rules
replace the layer's earlier ones (the deny rules' bound file identities kept for the rules still in force), its
directories replace the earlier layer's (one that ``--add-dir`` or another source names stays), ``disableBypassPermissionsMode`` counts with every other source, and a
``defaultMode`` that changed becomes the mode (bypass only where no source disables it). The layer is the host's,
as trusted as the command line that started us: it never reads or widens what an untrusted folder's own files grant.

``update_settings(session, source, settings)`` is ``updateSettings``: the reference's allowlist only
(``localSettings``: ``outputStyle``; ``userSettings``: ``effortLevel``), string values, written through
``permissions.settings.update_settings_file`` (atomic; a file that cannot be read is left alone). A local settings
file is written only where the folder's ``.claude`` really is inside the folder and the file is no link.

``seed_read_state(session, path, mtime)`` is ``seedReadState``: the file counts as read in full, as if Read had
just read it, when it is a regular file with one name inside the working folders, no deny rule covers it (the
opened file is checked too), and it has not changed since ``mtime`` (ms); a file changed since is not seeded
(``False``), as the reference skips it, and Edit asks for a fresh Read. Anything else is a ``HostRequestError``.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from desktop_agent.core.context import FileStateEntry, expand_path
from desktop_agent.permissions import settings as settings_mod
from desktop_agent.permissions.settings_files import SettingsError

if TYPE_CHECKING:
    from desktop_agent.app.session import AgentSession

FLAG_KEYS = ("permissions", "model")
PERMISSION_KEYS = ("allow", "deny", "ask", "defaultMode", "additionalDirectories", "disableBypassPermissionsMode")
UPDATABLE = {"localSettings": ("outputStyle",), "userSettings": ("effortLevel",)}
OUTPUT_STYLES = ("default",)
EFFORT_LEVELS = ("low", "medium", "high", "xhigh")  # ``max`` is never written to a settings file
_FLAG_LABEL = "--settings JSON"  # how the loader names an inline flag layer in its problems


class HostRequestError(Exception):
    """A host's request that is refused: the sentence goes back as the error ``control_response``."""


@dataclass
class FlagLayer:
    """The flag settings in force: the parsed object and what a leading ``/`` in its path rules is relative to."""

    data: dict[str, Any] = field(default_factory=dict)
    root: str = ""
    pinned: set[str] = field(default_factory=set)  # --add-dir directories: never taken away by the layer

    @classmethod
    def of(cls, settings_arg: str | None, cwd: str, add_dirs: list[str] | None = None) -> FlagLayer:
        src = settings_mod.settings_arg_source(settings_arg, cwd)
        layer = cls(dict(src.data), src.root) if src is not None else cls({}, cwd)
        layer.pinned = {os.path.normpath(os.path.join(cwd, os.path.expanduser(d))) for d in add_dirs or []}
        return layer

    def permissions(self) -> dict[str, Any]:
        perms = self.data.get("permissions")
        return perms if isinstance(perms, dict) else {}

    def source(self, data: dict[str, Any] | None = None) -> settings_mod.SettingsSource:
        return settings_mod.SettingsSource("flagSettings", None, self.data if data is None else data, self.root)


def _load(session: AgentSession, layer: FlagLayer, data: dict[str, Any]) -> settings_mod.LoadedSettings:
    pc = session.permission_context
    try:
        return settings_mod.load_settings(pc.original_cwd, trusted=bool(pc.trusted), project_dir=pc.project_dir,
                                          flag=layer.source(data))
    except SettingsError as exc:
        raise HostRequestError(f"apply_flag_settings: {exc.text()}; nothing was applied") from None


def _check(settings: dict[str, Any]) -> None:
    refused = [k for k in settings if k not in FLAG_KEYS]
    perms = settings.get("permissions")
    if perms is not None and not isinstance(perms, dict):
        raise HostRequestError("apply_flag_settings: 'permissions' must be an object; nothing was applied")
    refused += [f"permissions.{k}" for k in (perms or {}) if k not in PERMISSION_KEYS]
    if refused:
        raise HostRequestError(f"apply_flag_settings: {', '.join(refused)} cannot be changed in a running session "
                               f"(only {', '.join(PERMISSION_KEYS)} under permissions, and model); nothing was applied")
    model = settings.get("model")
    if model is not None and not (isinstance(model, str) and model.strip()):
        raise HostRequestError("apply_flag_settings: 'model' must be a model name or null; nothing was applied")


def apply_flag_settings(session: AgentSession, layer: FlagLayer, settings: dict[str, Any]) -> bool:
    """Merge ``settings`` into ``layer`` and apply it (see the module docstring); True when the mode changed."""
    from desktop_agent.permissions import identity  # the requests' modules load when one comes, not at start-up

    _check(settings)
    incoming = settings.get("permissions")
    if isinstance(incoming, dict):  # the host's own entries, through the loader alone: any problem refuses them
        problems = [p for p in _load(session, layer, {"permissions": incoming}).problems if _FLAG_LABEL in p]
        if problems:
            raise HostRequestError("apply_flag_settings: " + " ".join(problems) + " Nothing was applied.")
    merged = dict(layer.data)
    for key, value in settings.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    loaded = _load(session, layer, {"permissions": merged.get("permissions") or {}})
    pc = session.permission_context
    old_dirs = _dirs(layer.permissions(), pc.original_cwd)
    new_dirs = _dirs(merged.get("permissions") or {}, pc.original_cwd)
    others = (set(loaded.additional_directories) - set(new_dirs)) | layer.pinned
    mode_before = pc.mode
    pc.replace_source_rules("flagSettings", loaded.rules)
    identity.capture(pc)
    pc.replace_directories([d for d in old_dirs if d not in others], new_dirs)
    pc.disable_bypass = loaded.disable_bypass
    old_mode = layer.permissions().get("defaultMode")
    layer.data = merged
    new_mode = layer.permissions().get("defaultMode")
    if new_mode is not None and new_mode != old_mode:
        session.set_permission_mode(str(new_mode))
    elif pc.mode == "bypassPermissions" and pc.disable_bypass:
        session.set_permission_mode("default")
    if "model" in settings:
        session.set_model(settings["model"])
    return pc.mode != mode_before


def _dirs(perms: dict[str, Any], cwd: str) -> list[str]:
    given = perms.get("additionalDirectories")
    if not isinstance(given, list):
        return []
    return [os.path.normpath(os.path.join(cwd, os.path.expanduser(d))) for d in given if isinstance(d, str)]


def update_settings(session: AgentSession, source: str, settings: dict[str, Any]) -> str:
    """Write the allowlisted keys to the settings file of ``source``; returns its path."""
    allowed = UPDATABLE.get(source)
    if allowed is None:
        raise HostRequestError(f"update_settings: unknown source {source!r} (localSettings or userSettings)")
    for key, value in settings.items():
        if key not in allowed:
            raise HostRequestError(f"update_settings: {source} takes only {', '.join(allowed)} (not {key!r})")
        if not isinstance(value, str):
            raise HostRequestError(f"update_settings: {key} must be a string (deleting a key is not supported)")
        choices = OUTPUT_STYLES if key == "outputStyle" else EFFORT_LEVELS
        if value not in choices:
            raise HostRequestError(f"update_settings: {key} {value!r} is not one of {', '.join(choices)}")
    pc = session.permission_context
    path = settings_mod.settings_path_for_destination(source, pc.project_dir)
    if path is None:  # pragma: no cover - both sources have a file
        raise HostRequestError(f"update_settings: {source} has no settings file")
    if source == "localSettings":
        folder = os.path.dirname(path)
        if (os.path.lexists(folder) and os.path.realpath(folder) != os.path.join(os.path.realpath(pc.project_dir),
                                                                                  ".claude")) or os.path.islink(path):
            raise HostRequestError(f"update_settings: {path} is reached through a link; nothing was written")
    if not settings:
        return path
    try:
        settings_mod.update_settings_file(path, lambda data: data.update(settings))
    except SettingsError as exc:
        raise HostRequestError(f"update_settings: {exc.text()}; the file was left as it is") from None
    except OSError as exc:
        raise HostRequestError(f"update_settings: could not write {path}: {exc.strerror or exc}") from None
    return path


def seed_read_state(session: AgentSession, path: str, mtime: float) -> bool:
    """Seed the Read-before-Edit state for ``path`` (see the module docstring); False when the file changed since."""
    from desktop_agent.permissions.paths import in_working_dirs, paths_to_check
    from desktop_agent.util import fileio

    ctx, pc = session.ctx, session.permission_context
    abs_path = expand_path(path, session.cwd)
    checked = paths_to_check(abs_path)
    if not in_working_dirs(abs_path, ctx, checked):
        raise HostRequestError(f"seed_read_state: {abs_path} is outside the working folders; not seeded")
    if pc.path_denied(abs_path, "read", checked=checked):
        raise HostRequestError(f"seed_read_state: {abs_path} is denied by your permission settings; not seeded")
    try:
        fd = fileio.open_regular_fd(abs_path)
    except OSError as exc:
        raise HostRequestError(f"seed_read_state: cannot read {abs_path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            raise HostRequestError(f"seed_read_state: {abs_path} is not a regular file with one name; not seeded")
        if pc.opened_denied(fh.fileno(), "read"):
            raise HostRequestError(f"seed_read_state: {abs_path} is denied by your permission settings; not seeded")
        file_mtime = st.st_mtime_ns // 1_000_000
        if file_mtime > int(mtime):
            return False
        data = fh.read()
    text, _encoding = fileio.decode_bytes(data)
    ctx.read_file_state.set(abs_path, FileStateEntry(content=fileio.normalize_newlines(text), timestamp=file_mtime,
                                                     offset=1, limit=None))
    return True


def merged_settings_arg(settings_arg: str | None, extra: dict[str, Any] | str | None, cwd: str) -> str | None:
    """``--settings`` with ``initialize``'s ``settings`` over it (top-level keys, as ``applyFlagSettings`` merges)."""
    if extra is None:
        return settings_arg
    if isinstance(extra, str):
        extra = dict(FlagLayer.of(extra, cwd).data)
    base = FlagLayer.of(settings_arg, cwd).data if settings_arg else {}
    merged = {**base, **{k: v for k, v in extra.items() if v is not None}}
    return json.dumps(merged)
