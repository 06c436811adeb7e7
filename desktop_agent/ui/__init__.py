"""The desktop window (PySide6 + qasync). The only package that imports Qt.

Importing this package first shields the interpreter from a PySide6 6.12 bug: on CPython 3.11 the
abi3 wheels drop one reference to ``None`` on many void-returning calls (``QWidget.update``,
``move``, ``QPainter.setPen``…). ``None``'s refcount starts around 5,000, so after a few thousand
such calls the process aborts with "Fatal Python error: none_dealloc". CPython 3.12+ makes ``None``
immortal, which hides the bug; on 3.11 we give ``None`` a refcount it can never exhaust.
"""

from __future__ import annotations

import sys


def _shield_none_refcount() -> bool:
    """Raise ``None``'s refcount by 2**40 on CPython < 3.12 (harmless: None is never freed)."""
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    import ctypes

    before = sys.getrefcount(None)
    if before > 1 << 39:
        return True  # already shielded
    cell = ctypes.c_ssize_t.from_address(id(None))
    if cell.value != before - 0 and abs(cell.value - before) > 8:
        return False  # unexpected object layout (debug build?): leave it alone
    cell.value += 1 << 40
    if sys.getrefcount(None) < 1 << 40:  # the write did not land where we thought: undo
        cell.value -= 1 << 40
        return False
    return True


NONE_SHIELDED = _shield_none_refcount()
