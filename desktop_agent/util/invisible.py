"""Characters that change how text looks without being seen: bidirectional controls (a command that reads
``ls #`` but runs ``rm``), zero-width characters, and other control characters. ``reveal`` shows each as
``⟨U+202E⟩`` so a person approving a command or a patch outside the window (a notification, the phone page) sees
what will run; ``has_invisible`` says whether there is any."""

from __future__ import annotations

import re

_INVISIBLE = re.compile(
    "[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u2069\ufeff\ufff9-\ufffb]")


def has_invisible(text: str) -> bool:
    return _INVISIBLE.search(text) is not None


def reveal(text: str) -> str:
    return _INVISIBLE.sub(lambda m: f"\u27e8U+{ord(m.group()):04X}\u27e9", text)
