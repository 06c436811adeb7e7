"""A real X11 desktop for the focus tests: Xvfb on a free display (``-displayfd``), a real window manager
(Openbox, IceWM, Fluxbox), another application the person types into (xterm running ``cat``, typed into with
``xdotool``), and the helpers to ask the X server who has the focus (``xdotool getwindowfocus``, the
root window's ``_NET_ACTIVE_WINDOW``) and to take a screenshot (``import -window root``).

``missing(wm)`` names what is not installed (the test skips with it). ``XSession`` is a context manager; every
process it starts is ended by its pid when it closes.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

TOOLS = ("Xvfb", "xdotool", "xterm", "xprop")
WM_COMMANDS = {"openbox": ["openbox"], "icewm": ["icewm"], "fluxbox": ["fluxbox"]}
APT = {"Xvfb": "xvfb", "xdotool": "xdotool", "xterm": "xterm", "xprop": "x11-utils", "import": "imagemagick",
       "openbox": "openbox", "icewm": "icewm", "fluxbox": "fluxbox"}


def missing(wm: str) -> list[str]:
    """The tools this machine lacks for a session under ``wm`` (as Debian package names)."""
    return [APT[t] for t in (*TOOLS, WM_COMMANDS[wm][0]) if shutil.which(t) is None]


class XSession:
    def __init__(self, wm: str, workdir: Path, size: str = "1280x800x24"):
        self.wm = wm
        self.workdir = workdir
        self.size = size
        self.display = ""
        self._procs: list[subprocess.Popen] = []
        self.typed_file = workdir / "typed-in-xterm.txt"
        self.xterm_window = ""
        self._typing: threading.Thread | None = None
        self._stop_typing = threading.Event()
        self.keys_typed = 0

    # ----- processes -----------------------------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ, DISPLAY=self.display)
        env.pop("WAYLAND_DISPLAY", None)
        return env

    def start(self, cmd: list[str], **kwargs) -> subprocess.Popen:
        kwargs.setdefault("stdout", subprocess.DEVNULL)
        kwargs.setdefault("stderr", subprocess.DEVNULL)
        proc = subprocess.Popen(cmd, env=kwargs.pop("env", self.env), start_new_session=True, **kwargs)
        self._procs.append(proc)
        return proc

    def x(self, *cmd: str, timeout: float = 10) -> str:
        """Run an X client (xdotool, xprop…) on this display; its stdout."""
        out = subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, timeout=timeout)
        return out.stdout.strip()

    def __enter__(self) -> XSession:
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
        self.start(WM_COMMANDS[self.wm])
        self.wait(lambda: re.search(r"window id # 0x[0-9a-f]+", self.x("xprop", "-root", "_NET_SUPPORTING_WM_CHECK")),
                  10, f"{self.wm} to manage the screen")
        time.sleep(0.3)  # the window manager sets up the rest of its EWMH state after the check window
        return self

    def __exit__(self, *exc) -> None:
        self.stop_typing()
        for proc in reversed(self._procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in reversed(self._procs):
            try:
                proc.wait(3)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(3)

    @staticmethod
    def wait(cond, timeout: float, what: str, every: float = 0.05):
        deadline = time.monotonic() + timeout
        while True:
            value = cond()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(every)

    # ----- windows and focus ---------------------------------------------------------------------
    def windows(self, name: str, pid: int | None = None) -> list[str]:
        """The mapped client windows (the ones the window manager manages: they have ``WM_STATE``) whose title
        contains ``name``."""
        args = ["xdotool", "search", "--onlyvisible"]
        if pid is not None:
            args += ["--pid", str(pid)]
        found = [w for w in self.x(*args, "--name", name).split() if w]
        return [w for w in found if name in self.x("xdotool", "getwindowname", w)
                and "WM_STATE(WM_STATE)" in self.x("xprop", "-id", w, "WM_STATE")]

    def focus(self) -> str:
        """The window that has the keyboard focus (its top-level client)."""
        return self.x("xdotool", "getwindowfocus")

    def active(self) -> str:
        """The root window's ``_NET_ACTIVE_WINDOW``, as a decimal id like xdotool's."""
        m = re.search(r"window id # (0x[0-9a-f]+)", self.x("xprop", "-root", "_NET_ACTIVE_WINDOW"))
        return str(int(m.group(1), 16)) if m else ""

    def activate(self, window: str) -> None:
        """Activate ``window`` as a pager does (``_NET_ACTIVE_WINDOW``) and wait until it is the active one."""
        deadline = time.monotonic() + 10
        while True:  # asked again each second: a window manager busy mapping another window can drop a request
            if self.active() != window:
                self.x("xdotool", "windowactivate", window)
            try:
                self.wait(lambda: self.active() == window, 1, f"window {window} to be active")
                return
            except AssertionError:
                if time.monotonic() > deadline:
                    raise

    def key(self, *keys: str) -> None:
        self.x("xdotool", "key", *keys)

    def type(self, text: str, delay_ms: int = 30) -> None:
        self.x("xdotool", "type", "--delay", str(delay_ms), text)

    def screenshot(self, path: Path) -> None:
        if shutil.which("import"):
            self.x("import", "-window", "root", str(path), timeout=20)

    # ----- the other application ------------------------------------------------------------------
    def start_xterm(self) -> str:
        """xterm running ``cat > typed-in-xterm.txt``, focused; its window id."""
        title = f"typing-target-{os.getpid()}"
        xterm = self.start(["xterm", "-T", title, "-geometry", "90x24+520+330", "-e", "sh", "-c",
                    f"exec cat > '{self.typed_file}'"])
        self.xterm_window = self.wait(lambda: (self.windows(title, xterm.pid) or [""])[0], 10, "xterm's window")
        self.activate(self.xterm_window)
        self.wait(lambda: self.focus() == self.xterm_window, 5, "xterm to have the focus")
        return self.xterm_window

    def start_typing(self) -> None:
        """Type into whatever has the focus — words, spaces, Return — in a loop, until ``stop_typing``."""
        self._stop_typing.clear()

        def loop() -> None:
            while not self._stop_typing.is_set():
                self.type("the quick brown fox ")
                self.key("Return")
                self.keys_typed += 21

        self._typing = threading.Thread(target=loop, daemon=True)
        self._typing.start()

    def stop_typing(self) -> None:
        self._stop_typing.set()
        if self._typing is not None:
            self._typing.join(10)
            self._typing = None

    def typed_lines(self) -> int:
        try:
            return self.typed_file.read_text().count("the quick brown fox")
        except FileNotFoundError:
            return 0
