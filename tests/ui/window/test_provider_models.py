"""The toolbar's model box lists the provider's models (issue 28 part 2): for an OpenAI-compatible provider what the
server's ``GET /v1/models`` answers — asked off the Qt thread, the window painting meanwhile — never Claude's names;
a name that is not listed can still be typed and is the model of the next request. A server that cannot list them
leaves the box empty and editable, and says why in its tooltip.

The real window, engine and AnthropicClient (OpenAI transport) against the fake OpenAI server.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from PySide6.QtCore import Qt

from tests.fakes.anthropic_server import reply, text
from tests.fakes.openai_server import FakeOpenAI
from tests.ui.flow import open_and_send, wait_for


@pytest.fixture
def openai_server(monkeypatch):
    with FakeOpenAI(api_key="sk-local", models=["qwen2.5-coder:7b", "llama3.1:8b", "deepseek-r1:14b"]) as server:
        monkeypatch.setenv("DESKTOP_AGENT_PROVIDER", "openai")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
        yield server


def _items(combo):
    return [combo.itemText(i) for i in range(combo.count())]


def test_model_box_lists_the_servers_models_and_keeps_free_text(qtbot, qloop, openai_server, make_window, workdir):
    from desktop_agent.model.anthropic_client import AnthropicClient

    openai_server.models_delay = 0.3  # a slow server: the window keeps painting meanwhile
    openai_server.script([reply(text("hi")), reply(text("again"))])
    win = make_window(with_client=False)
    win.client_factory = lambda: AnthropicClient("sk-local", openai_server.base_url, transport="openai")
    combo = win.toolbar.model_combo
    ticks: list[float] = []

    async def scenario():
        assert await win.folders.open_folder(str(workdir))
        assert threading.current_thread() is threading.main_thread()
        start = asyncio.get_event_loop().time()
        while not openai_server.model_listings or win.toolbar.models_task is None or not win.toolbar.models_task.done():
            ticks.append(asyncio.get_event_loop().time() - start)
            await asyncio.sleep(0.02)
            assert asyncio.get_event_loop().time() - start < 10, "the model list never came"
        assert _items(combo) == ["deepseek-r1:14b", "llama3.1:8b", "qwen2.5-coder:7b"]
        assert not any(i.startswith("claude") for i in _items(combo))
        assert "3 models from the server" in combo.toolTip()
        listing = openai_server.model_listings[0]
        assert listing.headers["authorization"] == "Bearer sk-local"
        # pick one from the list, then type one the server does not list
        combo.setCurrentIndex(1)
        combo.activated.emit(1)
        assert win.controller.session.model == "llama3.1:8b"
        win.prompt.setFocus()
        qtbot.keyClicks(win.prompt, "hello")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 10)
        combo.lineEdit().selectAll()
        qtbot.keyClicks(combo.lineEdit(), "my-finetune:latest")
        qtbot.keyClick(combo.lineEdit(), Qt.Key.Key_Return)
        assert win.controller.session.model == "my-finetune:latest"
        win.prompt.setFocus()
        qtbot.keyClicks(win.prompt, "again")
        qtbot.keyClick(win.prompt, Qt.Key.Key_Return)
        await asyncio.wait_for(win.controller._task, 10)

    qloop.run_until_complete(scenario())
    openai_server.assert_done()
    assert len(ticks) >= 5, "the Qt thread waited for the listing"
    assert [r.body["model"] for r in openai_server.requests] == ["llama3.1:8b", "my-finetune:latest"]


def test_a_server_that_cannot_list_leaves_the_box_editable(qtbot, qloop, monkeypatch, make_window, workdir):
    with FakeOpenAI(api_key="sk-right") as server:
        monkeypatch.setenv("DESKTOP_AGENT_PROVIDER", "openai")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
        win = make_window(with_client=False)

        async def scenario():
            task = win.toolbar.refresh_models()
            assert task is not None
            await asyncio.wait_for(task, 10)

        qloop.run_until_complete(scenario())
        assert server.model_listings, "the server was not asked"
    combo = win.toolbar.model_combo
    assert _items(combo) == [] and combo.isEditable()
    assert "did not list its models" in combo.toolTip() and "401" in combo.toolTip()


def test_anthropic_provider_keeps_claudes_names(qtbot, qloop, monkeypatch, make_window, workdir):
    monkeypatch.setenv("DESKTOP_AGENT_PROVIDER", "anthropic")
    win = make_window()

    async def scenario():
        await asyncio.wait_for(win.toolbar.refresh_models(), 10)

    qloop.run_until_complete(scenario())
    assert _items(win.toolbar.model_combo) and all(i.startswith("claude") for i in _items(win.toolbar.model_combo))
