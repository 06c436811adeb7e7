"""Layering: only desktop_agent/ui imports Qt. The engine must import (and run) without PySide6."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

from tests.conftest import parse_python

ROOT = pathlib.Path(__file__).resolve().parents[1]
QT_MODULES = ("PySide6", "shiboken6", "qasync")


def test_no_qt_imports_outside_ui():
    offenders = []
    for path in (ROOT / "desktop_agent").rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[:2] == ("desktop_agent", "ui"):
            continue
        tree = parse_python(path.read_text("utf-8"), str(rel))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{rel}: {n}" for n in names if n.split(".")[0] in QT_MODULES]
    assert offenders == []


def test_engine_imports_without_qt():
    # A subprocess where importing PySide6 fails: every non-UI module must still import.
    code = r"""
import builtins, importlib, pkgutil, sys
real = builtins.__import__
def guard(name, *a, **k):
    if name.split('.')[0] in ('PySide6', 'shiboken6', 'qasync'):
        raise ImportError('Qt is not allowed here: ' + name)
    return real(name, *a, **k)
builtins.__import__ = guard
import desktop_agent
for m in pkgutil.walk_packages(desktop_agent.__path__, 'desktop_agent.'):
    if m.name.startswith('desktop_agent.ui'):
        continue
    importlib.import_module(m.name)
print('ok')
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")
