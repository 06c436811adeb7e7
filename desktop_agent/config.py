"""Application settings and the API key.

- Where ``settings.json`` and ``credentials.json`` live: ``desktop_agent.util.dirs`` (the one resolver).
- ``AppSettings``: the app's own preferences (model, endpoint, UI language, theme, recent folders...),
  loaded leniently (unknown keys kept, a corrupt file gives defaults) and saved atomically.
- ``find_api_key()``: ``ANTHROPIC_API_KEY`` → the system keyring (the ``keyring`` package: Secret
  Service over D-Bus on Linux; only a real backend counts, not keyring's fail/null/empty-chainer
  ones) → ``credentials.json`` (mode 0600). A key found in the file while a keyring is usable moves
  to the keyring (stored, read back, then removed from the file). ``api_key_location()`` is the
  sentence Settings shows about where the key is. The key is never logged.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from desktop_agent.util.dirs import credentials_path, settings_path

log = logging.getLogger(__name__)

KEYRING_SERVICE = "desktop-agent"
KEYRING_USER = "anthropic-api-key"
KEYRING_OPENAI_USER = "openai-api-key"
MAX_RECENT_FOLDERS = 10


def atomic_write_text(path: Path, text: str, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` atomically (the project's one atomic writer: temp file + fsync + rename)."""
    from desktop_agent.util.fileio import write_bytes_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(str(path), text.encode("utf-8"), mode=mode)


class AppSettings(BaseModel):
    """The app's preferences (not the permission settings of ``.claude/settings*.json``)."""

    model_config = ConfigDict(extra="allow")

    model: str | None = None
    base_url: str | None = None
    # "anthropic" (the Messages API) or "openai" (an OpenAI-compatible chat completions server: Ollama,
    # LM Studio, vLLM, llama.cpp, OpenRouter); its base URL and key are openai_base_url / OPENAI_API_KEY
    provider: str = "anthropic"
    openai_base_url: str | None = None
    stream_idle_timeout_s: float = 90.0
    max_tokens: int = 32_000
    ui_language: str = "en"
    theme: str = "system"
    recent_folders: list[str] = Field(default_factory=list)
    default_permission_mode: str = "default"
    auto_compact: bool = True
    streaming_tool_execution: bool = True
    # where the window runs a session: "inprocess" (default), "process" (our CLI in a child), "claude" (Claude Code)
    executor: str = "inprocess"
    claude_path: str | None = None  # Claude Code's binary for executor "claude" (default: claude on PATH)
    # checkpoints of the folder before each turn and after each Bash call or write (app.rewind): None leaves it to
    # the front end (the window: on; the CLI: only with CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING=true)
    file_checkpointing: bool | None = None
    # ignored paths or files of 2 MB or more that checkpoints still keep (glob patterns relative to the folder)
    checkpoint_include: list[str] = Field(default_factory=list)
    # the window opens its sessions in the background host (``desktop-agent host``, started on demand), so that
    # they keep running when the window closes or crashes
    keep_sessions_running: bool = False
    # Settings → "Answer from my phone": the phone page (host.remote) is served again at the next launch, once the
    # window's first session has made its host (off by default; the switch saves it at once)
    answer_from_phone: bool = False

    @classmethod
    def load(cls, path: Path | None = None) -> AppSettings:
        path = path or settings_path()
        try:
            raw = json.loads(path.read_text("utf-8"))
            if not isinstance(raw, dict):
                raise ValueError("settings file is not a JSON object")
            return cls.model_validate(raw)
        except FileNotFoundError:
            return cls()
        except Exception as exc:  # a broken settings file must not stop the app
            log.warning("ignoring unreadable settings file %s: %s", path, exc)
            return cls()

    def save(self, path: Path | None = None) -> None:
        path = path or settings_path()
        atomic_write_text(path, json.dumps(self.model_dump(mode="json"), indent=2) + "\n")

    def add_recent_folder(self, folder: str) -> None:
        folder = os.path.abspath(folder)
        self.recent_folders = [folder] + [f for f in self.recent_folders if f != folder]
        del self.recent_folders[MAX_RECENT_FOLDERS:]


# ---------------------------------------------------------------------------------------------- API key


def _usable_keyring() -> Any | None:
    try:
        import keyring
        from keyring.backends import fail
    except Exception:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:
        return None
    module = type(backend).__module__.split(".")
    if isinstance(backend, fail.Keyring) or "fail" in module or "null" in module:
        return None
    if "chainer" in module and not getattr(backend, "backends", None):
        return None  # a chainer over no backends stores nothing
    return keyring


def _key_from_keyring(user: str = KEYRING_USER) -> str | None:
    kr = _usable_keyring()
    if kr is None:
        return None
    try:
        value = kr.get_password(KEYRING_SERVICE, user)
    except Exception:
        return None
    return value or None


def _key_from_file(path: Path | None = None, field: str = "anthropic_api_key") -> str | None:
    """``field`` of ``credentials.json``, only when the file is readable by its owner alone."""
    path = path or credentials_path()
    try:
        st = path.stat()
    except OSError:
        return None
    if st.st_mode & 0o077:
        log.warning("ignoring %s: it must be readable by its owner only (chmod 600)", path)
        return None
    try:
        data = json.loads(path.read_text("utf-8"))
    except Exception:
        log.warning("ignoring unreadable credentials file %s", path)
        return None
    value = data.get(field) if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


def find_api_key() -> tuple[str | None, str]:
    """The API key and where it came from (``ANTHROPIC_API_KEY``, ``keyring``, ``credentials``, ``none``)."""
    env = os.environ.get("ANTHROPIC_API_KEY")
    if env:
        return env, "ANTHROPIC_API_KEY"
    value = _key_from_keyring()
    if value:
        return value, "keyring"
    value = _key_from_file()
    if value:
        if _move_to_keyring(value):
            return value, "keyring"
        return value, "credentials"
    return None, "none"


def _move_to_keyring(key: str) -> bool:
    """Move a key from ``credentials.json`` into a keyring that has become usable. True when moved."""
    kr = _usable_keyring()
    if kr is None:
        return False
    try:
        kr.set_password(KEYRING_SERVICE, KEYRING_USER, key)
        if kr.get_password(KEYRING_SERVICE, KEYRING_USER) != key:
            return False
    except Exception:
        return False
    path = credentials_path()
    try:
        data = json.loads(path.read_text("utf-8"))
    except Exception:
        data = {}
    data = {k: v for k, v in (data.items() if isinstance(data, dict) else []) if k != "anthropic_api_key"}
    if data:
        atomic_write_text(path, json.dumps(data) + "\n", mode=0o600)
    else:
        path.unlink(missing_ok=True)
    log.info("moved the API key from %s to the system keyring", path)
    return True


def api_key_location() -> str:
    """Where a saved key lives, as a sentence for Settings."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "The key comes from the ANTHROPIC_API_KEY environment variable; nothing is saved."
    if _usable_keyring() is not None:
        return "The key is stored in the system keyring."
    return (f"No system keyring is available: the key is stored in {credentials_path()}, "
            "readable only by you.")


def _store_key(key: str, keyring_user: str, file_field: str) -> str:
    """Save a key in the keyring when one is usable, else under ``file_field`` in ``credentials.json`` (0600)."""
    kr = _usable_keyring()
    if kr is not None:
        try:
            kr.set_password(KEYRING_SERVICE, keyring_user, key)
            return "keyring"
        except Exception:
            pass
    path = credentials_path()
    data: dict[str, Any] = {}
    try:
        existing = json.loads(path.read_text("utf-8"))
        if isinstance(existing, dict):
            data = existing
    except Exception:
        pass
    data[file_field] = key
    atomic_write_text(path, json.dumps(data) + "\n", mode=0o600)
    return "credentials"


def store_api_key(key: str) -> str:
    """Save the Anthropic key in the keyring when one is usable, else in ``credentials.json`` (0600). Returns where."""
    return _store_key(key, KEYRING_USER, "anthropic_api_key")


def store_openai_key(key: str) -> str:
    """Save an OpenAI-compatible provider's key (``openai_api_key``) the same way. Returns where."""
    return _store_key(key, KEYRING_OPENAI_USER, "openai_api_key")


def openai_key_location() -> str:
    """Where an OpenAI-compatible provider's saved key lives, as a sentence for Settings."""
    if os.environ.get("OPENAI_API_KEY"):
        return "The key comes from the OPENAI_API_KEY environment variable; nothing is saved."
    if _usable_keyring() is not None:
        return "The key is stored in the system keyring. Local servers (Ollama, llama.cpp) need none."
    return (f"No system keyring is available: the key is stored in {credentials_path()}, readable only by you. "
            "Local servers (Ollama, llama.cpp) need none.")


def find_openai_key() -> tuple[str | None, str]:
    """The key for an OpenAI-compatible provider: ``OPENAI_API_KEY``, else the keyring / credentials file's
    ``openai_api_key`` entry; local servers (Ollama, llama.cpp) need none."""
    env = os.environ.get("OPENAI_API_KEY")
    if env:
        return env, "OPENAI_API_KEY"
    value = _key_from_keyring(KEYRING_OPENAI_USER)
    if value:
        return value, "keyring"
    value = _key_from_file(field="openai_api_key")
    return (value, "credentials") if value else (None, "none")


def resolve_provider(cli_provider: str | None = None, settings: AppSettings | None = None) -> str:
    """``--provider`` → ``DESKTOP_AGENT_PROVIDER`` → settings → ``anthropic``."""
    return (cli_provider or os.environ.get("DESKTOP_AGENT_PROVIDER") or (settings.provider if settings else None)
            or "anthropic")


def resolve_model(cli_model: str | None = None, settings: AppSettings | None = None) -> str | None:
    """``--model`` → ``ANTHROPIC_MODEL`` → settings; None lets the client pick its default."""
    return cli_model or os.environ.get("ANTHROPIC_MODEL") or (settings.model if settings else None) or None
