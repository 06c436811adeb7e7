"""Shared fixtures. Qt runs offscreen; async tests run on a qasync loop (pytest-asyncio hook)."""

import asyncio
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before any QApplication exists

import pytest


def _qasync_loop() -> asyncio.AbstractEventLoop:
    import qasync
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    return qasync.QEventLoop(app)


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


def pytest_asyncio_loop_factories(config, item):
    # Only UI tests need Qt's loop; engine tests run on the plain asyncio loop.
    if "tests/ui" in str(getattr(item, "path", "")).replace(os.sep, "/"):
        return {"qasync": _qasync_loop}
    return {"asyncio": asyncio.new_event_loop}


@pytest.fixture
def qloop(qapp):
    """For sync UI tests: a qasync loop to drive coroutines with run_until_complete."""
    import qasync

    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        loop.close()
        asyncio.set_event_loop(None)


@pytest.fixture
def workdir(tmp_path):
    """A temp working dir holding the running example's app.ts (no trailing newline)."""
    d = tmp_path / "work"
    d.mkdir()
    (d / "app.ts").write_text("export const value = 1")
    return d


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Never touch the real ~/.claude or app data dirs from a test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # Never the developer's real keyring (Secret Service): tests that want one install a memory backend.
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_MODEL", raising=False)
    yield home
