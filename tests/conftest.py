"""Shared fixtures. Qt runs offscreen; async tests run on a qasync loop (pytest-asyncio hook).

``@pytest.mark.needs_sandbox``: the test needs the real bubblewrap sandbox (it runs a command through it, or
decides as the permission gate does when the sandbox is active). Where bubblewrap cannot start (no user
namespaces: a chroot, some containers) such a test is skipped with the probe's reason
(``permissions.sandbox.probe``) — unless ``DESKTOP_AGENT_REQUIRE_SANDBOX=1`` (``.ci/run`` sets it), where it
fails with that reason, so CI always exercises the sandbox.
"""

import asyncio
import compileall
import gc
import os
import sys
from pathlib import Path
from typing import Any

# Imported now, on the main thread, while nothing else runs: imported lazily by its pytest plugin later, its
# modules go through pytest's assertion rewriting (``ast.parse``) while a window's worker thread may be importing
# or compiling too, and CPython 3.11.7's AST converter is not thread-safe ("SystemError: AST constructor
# recursion depth mismatch", gh-106905; seen in a child pytest of tests/ui/window/test_questions_wm.py).
import hypothesis  # noqa: F401

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import pytest


def _qasync_loop() -> asyncio.AbstractEventLoop:
    import qasync
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    loop = qasync.QEventLoop(app)
    close = loop.close

    def close_and_stay_closed() -> None:
        close()
        inert(loop)

    loop.close = close_and_stay_closed  # type: ignore[method-assign]
    return loop


def inert(loop: asyncio.AbstractEventLoop) -> None:
    """After a qasync loop closed: a worker thread still finishing hands its result back with
    call_soon_threadsafe, which qasync delivers as a Qt signal — maybe in a later test, after the loop's timer is
    gone ("Internal C++ object (_SimpleTimer) already deleted"). Nobody awaits it any more: scheduling on a
    closed loop does nothing."""
    for name in ("call_soon", "call_later", "call_at", "_add_callback"):
        setattr(loop, name, lambda *args, **kwargs: None)


REQUIRE_SANDBOX_ENV = "DESKTOP_AGENT_REQUIRE_SANDBOX"
_sandbox_probe: list[str | None] = []


def sandbox_unavailable_reason() -> str | None:
    """Why bubblewrap cannot start here (the product's own probe, run once), or None when it starts."""
    if not _sandbox_probe:
        from desktop_agent.permissions.sandbox import probe

        result = probe()
        _sandbox_probe.append(None if result.ok else result.detail or "the bubblewrap probe failed")
    return _sandbox_probe[0]


def _sandbox_required() -> bool:
    return os.environ.get(REQUIRE_SANDBOX_ENV, "").strip() == "1"


_ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    # Bytecode for every module the run's child processes import (``python -m desktop_agent`` and the fake servers:
    # hundreds of them). Under ``PYTHONDONTWRITEBYTECODE=1`` no process writes any, so each child compiled the
    # whole package again (~0.2 s of CPU per CLI run, a quarter of it); compiled once here, every child reads it.
    # Written beside the sources (``__pycache__/`` is git-ignored); up-to-date files are skipped at once.
    for package in ("desktop_agent", "tests"):
        try:
            compileall.compile_dir(str(_ROOT / package), quiet=2)
        except OSError:  # a read-only checkout: the children compile for themselves, as before
            pass
    # and pytest's own rewritten test modules (``__pycache__/*-pytest-*.pyc``), which it reads whatever this says but
    # writes only when it is off: otherwise every run (and each xdist worker) parses and rewrites ~250 files again
    sys.dont_write_bytecode = False
    config.addinivalue_line("markers", "needs_sandbox: the test needs the real bubblewrap sandbox (skipped with the "
                                       f"probe's reason where it cannot start, failed when {REQUIRE_SANDBOX_ENV}=1)")


def pytest_report_header(config):
    reason = sandbox_unavailable_reason()
    if reason is None:
        return "sandbox: bubblewrap starts"
    then = "needs_sandbox tests FAIL" if _sandbox_required() else "needs_sandbox tests are skipped"
    return f"sandbox: bubblewrap cannot start ({reason}); {then}"


@pytest.fixture(autouse=True)
def _needs_sandbox(request):
    if request.node.get_closest_marker("needs_sandbox") is None:
        return
    reason = sandbox_unavailable_reason()
    if reason is None:
        return
    if _sandbox_required():
        pytest.fail(f"{REQUIRE_SANDBOX_ENV}=1 but the sandbox cannot start: {reason}", pytrace=False)
    pytest.skip(f"needs the bubblewrap sandbox, which cannot start here: {reason}")


@pytest.fixture(autouse=True)
def _contexts_get_the_sandbox(request, monkeypatch):
    """A ToolUseContext a test builds by hand gets the sandbox seam ``app/build.py`` gives every session
    (``BubblewrapSandbox``), so Bash runs there as it does in the app. Without it a context starts shells
    unsandboxed and the permission gate treats the sandbox as unavailable (fail closed); tests marked
    ``no_default_sandbox`` check exactly that."""
    if request.node.get_closest_marker("no_default_sandbox"):
        return
    from desktop_agent.core.context import ToolUseContext
    from desktop_agent.permissions.sandbox_launch import BubblewrapSandbox

    original = ToolUseContext.__post_init__

    def post_init(self):
        original(self)
        if self.sandbox is None:
            self.sandbox = BubblewrapSandbox()

    monkeypatch.setattr(ToolUseContext, "__post_init__", post_init)


def pytest_addoption(parser):
    parser.addoption("--spec", action="append", default=[], metavar="ITEM",
                     help="run only the tests marked @pytest.mark.spec(ITEM) (repeatable)")


def pytest_collection_modifyitems(config, items):
    """``--spec 58``: keep the tests whose ``spec`` marker names item 58 (spec items are markers, not file names)."""
    wanted = {str(x) for x in config.getoption("--spec")}
    if not wanted:
        return
    keep, drop = [], []
    for item in items:
        named = {str(a) for m in item.iter_markers("spec") for a in m.args}
        (keep if named & wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def parse_python(source: str, filename: str = "<unknown>") -> Any:
    """``ast.parse``, tried again on CPython 3.11's "AST constructor recursion depth mismatch" (gh-106905: the AST
    converter's depth counter is shared by threads, so a parse on another thread of the worker — pytest rewriting a
    module a leftover thread imports — can corrupt the count of this one; the counter is reset at each parse)."""
    import ast
    import time

    for attempt in range(5):
        try:
            return ast.parse(source, filename)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt == 4:
                raise
            time.sleep(0.05)
    raise AssertionError("unreachable")


def pytest_collection_finish(session):
    """What the run holds from here on (modules, the collected items) is frozen out of the cyclic GC, so that a
    collection — automatic, or the one before each UI test (tests/ui/conftest.py) — walks only what tests made
    since: a worker holds ~700,000 objects, and each full collection of them took ~0.5 s."""
    gc.collect()
    gc.freeze()


# Test files whose tests share one session-scoped fixture: under pytest-xdist they form one unit of work, so that
# fixture runs on one worker only (``security_runs`` runs every selected case of the catalogue through the CLI).
SHARED_WORK_UNITS = {
    "tests/security/test_adversarial.py": "tests/security/test_adversarial.py",
    "tests/security/test_canary_controls.py": "tests/security/test_adversarial.py",
}


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``-n N`` (README's command): whole test files go to a worker (``--dist loadfile``, also for the default
    ``load``), so a module-scoped fixture — a batch of CLI runs, a fake server, a git template — runs once, and
    the files of ``SHARED_WORK_UNITS`` go together. Largest units first (xdist's ``loadscopereorder``)."""
    if config.getvalue("dist") not in ("load", "loadfile"):
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedFileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SHARED_WORK_UNITS.get(path, path)

    return SharedFileScheduling(config, log)


def pytest_asyncio_loop_factories(config, item):
    # Only UI tests need Qt's loop; engine tests run on the plain asyncio loop.
    if "tests/ui" in str(getattr(item, "path", "")).replace(os.sep, "/"):
        return {"qasync": _qasync_loop}
    return {"asyncio": asyncio.new_event_loop}


_QLOOP: list[Any] = []  # the qloop fixture's loop while it lives


def _timer_event_in_the_loop() -> None:
    """Between two ``run_until_complete`` calls no loop is running, yet Qt still fires qasync's timers whenever a
    test processes events (pytest-qt does before every teardown; ``qtbot.wait``): a task stepped then runs outside
    any loop, and an ``asyncio.Queue`` it waits on raises "bound to a different event loop" — it killed the window's
    session reader (every request then waited out its timeout). The app never processes events outside its loop;
    here such a callback runs with the fixture's loop set as the running one, as it would in the app."""
    import qasync

    timer = qasync._SimpleTimer
    if getattr(timer, "_in_the_loop", False):
        return
    original = timer.timerEvent

    def timerEvent(self, event):  # noqa: N802 (Qt's name)
        loop = _QLOOP[0] if _QLOOP else None
        if loop is None or loop.is_closed() or asyncio.events._get_running_loop() is not None:
            return original(self, event)
        asyncio.events._set_running_loop(loop)
        try:
            return original(self, event)
        finally:
            asyncio.events._set_running_loop(None)

    timer.timerEvent = timerEvent
    timer._in_the_loop = True


@pytest.fixture
def qloop(qapp):
    """For sync UI tests: a qasync loop to drive coroutines with run_until_complete."""
    import qasync

    _timer_event_in_the_loop()
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    _QLOOP[:] = [loop]
    try:
        yield loop
    finally:
        _QLOOP.clear()
        loop.close()
        inert(loop)
        asyncio.set_event_loop(None)


@pytest.fixture
def workdir(tmp_path):
    """A temp working dir holding the running example's app.ts (no trailing newline)."""
    d = tmp_path / "work"
    d.mkdir()
    (d / "app.ts").write_text("export const value = 1")
    return d


_SHARED_CACHE: list[str] = []


def _shared_cache_dir(tmp_path_factory) -> str:
    if not _SHARED_CACHE:
        _SHARED_CACHE.append(str(tmp_path_factory.mktemp("shared-cache")))
    return _SHARED_CACHE[0]


@pytest.fixture(scope="session", autouse=True)
def _shared_cache_for_the_session(tmp_path_factory):
    """The shared cache dir in the environment for the whole session, so that the children a module- or
    session-scoped fixture starts (before any test's ``_isolated_home``), each with a home of its own, load
    bashlex's tables instead of building them again (``shell.bashlex_tables``)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DESKTOP_AGENT_CACHE_DIR", _shared_cache_dir(tmp_path_factory))
        yield


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Never touch the real ~/.claude or app data dirs from a test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    # bashlex's parse tables (shell.bashlex_tables), built once for the whole run, never in the real user's cache;
    # the cache's own tests point it elsewhere
    monkeypatch.setenv("DESKTOP_AGENT_CACHE_DIR", _shared_cache_dir(tmp_path_factory))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # Never the developer's real keyring (Secret Service): tests that want one install a memory backend.
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_MODEL", raising=False)
    yield home
