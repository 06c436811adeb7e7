"""Where files live: one function per directory or file, each honouring every override that applies to it.

Ours (``desktop-agent``):

- ``config_dir()``: ``$DESKTOP_AGENT_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/desktop-agent`` (an absolute value
  only, as the XDG spec asks), else ``~/.config/desktop-agent``. It holds ``settings_path()`` (settings.json),
  ``credentials_path()`` (credentials.json: the API keys when no system keyring is usable) and
  ``trust_store_path()`` (trust.json: the folders the user trusted).
- ``data_dir()``: ``$DESKTOP_AGENT_DATA_DIR``, else ``$XDG_DATA_HOME/desktop-agent`` (absolute only), else
  ``~/.local/share/desktop-agent``. It holds ``projects_dir()`` (the JSONL transcripts, one folder per working
  directory) and ``file-history/`` (the backups made before each write, ``session.history``).

Claude Code's (read for compatibility, never written by us except through the settings the user edits):

- ``claude_config_dir()``: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude`` (user settings.json, CLAUDE.md, its own
  ``projects/`` transcripts).
- ``claude_global_config_path()``: Claude Code's global config file (``getGlobalClaudeFile``): the legacy
  ``<claude_config_dir>/.config.json`` when it exists, else ``.claude.json`` in ``$CLAUDE_CONFIG_DIR`` or home.

Everything is computed at each call (tests and the CLI change the environment at run time). Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "desktop-agent"


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def config_dir() -> Path:
    override = os.environ.get("DESKTOP_AGENT_CONFIG_DIR")
    if override:
        return Path(override)
    return _xdg("XDG_CONFIG_HOME", ".config") / APP_NAME


def data_dir() -> Path:
    override = os.environ.get("DESKTOP_AGENT_DATA_DIR")
    if override:
        return Path(override)
    return _xdg("XDG_DATA_HOME", ".local/share") / APP_NAME


def settings_path() -> Path:
    return config_dir() / "settings.json"


def credentials_path() -> Path:
    return config_dir() / "credentials.json"


def trust_store_path() -> Path:
    return config_dir() / "trust.json"


def projects_dir() -> Path:
    return data_dir() / "projects"


def claude_config_dir() -> str:
    return os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")


def claude_global_config_path() -> str:
    legacy = os.path.join(claude_config_dir(), ".config.json")
    if os.path.isfile(legacy):
        return legacy
    return os.path.join(os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~"), ".claude.json")
