"""Permission tests never read the machine's managed settings (/etc/claude-code)."""

import pytest


@pytest.fixture(autouse=True)
def _no_managed_settings(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DESKTOP_AGENT_MANAGED_SETTINGS_DIR", str(tmp_path_factory.mktemp("managed")))
