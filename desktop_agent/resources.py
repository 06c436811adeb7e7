"""Where the shipped GUI resources (icons, themes, translations, desktop entry) live on disk.

The repository keeps them in the top-level ``resources/`` directory. A built wheel carries a copy
inside the package as ``desktop_agent/_resources/`` (``setup.py`` copies it at build time), and the
PyInstaller bundle keeps the same relative place. ``resource_path()`` finds whichever is present:

1. ``$DESKTOP_AGENT_RESOURCES`` when set (a developer pointing at another checkout);
2. ``<package>/_resources`` next to this module — an installed wheel, pipx, or a frozen bundle;
3. ``<checkout>/resources`` — running from the source tree or an editable install.

It returns real filesystem paths because Qt (``QIcon``, ``QTranslator.load``, ``QFile``) wants
paths, not ``importlib.resources`` traversables; zipped installs are not supported.

This module must not import Qt: the CLI, the tests and the packaging scripts use it too.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

__all__ = [
    "ResourceNotFoundError",
    "resource_dir",
    "resource_path",
    "app_icon_path",
    "theme_path",
    "theme_sheet",
    "theme_colors",
    "translation_path",
    "APP_ID",
    "ICON_NAME",
    "ICON_SIZES",
    "THEMES",
    "LANGUAGES",
]

#: Reverse-DNS application id: the AppStream component id, the desktop entry's basename
#: (``<APP_ID>.desktop``) and the Wayland app id (``QGuiApplication.setDesktopFileName``).
APP_ID = "io.github.desktop_agent.DesktopAgent"
#: Icon name used by the ``.desktop`` entry (``Icon=``) and the hicolor icon theme.
ICON_NAME = "desktop-agent"
#: PNG sizes shipped in ``resources/icons/hicolor/<n>x<n>/apps/desktop-agent.png``.
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
#: Themes in ``resources/themes/<name>.qss``.
THEMES = ("light", "dark")
#: UI languages: English is the source language; others have ``desktop_agent_<lang>.qm``.
LANGUAGES = ("en", "zh_CN")

_ENV_OVERRIDE = "DESKTOP_AGENT_RESOURCES"
_PACKAGE_DIR = Path(__file__).resolve().parent
# A file that exists in every complete resources directory; used to recognise one.
_MARKER = Path("themes") / "light.qss"


class ResourceNotFoundError(FileNotFoundError):
    """A shipped resource is missing: the install or the checkout is incomplete."""


def _candidates() -> list[Path]:
    found: list[Path] = []
    override = os.environ.get(_ENV_OVERRIDE)
    if override:
        found.append(Path(override).expanduser())
    found.append(_PACKAGE_DIR / "_resources")          # wheel, pipx, PyInstaller bundle
    found.append(_PACKAGE_DIR.parent / "resources")    # source checkout, editable install
    return found


@lru_cache(maxsize=1)
def resource_dir() -> Path:
    """The directory holding the shipped resources (absolute). Raises if none is found."""
    candidates = _candidates()
    for candidate in candidates:
        if (candidate / _MARKER).is_file():
            return candidate.resolve()
    tried = ", ".join(str(c) for c in candidates)
    raise ResourceNotFoundError(f"Desktop Agent resources not found (looked in: {tried}); reinstall the package")


def resource_path(*parts: str, must_exist: bool = True) -> Path:
    """Absolute path of a shipped resource, e.g. ``resource_path("themes", "dark.qss")``.

    With ``must_exist`` (the default) a missing file raises :class:`ResourceNotFoundError`
    naming the path, so a broken install fails loudly instead of silently losing its icon.
    """
    path = resource_dir().joinpath(*parts)
    if must_exist and not path.exists():
        raise ResourceNotFoundError(f"missing resource: {path}")
    return path


def app_icon_path(size: int | None = None) -> Path:
    """The app icon: the scalable SVG, or the PNG of ``size`` pixels (one of ``ICON_SIZES``)."""
    if size is None:
        return resource_path("icons", "hicolor", "scalable", "apps", f"{ICON_NAME}.svg")
    if size not in ICON_SIZES:
        raise ValueError(f"no {size}px icon; sizes are {ICON_SIZES}")
    return resource_path("icons", "hicolor", f"{size}x{size}", "apps", f"{ICON_NAME}.png")


def theme_path(name: str) -> Path:
    """The Qt style sheet of a theme (``"light"`` or ``"dark"``)."""
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r}; themes are {THEMES}")
    return resource_path("themes", f"{name}.qss")


def theme_sheet(name: str) -> str:
    """The style sheet of a theme as Qt loads it: its ``url("@THEMES@/…")`` images (the check box's tick) point
    into the shipped themes folder, wherever the install put it."""
    sheet = theme_path(name)
    return sheet.read_text("utf-8").replace("@THEMES@", sheet.parent.as_posix())


def theme_colors(name: str) -> dict[str, str]:
    """Colours a theme defines for content that a style sheet cannot reach.

    QSS styles widgets, not the HTML inside a ``QTextBrowser``; the diff view and highlighted
    code need the same colours as inline styles. Keys: ``added_bg``, ``added_fg``,
    ``removed_bg``, ``removed_fg``, ``hunk_fg``, ``accent``, ``pygments_style`` and so on
    (see ``resources/themes/colors.json``); its ``palette`` table is ``theme_palette``.
    """
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r}; themes are {THEMES}")
    data = json.loads(resource_path("themes", "colors.json").read_text("utf-8"))
    return {key: value for key, value in data[name].items() if isinstance(value, str)}


def theme_palette(name: str) -> dict[str, str]:
    """The ``QPalette`` colours of a theme, for forcing it when the system palette differs: role names in snake
    case (``window``, ``window_text``, ``base``, …) to colours (the ``palette`` table of ``colors.json``)."""
    if name not in THEMES:
        raise ValueError(f"unknown theme {name!r}; themes are {THEMES}")
    data = json.loads(resource_path("themes", "colors.json").read_text("utf-8"))
    return {str(key): str(value) for key, value in data[name].get("palette", {}).items()}


def translation_path(language: str) -> Path | None:
    """The compiled Qt translation (``.qm``) for ``language`` (e.g. ``"zh_CN"``).

    Returns None for English (the source language, which needs no file) and for languages
    that are not shipped. Accepts the forms ``QLocale.name()`` gives (``zh_CN``) and BCP 47
    tags (``zh-CN``).
    """
    lang = language.replace("-", "_")
    if lang == "en" or lang.startswith("en_"):
        return None
    if lang not in LANGUAGES:
        # Fall back from e.g. zh_SG / zh_Hans to the one Chinese translation we ship.
        lang = next((known for known in LANGUAGES if known.split("_")[0] == lang.split("_")[0]), "")
    if not lang:
        return None
    return resource_path("translations", f"desktop_agent_{lang}.qm")
