"""A host's flag-settings layer on a live session (``app.host_requests.apply_flag_settings``): deny rules stay bound to
their files across a change, ``disableBypassPermissionsMode`` takes bypass away and gives it back, the layer's
directories come and go without taking another source's, and a refused payload changes nothing."""

from __future__ import annotations

import json
import os

import pytest

from desktop_agent.app.host_requests import FlagLayer, HostRequestError, apply_flag_settings
from desktop_agent.app.session import AgentSession
from desktop_agent.model.scripted import ScriptedModelClient


def _session(workdir, settings: dict, **kw) -> tuple[AgentSession, FlagLayer]:
    arg = json.dumps(settings)
    s = AgentSession.create(str(workdir), client=ScriptedModelClient([]), settings_arg=arg, **kw)
    return s, FlagLayer.of(arg, str(workdir), kw.get("add_dirs"))


def test_a_renamed_denied_file_stays_denied_while_its_rule_is_in_force(workdir):
    (workdir / "secret.txt").write_text("s")
    s, layer = _session(workdir, {"permissions": {"deny": ["Read(./secret.txt)"]}})
    pc = s.permission_context
    os.rename(workdir / "secret.txt", workdir / "renamed.txt")
    renamed = str(workdir / "renamed.txt")
    assert pc.path_denied(renamed, "read")  # bound at start, by identity
    apply_flag_settings(s, layer, {"permissions": {"deny": ["Read(./secret.txt)", "Edit(./other.txt)"]}})
    assert pc.path_denied(renamed, "read")  # the change kept the binding of the rule still in force
    assert pc.path_denied(str(workdir / "other.txt"), "edit")
    apply_flag_settings(s, layer, {"permissions": None})
    assert not pc.path_denied(renamed, "read") and not pc.path_denied(str(workdir / "other.txt"), "edit")
    s.close()


def test_disable_bypass_takes_bypass_away_and_clearing_it_gives_it_back(workdir):
    s, layer = _session(workdir, {}, permission_mode="bypassPermissions")
    assert s.permission_mode == "bypassPermissions"
    assert apply_flag_settings(s, layer, {"permissions": {"disableBypassPermissionsMode": "disable"}}) is True
    assert s.permission_mode == "default"
    s.set_permission_mode("bypassPermissions")
    assert s.permission_mode == "default"  # refused while any source disables it
    apply_flag_settings(s, layer, {"permissions": None})
    s.set_permission_mode("bypassPermissions")
    assert s.permission_mode == "bypassPermissions"
    s.close()


def test_the_layers_directories_come_and_go_without_another_sources(workdir, tmp_path):
    extra, both = tmp_path / "extra", tmp_path / "both"
    extra.mkdir()
    both.mkdir()
    s, layer = _session(workdir, {}, add_dirs=[str(both)])
    pc = s.permission_context
    apply_flag_settings(s, layer, {"permissions": {"additionalDirectories": [str(extra), str(both)]}})
    assert str(extra) in pc.working_dirs and str(both) in pc.working_dirs
    apply_flag_settings(s, layer, {"permissions": None})
    assert str(extra) not in pc.working_dirs and str(both) in pc.working_dirs  # --add-dir still names it
    s.close()


@pytest.mark.parametrize("settings, says", [
    ({"permissions": {"allow": ["Bash"], "deny": ["Read(./a"]}}, "Read(./a"),
    ({"permissions": {"defaultMode": "auto"}}, "'auto'"),
    ({"permissions": {"allow": "Bash"}}, "must be a list"),
    ({"permissions": {"blockReadsOutsideWorkingDirectories": True}}, "permissions.blockReadsOutsideWorkingDirectories"),
    ({"env": {"X": "1"}}, "env cannot be changed"),
    ({"model": ""}, "'model'"),
])
def test_a_refused_payload_changes_nothing(workdir, settings, says):
    s, layer = _session(workdir, {"permissions": {"deny": ["Bash(rm:*)"]}})
    pc = s.permission_context
    before = ([str(r.value) + r.behavior for r in pc.rules], pc.mode, list(pc.working_dirs), dict(layer.data), s.model)
    with pytest.raises(HostRequestError) as err:
        apply_flag_settings(s, layer, settings)
    assert says in str(err.value)
    assert ([str(r.value) + r.behavior for r in pc.rules], pc.mode, list(pc.working_dirs), dict(layer.data),
            s.model) == before
    s.close()
