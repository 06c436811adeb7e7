"""Settings files, precedence and merging (App. B §B.4), trust (App. A), PermissionContext updates and resume."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from desktop_agent.permissions import trust
from desktop_agent.permissions.gateway import decide_for
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.settings import SettingsError, load_settings
from desktop_agent.core.permission import PermissionUpdate, RuleValue
from tests.permissions.util import TOOLS, make_ctx


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(data if isinstance(data, str) else json.dumps(data))


@pytest.fixture
def proj(tmp_path, monkeypatch):
    managed = tmp_path / "managed"
    monkeypatch.setenv("DESKTOP_AGENT_MANAGED_SETTINGS_DIR", str(managed))
    p = tmp_path / "proj"
    p.mkdir()
    return {"proj": str(p), "managed": str(managed), "user": os.environ["CLAUDE_CONFIG_DIR"]}


def decide(pc, tool, inp):
    ctx = make_ctx(pc.original_cwd)
    ctx.permission_context = pc
    return decide_for(TOOLS[tool], TOOLS[tool].input_model.model_validate(inp), ctx)


def test_sources_and_merge(proj):
    p = proj["proj"]
    write(os.path.join(proj["managed"], "managed-settings.json"), {"permissions": {"deny": ["Bash(curl *)"]}})
    write(os.path.join(proj["managed"], "managed-settings.d", "10-extra.json"), {"permissions": {"ask": ["WebFetch"]}})
    write(os.path.join(proj["user"], "settings.json"), {"permissions": {"allow": ["Bash(make *)"], "defaultMode": "plan"}})
    write(os.path.join(p, ".claude", "settings.json"), {"permissions": {"allow": ["Bash(npm test:*)"],
                                                                        "defaultMode": "acceptEdits"}})
    write(os.path.join(p, ".claude", "settings.local.json"), {"permissions": {"deny": ["Read(.env)"]}})
    s = load_settings(p, cli_allowed=["Bash(git log *),Edit"], cli_disallowed=["Write"], trusted=True)
    by_source = {(r.source, r.behavior, str(r.value)) for r in s.rules}
    assert ("policySettings", "deny", "Bash(curl *)") in by_source
    assert ("policySettings", "ask", "WebFetch") in by_source
    assert ("userSettings", "allow", "Bash(make *)") in by_source
    assert ("projectSettings", "allow", "Bash(npm test:*)") in by_source
    assert ("localSettings", "deny", "Read(.env)") in by_source
    assert ("cliArg", "allow", "Bash(git log *)") in by_source and ("cliArg", "allow", "Edit") in by_source
    assert ("cliArg", "deny", "Write") in by_source
    assert s.default_mode == "acceptEdits"  # project beats user for scalars
    rule = next(r for r in s.rules if str(r.value) == "Bash(npm test:*)")
    assert rule.source_path == os.path.join(p, ".claude", "settings.json")


def test_managed_scalar_wins_and_disable_bypass(proj):
    p = proj["proj"]
    write(os.path.join(proj["managed"], "managed-settings.json"),
          {"permissions": {"defaultMode": "default", "disableBypassPermissionsMode": "disable"}})
    write(os.path.join(proj["user"], "settings.json"), {"permissions": {"defaultMode": "bypassPermissions"}})
    pc = PermissionContext.load(p, trusted=True)
    assert pc.mode == "default"
    pc = PermissionContext.load(p, trusted=True, mode="bypassPermissions")
    assert pc.mode == "default" and any("disabled" in w for w in pc.warnings)


def test_cli_mode_beats_default_mode(proj):
    write(os.path.join(proj["user"], "settings.json"), {"permissions": {"defaultMode": "plan"}})
    assert PermissionContext.load(proj["proj"], trusted=True, mode="acceptEdits").mode == "acceptEdits"
    assert PermissionContext.load(proj["proj"], trusted=True).mode == "plan"


def test_malformed_json_stops_and_a_malformed_field_is_a_warning(proj):
    p = proj["proj"]
    write(os.path.join(p, ".claude", "settings.json"), "{not json")
    write(os.path.join(proj["user"], "settings.json"), {"permissions": {"allow": "Bash"}})
    with pytest.raises(SettingsError) as info:
        PermissionContext.load(p, trusted=True)
    assert info.value.path == os.path.join(p, ".claude", "settings.json") and info.value.line == 1
    os.unlink(os.path.join(p, ".claude", "settings.json"))
    pc = PermissionContext.load(p, trusted=True)
    assert any("must be a list" in w and "never guessed" in w for w in pc.warnings)
    assert not [r for r in pc.rules if r.behavior == "allow"]


def test_settings_arg_json_and_file(proj):
    p = proj["proj"]
    pc = PermissionContext.load(p, settings_arg='{"permissions": {"deny": ["Edit"]}}', trusted=True)
    assert decide(pc, "Edit", {"file_path": os.path.join(p, "a")}).behavior == "deny"
    f = os.path.join(p, "conf", "s.json")
    write(f, {"permissions": {"allow": ["Edit(/x/**)"]}})
    pc = PermissionContext.load(p, settings_arg=f, trusted=True)
    # "/x/**" in a --settings file is relative to that file's directory
    assert decide(pc, "Edit", {"file_path": os.path.join(p, "conf", "x", "a")}).behavior == "allow"
    assert decide(pc, "Edit", {"file_path": os.path.join(p, "x", "a")}).behavior == "ask"
    with pytest.raises(SettingsError, match="--settings JSON, line 1, column 2"):
        PermissionContext.load(p, settings_arg="{broken", trusted=True)


def test_user_settings_slash_is_relative_to_config_dir(proj):
    write(os.path.join(proj["user"], "settings.json"), {"permissions": {"allow": ["Read(/notes/**)"]}})
    pc = PermissionContext.load(proj["proj"], trusted=True)
    assert decide(pc, "Read", {"file_path": os.path.join(proj["user"], "notes", "a.md")}).behavior == "allow"


def test_inert_rules_warned(proj):
    write(os.path.join(proj["user"], "settings.json"),
          {"permissions": {"deny": ["Write(secrets/**)", "Glob(**/*.key)", "MultiEdit(x)", "Edit(ok/**)"]}})
    pc = PermissionContext.load(proj["proj"], trusted=True)
    inert = [w for w in pc.warnings if "has no effect" in w]
    assert len(inert) == 3 and any("Write(secrets/**)" in w for w in inert)


def test_additional_directories_and_add_dir(proj, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    write(os.path.join(proj["user"], "settings.json"), {"permissions": {"additionalDirectories": [str(extra)]}})
    pc = PermissionContext.load(proj["proj"], trusted=True, add_dirs=[str(other)])
    assert str(extra) in pc.working_dirs and str(other) in pc.working_dirs
    assert decide(pc, "Read", {"file_path": str(extra / "f")}).behavior == "allow"


# ------------------------------------------------------------------------------------------- trust
@pytest.mark.needs_sandbox
def test_untrusted_project_allow_rules_ignored_but_deny_applies(proj, tmp_path):
    p = proj["proj"]
    extra = tmp_path / "extra"
    extra.mkdir()
    write(os.path.join(p, ".claude", "settings.json"),
          {"permissions": {"allow": ["Bash(*)", "Bash(curl:*)", "Edit"], "deny": ["Read(.env)"],
                           "additionalDirectories": [str(extra)], "defaultMode": "bypassPermissions"}})
    write(os.path.join(p, ".claude", "settings.local.json"), {"permissions": {"allow": ["Bash(rm:*)"]}})
    assert trust.needs_trust_prompt(p)
    pc = PermissionContext.load(p)  # reads the trust store: not trusted
    assert pc.trusted is False and pc.mode == "default"
    assert decide(pc, "Bash", {"command": "curl x | sh"}).behavior == "ask"
    assert decide(pc, "Bash", {"command": "rm x"}).behavior == "ask"
    assert decide(pc, "Edit", {"file_path": os.path.join(p, "a")}).behavior == "ask"
    assert decide(pc, "Read", {"file_path": os.path.join(p, ".env")}).behavior == "deny"
    assert str(extra) not in pc.working_dirs
    assert {str(r.value) for r in pc.untrusted_rules} >= {"Bash(curl:*)", "Edit"}
    trust.set_trusted(p, True)
    assert trust.is_trusted(p) and not trust.needs_trust_prompt(p)
    assert trust.is_trusted(os.path.join(p, "sub"))  # a parent's trust covers subfolders
    pc = PermissionContext.load(p)
    assert pc.trusted and decide(pc, "Bash", {"command": "rm x"}).behavior == "allow"
    assert str(extra) in pc.working_dirs
    with open(trust.store_path()) as fh:
        assert json.load(fh)["trusted"]


def test_needs_trust_prompt_only_with_allow_or_hooks(proj):
    p = proj["proj"]
    assert not trust.needs_trust_prompt(p)
    write(os.path.join(p, ".claude", "settings.json"), {"permissions": {"deny": ["Bash"]}})
    assert not trust.needs_trust_prompt(p)
    write(os.path.join(p, ".claude", "settings.json"), {"hooks": {"PreToolUse": [{"hooks": []}]}})
    assert trust.needs_trust_prompt(p)


def test_project_hooks_env_and_key_helper_wait_for_trust(proj):
    """A folder's own hooks, env and apiKeyHelper apply only once it is trusted (App. A); its deny and ask
    rules apply regardless."""
    p = proj["proj"]
    write(os.path.join(p, ".claude", "settings.json"),
          {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]},
           "env": {"PROJ_VAR": "1"}, "apiKeyHelper": "echo key",
           "permissions": {"deny": ["Bash(rm *)"], "ask": ["Bash(git push *)"], "allow": ["Bash(*)"]}})
    pc = PermissionContext.load(p, trusted=False)
    assert pc.hooks_config == [] and pc.env == {} and pc.api_key_helper is None
    assert sorted((r.behavior, str(r.value)) for r in pc.rules) == [("ask", "Bash(git push *)"), ("deny", "Bash(rm *)")]
    assert any("hooks in" in w and "not trusted" in w for w in pc.warnings)
    assert any("env in" in w and "not trusted" in w for w in pc.warnings)
    pc = PermissionContext.load(p, trusted=True)
    assert len(pc.hooks_config) == 1 and pc.hooks_config[0].matcher == "Bash"
    assert pc.env == {"PROJ_VAR": "1"} and pc.api_key_helper == "echo key"
    assert ("allow", "Bash") in [(r.behavior, str(r.value)) for r in pc.rules]  # Bash(*) is the whole tool


# ------------------------------------------------------------------------------------------- updates, resume
@pytest.mark.needs_sandbox
def test_apply_updates_local_settings_atomic_merge(proj):
    p = proj["proj"]
    local = os.path.join(p, ".claude", "settings.local.json")
    write(local, {"permissions": {"allow": ["Bash(ls:*)"]}, "env": {"A": "1"}})
    pc = PermissionContext.load(p, trusted=True)
    pc.apply_updates([PermissionUpdate(type="addRules", behavior="allow", destination="localSettings",
                                       rules=[RuleValue(tool_name="Bash", rule_content="npm test:*")])])
    with open(local) as fh:
        data = json.load(fh)
    assert data["permissions"]["allow"] == ["Bash(ls:*)", "Bash(npm test:*)"] and data["env"] == {"A": "1"}
    assert not [n for n in os.listdir(os.path.dirname(local)) if n.endswith(".tmp")]
    assert decide(pc, "Bash", {"command": "npm test"}).behavior == "allow"


def test_session_grants_and_mode_survive_resume(proj, tmp_path):
    p = proj["proj"]
    extra = tmp_path / "extra2"
    extra.mkdir()
    pc = PermissionContext.load(p, trusted=True)
    pc.apply_updates([
        PermissionUpdate(type="addRules", behavior="allow", rules=[RuleValue(tool_name="Edit", rule_content="/src/**")]),
        PermissionUpdate(type="setMode", mode="acceptEdits"),
        PermissionUpdate(type="addDirectories", directories=[str(extra)]),
    ])
    saved = json.loads(json.dumps(pc.to_json()))
    fresh = PermissionContext.load(p, trusted=True)
    assert decide(fresh, "Edit", {"file_path": os.path.join(p, "src", "a.py")}).behavior == "ask"
    fresh.restore(saved)
    assert fresh.mode == "acceptEdits" and str(extra) in fresh.working_dirs
    fresh.set_mode("default")
    assert decide(fresh, "Edit", {"file_path": os.path.join(p, "src", "a.py")}).behavior == "allow"
    rebuilt = PermissionContext.from_json(saved, cwd=p)
    assert rebuilt.mode == "acceptEdits"


def test_remove_rules_and_unknown_mode(proj):
    pc = PermissionContext(proj["proj"])
    pc.add_rules(["Bash(npm test:*)"], "allow")
    pc.apply_updates([{"type": "removeRules", "behavior": "allow", "rules": [{"toolName": "Bash",
                                                                               "ruleContent": "npm test:*"}]}])
    assert pc.rules == []
    with pytest.raises(ValueError):
        pc.set_mode("yolo")
    pc.set_mode("manual")
    assert pc.mode == "default"
