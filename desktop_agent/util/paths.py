"""Path predicates with no policy in them, shared by the tools and the permission layer."""

from __future__ import annotations

import os


def is_inside(path: str, directory: str) -> bool:
    """``path`` is ``directory`` or below it (normalized, no symlink resolution)."""
    path, directory = os.path.normpath(path), os.path.normpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)
