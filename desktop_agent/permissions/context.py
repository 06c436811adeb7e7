"""``PermissionContext``: the session's permission state (mode, rules with sources, working dirs, trust).

One object per session, stored on ``ToolUseContext.permission_context``. It holds
- the mode (switchable mid-session with ``set_mode`` / a ``setMode`` update),
- every rule with its source and settings file, indexed by tool name for fast lookup,
- the working directories: the original cwd plus ``--add-dir`` / ``additionalDirectories`` / session grants —
  their one owner: ``ToolUseContext.working_dirs``, the path checks and the sandbox's writable binds all read
  ``working_dirs`` here at each call, so an ``addDirectories`` / ``removeDirectories`` update counts at once,
- the trusted flag, the load warnings, the hook configuration, ``env`` and ``apiKeyHelper`` from settings (a
  project's only once the folder is trusted), and the disabled tools.

``apply_updates`` applies ``PermissionUpdate``s (a dialog's "allow for session" / "always", a hook's
``updatedPermissions``, a host's ``control_response``); ``replace_source_rules`` / ``replace_directories`` swap in a
host's new flag-settings layer (``app.host_requests``); ``to_json``/``restore`` carry session grants, removed
directories and the mode across a resume.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Literal, cast

from desktop_agent.permissions import path_rules, settings as settings_mod
from desktop_agent.util import dirs
from desktop_agent.permissions.rules import CompiledRule, parse_rule, source_root_for, tool_name_matches
from desktop_agent.core.permission import (PERMISSION_MODES, PermissionMode, PermissionRule, PermissionUpdate,
                                             RuleBehavior, RuleSource, RuleValue)

_FILE_DESTINATIONS = ("localSettings", "projectSettings", "userSettings")


class PermissionContext:
    """``core.seams.PermissionState`` (mode, working dirs, original cwd, ``ReadPolicy``) plus the rules, their
    caches, trust and the settings the session was loaded with."""

    def __init__(
        self,
        cwd: str,
        *,
        mode: str = "default",
        rules: Iterable[PermissionRule] = (),
        additional_dirs: Iterable[str] = (),
        trusted: bool = True,
        project_dir: str | None = None,
        warnings: Iterable[str] = (),
        hooks_config: Iterable[Any] = (),
        disable_bypass: bool = False,
        untrusted_rules: Iterable[PermissionRule] = (),
        disabled_tools: Iterable[str] = (),
        env: dict[str, str] | None = None,
        api_key_helper: str | None = None,
        denied_mcp_servers: Iterable[dict[str, Any]] = (),
    ):
        self.original_cwd = os.path.abspath(cwd)
        self.project_dir = os.path.abspath(project_dir or cwd)
        self.mode: PermissionMode = "default"
        self.disable_bypass = disable_bypass
        self.warnings: list[str] = list(warnings)
        self.set_mode(mode)
        self.additional_dirs: list[str] = []
        self.session_dirs: list[str] = []
        # launch directories (``--add-dir``, settings) a ``removeDirectories`` update took away (kept on resume)
        self.removed_dirs: list[str] = []
        for d in additional_dirs:
            self._add_dir(d, self.additional_dirs)
        self.trusted = trusted
        self.hooks_config = list(hooks_config)
        self.untrusted_rules = list(untrusted_rules)
        self.disabled_tools: set[str] = set(disabled_tools)
        # settings ``env`` and ``apiKeyHelper`` (a project's only when trusted: settings.load_settings)
        self.env: dict[str, str] = dict(env or {})
        self.api_key_helper = api_key_helper
        self.flag_source: settings_mod.SettingsSource | None = None  # the --settings layer (``load``)
        # settings ``deniedMcpServers`` (every source): servers that are never started (``mcp.config.denial``)
        self.denied_mcp_servers: list[dict[str, Any]] = list(denied_mcp_servers)
        self.home = os.path.expanduser("~")
        self.user_dir = dirs.claude_config_dir()
        self._rules: list[CompiledRule] = []
        self._keys: set[tuple[str, str, str]] = set()
        self._cache: dict[tuple[Any, ...], Any] = {}
        self._lasting: dict[tuple[Any, ...], Any] = {}  # kept across rule changes (``lasting``)
        for r in rules:
            self._add_rule(r)

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(
        cls,
        cwd: str,
        *,
        cli_allowed: list[str] | None = None,
        cli_disallowed: list[str] | None = None,
        settings_arg: str | None = None,
        mode: str | None = None,
        add_dirs: list[str] | None = None,
        trusted: bool | None = None,
    ) -> PermissionContext:
        from desktop_agent.permissions import trust

        cwd = os.path.abspath(cwd)
        if trusted is None:
            trusted = trust.is_trusted(cwd)
        loaded = settings_mod.load_settings(cwd, cli_allowed=cli_allowed, cli_disallowed=cli_disallowed,
                                            settings_arg=settings_arg, trusted=trusted)
        dirs = list(loaded.additional_directories) + [os.path.abspath(os.path.join(cwd, os.path.expanduser(d)))
                                                       for d in (add_dirs or [])]
        pc = cls(cwd, mode="default", rules=loaded.rules, additional_dirs=dirs, trusted=trusted,
                 warnings=loaded.warnings, hooks_config=loaded.hooks, disable_bypass=loaded.disable_bypass,
                 untrusted_rules=loaded.untrusted_rules, env=loaded.env, api_key_helper=loaded.api_key_helper,
                 denied_mcp_servers=loaded.denied_mcp_servers)
        pc.set_mode(mode or loaded.default_mode or "default")
        # the --settings layer as loaded (inline JSON or a file): its ``sandbox`` block counts (sandbox_settings)
        pc.flag_source = next((s for s in loaded.sources if s.source == "flagSettings"), None)
        return pc

    # ------------------------------------------------------------------ mode
    def set_mode(self, mode: str) -> None:
        if mode == "manual":
            mode = "default"
        if mode not in PERMISSION_MODES:
            raise ValueError(f"unknown permission mode {mode!r}")
        if mode == "bypassPermissions" and self.disable_bypass:
            self.warnings.append("bypassPermissions mode is disabled by your settings; using default mode.")
            mode = "default"
        self.mode = cast(PermissionMode, mode)  # one of PERMISSION_MODES (checked above)

    # ------------------------------------------------------------------ dirs
    def _dir_path(self, d: str) -> str:
        return os.path.normpath(os.path.abspath(os.path.join(self.original_cwd, os.path.expanduser(d))))

    def _add_dir(self, d: str, into: list[str]) -> None:
        p = self._dir_path(d)
        if p not in into and p != self.original_cwd:
            into.append(p)

    def add_directories(self, directories: Iterable[str]) -> None:
        """Session grants (``addDirectories``); a directory removed before is a working directory again."""
        for d in directories:
            p = self._dir_path(d)
            self.removed_dirs = [r for r in self.removed_dirs if r != p]
            if p not in self.additional_dirs:
                self._add_dir(p, self.session_dirs)

    def remove_directories(self, directories: Iterable[str]) -> None:
        """``removeDirectories``: each one stops being a working directory, however it was added and under
        whichever name (relative, ``~``, or a symlink to the same place). The original cwd stays."""
        gone: set[str] = set()
        for d in directories:
            p = self._dir_path(d)
            gone |= {p, os.path.realpath(p)}

        def kept(d: str) -> bool:
            return d not in gone and os.path.realpath(d) not in gone

        self.removed_dirs += [d for d in self.additional_dirs if not kept(d) and d not in self.removed_dirs]
        self.session_dirs = [d for d in self.session_dirs if kept(d)]
        self.additional_dirs = [d for d in self.additional_dirs if kept(d)]

    @property
    def working_dirs(self) -> list[str]:
        return [self.original_cwd, *self.additional_dirs, *self.session_dirs]

    # ------------------------------------------------------------------ rules
    def _add_rule(self, rule: PermissionRule) -> None:
        root = source_root_for(rule, self.project_dir, self.original_cwd, self.user_dir)
        key = (rule.behavior, str(rule.value), rule.source)
        if key in self._keys:
            return
        self._keys.add(key)
        self._rules.append(CompiledRule.of(rule, root))
        self._cache.clear()

    def add_rules(self, values: Iterable[RuleValue | str], behavior: RuleBehavior, source: RuleSource = "session",
                  source_path: str | None = None) -> None:
        for v in values:
            value = parse_rule(v) if isinstance(v, str) else v
            self._add_rule(PermissionRule(value=value, behavior=behavior, source=source, source_path=source_path))

    def remove_rules(self, values: Iterable[RuleValue | str], behavior: RuleBehavior,
                     source: RuleSource | None = None) -> None:
        names = {str(parse_rule(v) if isinstance(v, str) else v) for v in values}
        self._rules = [r for r in self._rules if not (r.behavior == behavior and str(r.rule.value) in names
                                                      and (source is None or r.rule.source == source))]
        self._reindex()

    def _reindex(self) -> None:
        self._keys = {(r.behavior, str(r.rule.value), r.rule.source) for r in self._rules}
        self._cache.clear()

    @property
    def rules(self) -> list[PermissionRule]:
        return [r.rule for r in self._rules]

    def rules_for(self, behavior: str, tool_name: str) -> list[CompiledRule]:
        """Rules of ``behavior`` whose tool name covers ``tool_name`` (cached until the rules change)."""
        key = (behavior, tool_name)
        hit = self._cache.get(key)
        if hit is None:
            hit = [r for r in self._rules
                   if r.behavior == behavior and tool_name_matches(r.tool_name, tool_name, behavior)]
            self._cache[key] = hit
        return hit

    def whole_tool_rule(self, behavior: str, tool_name: str) -> CompiledRule | None:
        for r in self.rules_for(behavior, tool_name):
            if r.content is None:
                return r
        return None

    def content_rules(self, behavior: str, tool_name: str) -> list[CompiledRule]:
        key = ("content", behavior, tool_name)
        hit = self._cache.get(key)
        if hit is None:
            hit = [r for r in self.rules_for(behavior, tool_name) if r.content is not None]
            self._cache[key] = hit
        return hit

    def cached(self, key: tuple[Any, ...], build: Any) -> Any:
        """A derived structure (combined matchers) cached until the rules change."""
        hit = self._cache.get(key)
        if hit is None:
            hit = build()
            self._cache[key] = hit
        return hit

    def lasting(self, key: tuple[Any, ...], build: Any) -> Any:
        """A structure kept across rule changes, unlike ``cached`` (the deny rules' bound file identities: a rename
        made before a grant must not free a file a rule still in force denies; ``identity`` prunes what a removed
        rule bound)."""
        hit = self._lasting.get(key)
        if hit is None:
            hit = build()
            self._lasting[key] = hit
        return hit

    def replace_source_rules(self, source: RuleSource, rules: Iterable[PermissionRule]) -> None:
        """Every rule of ``source`` replaced by ``rules`` (a host's new flag-settings layer). The deny rules' file
        identities bound so far stay bound for every rule that is still in force (``lasting``)."""
        self._rules = [r for r in self._rules if r.rule.source != source]
        self._reindex()
        for r in rules:
            if r.source == source:
                self._add_rule(r)

    def replace_directories(self, remove: Iterable[str], add: Iterable[str]) -> None:
        """Launch directories changed by a host's new flag layer: ``remove`` stop being ones, ``add`` become ones
        (the caller leaves out of ``remove`` what another source still names)."""
        gone = {self._dir_path(d) for d in remove}
        self.additional_dirs = [d for d in self.additional_dirs if d not in gone]
        for d in add:
            self._add_dir(d, self.additional_dirs)

    # ------------------------------------------------------------------ updates
    def apply_updates(self, updates: Iterable[PermissionUpdate | dict[str, Any]]) -> None:
        for u in updates:
            if isinstance(u, dict):
                u = PermissionUpdate.model_validate(u)
            dest = u.destination
            path = (settings_mod.settings_path_for_destination(dest, self.project_dir)
                    if dest in _FILE_DESTINATIONS else None)
            source: RuleSource = dest if dest in _FILE_DESTINATIONS else ("cliArg" if dest == "cliArg" else "session")
            if u.type in ("addRules", "replaceRules") and u.rules and u.behavior:
                if u.type == "replaceRules":
                    self._rules = [r for r in self._rules if not (r.behavior == u.behavior and r.rule.source == source)]
                    self._reindex()
                self.add_rules(u.rules, u.behavior, source, path)
                if path:
                    settings_mod.add_rules_to_file(path, u.behavior, [str(r) for r in u.rules])
            elif u.type == "removeRules" and u.rules and u.behavior:
                self.remove_rules(u.rules, u.behavior, source)
                if path:
                    settings_mod.remove_rules_from_file(path, u.behavior, [str(r) for r in u.rules])
            elif u.type == "setMode" and u.mode:
                self.set_mode(u.mode)
                if path:
                    settings_mod.set_default_mode_in_file(path, u.mode)
            elif u.type == "addDirectories" and u.directories:
                self.add_directories(u.directories)
                if path:
                    settings_mod.add_directories_to_file(path, list(u.directories))
            elif u.type == "removeDirectories" and u.directories:
                self.remove_directories(u.directories)

    # ------------------------------------------------------------------ path facts
    def path_denied(self, abs_path: str, operation: Literal["read", "edit"], *, checked: list[str] | None = None,
                    is_dir: bool | None = None) -> bool:
        """``core.permission.ReadPolicy``: a deny rule covers the path (Read deny, and Edit deny for edits)."""
        return path_rules.matching_rule(self, abs_path, operation, "deny", checked=checked, is_dir=is_dir) is not None

    def opened_denied(self, fd: int, operation: Literal["read", "edit"]) -> bool:
        """``core.permission.ReadPolicy``: the file actually opened is a denied one (``path_rules.opened_denied``)."""
        return path_rules.opened_denied(self, fd, operation)

    def has_read_denies(self) -> bool:
        return bool(self.content_rules("deny", "Read"))

    def read_deny_globs(self, search_root: str) -> list[str]:
        return path_rules.read_deny_globs(search_root, self)

    # ------------------------------------------------------------------ persistence (resume)
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mode": self.mode,
            "session_rules": [{"behavior": r.behavior, "rule": str(r.rule.value)}
                              for r in self._rules if r.rule.source == "session"],
            "session_dirs": list(self.session_dirs),
        }
        if self.removed_dirs:
            out["removed_dirs"] = list(self.removed_dirs)
        return out

    def restore(self, data: dict[str, Any]) -> None:
        """Re-apply session grants and the mode saved by ``to_json`` (on resume)."""
        if not isinstance(data, dict):
            return
        for item in data.get("session_rules") or []:
            if isinstance(item, dict) and item.get("behavior") in ("allow", "deny", "ask") and item.get("rule"):
                self.add_rules([item["rule"]], item["behavior"], "session")
        for d in data.get("session_dirs") or []:
            if isinstance(d, str):
                self._add_dir(d, self.session_dirs)
        removed = [d for d in data.get("removed_dirs") or [] if isinstance(d, str)]
        if removed:
            self.remove_directories(removed)
        mode = data.get("mode")
        if mode in PERMISSION_MODES:
            try:
                self.set_mode(mode)
            except ValueError:
                pass

    @classmethod
    def from_json(cls, data: dict[str, Any], cwd: str | None = None,
                  base: PermissionContext | None = None) -> PermissionContext:
        pc = base if base is not None else cls(cwd or os.getcwd())
        pc.restore(data)
        return pc

    def __repr__(self) -> str:
        return f"<PermissionContext mode={self.mode} rules={len(self._rules)} dirs={self.working_dirs}>"
