"""Build hook: ship the top-level ``resources/`` inside the wheel as ``desktop_agent/_resources/``.

All project metadata lives in pyproject.toml; this file only extends ``build_py`` so that a wheel
(and therefore ``pip install .`` / ``pipx install .``) carries the icons, themes, translations and
desktop entry. ``desktop_agent.resources.resource_path()`` finds them there, and falls back to the
checkout's ``resources/`` for editable installs. ``MANIFEST.in`` puts ``resources/`` in the sdist.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# Sources of generated files and editor droppings stay out of the wheel; the .ts stays (small, useful).
_SKIP_SUFFIXES = {".pyc", ".swp", ".orig", ".rej"}


class build_py_with_resources(build_py):  # noqa: N801 (setuptools command naming)
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # editable installs read <checkout>/resources directly
        src = ROOT / "resources"
        if not src.is_dir():  # building from an sdist made without MANIFEST.in
            raise SystemExit("build_py: resources/ is missing; cannot build a complete wheel")
        dst = Path(self.build_lib) / "desktop_agent" / "_resources"
        for path in sorted(src.rglob("*")):
            if path.is_file() and path.suffix not in _SKIP_SUFFIXES and "__pycache__" not in path.parts:
                target = dst / path.relative_to(src)
                self.mkpath(str(target.parent))
                self.copy_file(str(path), str(target), preserve_mode=False)


setup(cmdclass={"build_py": build_py_with_resources})
