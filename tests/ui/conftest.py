"""UI test fixtures: the shared ``qloop``, torn down so that nothing of it outlives the test.

Each test gets a fresh qasync loop. Its timer object (qasync's ``_SimpleTimer``, a parentless
QObject) must be destroyed on the main thread: if Python's cyclic GC frees it later from a worker
thread (the engine runs ``asyncio.to_thread`` work), Qt keeps the timer registered with a dangling
receiver and the next test segfaults in ``QTimerInfoList::activateTimers``. So: close the loop,
delete its timer explicitly, and collect garbage here, on the main thread.
"""

from __future__ import annotations

import concurrent.futures
import gc

import pytest


@pytest.fixture
def qloop(qloop):
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="asyncio")
    qloop.set_default_executor(pool)
    yield qloop
    pool.shutdown(wait=False, cancel_futures=True)
    if not qloop.is_running() and not qloop.is_closed():
        qloop.close()
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
    """Free the previous test's Qt objects here rather than on some worker thread later."""
    gc.collect()
    yield
