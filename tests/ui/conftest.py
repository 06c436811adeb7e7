"""UI test fixtures: the shared ``qloop``, torn down so that nothing of it outlives the test; the fake Anthropic
server (``fake``) and the real window on it (``make_window``).

Each test gets a fresh qasync loop. Its timer object (qasync's ``_SimpleTimer``, a parentless
QObject) must be destroyed on the main thread: if Python's cyclic GC frees it later from a worker
thread (the engine runs ``asyncio.to_thread`` work), Qt keeps the timer registered with a dangling
receiver and the next test segfaults in ``QTimerInfoList::activateTimers``. So: close the loop,
delete its timer explicitly, and collect garbage here, on the main thread.
"""

from __future__ import annotations

import concurrent.futures
import gc
import os
import signal

import pytest
from PySide6.QtCore import QSettings

from tests.conftest import inert
from tests.fakes.anthropic_server import FakeAnthropic


@pytest.fixture
def qloop(qloop):
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="asyncio")
    qloop.set_default_executor(pool)
    yield qloop
    pool.shutdown(wait=False, cancel_futures=True)
    if not qloop.is_running() and not qloop.is_closed():
        qloop.close()
    inert(qloop)  # a worker thread finishing later schedules nothing on it (tests/conftest.py)
    timer = getattr(qloop, "_timer", None)
    if timer is not None:
        import shiboken6

        if shiboken6.isValid(timer):
            shiboken6.delete(timer)
    gc.collect()


@pytest.fixture(autouse=True)
def _no_dialog_safety_delay(monkeypatch):
    """The permission dialog's 0.7 s safety delay is off in tests; the tests of the delay itself
    (tests/ui/test_permission_safety.py) set ``PermissionDialog.safety_delay_ms`` back."""
    from desktop_agent.ui.dialogs.permission import PermissionDialog

    monkeypatch.setattr(PermissionDialog, "safety_delay_ms", 0)


@pytest.fixture(autouse=True)
def _collect_on_main_thread():
    """Free the previous test's Qt objects here rather than on some worker thread later. What survives is frozen
    (``gc.freeze``: never collected, so never freed by the cyclic GC from a worker thread either), so the next
    collection walks only what this test makes (tests/conftest.py ``pytest_collection_finish``)."""
    gc.collect()
    gc.freeze()
    yield


@pytest.fixture
def keep_app_running(qapp):
    """The app quits with its last window (that is how ui/main.py ends): a test that closes its window and opens
    another needs its loop to outlive the first."""
    before = qapp.quitOnLastWindowClosed()
    qapp.setQuitOnLastWindowClosed(False)
    yield
    qapp.setQuitOnLastWindowClosed(before)


@pytest.fixture
def fake():
    """The fake Messages API (a test scripts its replies)."""
    with FakeAnthropic(chunk_size=5) as server:
        yield server


@pytest.fixture
def make_window(qtbot, qloop, fake, tmp_path):
    """``make_window(executor=None, *, with_client=True, retries=0, **session_kwargs)``: a shown MainWindow whose
    in-process sessions talk to ``fake`` (``AnthropicClient``, ``retries`` retries; ``with_client=False``: the
    settings' client), its window state in the test's folder. After the test every running turn is stopped and
    every session ended (its executor process, MCP servers and shells with it)."""
    from desktop_agent.model.anthropic_client import AnthropicClient
    from desktop_agent.ui.window.main_window import MainWindow

    windows: list[MainWindow] = []

    def factory(executor: str | None = None, *, with_client: bool = True, retries: int = 0, **session_kwargs):
        settings = QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)
        client = (lambda: AnthropicClient("test-key", fake.base_url, max_retries=retries)) \
            if with_client and executor in (None, "inprocess") else None
        win = MainWindow(client_factory=client, settings=settings, session_kwargs=session_kwargs, executor=executor)
        qtbot.addWidget(win)
        win.show()
        windows.append(win)
        return win

    before = set(MainWindow.app_windows())
    yield factory
    others = [w for w in MainWindow.app_windows() if w not in windows and w not in before]  # New Window's
    for win in windows + others:
        for live in list(getattr(win, "lives", [])):
            controller = live.controller
            if controller.busy:
                controller.stop()
            session = controller.session
            if session is None:
                continue
            if not qloop.is_closed():
                qloop.run_until_complete(controller.end_session("prompt_input_exit", timeout=10))
            elif session.state.alive and session.state.pid:  # a failed test's executor child
                os.kill(session.state.pid, signal.SIGKILL)
    for win in others:
        MainWindow.windows.discard(win)
        win.deleteLater()
