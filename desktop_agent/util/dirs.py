"""Where files live: one function per directory or file, each honouring every override that applies to it.

Ours (``desktop-agent``):

- ``config_dir()``: ``$DESKTOP_AGENT_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/desktop-agent`` (an absolute value
  only, as the XDG spec asks), else ``~/.config/desktop-agent``. It holds ``settings_path()`` (settings.json),
  ``credentials_path()`` (credentials.json: the API keys when no system keyring is usable) and
  ``trust_store_path()`` (trust.json: the folders the user trusted).
- ``data_dir()``: ``$DESKTOP_AGENT_DATA_DIR``, else ``$XDG_DATA_HOME/desktop-agent`` (absolute only), else
  ``~/.local/share/desktop-agent``. It holds ``projects_dir()`` (the JSONL transcripts, one folder per working
  directory) and ``file-history/`` (the backups made before each write, ``session.history``).
- ``state_dir()``: ``$DESKTOP_AGENT_STATE_DIR``, else ``$XDG_STATE_HOME/desktop-agent`` (absolute only), else
  ``~/.local/state/desktop-agent``. It holds ``host_log_path()`` (host.log: the background host's log).
- ``host_runtime_dir()``: where the background host's socket lives: ``$XDG_RUNTIME_DIR/desktop-agent`` when
  ``$XDG_RUNTIME_DIR`` is an absolute path to a real directory (not a symlink) owned by this user and closed to
  others, else ``<tmp>/desktop-agent-<uid>``. ``host.runtime`` creates and verifies it (0700, ours, no symlink).

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


def state_dir() -> Path:
    override = os.environ.get("DESKTOP_AGENT_STATE_DIR")
    if override:
        return Path(override)
    return _xdg("XDG_STATE_HOME", ".local/state") / APP_NAME


def host_log_path() -> Path:
    return state_dir() / "host.log"


def _usable_runtime_base(value: str | None) -> bool:
    """``$XDG_RUNTIME_DIR`` as the XDG spec asks for it: absolute, a directory itself (not a symlink), owned by
    us, with no access for group or others."""
    if not value or not os.path.isabs(value):
        return False
    try:
        st = os.lstat(value)
    except OSError:
        return False
    import stat

    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def host_runtime_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR")
    if _usable_runtime_base(base):
        return Path(base or "") / APP_NAME
    import tempfile

    return Path(tempfile.gettempdir()) / f"{APP_NAME}-{os.getuid()}"


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
