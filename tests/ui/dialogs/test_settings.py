"""The settings dialog as an AwaitableDialog[AppSettings | None], and its keyring lookups off the Qt thread."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from desktop_agent import config
from desktop_agent.ui.dialogs import settings as settings_dialog
from desktop_agent.ui.dialogs.settings import SettingsDialog



def test_a_slow_keyring_does_not_hold_the_qt_thread(qtbot, monkeypatch):
    """The first keyring lookup took ~0.4 s on the Qt thread; now the dialog opens at once and the key's
    sentence and placeholder fill in when the worker answers."""
    release = threading.Event()
    threads: list[str] = []
    real = settings_dialog.look_up_key_facts

    def slow() -> settings_dialog.KeyFacts:
        threads.append(threading.current_thread().name)
        release.wait(5)
        return real()

    monkeypatch.setattr(settings_dialog, "look_up_key_facts", slow)
    started = time.monotonic()
    dlg = SettingsDialog()
    qtbot.addWidget(dlg)
    dlg.open()
    assert time.monotonic() - started < 1.0 and not dlg.key_facts_known()
    assert dlg.where_label.text() == "" and dlg.key_edit.placeholderText() == ""
    release.set()
    qtbot.waitUntil(dlg.key_facts_known)
    assert threads == ["settings-key-lookup"]
    assert dlg.where_label.text() == config.api_key_location()
    assert dlg.key_edit.placeholderText() == "sk-ant-…"


def test_the_answer_is_the_saved_settings(qtbot, qloop, parent):
    config.store_api_key("sk-test")
    dlg = SettingsDialog(parent)
    qtbot.waitUntil(dlg.key_facts_known)
    saved: list[int] = []
    dlg.saved.connect(lambda: saved.append(1))

    async def scenario() -> config.AppSettings | None:
        task = asyncio.ensure_future(dlg.ask())
        await asyncio.sleep(0.05)
        dlg.theme_combo.setCurrentIndex(dlg.theme_combo.findData("dark"))
        dlg.buttons.accepted.emit()  # Save
        return await asyncio.wait_for(task, 5)

    answer = qloop.run_until_complete(scenario())
    assert isinstance(answer, config.AppSettings) and answer.theme == "dark" and saved == [1]
    assert config.AppSettings.load().theme == "dark"


@pytest.mark.parametrize("how", ["cancel", "tour"])
def test_cancel_or_the_tour_answers_none(qtbot, qloop, parent, how):
    dlg = SettingsDialog(parent, first_run=True)
    tours: list[int] = []
    dlg.tour_requested.connect(lambda: tours.append(1))

    async def scenario() -> config.AppSettings | None:
        task = asyncio.ensure_future(dlg.ask())
        await asyncio.sleep(0.05)
        dlg.tour_button.click() if how == "tour" else dlg.buttons.rejected.emit()
        return await asyncio.wait_for(task, 5)

    assert qloop.run_until_complete(scenario()) is None
    assert tours == ([1] if how == "tour" else [])


def test_keep_sessions_running_is_saved(qtbot, monkeypatch):
    """Settings' "Keep sessions running when the window closes": off by default, saved to settings.json."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert config.AppSettings.load().keep_sessions_running is False
    dlg = SettingsDialog()
    qtbot.addWidget(dlg)
    assert not dlg.keep_running_check.isChecked()
    assert "desktop-agent host --status" in dlg.keep_running_note.text()
    dlg.keep_running_check.setChecked(True)
    dlg._save()
    assert dlg.error_label.isHidden(), dlg.error_label.text()
    assert config.AppSettings.load().keep_sessions_running is True
    again = SettingsDialog()
    qtbot.addWidget(again)
    assert again.keep_running_check.isChecked()
    again.keep_running_check.setChecked(False)
    again._save()
    assert config.AppSettings.load().keep_sessions_running is False
