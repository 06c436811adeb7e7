"""``ui.style.apply_theme``: a theme that is not the system's forces its palette (``resources.theme_palette``, the
``palette`` table of ``colors.json``) under the shipped style sheet; the system theme keeps the system palette."""

from __future__ import annotations

import json

import pytest
from PySide6.QtGui import QColor, QPalette

from desktop_agent import resources
from desktop_agent.ui.style import EXTRA_QSS, apply_theme, is_dark_palette


@pytest.fixture
def app(qapp):
    palette, sheet = QPalette(qapp.palette()), qapp.styleSheet()
    yield qapp
    qapp.setPalette(palette)
    qapp.setStyleSheet(sheet)


def test_the_palette_table_is_read_apart_from_the_colours():
    data = json.loads(resources.resource_path("themes", "colors.json").read_text("utf-8"))
    for name in resources.THEMES:
        colours = resources.theme_colors(name)
        assert "palette" not in colours and all(isinstance(v, str) for v in colours.values())
        assert colours["added_bg"] == data[name]["added_bg"]
        assert resources.theme_palette(name) == data[name]["palette"]
        assert QColor(resources.theme_palette(name)["window"]).isValid()


def test_a_theme_other_than_the_systems_forces_its_palette(app):
    other = "light" if is_dark_palette(app) else "dark"
    apply_theme(app, other)
    wanted = resources.theme_palette(other)
    assert app.palette().color(QPalette.ColorRole.Window) == QColor(wanted["window"])
    assert app.palette().color(QPalette.ColorRole.Text) == QColor(wanted["text"])
    assert is_dark_palette(app) == (other == "dark")
    assert app.styleSheet() == resources.theme_sheet(other) + EXTRA_QSS


def test_the_system_theme_keeps_the_system_palette(app):
    before = app.palette().color(QPalette.ColorRole.Window)
    apply_theme(app, "system")
    assert app.palette().color(QPalette.ColorRole.Window) == before
    name = "dark" if is_dark_palette(app) else "light"
    assert app.styleSheet() == resources.theme_sheet(name) + EXTRA_QSS
