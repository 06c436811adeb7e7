"""Packaging: the shipped resources are complete and valid, and they load from an installed wheel.

Fast checks run on the source tree: icons, themes, desktop entry, AppStream metainfo, and the
translation (complete, compiled, and covering every tr() string of desktop_agent/ui today).

The wheel checks build the wheel from a clean copy of the project (``pip wheel``; offline with
``--no-build-isolation`` when this venv has setuptools>=68 and wheel, otherwise pip fetches them),
install it with ``--no-deps`` into a fresh venv, and run the installed ``desktop-agent`` from a
neutral directory, so the resources must come from site-packages, never from the checkout. The fresh
venv sees the already-installed dependencies through a ``.pth`` line pointing at this interpreter's
site-packages; that path comes *after* its own site-packages, so its copy of ``desktop_agent`` wins.
No dependency download, about 25 s in all.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import struct
import subprocess
import sys
import sysconfig
import tomllib
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from desktop_agent import __version__
from desktop_agent import resources as res

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "resources"
TS_FILE = RESOURCES / "translations" / "desktop_agent_zh_CN.ts"
QM_FILE = RESOURCES / "translations" / "desktop_agent_zh_CN.qm"
DESKTOP_FILE = RESOURCES / "linux" / f"{res.APP_ID}.desktop"
METAINFO_FILE = RESOURCES / "linux" / f"{res.APP_ID}.metainfo.xml"
# Every file a complete install must carry (relative to the resources dir).
REQUIRED = [
    *(f"icons/hicolor/{n}x{n}/apps/desktop-agent.png" for n in res.ICON_SIZES),
    "icons/hicolor/scalable/apps/desktop-agent.svg",
    "themes/light.qss",
    "themes/dark.qss",
    "themes/colors.json",
    "themes/check.svg",
    "translations/desktop_agent_zh_CN.qm",
    f"linux/{res.APP_ID}.desktop",
    f"linux/{res.APP_ID}.metainfo.xml",
]
# UI-GUIDE "Changes panel": GitHub's diff colours, light and dark.
GUIDE_DIFF_COLOURS = {
    "light": {"added_bg": "#e6ffec", "added_fg": "#1a7f37", "removed_bg": "#ffebe9", "removed_fg": "#cf222e"},
    "dark": {"added_bg": "#12261e", "added_fg": "#3fb950", "removed_bg": "#25171c", "removed_fg": "#f85149"},
}


# ---------------------------------------------------------------------------------------------
# The helper, from the source tree
# ---------------------------------------------------------------------------------------------

def test_every_image_a_style_sheet_names_is_shipped():
    import re

    for name in res.THEMES:
        sheet = res.theme_path(name)
        for ref in re.findall(r'url\("@THEMES@/([^")]+)"\)', sheet.read_text("utf-8")):
            assert (sheet.parent / ref).is_file(), f"{sheet.name} names {ref}, which is not in themes/"


def test_resource_path_finds_the_checkout_resources():
    assert res.resource_dir() in (RESOURCES.resolve(), (ROOT / "desktop_agent" / "_resources").resolve())
    for rel in REQUIRED:
        assert res.resource_path(*rel.split("/")).is_file(), rel
    assert res.app_icon_path().suffix == ".svg"
    assert res.app_icon_path(48).name == "desktop-agent.png"
    assert res.theme_path("dark").name == "dark.qss"


def test_resource_path_errors_are_explicit():
    with pytest.raises(res.ResourceNotFoundError, match="missing resource"):
        res.resource_path("themes", "no-such.qss")
    assert res.resource_path("themes", "no-such.qss", must_exist=False).name == "no-such.qss"
    with pytest.raises(ValueError):
        res.app_icon_path(17)
    with pytest.raises(ValueError):
        res.theme_path("solarized")


def test_resource_dir_env_override(tmp_path, monkeypatch):
    fake = tmp_path / "res"
    (fake / "themes").mkdir(parents=True)
    (fake / "themes" / "light.qss").write_text("/* */")
    monkeypatch.setenv("DESKTOP_AGENT_RESOURCES", str(fake))
    res.resource_dir.cache_clear()
    try:
        assert res.resource_dir() == fake.resolve()
    finally:
        monkeypatch.delenv("DESKTOP_AGENT_RESOURCES")
        res.resource_dir.cache_clear()


def test_translation_path_languages():
    assert res.translation_path("en") is None
    assert res.translation_path("en_US") is None
    assert res.translation_path("fr_FR") is None           # not shipped: run in English
    for name in ("zh_CN", "zh-CN", "zh_SG", "zh"):
        assert res.translation_path(name) == res.resource_path("translations", QM_FILE.name)


# ---------------------------------------------------------------------------------------------
# Icons, themes, desktop entry, metainfo
# ---------------------------------------------------------------------------------------------

def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("size", res.ICON_SIZES)
def test_icon_png_sizes(size):
    assert _png_size(res.app_icon_path(size)) == (size, size)


def test_icon_svgs_are_well_formed():
    for svg in RESOURCES.glob("icons/**/*.svg"):
        root = ET.parse(svg).getroot()
        assert root.tag.endswith("svg") and root.get("viewBox"), svg


def _selectors(qss: str) -> list[str]:
    qss = re.sub(r"/\*.*?\*/", "", qss, flags=re.S)
    return [s.strip() for s in re.findall(r"([^{}]+)\{", qss)]


def test_themes_match_each_other_and_the_ui_guide():
    colours = json.loads((RESOURCES / "themes" / "colors.json").read_text("utf-8"))
    light = (RESOURCES / "themes" / "light.qss").read_text("utf-8")
    dark = (RESOURCES / "themes" / "dark.qss").read_text("utf-8")
    assert _selectors(light) == _selectors(dark)  # same structure, only the colours differ
    assert light.count("{") == light.count("}") and dark.count("{") == dark.count("}")
    for name, sheet in (("light", light), ("dark", dark)):
        for key, value in GUIDE_DIFF_COLOURS[name].items():
            assert colours[name][key] == value, (name, key)
            assert value in sheet, (name, key)
        assert "palette(" in sheet  # palette-aware, not a fixed colour scheme
        # The 8 px grid: every padding/margin is a multiple of 4 px.
        for px in re.findall(r"(?:padding|margin)[^:;]*:\s*([^;]+);", sheet):
            for n in re.findall(r"(\d+)px", px):
                assert int(n) % 4 == 0, f"{name}.qss: {px}"
    assert res.theme_colors("dark")["pygments_style"] == "github-dark"


def test_themes_parse_in_qt(qapp):
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtWidgets import QDialog, QLabel, QPushButton, QVBoxLayout

    messages: list[str] = []
    previous = qInstallMessageHandler(lambda _type, _ctx, msg: messages.append(msg))
    try:
        for name in res.THEMES:
            qapp.setStyleSheet(res.theme_sheet(name))
            dialog = QDialog()
            dialog.setObjectName("permissionDialog")
            layout = QVBoxLayout(dialog)
            allow = QPushButton("Allow")
            allow.setObjectName("allowButton")
            layout.addWidget(allow)
            label = QLabel("+ added")
            label.setProperty("diff", "added")
            layout.addWidget(label)
            dialog.ensurePolished()
            allow.ensurePolished()
            label.ensurePolished()
            dialog.deleteLater()
    finally:
        qapp.setStyleSheet("")
        qInstallMessageHandler(previous)
    assert not [m for m in messages if "style" in m.lower() or "parse" in m.lower()], messages


def _desktop_entry(path: Path) -> dict[str, str]:
    lines = path.read_text("utf-8").splitlines()
    assert lines[0] == "[Desktop Entry]"
    return dict(line.split("=", 1) for line in lines[1:] if line and not line.startswith("#"))


def test_desktop_entry():
    entry = _desktop_entry(DESKTOP_FILE)
    assert entry["Type"] == "Application"
    assert entry["Icon"] == res.ICON_NAME
    assert entry["Exec"].split()[0] == "desktop-agent"
    assert "Development" in entry["Categories"].split(";")
    validator = shutil.which("desktop-file-validate")
    if validator:
        out = subprocess.run([validator, str(DESKTOP_FILE)], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0 and "error" not in out.stdout, out.stdout + out.stderr


def test_appstream_metainfo():
    root = ET.parse(METAINFO_FILE).getroot()
    assert root.get("type") == "desktop-application"
    assert root.findtext("id") == res.APP_ID
    assert root.findtext("launchable") == DESKTOP_FILE.name
    assert root.findtext("provides/binary") == "desktop-agent"
    assert root.find("releases/release").get("version") == __version__
    validator = shutil.which("appstreamcli")
    if validator:
        out = subprocess.run([validator, "validate", "--no-net", str(METAINFO_FILE)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr


# ---------------------------------------------------------------------------------------------
# Translations
# ---------------------------------------------------------------------------------------------

def _ts_messages() -> list[tuple[str, str, ET.Element]]:
    root = ET.parse(TS_FILE).getroot()
    assert root.get("language") == "zh_CN"
    return [(ctx.findtext("name"), msg.findtext("source"), msg.find("translation"))
            for ctx in root.iter("context") for msg in ctx.iter("message")]


def _texts(translation: ET.Element | None) -> list[str]:
    """The translated text, or each plural form of a ``numerus`` message (Chinese has one)."""
    if translation is None:
        return [""]
    forms = translation.findall("numerusform")
    return [f.text or "" for f in forms] if forms else [translation.text or ""]


def test_every_ui_string_is_translated():
    messages = _ts_messages()
    assert messages, "the .ts holds no strings: run packaging/update_translations.sh"
    untranslated = [(ctx, src) for ctx, src, tr in messages
                    if tr is None or tr.get("type") in ("unfinished", "vanished", "obsolete")
                    or not all(text.strip() for text in _texts(tr))]
    assert untranslated == [], "translate these in resources/translations/desktop_agent_zh_CN.ts, then run " \
                               "packaging/update_translations.sh"
    # Placeholders survive translation ({0}, {0:.2f}, {name}, %1, %n), and so do mnemonics (&F).
    holder = re.compile(r"\{[^{}]*\}|%\d|%n")
    for ctx, src, tr in messages:
        for text in _texts(tr):
            assert sorted(holder.findall(text)) == sorted(holder.findall(src)), (ctx, src, text)
            if re.search(r"&\w", src):
                assert re.search(r"&\w", text), (ctx, src, text)


def test_translation_covers_the_current_ui_sources(tmp_path):
    """Re-extract the tr() strings of desktop_agent/ui into a scratch copy of the .ts: any string
    that comes out untranslated is new in the UI and missing from the committed translation."""
    lupdate = Path(sys.executable).parent / "pyside6-lupdate"
    if not lupdate.exists():
        lupdate = shutil.which("pyside6-lupdate")
        if lupdate is None:
            pytest.skip("pyside6-lupdate is not installed")
    sources = sorted(str(p) for p in (ROOT / "desktop_agent" / "ui").rglob("*.py"))
    scratch = tmp_path / TS_FILE.name
    shutil.copy2(TS_FILE, scratch)
    out = subprocess.run([str(lupdate), "-silent", "-no-obsolete", "-locations", "none", *sources, "-ts", str(scratch)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    root = ET.parse(scratch).getroot()
    new = [f"{ctx.findtext('name')}: {msg.findtext('source')}" for ctx in root.iter("context")
           for msg in ctx.iter("message") if msg.find("translation").get("type") == "unfinished"]
    assert new == [], "UI strings without a Chinese translation; run packaging/update_translations.sh and " \
                      "translate them in resources/translations/desktop_agent_zh_CN.ts"


def test_compiled_translation_is_current_and_loads(qapp):
    from PySide6.QtCore import QCoreApplication, QTranslator

    translator = QTranslator()
    assert translator.load(str(res.translation_path("zh_CN")))
    assert translator.language() == "zh_CN"
    QCoreApplication.installTranslator(translator)
    try:
        # Every translation in the .ts is in the .qm: a stale .qm (the .ts edited, lrelease not
        # run) fails here. Fix: bash packaging/update_translations.sh
        stale = [(ctx, src) for ctx, src, tr in _ts_messages()
                 if QCoreApplication.translate(ctx, src, None, 3) != _texts(tr)[0].replace("%n", "3")
                 and QCoreApplication.translate(ctx, src) != _texts(tr)[0]]
        assert stale == [], "the .qm is older than the .ts: run packaging/update_translations.sh"
    finally:
        QCoreApplication.removeTranslator(translator)


# ---------------------------------------------------------------------------------------------
# The wheel, installed into a fresh venv
# ---------------------------------------------------------------------------------------------

def _clean_env(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "DESKTOP_AGENT_RESOURCES", "PYTHONSTARTUP")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", PYTHONNOUSERSITE="1", PYTHONSAFEPATH="1",
               QT_QPA_PLATFORM="offscreen", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def _can_build_without_isolation() -> bool:
    """setuptools>=68 plus a bdist_wheel (the wheel package, or setuptools>=70.1) in this interpreter."""
    try:
        import setuptools
    except ImportError:
        return False
    version = tuple(int(p) for p in re.findall(r"\d+", setuptools.__version__)[:2])
    if version < (68, 0):
        return False
    try:
        import wheel  # noqa: F401
        return True
    except ImportError:
        return version >= (70, 1)


@pytest.fixture(scope="module")
def wheel_file(tmp_path_factory) -> Path:
    """Build the wheel from a clean copy of the project (no stale build/ dir, no writes to the checkout)."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
    for name in ("desktop_agent", "resources"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-q", "-w", str(work / "dist")]
    if _can_build_without_isolation():
        cmd.append("--no-build-isolation")  # offline: this interpreter's setuptools builds it
    out = subprocess.run([*cmd, str(src)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    if out.returncode != 0 and "--no-build-isolation" not in cmd and "setuptools" in out.stderr and (
            "No matching distribution" in out.stderr or "Could not find a version" in out.stderr):
        pytest.skip("cannot fetch setuptools/wheel for an isolated build (offline?); "
                    "install setuptools>=68 and wheel into this venv to build offline")
    assert out.returncode == 0, out.stdout + out.stderr
    wheels = list((work / "dist").glob("desktop_agent-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def wheel_source(wheel_file) -> Path:
    """The copy of the project the wheel was built from (the checkout may change meanwhile)."""
    return wheel_file.parents[1] / "src"


def test_wheel_contents_and_metadata(wheel_file, wheel_source):
    with zipfile.ZipFile(wheel_file) as zf:
        names = set(zf.namelist())
        dist_info = f"desktop_agent-{__version__}.dist-info"
        metadata = zf.read(f"{dist_info}/METADATA").decode()
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
    for rel in REQUIRED:
        assert f"desktop_agent/_resources/{rel}" in names, rel
    # The Python side: every module of the checkout is in the wheel (packages.find picks up new ones).
    for py in (wheel_source / "desktop_agent").rglob("*.py"):
        rel = py.relative_to(wheel_source).as_posix()
        assert rel in names, f"{rel} is missing from the wheel"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    for page in ("index.html", "app.js", "style.css"):  # the phone page's own files (every asset served locally)
        assert f"desktop_agent/host/remote/page/{page}" in names, page
    assert "desktop-agent = desktop_agent.__main__:main" in entry_points
    # pip install pulls exactly the dependencies pyproject declares.
    declared = tomllib.loads((wheel_source / "pyproject.toml").read_text("utf-8"))["project"]["dependencies"]
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    norm = lambda s: re.sub(r"\s+", "", s.split(";")[0]).lower().replace("_", "-")  # noqa: E731
    assert {norm(r) for r in requires if "extra ==" not in r} == {norm(d) for d in declared}


@pytest.fixture(scope="module")
def installed_venv(tmp_path_factory, wheel_file) -> Path:
    """A fresh venv holding only the wheel; dependencies come from this interpreter's site-packages."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    assert purelib.is_dir(), purelib
    dep_dirs = [p for p in dict.fromkeys([*site.getsitepackages(), sysconfig.get_path("purelib")]) if Path(p).is_dir()]
    (purelib / "zz_desktop_agent_test_deps.pth").write_text("\n".join(dep_dirs) + "\n")
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                          "--no-deps", "--no-index", "--no-compile", "-q", str(wheel_file)],
                         capture_output=True, text=True, timeout=300, env=_clean_env(venv))
    assert out.returncode == 0, out.stdout + out.stderr
    return venv


def _run_installed(venv: Path, args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=_clean_env(venv))


def test_installed_command_reports_version(installed_venv, tmp_path):
    exe = installed_venv / "bin" / "desktop-agent"
    assert exe.is_file()
    out = _run_installed(installed_venv, [str(exe), "--version"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{__version__} (Desktop Agent)"


INSTALLED_PROBE = r"""
import json, sys
import desktop_agent, desktop_agent.resources as r
from PySide6.QtCore import QCoreApplication, QTranslator
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication
app = QApplication([])
icon = QIcon(str(r.app_icon_path()))
for size in r.ICON_SIZES:
    icon.addFile(str(r.app_icon_path(size)))
translator = QTranslator()
app.setStyleSheet(r.theme_path("dark").read_text("utf-8"))
print(json.dumps({
    "package": desktop_agent.__file__,
    "resource_dir": str(r.resource_dir()),
    "files": sorted(str(p.relative_to(r.resource_dir())) for p in r.resource_dir().rglob("*") if p.is_file()),
    "icon_ok": not icon.isNull() and not icon.pixmap(16, 16).isNull(),
    "qm_loaded": translator.load(str(r.translation_path("zh_CN"))),
}))
"""


def test_installed_package_loads_resources_from_site_packages(installed_venv, tmp_path):
    out = _run_installed(installed_venv, [str(installed_venv / "bin" / "python"), "-c", INSTALLED_PROBE], tmp_path)
    assert out.returncode == 0, out.stderr
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    venv = str(installed_venv.resolve())
    assert probe["package"].startswith(venv), probe["package"]          # not the checkout
    assert probe["resource_dir"].startswith(venv) and probe["resource_dir"].endswith("desktop_agent/_resources")
    assert not probe["resource_dir"].startswith(str(ROOT) + os.sep + "resources")
    assert set(REQUIRED) <= set(probe["files"])
    assert probe["icon_ok"] and probe["qm_loaded"]


def test_installed_window_starts_offscreen(installed_venv, tmp_path):
    """The installed app opens its window offscreen (dark theme and Chinese UI from settings.json:
    palette, style sheet, icon and translation all from site-packages), paints once and exits 0. Uses ``--smoke-test`` when the app has the flag,
    otherwise ui/main.py's ``DESKTOP_AGENT_EXIT_AFTER_PAINT``."""
    pkg = next(installed_venv.glob("lib/python*/site-packages/desktop_agent"))
    exe = str(installed_venv / "bin" / "desktop-agent")
    sources = [p.read_text("utf-8", "replace") for p in pkg.rglob("*.py")]
    project = tmp_path / "project"
    project.mkdir()
    if any('"--smoke-test"' in text for text in sources):
        out = _run_installed(installed_venv, [exe, "--smoke-test"], tmp_path)
        assert out.returncode == 0, out.stdout + out.stderr
        return
    if not any("DESKTOP_AGENT_EXIT_AFTER_PAINT" in text for text in sources):
        pytest.skip("the app has neither --smoke-test nor DESKTOP_AGENT_EXIT_AFTER_PAINT")
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "desktop-agent"  # the test's isolated home (conftest)
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text('{"theme": "dark", "ui_language": "zh_CN"}')
    env = {**_clean_env(installed_venv), "DESKTOP_AGENT_EXIT_AFTER_PAINT": "1"}
    out = subprocess.run([exe, str(project)], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "first_paint_s=" in out.stdout, out.stdout + out.stderr
    # Exiting cleanly includes no Python traceback on the way (Qt virtual overrides swallow them).
    assert "Traceback" not in out.stderr and "Error calling Python override" not in out.stderr, out.stderr[-3000:]
