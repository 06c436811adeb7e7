"""Settings fail closed (issue 22, class 1): the strict reader (``settings_files``) and the loader's handling of
invalid entries (``settings.load_settings``), on real files."""

from __future__ import annotations

import json
import os

import pytest

from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.settings import (SettingsError, add_rules_to_file, load_settings,
                                                set_default_mode_in_file)
from desktop_agent.permissions.settings_files import parse_settings_text, read_settings_file
from tests.permissions.test_settings import decide


def write(path, text: str | bytes) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(text if isinstance(text, bytes) else text.encode("utf-8"))
    return str(path)


@pytest.fixture
def proj(tmp_path, monkeypatch):
    monkeypatch.setenv("DESKTOP_AGENT_MANAGED_SETTINGS_DIR", str(tmp_path / "managed"))
    p = tmp_path / "proj"
    p.mkdir()
    return {"proj": str(p), "managed": str(tmp_path / "managed"), "user": os.environ["CLAUDE_CONFIG_DIR"]}


def error_of(text: str) -> SettingsError:
    with pytest.raises(SettingsError) as info:
        parse_settings_text(text, "test settings", "/x/s.json")
    return info.value


# ------------------------------------------------------------------------------------------- the strict reader
@pytest.mark.parametrize("text, line, column, words", [
    ('{"permissions": {"deny": ["Bash(rm:*)",]}}', 1, 39, "trailing comma"),
    ('{"permissions": {\n  "deny": [],\n}}', 2, 13, "trailing comma"),
    ('{\n  // a comment\n  "permissions": {}\n}', 2, 3, "comment"),
    ('{"permissions": {} /* c */}', 1, 20, "comment"),
    ('{"permissions": {"deny": ["Bash(rm:*)"', 1, 39, "ends before the JSON does"),
    ('{"permissions": {"deny": []}}\n{"permissions": {}}', 2, 1, "extra data"),
    ('{"a": NaN}', 1, 7, "NaN is not JSON"),
    ('{"s": "Infinity", "a": -Infinity}', 1, 24, "-Infinity is not JSON"),
    ("'single': 1", 1, 1, "Expecting value"),
    ('["Bash(rm:*)"]', 1, 1, "not an array"),
    ('"Bash(rm:*)"', 1, 1, "not a string"),
])
def test_strict_json_errors_name_the_position(text, line, column, words):
    exc = error_of(text)
    assert (exc.line, exc.column) == (line, column), str(exc)
    assert words in exc.problem and exc.path == "/x/s.json"
    assert str(exc).startswith(f"cannot read test settings /x/s.json, line {line}, column {column}: ")


def test_a_key_given_twice_is_an_error_at_the_second_one_at_any_depth():
    exc = error_of('{"permissions": {"deny": ["Bash(rm:*)"]},\n  "permissions": {"allow": ["Bash"]}}')
    assert (exc.line, exc.column) == (2, 3) and '"permissions" is given twice' in exc.problem
    # the same key inside a nested value does not count as the second one
    exc = error_of('{"a": {"deny": 1}, "b": {"deny": 1, "x": [{"deny": 2}], "deny": 3}}')
    assert (exc.line, exc.column) == (1, 57) and '"deny"' in exc.problem
    exc = error_of('{"\\u0070ermissions": {}, "permissions": {}}')  # the same key, spelled with an escape
    assert exc.column == 26
    assert parse_settings_text('{"a": {"k": 1}, "b": {"k": 2}}', "t") == {"a": {"k": 1}, "b": {"k": 2}}


def test_bom_empty_and_whitespace_are_accepted():
    assert parse_settings_text('\ufeff{"permissions": {"deny": ["Bash(rm:*)"]}}', "t") == {
        "permissions": {"deny": ["Bash(rm:*)"]}}
    assert parse_settings_text("", "t") == {} and parse_settings_text(" \n\t", "t") == {}
    assert parse_settings_text("\ufeff", "t") == {}


def test_deep_nesting_is_an_error_not_a_crash():
    exc = error_of('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert "nested too deeply" in exc.problem


def test_files_missing_unreadable_or_not_regular(tmp_path):
    assert read_settings_file(str(tmp_path / "none.json"), "t") is None
    (tmp_path / "a-file").touch()
    assert read_settings_file(str(tmp_path / "a-file" / "x.json"), "t") is None  # a parent that is a file
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(SettingsError, match="not a regular file"):
        read_settings_file(str(tmp_path / "dir.json"), "t")
    os.mkfifo(tmp_path / "fifo.json")  # never waited on
    with pytest.raises(SettingsError, match="not a regular file"):
        read_settings_file(str(tmp_path / "fifo.json"), "t")
    bad = write(tmp_path / "latin1.json", b'{"a": "caf\xe9"}\n')
    with pytest.raises(SettingsError) as info:
        read_settings_file(bad, "t")
    assert (info.value.line, info.value.column, info.value.problem) == (1, 11, "not UTF-8 text")
    bom = write(tmp_path / "bom.json", b'\xef\xbb\xbf{"permissions": {}}')
    assert read_settings_file(bom, "t") == {"permissions": {}}


# ------------------------------------------------------------------------------------------- every source stops
@pytest.mark.parametrize("where, label", [
    ("user", "user settings"), ("project", "project settings"), ("local", "local settings"),
    ("managed", "managed settings"), ("drop-in", "managed settings"), ("flag", "--settings file"),
])
def test_every_source_that_cannot_be_parsed_stops_the_load(proj, where, label):
    p = proj["proj"]
    path = {"user": os.path.join(proj["user"], "settings.json"),
            "project": os.path.join(p, ".claude", "settings.json"),
            "local": os.path.join(p, ".claude", "settings.local.json"),
            "managed": os.path.join(proj["managed"], "managed-settings.json"),
            "drop-in": os.path.join(proj["managed"], "managed-settings.d", "20-x.json"),
            "flag": os.path.join(p, "flag.json")}[where]
    write(path, '{"permissions": {"deny": ["Bash(rm:*)"]},}')
    with pytest.raises(SettingsError) as info:
        load_settings(p, settings_arg=path if where == "flag" else None, trusted=False)
    assert info.value.label == label and info.value.path == path and (info.value.line, info.value.column) == (1, 41)
    with pytest.raises(SettingsError):  # the session's own loading path: the same
        PermissionContext.load(p, settings_arg=path if where == "flag" else None)


def test_settings_flag_missing_empty_or_inline(proj):
    p = proj["proj"]
    with pytest.raises(SettingsError, match="no such file") as info:
        load_settings(p, settings_arg="nope.json")
    assert info.value.path == os.path.join(p, "nope.json")
    with pytest.raises(SettingsError, match="empty"):
        load_settings(p, settings_arg="   ")
    with pytest.raises(SettingsError, match=r"--settings JSON, line 1, column 28"):
        load_settings(p, settings_arg='{"permissions": {"deny": []')
    loaded = load_settings(p, settings_arg='\ufeff {"permissions": {"deny": ["Bash(rm:*)"]}}')
    assert [str(r.value) for r in loaded.rules] == ["Bash(rm:*)"]
    assert load_settings(p, settings_arg="").rules == []  # no value: no --settings


def test_a_file_in_place_of_the_drop_in_folder_holds_no_settings(proj):
    write(os.path.join(proj["managed"], "managed-settings.d"), "{}")  # a file where the folder goes: no drop-ins
    assert load_settings(proj["proj"]).rules == []


# ------------------------------------------------------------------------------------------- entries
def loaded_with(proj, permissions, *, source="flag", trusted=True):
    p = proj["proj"]
    if source == "flag":
        return load_settings(p, settings_arg=json.dumps({"permissions": permissions}), trusted=trusted)
    path = {"project": os.path.join(p, ".claude", "settings.json"),
            "user": os.path.join(proj["user"], "settings.json")}[source]
    write(path, json.dumps({"permissions": permissions}))
    return load_settings(p, trusted=trusted)


def rules(loaded, behavior="deny"):
    return [str(r.value) for r in loaded.rules if r.behavior == behavior]


def test_a_non_string_entry_is_skipped_and_its_siblings_hold(proj):
    loaded = loaded_with(proj, {"deny": ["Bash(rm:*)", 5, None, {"x": 1}, "Read(./.env)"]})
    assert rules(loaded) == ["Bash(rm:*)", "Read(./.env)"]
    assert [p.split(" in ")[0] for p in loaded.problems] == ["permissions.deny[1]", "permissions.deny[2]",
                                                             "permissions.deny[3]"]
    assert all("--settings JSON" in p for p in loaded.problems) and loaded.problems[0] in loaded.warnings


def test_an_unbalanced_rule_is_skipped_and_its_siblings_hold(proj):
    loaded = loaded_with(proj, {"deny": ["Bash(rm:*)", "Bash(curl *", "Read(./.env", "Edit(src/**)"]})
    assert rules(loaded) == ["Bash(rm:*)", "Edit(src/**)"]
    assert any("'Bash(curl *'" in p and "mismatched parentheses" in p for p in loaded.problems)


def test_a_deny_field_given_as_a_string_holds_an_allow_one_does_not(proj):
    loaded = loaded_with(proj, {"deny": "Bash(rm:*), Read(./.env)", "ask": "Edit", "allow": "Bash"})
    assert rules(loaded) == ["Bash(rm:*)", "Read(./.env)"] and rules(loaded, "ask") == ["Edit"]
    assert rules(loaded, "allow") == []
    assert any("permissions.allow" in p and "never guessed" in p for p in loaded.problems)
    assert loaded_with(proj, {"deny": {"Bash": "rm"}}).rules == []  # no reading: reported, not guessed
    assert any("permissions.deny" in p for p in loaded_with(proj, {"deny": 7}).problems)


def test_tool_names_in_another_case(proj):
    loaded = loaded_with(proj, {"deny": ["bash(rm:*)", "READ(./.env)", "edit", "bash (curl *)", "foo(x)"],
                                "ask": ["webfetch"], "allow": ["bash(ls *)", "read"]})
    assert rules(loaded) == ["Bash(rm:*)", "Read(./.env)", "Edit", "Bash(curl *)"]
    assert rules(loaded, "ask") == ["WebFetch"] and rules(loaded, "allow") == []
    assert any("'bash(rm:*)'" in p and "read as 'Bash(rm:*)'" in p for p in loaded.problems)
    assert any("'foo(x)'" in p and "skipped" in p for p in loaded.problems)
    assert any("'bash(ls *)'" in p and "never guessed" in p for p in loaded.problems)


def test_lower_case_deny_rules_hold_in_decisions_in_every_mode(proj):
    p = proj["proj"]
    write(os.path.join(p, ".claude", "settings.json"),
          json.dumps({"permissions": {"deny": ["bash(rm:*)", "read(./.env)"]}}))
    for mode in ("bypassPermissions", "acceptEdits", "default"):
        pc = PermissionContext.load(p, mode=mode, trusted=False, cli_allowed=["Bash(rm:*)", "Read"])
        assert decide(pc, "Bash", {"command": "rm victim.txt"}).behavior == "deny", mode
        assert decide(pc, "Read", {"file_path": os.path.join(p, ".env")}).behavior == "deny", mode
        assert decide(pc, "Read", {"file_path": os.path.join(p, "ok.txt")}).behavior == "allow", mode


def test_readable_but_refused_rules(proj):
    loaded = loaded_with(proj, {"deny": ["Bash(:*)", "mcp__fs(touch)", "Bash(git:* push)"],
                                "allow": ["Bash(:*)", "mcp__fs(x)", "Bash()"]})
    assert rules(loaded) == ["Bash(:*)", "mcp__fs", "Bash(git:* push)"]  # kept, the broader reading for MCP
    assert rules(loaded, "allow") == []  # Bash(:*) would allow every command; never widen
    assert sum("kept in force" in p for p in loaded.problems) == 3


def test_untrusted_project_deny_rules_with_a_bom_hold(proj):
    p = proj["proj"]
    write(os.path.join(p, ".claude", "settings.json"),
          "\ufeff" + json.dumps({"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash(rm:*)"]}}))
    loaded = load_settings(p, trusted=False)
    assert rules(loaded) == ["Bash(rm:*)"] and rules(loaded, "allow") == [] and loaded.untrusted_rules


def test_disabling_bypass_in_any_source_holds(proj):
    p = proj["proj"]
    write(os.path.join(proj["user"], "settings.json"),
          json.dumps({"permissions": {"disableBypassPermissionsMode": "disable"}}))
    write(os.path.join(p, ".claude", "settings.json"),
          json.dumps({"permissions": {"disableBypassPermissionsMode": False}}))  # a cloned folder's: higher
    assert load_settings(p, trusted=False).disable_bypass and load_settings(p, trusted=True).disable_bypass
    assert PermissionContext.load(p, mode="bypassPermissions", trusted=False).mode == "default"
    write(os.path.join(p, ".claude", "settings.json"),
          json.dumps({"permissions": {"disableBypassPermissionsMode": "nope"}}))
    loaded = load_settings(p)
    assert loaded.disable_bypass and any("disableBypassPermissionsMode" in w for w in loaded.problems)


def test_an_always_grant_never_rewrites_a_broken_file(proj):
    path = write(os.path.join(proj["proj"], ".claude", "settings.local.json"),
                 '{"permissions": {"deny": ["Bash(rm:*)"],}}')
    before = open(path, "rb").read()
    with pytest.raises(SettingsError):
        add_rules_to_file(path, "allow", ["Bash(ls *)"])
    with pytest.raises(SettingsError):
        set_default_mode_in_file(path, "acceptEdits")
    assert open(path, "rb").read() == before
    fresh = os.path.join(proj["proj"], ".claude", "new.json")
    add_rules_to_file(fresh, "allow", ["Bash(ls *)"])  # a missing file is created
    assert json.load(open(fresh)) == {"permissions": {"allow": ["Bash(ls *)"]}}
