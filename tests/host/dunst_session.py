"""A real desktop notification stack for the notification tests: Xvfb, a private D-Bus session bus
(``dbus-daemon --session --print-address``) and Debian's dunst on it.

dunst's context menu (``dunstctl context``) pipes one line per action — ``#Deny (summary) [7,deny]`` — to its
``dmenu`` command and invokes the line that command prints: our dmenu is a script that picks the line ending in
the ``[id,action]`` the test asked for (``invoke``), so an action goes through dunst exactly as a person's choice
in that menu does, and dunst emits ``ActionInvoked`` on the bus. Every process started is ended by its pid.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

NEEDED = {"Xvfb": "xvfb", "dbus-daemon": "dbus", "dunst": "dunst", "dunstctl": "dunst"}


def missing() -> list[str]:
    return sorted({pkg for tool, pkg in NEEDED.items() if shutil.which(tool) is None})


DMENU = """#!/bin/sh
cat > "{dir}/menu.txt"
want=$(cat "{dir}/want" 2>/dev/null)
# dunst 1.9 wedges its menu after an empty answer ("Context menu already running"): answer a line it ignores
[ -n "$want" ] && grep -F -- "$want" "{dir}/menu.txt" | head -n 1 | grep . || echo "(nothing chosen)"
: > "{dir}/want"
"""

DUNSTRC = """[global]
    dmenu = {dir}/dmenu.sh
    font = DejaVu Sans 11
    width = 420
    origin = top-right
    offset = 10x10
    frame_width = 2
    markup = full
    format = "<b>%s</b>\\n%b"
[urgency_critical]
    background = "#1e1f22"
    foreground = "#e6e6e6"
    frame_color = "#d08a2e"
    timeout = 0
"""


class DunstSession:
    def __init__(self, workdir: Path, size: str = "1024x600x24") -> None:
        self.dir = workdir
        self.size = size
        self.display = ""
        self.bus_address = ""
        self._procs: list[subprocess.Popen] = []

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ, DISPLAY=self.display, DBUS_SESSION_BUS_ADDRESS=self.bus_address)
        env.pop("WAYLAND_DISPLAY", None)
        return env

    def __enter__(self) -> DunstSession:
        read, write = os.pipe()
        xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", self.size, "-nolisten", "tcp",
                                 "-noreset"], pass_fds=(write,), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        self._procs.append(xvfb)
        os.close(write)
        with os.fdopen(read) as f:
            number = f.readline().strip()
        if not number:
            self.__exit__(None, None, None)
            raise RuntimeError("Xvfb did not start")
        self.display = f":{number}"
        bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self._procs.append(bus)
        assert bus.stdout is not None
        self.bus_address = bus.stdout.readline().strip()
        if not self.bus_address:
            self.__exit__(None, None, None)
            raise RuntimeError("dbus-daemon did not start")
        (self.dir / "dmenu.sh").write_text(DMENU.format(dir=self.dir))
        (self.dir / "dmenu.sh").chmod(0o755)
        (self.dir / "dunstrc").write_text(DUNSTRC.format(dir=self.dir))
        with open(self.dir / "dunst.log", "wb") as dunst_log:
            self._procs.append(subprocess.Popen(["dunst", "-verbosity", "info", "-config", str(self.dir / "dunstrc")],
                                                env=self.env, stdout=dunst_log, stderr=subprocess.STDOUT,
                                                start_new_session=True))
        deadline = time.monotonic() + 10
        while self.ctl("is-paused") not in ("true", "false"):
            if time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError("dunst did not take the bus")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in reversed(self._procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in self._procs:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self._procs.clear()

    # ----- dunst -----------------------------------------------------------------------------------
    def ctl(self, *args: str) -> str:
        out = subprocess.run(["dunstctl", *args], env=self.env, capture_output=True, text=True, timeout=10)
        return out.stdout.strip()

    def displayed(self) -> int:
        text = self.ctl("count", "displayed")
        return int(text) if text.isdigit() else -1

    def invoke(self, notification_id: int, action: str) -> str:
        """Choose ``action`` of notification ``notification_id`` in dunst's context menu; the menu dunst showed."""
        menu, want = self.dir / "menu.txt", self.dir / "want"
        menu.unlink(missing_ok=True)
        want.write_text(f"[{notification_id},{action}]")
        # dunst runs its dmenu in the background and refuses a new menu until it has read the last one's answer
        # ("Context menu already running"): ask again until our script has chosen.
        for _ in range(20):
            self.ctl("context")
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                if menu.exists() and want.read_text() == "":
                    return menu.read_text()
                time.sleep(0.02)
        raise RuntimeError("dunst never ran its context menu")

    def menu(self) -> str:
        """dunst's context menu of every displayed notification, nothing chosen: one ``#Action (summary) [id,action]``
        line per action."""
        menu, want = self.dir / "menu.txt", self.dir / "want"
        menu.unlink(missing_ok=True)
        want.write_text("")
        for _ in range(20):
            self.ctl("context")
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                if menu.exists():
                    time.sleep(0.05)  # the script has answered: dunst is done with its menu
                    return menu.read_text()
                time.sleep(0.02)
        raise RuntimeError("dunst never ran its context menu")

    def screenshot(self, path: Path) -> None:
        subprocess.run(["import", "-window", "root", str(path)], env=self.env, check=True, timeout=20,
                       capture_output=True)
