"""Settings files and their precedence (App. B §B.4), read the way an existing Claude Code user wrote them.

Sources, highest first: managed (``/etc/claude-code/managed-settings.json`` plus ``managed-settings.d/*.json``),
``--settings FILE|JSON`` (flagSettings) with ``--allowedTools`` / ``--disallowedTools`` (cliArg),
``.claude/settings.local.json`` (localSettings), ``.claude/settings.json`` (projectSettings) and
``~/.claude/settings.json`` (userSettings; ``$CLAUDE_CONFIG_DIR`` replaces ``~/.claude``).

Merging: scalar keys (``defaultMode``, ``disableBypassPermissionsMode``) come from the highest source that has
them; list keys (``allow``, ``ask``, ``deny``, ``additionalDirectories``, hook matchers) merge; ``env`` merges key
by key, the higher source winning.

Trust (App. A): what a folder's own ``.claude/settings.json`` / ``settings.local.json`` may grant or run counts
only once the folder is trusted: allow rules, ``additionalDirectories``, a permissive ``defaultMode``, hooks,
``env`` and ``apiKeyHelper`` (and MCP servers, which nothing reads yet). Until then they are held back with a
warning; project deny and ask rules apply regardless.

Failing closed: a source that exists but cannot be read or parsed (strict JSON, a key given twice, not UTF-8; a BOM is
accepted: ``settings_files``) raises ``SettingsError`` naming the file and the position — the CLI stops (exit 2), the
window does not open the folder; never a run with fewer rules. ``--settings`` naming no file is such an error too.
Inside a readable file an invalid entry is reported (``LoadedSettings.warnings`` and ``.problems``) and skipped, every
valid entry staying in force: a non-string rule, a malformed rule (``Bash(rm:*``), an allow rule the reference
refuses. What the loader reads the fail-closed way instead of dropping: a deny/ask rule naming a known tool in the
wrong case (``bash(rm:*)`` → ``Bash(rm:*)``), a deny/ask field given as one string (read as ``--disallowedTools``
reads its value), an MCP deny/ask rule with a pattern (the whole server or tool), and ``disableBypassPermissionsMode``
(any source disabling bypass disables it).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from desktop_agent.permissions.rules import INERT_PATH_RULE_TOOLS, canonical_tool_name, parse_rule, split_rule_list
from desktop_agent.permissions.settings_files import (BOM, SettingsError, parse_settings_text,
                                                      read_settings_file)
from desktop_agent.core.permission import PERMISSION_MODES, PermissionRule, RuleSource
from desktop_agent.util import dirs

MANAGED_DIR_DEFAULT = "/etc/claude-code"
PROJECT_SOURCES = ("projectSettings", "localSettings")
# Modes a folder may set for itself without being trusted (they only restrict).
_RESTRICTIVE_MODES = ("default", "plan", "dontAsk")


_MCP_RULE_RE = re.compile(r"^mcp__[^\s()]+$")


def managed_dir() -> str:
    return os.environ.get("DESKTOP_AGENT_MANAGED_SETTINGS_DIR", MANAGED_DIR_DEFAULT)


def user_settings_path() -> str:
    return os.path.join(dirs.claude_config_dir(), "settings.json")


def project_settings_path(project_dir: str) -> str:
    return os.path.join(project_dir, ".claude", "settings.json")


def local_settings_path(project_dir: str) -> str:
    return os.path.join(project_dir, ".claude", "settings.local.json")


def settings_path_for_destination(destination: str, project_dir: str) -> str | None:
    return {
        "localSettings": local_settings_path(project_dir),
        "projectSettings": project_settings_path(project_dir),
        "userSettings": user_settings_path(),
    }.get(destination)


@dataclass
class SettingsSource:
    source: RuleSource
    path: str | None  # None for inline --settings JSON and CLI flags
    data: dict[str, Any]
    root: str  # what a leading "/" in a path rule from this source is relative to


@dataclass
class HookMatcherConfig:
    """One ``{"matcher": ..., "hooks": [...]}`` entry with where it came from."""

    event: str
    matcher: str | None
    hooks: list[dict[str, Any]]
    source: str
    source_path: str | None = None


@dataclass
class LoadedSettings:
    sources: list[SettingsSource] = field(default_factory=list)
    rules: list[PermissionRule] = field(default_factory=list)
    # Project allow rules held back because the folder is not trusted (shown in the UI, never used).
    untrusted_rules: list[PermissionRule] = field(default_factory=list)
    default_mode: str | None = None
    additional_directories: list[str] = field(default_factory=list)
    disable_bypass: bool = False
    hooks: list[HookMatcherConfig] = field(default_factory=list)
    # ``env``: variables for the session's process (tools, hooks, the model client); highest source wins.
    env: dict[str, str] = field(default_factory=dict)
    # ``apiKeyHelper``: a command printing the API key (highest source that has it; nothing runs it yet).
    api_key_helper: str | None = None
    # ``deniedMcpServers``: MCP servers never started, from every source (a deny list only restricts), each entry
    # one of ``{"serverName"}``, ``{"serverCommand": [argv]}``, ``{"serverUrl": "glob"}`` plus ``"where"``.
    denied_mcp_servers: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # The invalid entries of readable files, each naming its file and entry (also in ``warnings``): the window's
    # warning banner, the CLI's stderr.
    problems: list[str] = field(default_factory=list)


def read_json_file(path: str, warnings: list[str]) -> dict[str, Any] | None:
    """A JSON file's object, or None when missing; malformed content becomes a warning (a BOM is accepted). For the
    files that hold no rules (the trust store, Claude Code's record); settings sources go through
    ``read_settings_file``, which fails closed."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        warnings.append(f"Could not read settings file {path}: {exc}")
        return None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        warnings.append(f"Settings file {path} is not valid JSON ({exc}); it was ignored.")
        return None
    if not isinstance(data, dict):
        warnings.append(f"Settings file {path} does not contain a JSON object; it was ignored.")
        return None
    return data


def _managed_sources() -> list[SettingsSource]:
    base = managed_dir()
    out: list[SettingsSource] = []
    path = os.path.join(base, "managed-settings.json")
    data = read_settings_file(path, "managed settings")
    if data is not None:
        out.append(SettingsSource("policySettings", path, data, base))
    drop_in = os.path.join(base, "managed-settings.d")
    try:
        names = sorted(n for n in os.listdir(drop_in) if n.endswith(".json") and not n.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        names = []
    except OSError as exc:
        raise SettingsError("managed settings", exc.strerror or type(exc).__name__, path=drop_in) from None
    for name in names:
        p = os.path.join(drop_in, name)
        d = read_settings_file(p, "managed settings")
        if d is not None:
            out.append(SettingsSource("policySettings", p, d, drop_in))
    return out


def settings_arg_source(settings_arg: str | None, cwd: str) -> SettingsSource | None:
    """``--settings FILE|JSON``: JSON when it starts with ``{``; a file that does not exist is an error."""
    if settings_arg is None or settings_arg == "":
        return None
    text = settings_arg.strip().lstrip(BOM).strip()
    if not text:
        raise SettingsError("--settings", "the value is empty")
    if text.startswith("{"):
        return SettingsSource("flagSettings", None, parse_settings_text(text, "--settings JSON"), cwd)
    path = os.path.abspath(os.path.join(cwd, os.path.expanduser(text)))
    data = read_settings_file(path, "--settings file")
    if data is None:
        raise SettingsError("--settings file", "no such file", path=path)
    return SettingsSource("flagSettings", path, data, os.path.dirname(path))


FILE_LABELS = {"localSettings": "local settings", "projectSettings": "project settings",
               "userSettings": "user settings"}


def collect_sources(cwd: str, settings_arg: str | None, warnings: list[str],
                    project_dir: str | None = None, flag: SettingsSource | None = None) -> list[SettingsSource]:
    """All settings sources, highest precedence first (CLI-flag rules are added by ``load_settings``).
    ``SettingsError`` when one exists but cannot be read or parsed (``warnings`` is kept for callers).
    ``flag``: the flag-settings layer already parsed (a host's ``apply_flag_settings``), instead of ``settings_arg``."""
    project_dir = project_dir or cwd
    out = _managed_sources()
    if flag is None:
        flag = settings_arg_source(settings_arg, cwd)
    if flag is not None:
        out.append(flag)
    for source, path, root in (
        ("localSettings", local_settings_path(project_dir), cwd),
        ("projectSettings", project_settings_path(project_dir), project_dir),
        ("userSettings", user_settings_path(), dirs.claude_config_dir()),
    ):
        data = read_settings_file(path, FILE_LABELS[source])
        if data is not None:
            out.append(SettingsSource(source, path, data, root))  # type: ignore[arg-type]
    return out


def _rule_list(value: Any, where: str, key: str, problems: list[str]) -> list[str]:
    """The rule texts of ``permissions.<key>``: each string of a list (a non-string entry is reported and skipped);
    a deny/ask field given as one string is read as ``--disallowedTools`` reads its value, an allow one ignored."""
    if value is None:
        return []
    if isinstance(value, list):
        out: list[str] = []
        for n, item in enumerate(value):
            if isinstance(item, str):
                out.append(item)
            else:
                problems.append(f"permissions.{key}[{n}] in {where} is {json.dumps(item)[:80]}, not a rule (a "
                                f"string); it was skipped, the other {key} rules stay in force.")
        return out
    if isinstance(value, str) and key != "allow":
        items = split_rule_list(value)
        problems.append(f"permissions.{key} in {where} must be a list of strings, not a string: read as "
                        f"{json.dumps(items)} so that the {key} rules hold. Write it as a list.")
        return items
    problems.append(f"permissions.{key} in {where} must be a list of strings; it was ignored"
                    + (" (an allow rule is never guessed)." if key == "allow" else "."))
    return []


# rule_problem's answers that leave a deny/ask rule readable: kept in force (the broader reading where it has one)
_READABLE_PROBLEMS = ("empty parentheses", "the prefix before :* is empty", "the :* pattern must be at the end",
                      "MCP rules take no pattern in parentheses")


def _checked_rule(text: str, where: str, behavior: str, problems: list[str], warnings: list[str]) -> str | None:
    """The rule text to use, or None when the entry is skipped (reported in ``problems``). A deny/ask rule is
    dropped only when it cannot be read at all; an allow rule whenever the reference would refuse it."""
    field_name = f"permissions.{behavior}"
    given = text.strip()
    head = given.split("(", 1)[0]
    known = canonical_tool_name(head)
    if known is not None:  # ``bash(rm:*)``: names no tool (names are case-sensitive), but plainly means Bash
        if behavior == "allow":
            problems.append(f"Permission rule {text!r} in {where} ({field_name}) names no tool: tool names are "
                            f"case-sensitive (the tool is {known!r}). An allow rule is never guessed: it was skipped.")
            return None
        text = known + given[len(head):].lstrip()
        problems.append(f"Permission rule {given!r} in {where} ({field_name}) names no tool: tool names are "
                        f"case-sensitive. It is read as {text!r} so that the {behavior} rule holds; write it that way.")
    problem = rule_problem(text)
    if problem is not None and behavior != "allow" and problem.startswith(_READABLE_PROBLEMS):
        value = parse_rule(text)
        kept = value.tool_name if value.tool_name.startswith("mcp__") and value.rule_content is not None else text
        problems.append(f"Permission rule {text!r} in {where} ({field_name}): {problem}; it is kept in force as "
                        f"{kept!r}.")
        text, problem = kept, None
    if problem is not None:
        problems.append(f"Permission rule {text!r} in {where} ({field_name}) is not valid ({problem}); it was "
                        f"skipped, the other rules stay in force.")
        return None
    value = parse_rule(text)
    if value.rule_content is not None and value.tool_name in INERT_PATH_RULE_TOOLS:
        hint = "Edit(...)" if value.tool_name != "Glob" else "Read(...)"
        warnings.append(
            f"Permission rule {text!r} in {where} has no effect: path rules on {value.tool_name}(...) are never "
            f"consulted. Use {hint} instead."
        )
    return text


_TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_*-]+$")


def rule_problem(text: str, *, tool_name_only: bool = False) -> str | None:
    """Why ``text`` is not a valid permission rule (the reference's checks: balanced parentheses, no empty
    ones, tool names start with uppercase, MCP rules take no pattern, ``:*`` only at the end of a Bash
    prefix), or None when it is valid. ``tool_name_only``: a bare tool name (``--tools``)."""
    t = text.strip()
    if not t:
        return "it is empty"
    content: str | None = None
    if "(" in t or ")" in t:
        if tool_name_only:
            return "a tool name takes no pattern in parentheses"
        open_at = t.find("(")
        if open_at <= 0 or not t.endswith(")"):
            return "mismatched parentheses"
        depth, escaped = 0, False
        for k, ch in enumerate(t[open_at:], start=open_at):
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0 and k != len(t) - 1:
                    return "mismatched parentheses"
            if depth < 0:
                return "mismatched parentheses"
        if depth != 0:
            return "mismatched parentheses"
        name, content = t[:open_at].strip(), t[open_at + 1:-1]
        if not content.strip():
            return "empty parentheses: give a pattern, or use the tool name alone"
    else:
        name = t
    # An MCP rule may name the server as configured (``mcp__my.fs``): matching normalises it (rules.mcp_rule_name).
    if not _TOOL_NAME_RE.match(name) and not (name.startswith("mcp__") and _MCP_RULE_RE.match(name)):
        return "a tool name has only letters, digits, '_', '-' and '*'"
    if name.startswith("mcp__"):
        return "MCP rules take no pattern in parentheses" if content is not None else None
    if not (name[0].isupper() or name[0] == "*" or "_" in name):
        return "tool names start with an uppercase letter"
    if name == "Bash" and content is not None:
        if content.strip() == ":*":
            return "the prefix before :* is empty"
        if ":*" in content and not content.endswith(":*"):
            return "the :* pattern must be at the end"
    return None


def has_allow_rules_or_hooks(data: dict[str, Any] | None) -> bool:
    """True when a project settings object holds something that waits for trust (allow rules, directories,
    a permissive mode, hooks, env, apiKeyHelper, MCP servers)."""
    if not data:
        return False
    given = data.get("permissions")
    perms: dict[str, Any] = given if isinstance(given, dict) else {}
    mode = perms.get("defaultMode")
    return (bool(perms.get("allow")) or bool(perms.get("additionalDirectories")) or bool(data.get("hooks"))
            or bool(data.get("env")) or bool(data.get("apiKeyHelper"))
            or bool(data.get("enableAllProjectMcpServers")) or bool(data.get("enabledMcpjsonServers"))
            or (isinstance(mode, str) and mode not in _RESTRICTIVE_MODES and mode != "manual"))


def load_settings(
    cwd: str,
    *,
    cli_allowed: list[str] | None = None,
    cli_disallowed: list[str] | None = None,
    settings_arg: str | None = None,
    trusted: bool = True,
    project_dir: str | None = None,
    flag: SettingsSource | None = None,
) -> LoadedSettings:
    cwd = os.path.abspath(cwd)
    out = LoadedSettings()
    # SettingsError: nothing starts
    out.sources = collect_sources(cwd, settings_arg, out.warnings, project_dir, flag=flag)
    # CLI flag rules sit just below managed settings and the --settings file.
    insert_at = sum(1 for s in out.sources if s.source in ("policySettings", "flagSettings"))
    cli_data = {"permissions": {"allow": split_rule_list(cli_allowed), "deny": split_rule_list(cli_disallowed)}}
    if cli_data["permissions"]["allow"] or cli_data["permissions"]["deny"]:
        out.sources.insert(insert_at, SettingsSource("cliArg", None, cli_data, cwd))

    seen_mode = seen_helper = False
    env_layers: list[dict[str, str]] = []  # highest source first
    for src in out.sources:
        where = src.path or ("--settings JSON" if src.source == "flagSettings" else "command line flags")
        perms = src.data.get("permissions", {})
        if not isinstance(perms, dict):
            out.problems.append(f"'permissions' in {where} must be an object; it was ignored.")
            perms = {}
        project = src.source in PROJECT_SOURCES
        for behavior in ("deny", "ask", "allow"):
            for given in _rule_list(perms.get(behavior), where, behavior, out.problems):
                text = _checked_rule(given, where, behavior, out.problems, out.warnings)
                if text is None:
                    continue
                rule = PermissionRule(value=parse_rule(text), behavior=behavior, source=src.source,
                                      source_path=src.path)
                if behavior == "allow" and project and not trusted:
                    out.untrusted_rules.append(rule)
                else:
                    out.rules.append(rule)
        dirs = perms.get("additionalDirectories")
        if dirs is not None:
            if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
                out.problems.append(f"permissions.additionalDirectories in {where} must be a list of strings; "
                                    f"ignored.")
            elif not project or trusted:
                if project and src.path:
                    base = os.path.dirname(os.path.dirname(src.path))
                elif src.source == "userSettings":
                    base = os.path.expanduser("~")
                else:
                    base = cwd
                for d in dirs:
                    p = os.path.normpath(os.path.join(base, os.path.expanduser(d)))
                    if p not in out.additional_directories:
                        out.additional_directories.append(p)
        mode = perms.get("defaultMode")
        if mode is not None and not seen_mode:
            if mode == "manual":
                mode = "default"
            if mode not in PERMISSION_MODES:
                out.problems.append(f"permissions.defaultMode {mode!r} in {where} is not a known mode; ignored.")
            elif project and not trusted and mode not in _RESTRICTIVE_MODES:
                out.warnings.append(f"permissions.defaultMode {mode!r} in {where} ignored: the folder is not trusted.")
            else:
                out.default_mode = mode
                seen_mode = True
        disable = perms.get("disableBypassPermissionsMode")
        if disable is not None:  # any source disabling bypass disables it: a lower one is never overridden
            if disable == "disable" or disable is True:
                out.disable_bypass = True
            elif disable is not False:
                out.problems.append(f"permissions.disableBypassPermissionsMode {json.dumps(disable)[:40]} in "
                                    f"{where} is not \"disable\"; ignored.")
        held_back = project and not trusted  # what the folder grants itself waits for trust
        hooks = src.data.get("hooks")
        if hooks is not None:
            if held_back:
                if hooks:
                    out.warnings.append(f"hooks in {where} ignored: the folder is not trusted.")
            else:
                out.hooks.extend(_parse_hooks(hooks, src, where, out.problems))
        env = src.data.get("env")
        if env is not None:
            if not isinstance(env, dict):
                out.problems.append(f"'env' in {where} must be an object; ignored.")
            elif held_back:
                if env:
                    out.warnings.append(f"env in {where} ignored: the folder is not trusted.")
            else:
                env_layers.append({str(k): str(v) for k, v in env.items() if v is not None})
        denied = src.data.get("deniedMcpServers")
        if denied is not None:
            out.denied_mcp_servers.extend(_denied_servers(denied, where, out.problems))
        helper = src.data.get("apiKeyHelper")
        if helper is not None and not seen_helper:
            if held_back:
                out.warnings.append(f"apiKeyHelper in {where} ignored: the folder is not trusted.")
            elif isinstance(helper, str) and helper.strip():
                out.api_key_helper = helper
                seen_helper = True
    for layer in reversed(env_layers):
        out.env.update(layer)
    out.warnings[:0] = out.problems
    return out


def _denied_servers(value: Any, where: str, problems: list[str]) -> list[dict[str, Any]]:
    """The valid ``deniedMcpServers`` entries of one source; each invalid one is a problem named with its file."""
    if not isinstance(value, list):
        problems.append(f"deniedMcpServers in {where} must be a list; ignored.")
        return []
    out: list[dict[str, Any]] = []
    for entry in value:
        ok = isinstance(entry, dict) and len(entry) == 1 and (
            isinstance(entry.get("serverName"), str) and entry["serverName"]
            or isinstance(entry.get("serverUrl"), str) and entry["serverUrl"]
            or isinstance(entry.get("serverCommand"), list) and entry["serverCommand"]
            and all(isinstance(a, str) for a in entry["serverCommand"]))
        if not ok:
            problems.append(f"A deniedMcpServers entry in {where} is not one of serverName, serverCommand, "
                            f"serverUrl: {json.dumps(entry)[:80]}; ignored.")
            continue
        out.append({**entry, "where": where})
    return out


def _parse_hooks(hooks: Any, src: SettingsSource, where: str, warnings: list[str]) -> list[HookMatcherConfig]:
    if not isinstance(hooks, dict):
        warnings.append(f"'hooks' in {where} must be an object; ignored.")
        return []
    out: list[HookMatcherConfig] = []
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            warnings.append(f"hooks.{event} in {where} must be a list; ignored.")
            continue
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("hooks", []), list):
                warnings.append(f"A hooks.{event} entry in {where} is malformed; ignored.")
                continue
            matcher = entry.get("matcher")
            hook_list = [h for h in entry.get("hooks", []) if isinstance(h, dict)]
            out.append(HookMatcherConfig(event, matcher if isinstance(matcher, str) else None, hook_list,
                                         src.source, src.path))
    return out


def update_settings_file(path: str, mutate: Callable[[dict[str, Any]], None]) -> None:
    """Read (a missing file is empty), mutate, and write back atomically (temp + fsync + rename). A file that cannot
    be read or parsed raises ``SettingsError`` and is left as it is: rewriting it would drop what it holds."""
    data = read_settings_file(path, "settings file") or {}
    mutate(data)
    from desktop_agent.util.fileio import write_bytes_atomic

    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_bytes_atomic(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))


def add_rules_to_file(path: str, behavior: str, rules: list[str]) -> None:
    def mutate(data: dict[str, Any]) -> None:
        perms = data.setdefault("permissions", {})
        if not isinstance(perms, dict):
            perms = data["permissions"] = {}
        lst = perms.setdefault(behavior, [])
        if not isinstance(lst, list):
            lst = perms[behavior] = []
        for r in rules:
            if r not in lst:
                lst.append(r)

    update_settings_file(path, mutate)


def remove_rules_from_file(path: str, behavior: str, rules: list[str]) -> None:
    def mutate(data: dict[str, Any]) -> None:
        perms = data.get("permissions")
        if isinstance(perms, dict) and isinstance(perms.get(behavior), list):
            perms[behavior] = [r for r in perms[behavior] if r not in rules]

    update_settings_file(path, mutate)


def add_directories_to_file(path: str, dirs: list[str]) -> None:
    def mutate(data: dict[str, Any]) -> None:
        perms = data.setdefault("permissions", {})
        lst = perms.setdefault("additionalDirectories", [])
        for d in dirs:
            if d not in lst:
                lst.append(d)

    update_settings_file(path, mutate)


def set_default_mode_in_file(path: str, mode: str) -> None:
    update_settings_file(path, lambda data: data.setdefault("permissions", {}).__setitem__("defaultMode", mode))
