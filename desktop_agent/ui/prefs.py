"""The app's preferences as start-up reads them: settings.json without pydantic (theme, language, the default
permission mode), standard library only."""

from __future__ import annotations

from typing import Any


def read_prefs() -> dict[str, Any]:
    """Theme and language from the app's settings.json, read without loading pydantic (start-up time).
    The file is ``util.dirs.settings_path()`` (standard library only)."""
    import json

    from desktop_agent.util import dirs

    try:
        with open(dirs.settings_path(), encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}
