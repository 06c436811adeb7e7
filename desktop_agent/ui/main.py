"""Start the desktop app: QApplication first, then the qasync loop, the theme (``ui.style``), the window.

``main(options)`` takes the window's ``WindowOptions`` (``app.options.WindowOptions``), which ``desktop_agent.cli.argv`` (the one
parser of the command) filled from ``[FOLDER] [--demo] [--resume ID] [--theme …] [--permission-mode …]
[--executor inprocess|process|claude] [--claude-path PATH]``. Without a folder it reopens the last one; with
no API key (and no ``--demo``, and the Anthropic provider) the first-run settings dialog appears over
the window. Closing the window runs the session's SessionEnd hooks (``MainWindow.closeEvent`` awaits
them on this loop) before the loop stops.
``DESKTOP_AGENT_EXIT_AFTER_PAINT=1`` prints the time to the first painted window and exits
(used by ``bench/bench_ui.py``).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any, Mapping, Protocol

_T0 = time.perf_counter()

from PySide6.QtCore import QLibraryInfo, QLocale, QTimer, QTranslator  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from desktop_agent.ui.first_paint import FirstPaint, after_first_paint  # noqa: E402
from desktop_agent.ui.modes import MODE_ORDER  # noqa: E402
from desktop_agent.ui.prefs import read_prefs  # noqa: E402
from desktop_agent.ui.style import ThemeWatcher, apply_theme  # noqa: E402


class WindowOptions(Protocol):
    """What the window opens with, as ``main`` reads it: ``app.options.WindowOptions`` (filled by
    ``cli.argv``) has these fields; the window names the shape here, as it may not import ``app``."""

    @property
    def folder(self) -> str | None: ...
    @property
    def demo(self) -> bool: ...
    @property
    def resume(self) -> str | None: ...
    @property
    def theme(self) -> str | None: ...
    @property
    def permission_mode(self) -> str | None: ...
    @property
    def executor(self) -> str | None: ...
    @property
    def claude_path(self) -> str | None: ...


def install_translator(app: QApplication, language: str | None = None) -> QTranslator | None:
    lang = language or QLocale.system().name()
    try:
        from desktop_agent.resources import translation_path

        path = translation_path(lang)
    except Exception:
        return None
    if path is None or not os.path.exists(str(path)):
        return None
    tr = QTranslator(app)
    if tr.load(str(path)):
        app.installTranslator(tr)
        # Qt's own strings (standard buttons such as Save / Cancel) come from qtbase_<lang>.qm.
        qt_tr = QTranslator(app)
        qt_dir = QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)
        if qt_tr.load(QLocale(lang), "qtbase", "_", qt_dir):
            app.installTranslator(qt_tr)
        return tr
    return None


def resolve_language(prefs: dict[str, Any], env: dict[str, str] | None = None) -> str | None:
    """The UI language: ``DESKTOP_AGENT_UI_LANGUAGE``, else Settings' choice, else the system locale
    (None). ``en``/``en_*`` mean English (no translator); ``system`` and the legacy default ``en`` in
    settings.json follow the system."""
    variables: Mapping[str, str] = os.environ if env is None else env
    value = (variables.get("DESKTOP_AGENT_UI_LANGUAGE") or "").strip()
    if not value:
        saved = str(prefs.get("ui_language") or "system").strip()
        value = "" if saved in ("", "en", "system") else saved
    if not value or value == "system":
        return None
    return "en" if value == "en" or value.startswith("en_") else value


def make_app(argv: list[str] | None = None) -> QApplication:
    existing = QApplication.instance()
    if existing is None:
        app = QApplication(argv or [sys.argv[0]])
    elif isinstance(existing, QApplication):
        app = existing
    else:  # a QCoreApplication (no widgets) was made first: there can be only one application object
        raise RuntimeError(f"the window needs a QApplication; this process already has a {type(existing).__name__}")
    app.setApplicationName("Desktop Agent")
    app.setOrganizationName("desktop-agent")
    app.setApplicationDisplayName("Desktop Agent")
    app.setDesktopFileName("io.github.desktop_agent.DesktopAgent")
    return app


def make_loop(app: QApplication) -> Any:
    """The qasync loop for ``app`` (which must exist first), with a plain thread pool as the default
    executor: the engine's ``asyncio.to_thread`` calls (file writes, sorting) otherwise run on qasync's
    QThread-based executor, which crashed the Qt loop now and then in our tests."""
    import concurrent.futures

    import qasync

    loop = qasync.QEventLoop(app)
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="asyncio"))
    return loop


def launch_mode(options: WindowOptions, prefs: dict[str, Any]) -> str:
    """The permission mode the window starts in: the command line (``--dangerously-skip-permissions`` is already
    ``bypassPermissions`` there), else the Settings default."""
    mode = options.permission_mode or prefs.get("default_permission_mode") or "default"
    mode = "default" if mode == "manual" else str(mode)
    return mode if mode in MODE_ORDER else "default"


def needs_first_run() -> bool:
    """The first-run Settings is due: the provider is Anthropic and no key (nor auth token) is found. An
    OpenAI-compatible server (Ollama, llama.cpp) may need no key at all, so it never demands one."""
    from desktop_agent.config import AppSettings, find_api_key, resolve_provider

    if resolve_provider(None, AppSettings.load()) == "openai":
        return False
    return find_api_key()[0] is None and not os.environ.get("ANTHROPIC_AUTH_TOKEN")


def main(options: WindowOptions) -> int:
    app = make_app()  # QApplication strictly before the qasync loop
    loop = make_loop(app)
    asyncio.set_event_loop(loop)

    prefs = read_prefs()
    theme = options.theme or str(prefs.get("theme") or "system")
    apply_theme(app, theme)
    app.installEventFilter(ThemeWatcher(app, theme))
    lang = resolve_language(prefs)
    if lang != "en":
        install_translator(app, lang)

    from desktop_agent.ui.window.main_window import MainWindow

    if options.demo:
        from desktop_agent.ui.window.main_window import start_tour_window

        window = start_tour_window(show=False)
    else:
        window = MainWindow(executor=options.executor, executor_path=options.claude_path)
    done = asyncio.Event()
    if os.environ.get("DESKTOP_AGENT_EXIT_AFTER_PAINT"):
        def _report() -> None:
            spawned = os.environ.get("DESKTOP_AGENT_T0")  # wall clock when the benchmark spawned us
            since = time.time() - float(spawned) if spawned else time.perf_counter() - _T0
            print(f"first_paint_s={since:.3f}", flush=True)
            os._exit(0)  # measuring only: do not wait for background work (engine import, session build)

        if os.environ["DESKTOP_AGENT_EXIT_AFTER_PAINT"] == "loaded":  # after the folder's session is shown
            painter = FirstPaint(_report)

            def _arm(_folder: str) -> None:
                # the opaque conversation column covers the viewport once it holds the history
                for w in (window.conversation.viewport(), window.conversation.column):
                    w.installEventFilter(painter)
                    w.update()

            window.history_shown.connect(_arm)
            window.folder_opened.connect(_arm)
        else:
            after_first_paint((window, window.conversation.viewport()), _report)
    window.show()
    window.prompt.setFocus()
    if not options.demo:
        mode = launch_mode(options, prefs)
        if mode != window.permission_mode:  # the window starts in Settings' default (never bypass unasked)
            window.toolbar.request_mode(mode)  # bypassPermissions: its question first, over the window
    if not (options.folder or options.demo):  # opening a folder imports the engine anyway: do not compete
        from desktop_agent.client.local import prewarm  # the engine and the API client, on a worker thread

        QTimer.singleShot(300, prewarm)

    if not options.demo:
        folder = options.folder or window.last_folder()
        if folder:
            if not os.path.isdir(folder):
                print(f"desktop-agent: not a folder: {folder}", file=sys.stderr)
                return 2
            if options.resume:
                window.folders.open_folder_soon(folder, resume=options.resume)
            else:
                window.folders.open_folder_soon(folder)
        if not os.environ.get("DESKTOP_AGENT_EXIT_AFTER_PAINT"):
            async def _first_run() -> None:
                from desktop_agent.util.threads import in_thread

                if await in_thread(needs_first_run):  # the keyring lookup (D-Bus, ~0.4 s): not on the Qt thread
                    window.show_settings(first_run=True)

            QTimer.singleShot(0, lambda: asyncio.ensure_future(_first_run()))

    app.aboutToQuit.connect(done.set)
    app.lastWindowClosed.connect(done.set)
    with loop:
        try:
            loop.run_until_complete(done.wait())
        except RuntimeError:  # the Qt loop ended first (app.quit()): nothing left to do
            pass
        window.save_state()
    return 0


__all__ = ["main", "make_app", "make_loop", "install_translator"]
