"""util.dirs: every directory and file the app and Claude Code's records live in, with each override."""

from __future__ import annotations

import os

from desktop_agent.util import dirs


def test_data_dir_follows_xdg_then_home_and_its_own_override(monkeypatch, tmp_path):
    monkeypatch.delenv("DESKTOP_AGENT_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert dirs.data_dir() == tmp_path / "xdg" / "desktop-agent"
    assert dirs.projects_dir() == tmp_path / "xdg" / "desktop-agent" / "projects"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert dirs.data_dir() == tmp_path / "home" / ".local" / "share" / "desktop-agent"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # not absolute: ignored, as the XDG spec says
    assert dirs.data_dir() == tmp_path / "home" / ".local" / "share" / "desktop-agent"
    monkeypatch.setenv("DESKTOP_AGENT_DATA_DIR", str(tmp_path / "portable"))
    assert dirs.data_dir() == tmp_path / "portable"
    assert dirs.projects_dir() == tmp_path / "portable" / "projects"


def test_config_dir_holds_settings_credentials_and_the_trust_store(monkeypatch, tmp_path):
    monkeypatch.delenv("DESKTOP_AGENT_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    base = tmp_path / "cfg" / "desktop-agent"
    assert dirs.config_dir() == base
    assert (dirs.settings_path(), dirs.credentials_path(), dirs.trust_store_path()) == (
        base / "settings.json", base / "credentials.json", base / "trust.json")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert dirs.trust_store_path() == tmp_path / "home" / ".config" / "desktop-agent" / "trust.json"
    monkeypatch.setenv("DESKTOP_AGENT_CONFIG_DIR", str(tmp_path / "portable"))
    assert dirs.trust_store_path() == tmp_path / "portable" / "trust.json"
    assert dirs.settings_path() == tmp_path / "portable" / "settings.json"


def test_claude_code_locations(monkeypatch, tmp_path):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    assert dirs.claude_config_dir() == str(home / ".claude")
    assert dirs.claude_global_config_path() == str(home / ".claude.json")
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".config.json").write_text("{}")  # the legacy file wins when present
    assert dirs.claude_global_config_path() == str(home / ".claude" / ".config.json")
    other = tmp_path / "cc"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(other))
    assert dirs.claude_config_dir() == str(other)
    assert dirs.claude_global_config_path() == os.path.join(str(other), ".claude.json")
