"""Settings: the model provider (Anthropic, or an OpenAI-compatible server: Ollama, LM Studio, vLLM,
llama.cpp, OpenRouter), its key (stored through ``desktop_agent.config``: keyring or a 0600 file), base URL
and model; the default permission mode, language and theme; where sessions run, and whether they keep running
in the background host when the window closes.

Shown on first run when no Anthropic key is found (and the provider is Anthropic), and later from
Edit ▸ Settings… (Ctrl+,). It never displays a stored key — only where it comes from — and offers the
offline tour to someone without a key. Each provider keeps its own base URL (``base_url`` /
``openai_base_url``) and key (``anthropic_api_key`` / ``openai_api_key``); switching the provider box
swaps what the fields show.

An ``AwaitableDialog[AppSettings | None]``: ``await ask()`` (or ``answer()``) is the saved settings, or None
when it was closed, cancelled or left for the tour; ``saved`` and ``tour_requested`` say the same to Qt.
Where each provider's key comes from (the keyring: ~0.4 s the first time) is looked up on a worker thread:
the dialog waits for it at most ``KEY_LOOKUP_WAIT_S`` (a warm keyring answers in that time, and the dialog
opens complete), else the key sentence and placeholders fill in when it arrives (``key_facts_known()``).
"""

from __future__ import annotations

import os
import shutil
import threading
from typing import TYPE_CHECKING, Literal

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget,
)

from desktop_agent import config
from desktop_agent.client.local import suggested_models
from desktop_agent.ui.dialogs.base import AwaitableDialog

if TYPE_CHECKING:  # imported where it is asked: it brings the permission dialog's modules
    from desktop_agent.ui.dialogs.bypass import BypassDialog

Provider = Literal["anthropic", "openai"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai")
KeyFacts = dict[str, tuple[str, str]]  # provider -> (where its key comes from, that as a sentence)
KEY_LOOKUP_WAIT_S = 0.05  # the longest the Qt thread waits for the key lookup before it opens the dialog


def look_up_key_facts() -> KeyFacts:
    """Where each provider's key comes from (``keyring``, ``credentials``, the variable, ``none``) and the
    sentence Settings shows — keyring lookups: called off the Qt thread."""
    return {"anthropic": (config.find_api_key()[1], config.api_key_location()),
            "openai": (config.find_openai_key()[1], config.openai_key_location())}


class SettingsDialog(AwaitableDialog[config.AppSettings | None]):
    """Edit the app settings. ``saved`` fires after a successful save; ``tour_requested`` for the tour."""

    saved = Signal()
    tour_requested = Signal()
    _facts_arrived = Signal(object)  # KeyFacts, from the worker thread (queued to the Qt thread)

    def __init__(self, parent: QWidget | None = None, *, first_run: bool = False):
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setWindowTitle(self.tr("Welcome to Desktop Agent") if first_run else self.tr("Settings"))
        self._facts: KeyFacts | None = None
        self._looked_up: KeyFacts | None = None  # set by the worker, before ``_lookup_done``
        self._lookup_done = threading.Event()
        self._facts_arrived.connect(self._on_facts)
        threading.Thread(target=self._look_up, name="settings-key-lookup", daemon=True).start()
        self.settings = config.AppSettings.load()
        provider = self.settings.provider if self.settings.provider in PROVIDERS else "anthropic"
        self._provider = provider  # the provider the fields show now
        self._base = {"anthropic": self.settings.base_url or "", "openai": self.settings.openai_base_url or ""}
        self._typed = {"anthropic": "", "openai": ""}  # keys typed and not saved yet, per provider
        self._models = {p: (self.settings.model or "") if p == provider else "" for p in PROVIDERS}

        root = QVBoxLayout(self)
        root.setContentsMargins(16, 16, 16, 16)
        root.setSpacing(8)
        if first_run:
            intro = QLabel(self.tr(
                "<b>Connect a model to get started.</b><br/>Desktop Agent talks to Anthropic's Messages API "
                "(or any compatible endpoint), or to an OpenAI-compatible server such as Ollama or LM Studio. "
                "Your key stays on this computer."))
            intro.setWordWrap(True)
            intro.setTextFormat(Qt.TextFormat.RichText)
            root.addWidget(intro)

        form = QFormLayout()
        form.setSpacing(8)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self.provider_combo = QComboBox()
        self.provider_combo.setObjectName("providerCombo")
        self.provider_combo.setAccessibleName(self.tr("Provider"))
        self.provider_combo.addItem(self.tr("Anthropic"), "anthropic")
        self.provider_combo.addItem(self.tr("OpenAI-compatible (Ollama, LM Studio, vLLM, OpenRouter…)"), "openai")
        self.provider_combo.setCurrentIndex(max(0, self.provider_combo.findData(provider)))
        form.addRow(self.tr("P&rovider"), self.provider_combo)
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setAccessibleName(self.tr("API key"))
        form.addRow(self.tr("&API key"), self.key_edit)
        self.where_label = QLabel()  # keyring, or the 0600 file: says which, with its path
        self.where_label.setObjectName("muted")
        self.where_label.setWordWrap(True)
        self.where_label.setMinimumWidth(400)  # else its row is as tall as the text wrapped at its narrowest
        form.addRow("", self.where_label)
        self.base_url_edit = QLineEdit()
        self.base_url_edit.setAccessibleName(self.tr("Base URL"))
        form.addRow(self.tr("&Base URL"), self.base_url_edit)
        self.model_combo = QComboBox()
        self.model_combo.setEditable(True)
        self.model_combo.setAccessibleName(self.tr("Model"))
        form.addRow(self.tr("&Model"), self.model_combo)
        if self._lookup_done.wait(KEY_LOOKUP_WAIT_S):
            self._facts = self._looked_up
        self._show_provider(provider)
        self.provider_combo.currentIndexChanged.connect(self._on_provider_picked)
        self.mode_combo = QComboBox()
        from desktop_agent.ui.mode_labels import MODES, mode_label

        for mode, label in MODES:
            self.mode_combo.addItem(mode_label(label), mode)
        idx = self.mode_combo.findData(self.settings.default_permission_mode)
        self.mode_combo.setCurrentIndex(max(0, idx))
        self._mode = self.model_mode()  # the last confirmed choice
        self.bypass_box: BypassDialog | None = None
        self.mode_combo.currentIndexChanged.connect(self._on_mode_picked)
        form.addRow(self.tr("Default &permissions"), self.mode_combo)
        self.language_combo = QComboBox()
        self.language_combo.setAccessibleName(self.tr("Language"))
        for code, label in (("system", self.tr("System default")), ("en_US", "English"), ("zh_CN", "简体中文")):
            self.language_combo.addItem(label, code)
        saved = self.settings.ui_language if self.settings.ui_language not in ("", "en") else "system"
        self.language_combo.setCurrentIndex(max(0, self.language_combo.findData(saved)))
        form.addRow(self.tr("&Language"), self.language_combo)
        lang_note = QLabel(self.tr("The language changes at the next start."))
        lang_note.setObjectName("muted")
        form.addRow("", lang_note)
        self.theme_combo = QComboBox()
        self.theme_combo.setAccessibleName(self.tr("Theme"))
        for code, label in (("system", self.tr("System")), ("light", self.tr("Light")), ("dark", self.tr("Dark"))):
            self.theme_combo.addItem(label, code)
        self.theme_combo.setCurrentIndex(max(0, self.theme_combo.findData(self.settings.theme)))
        form.addRow(self.tr("&Theme"), self.theme_combo)
        self.executor_combo = QComboBox()
        self.executor_combo.setObjectName("executorCombo")
        self.executor_combo.setAccessibleName(self.tr("Run sessions"))
        self.executor_combo.addItem(self.tr("in this window (default)"), "inprocess")
        self.executor_combo.addItem(self.tr("in a separate process"), "process")
        self.executor_combo.addItem(self.tr("with Claude Code"), "claude")
        executor = self.settings.executor or "inprocess"
        self.executor_combo.setCurrentIndex(max(0, self.executor_combo.findData(executor)))
        form.addRow(self.tr("R&un sessions"), self.executor_combo)
        self.claude_path_edit = QLineEdit(self.settings.claude_path or "")
        self.claude_path_edit.setObjectName("claudePathEdit")
        self.claude_path_edit.setAccessibleName(self.tr("Claude Code path"))
        found = shutil.which("claude")
        self.claude_path_edit.setPlaceholderText(found or self.tr("claude is not on PATH: enter its path"))
        form.addRow(self.tr("Claude &Code path"), self.claude_path_edit)
        self.executor_note = QLabel(self.tr("A separate process keeps a crash or a runaway tool away from the window; "
                                            "with Claude Code, its tools run and this window reviews each change. "
                                            "Applies to the next session."))
        self.executor_note.setObjectName("muted")
        self.executor_note.setWordWrap(True)
        form.addRow("", self.executor_note)
        self.executor_combo.currentIndexChanged.connect(self._show_executor)
        self._show_executor()
        self.keep_running_check = QCheckBox(self.tr("&Keep sessions running when the window closes"))
        self.keep_running_check.setObjectName("keepRunningCheck")
        self.keep_running_check.setChecked(bool(self.settings.keep_sessions_running))
        form.addRow("", self.keep_running_check)
        self.keep_running_note = QLabel(self.tr(
            "Sessions run in the background host (desktop-agent host), started when needed; closing or losing the "
            "window leaves them running, and the window shows them again with their questions when it reopens. "
            "See it with desktop-agent host --status; stop it with desktop-agent host --stop. "
            "Applies to the next session."))
        self.keep_running_note.setObjectName("muted")
        self.keep_running_note.setWordWrap(True)
        form.addRow("", self.keep_running_note)
        from desktop_agent.ui.dialogs.phone import PhoneSection

        self.phone = PhoneSection()  # the window gives it the running page (``set_access``) and starts or stops it
        form.addRow("", self.phone)
        root.addLayout(form)

        self.error_label = QLabel()
        self.error_label.setObjectName("errorText")
        self.error_label.setVisible(False)
        root.addWidget(self.error_label)

        row = QHBoxLayout()
        row.setSpacing(8)
        self.tour_button = QPushButton(self.tr("Try the offline &tour"))
        self.tour_button.setToolTip(
            self.tr("A guided demo on a sample project with a scripted model — no key needed"))
        self.tour_button.clicked.connect(self._tour)
        row.addWidget(self.tour_button)
        row.addStretch(1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self._save)
        self.buttons.rejected.connect(self.reject)
        row.addWidget(self.buttons)
        root.addLayout(row)
        self.setMinimumWidth(560)
        self.resize(600, self.height())
        self._fit_height()

    def _fit_height(self) -> None:
        """The height for this width: the wrapped key sentence's sizeHint is for a narrower label."""
        layout = self.layout()
        if layout is None:
            return
        width = self.width()
        self.resize(width, max(self.minimumSizeHint().height(), layout.totalHeightForWidth(width), self.height()
                               if self.isVisible() else 0))

    def closed_value(self) -> config.AppSettings | None:
        return None  # closed, Cancel, or the tour: nothing saved

    def _tour(self) -> None:
        self.tour_requested.emit()
        self.reject()

    def _save(self) -> None:
        self._stash()
        provider = self.provider()
        key = self._typed[provider].strip()
        base = self._base[provider].strip()
        model = self._models[provider].strip()
        problem = ""
        if provider == "anthropic" and not key and self._key_source("anthropic") == "none":
            problem = self.tr("Enter an API key, or try the offline tour.")
        elif provider == "openai" and not base and not os.environ.get("OPENAI_BASE_URL"):
            problem = self.tr("Enter the server's base URL (for example http://localhost:11434/v1).")
        elif provider == "openai" and not model:
            problem = self.tr("Enter the name of a model the server serves.")
        executor = str(self.executor_combo.currentData() or "inprocess")
        claude_path = self.claude_path_edit.text().strip()
        if not problem and executor == "claude" and not (claude_path or shutil.which("claude")):
            problem = self.tr("Claude Code (claude) is not on PATH: enter the path of its binary.")
        elif not problem and executor == "claude" and claude_path and not os.access(claude_path, os.X_OK):
            problem = self.tr("Not an executable file: {0}").format(claude_path)
        if problem:
            self.error_label.setText(problem)
            self.error_label.setVisible(True)
            (self.claude_path_edit if "Claude" in problem or "executable" in problem
             else self.base_url_edit if "URL" in problem else self.model_combo if provider == "openai" and base
             else self.key_edit).setFocus()
            return
        try:
            for name, typed in self._typed.items():
                if typed.strip():
                    (config.store_api_key if name == "anthropic" else config.store_openai_key)(typed.strip())
            self.settings.provider = provider
            self.settings.base_url = self._base["anthropic"].strip() or None
            self.settings.openai_base_url = self._base["openai"].strip() or None
            self.settings.model = model or None
            self.settings.default_permission_mode = self.model_mode()
            self.settings.ui_language = str(self.language_combo.currentData() or "system")
            theme_changed = self.settings.theme != self.theme_combo.currentData()
            self.settings.theme = str(self.theme_combo.currentData() or "system")
            self.settings.executor = executor
            self.settings.claude_path = claude_path or None
            self.settings.keep_sessions_running = self.keep_running_check.isChecked()
            self.settings.answer_from_phone = self.phone.switch.isChecked()  # as the switch saved it already
            self.settings.save()
        except OSError as exc:
            self.error_label.setText(self.tr("Could not save the settings: {0}").format(exc))
            self.error_label.setVisible(True)
            return
        if theme_changed:
            from PySide6.QtWidgets import QApplication

            from desktop_agent.ui.style import apply_theme

            app = QApplication.instance()
            if isinstance(app, QApplication):
                apply_theme(app, self.settings.theme)  # at once
        self.saved.emit()
        self._resolve(self.settings, True)

    def _show_executor(self, _index: int = 0) -> None:
        self.claude_path_edit.setEnabled(self.executor_combo.currentData() == "claude")

    # ----- provider ---------------------------------------------------------------------------
    def provider(self) -> Provider:
        return "openai" if self.provider_combo.currentData() == "openai" else "anthropic"

    # ----- where the keys come from (looked up off the Qt thread) -------------------------------------
    def _look_up(self) -> None:
        facts = look_up_key_facts()
        self._looked_up = facts
        self._lookup_done.set()
        try:
            self._facts_arrived.emit(facts)
        except RuntimeError:  # the dialog was deleted meanwhile
            pass

    def _on_facts(self, facts: KeyFacts) -> None:
        if self._facts is None:
            self._facts = facts
            self._show_key_facts()
            self._fit_height()

    def key_facts_known(self) -> bool:
        return self._facts is not None

    def _key_facts(self, provider: str) -> tuple[str, str] | None:
        return None if self._facts is None else self._facts[provider]

    def _key_source(self, provider: str) -> str:
        """Where ``provider``'s key comes from; looked up here only when Save comes before the worker's answer."""
        if self._facts is None:
            self._facts = look_up_key_facts()
            self._show_key_facts()
        return self._facts[provider][0]

    def _show_key_facts(self) -> None:
        """The key's placeholder and sentence for the provider shown (blank until the lookup answers)."""
        provider = self._provider
        facts = self._key_facts(provider)
        source, where = facts if facts is not None else ("", "")
        if provider == "openai":
            placeholders = {"OPENAI_API_KEY": self.tr("set by OPENAI_API_KEY in the environment"),
                            "keyring": self.tr("stored in the system keyring — type to replace"),
                            "credentials": self.tr("stored in a private file — type to replace")}
            fallback = self.tr("optional: local servers need none")
        else:
            placeholders = {"ANTHROPIC_API_KEY": self.tr("set by ANTHROPIC_API_KEY in the environment"),
                            "keyring": self.tr("stored in the system keyring — type to replace"),
                            "credentials": self.tr("stored in a private file — type to replace")}
            fallback = "sk-ant-…"
        self.key_edit.setPlaceholderText(placeholders.get(source, fallback) if facts is not None else "")
        self.where_label.setText(where)

    def _stash(self) -> None:
        """Keep what the fields hold for the provider they show."""
        p = self._provider
        self._typed[p] = self.key_edit.text()
        self._base[p] = self.base_url_edit.text()
        self._models[p] = self.model_combo.currentText()

    def _on_provider_picked(self, _index: int) -> None:
        self._stash()
        self.error_label.setVisible(False)
        self._show_provider(self.provider())

    def _show_provider(self, provider: Provider) -> None:
        """The key, base URL and model fields of ``provider``, with its placeholders and key sentence."""
        self._provider = provider
        self._show_key_facts()
        if provider == "openai":
            self.base_url_edit.setPlaceholderText("http://localhost:11434/v1")
            models: list[str] = []
        else:
            self.base_url_edit.setPlaceholderText("https://api.anthropic.com")
            models = suggested_models()
        self.key_edit.setText(self._typed[provider])
        self.base_url_edit.setText(self._base[provider])
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        self.model_combo.addItems(models)
        self.model_combo.setCurrentText(self._models[provider] or (models[0] if models else ""))
        line = self.model_combo.lineEdit()  # the combo is editable: it has one
        if line is not None:
            line.setPlaceholderText(
                self.tr("the server's model name, e.g. qwen2.5-coder:7b") if provider == "openai" else "")
        self.model_combo.blockSignals(False)

    def _on_mode_picked(self, _index: int) -> None:
        """Bypass as the default asks first (the same question as the window's); Cancel restores the
        previous choice."""
        from desktop_agent.ui.dialogs.bypass import confirm_bypass
        from desktop_agent.ui.modes import BYPASS

        mode = self.model_mode()
        if mode != BYPASS or self._mode == BYPASS:
            self._mode = mode
            return
        self._show_mode(self._mode)

        def done(yes: bool) -> None:
            self.bypass_box = None
            if yes:
                self._mode = BYPASS
                self._show_mode(BYPASS)

        self.bypass_box = confirm_bypass(self, done)

    def _show_mode(self, mode: str) -> None:
        self.mode_combo.blockSignals(True)
        self.mode_combo.setCurrentIndex(max(0, self.mode_combo.findData(mode)))
        self.mode_combo.blockSignals(False)

    def model_mode(self) -> str:
        return str(self.mode_combo.currentData() or "default")
