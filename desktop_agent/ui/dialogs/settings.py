"""Settings: the model provider (Anthropic, or an OpenAI-compatible server: Ollama, LM Studio, vLLM,
llama.cpp, OpenRouter), its key (stored through ``desktop_agent.config``: keyring or a 0600 file), base URL
and model; the default permission mode, language and theme.

Shown on first run when no Anthropic key is found (and the provider is Anthropic), and later from
Edit ▸ Settings… (Ctrl+,). It never displays a stored key — only where it comes from — and offers the
offline tour to someone without a key. Each provider keeps its own base URL (``base_url`` /
``openai_base_url``) and key (``anthropic_api_key`` / ``openai_api_key``); switching the provider box
swaps what the fields show. Opened with ``open()``; the result arrives through ``finished``/``tour_requested``.
"""

from __future__ import annotations

import os
import shutil

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox, QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout,
    QWidget,
)

from desktop_agent import config
from desktop_agent.model.client import SUGGESTED_MODELS as MODELS

PROVIDERS = ("anthropic", "openai")


class SettingsDialog(QDialog):
    """Edit the app settings. ``saved`` fires after a successful save; ``tour_requested`` for the tour."""

    saved = Signal()
    tour_requested = Signal()

    def __init__(self, parent: QWidget | None = None, *, first_run: bool = False):
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setWindowTitle(self.tr("Welcome to Desktop Agent") if first_run else self.tr("Settings"))
        self.setModal(True)
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
        self._show_provider(provider)
        self.provider_combo.currentIndexChanged.connect(self._on_provider_picked)
        self.mode_combo = QComboBox()
        from desktop_agent.ui.mode_labels import MODES, mode_label

        for mode, label in MODES:
            self.mode_combo.addItem(mode_label(label), mode)
        idx = self.mode_combo.findData(self.settings.default_permission_mode)
        self.mode_combo.setCurrentIndex(max(0, idx))
        self._mode = self.model_mode()  # the last confirmed choice
        self.bypass_box = None
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
        executor = str(getattr(self.settings, "executor", "inprocess") or "inprocess")
        self.executor_combo.setCurrentIndex(max(0, self.executor_combo.findData(executor)))
        form.addRow(self.tr("R&un sessions"), self.executor_combo)
        self.claude_path_edit = QLineEdit(str(getattr(self.settings, "claude_path", "") or ""))
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
        root.addLayout(form)

        self.error_label = QLabel()
        self.error_label.setObjectName("errorText")
        self.error_label.setVisible(False)
        root.addWidget(self.error_label)

        row = QHBoxLayout()
        row.setSpacing(8)
        self.tour_button = QPushButton(self.tr("Try the offline &tour"))
        self.tour_button.setToolTip(self.tr("A guided demo on a sample project with a scripted model — no key needed"))
        self.tour_button.clicked.connect(self._tour)
        row.addWidget(self.tour_button)
        row.addStretch(1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self._save)
        self.buttons.rejected.connect(self.reject)
        row.addWidget(self.buttons)
        root.addLayout(row)
        self.setMinimumWidth(560)
        # the height for this width: the wrapped key sentence's sizeHint is for a narrower label
        self.resize(600, max(self.minimumSizeHint().height(), root.totalHeightForWidth(600)))

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
            self.settings.save()
        except OSError as exc:
            self.error_label.setText(self.tr("Could not save the settings: {0}").format(exc))
            self.error_label.setVisible(True)
            return
        if theme_changed:
            from PySide6.QtWidgets import QApplication

            from desktop_agent.ui.style import apply_theme

            app = QApplication.instance()
            if app is not None:
                apply_theme(app, self.settings.theme)  # at once
        self.saved.emit()
        self.accept()

    def _show_executor(self, _index: int = 0) -> None:
        self.claude_path_edit.setEnabled(self.executor_combo.currentData() == "claude")

    # ----- provider ---------------------------------------------------------------------------
    def provider(self) -> str:
        return str(self.provider_combo.currentData() or "anthropic")

    @staticmethod
    def _key_source(provider: str) -> str:
        return (config.find_api_key() if provider == "anthropic" else config.find_openai_key())[1]

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

    def _show_provider(self, provider: str) -> None:
        """The key, base URL and model fields of ``provider``, with its placeholders and key sentence."""
        self._provider = provider
        source = self._key_source(provider)
        if provider == "openai":
            placeholders = {"OPENAI_API_KEY": self.tr("set by OPENAI_API_KEY in the environment"),
                            "keyring": self.tr("stored in the system keyring — type to replace"),
                            "credentials": self.tr("stored in a private file — type to replace")}
            self.key_edit.setPlaceholderText(placeholders.get(source, self.tr("optional: local servers need none")))
            self.where_label.setText(config.openai_key_location())
            self.base_url_edit.setPlaceholderText("http://localhost:11434/v1")
            models: list[str] = []
        else:
            placeholders = {"ANTHROPIC_API_KEY": self.tr("set by ANTHROPIC_API_KEY in the environment"),
                            "keyring": self.tr("stored in the system keyring — type to replace"),
                            "credentials": self.tr("stored in a private file — type to replace")}
            self.key_edit.setPlaceholderText(placeholders.get(source, "sk-ant-…"))
            self.where_label.setText(config.api_key_location())
            self.base_url_edit.setPlaceholderText("https://api.anthropic.com")
            models = list(MODELS)
        self.key_edit.setText(self._typed[provider])
        self.base_url_edit.setText(self._base[provider])
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        self.model_combo.addItems(models)
        self.model_combo.setCurrentText(self._models[provider] or (models[0] if models else ""))
        self.model_combo.lineEdit().setPlaceholderText(
            self.tr("the server's model name, e.g. qwen2.5-coder:7b") if provider == "openai" else "")
        self.model_combo.blockSignals(False)

    def _on_mode_picked(self, _index: int) -> None:
        """Bypass as the default asks first (the same question as the window's); Cancel restores the
        previous choice."""
        from desktop_agent.ui.mode_labels import confirm_bypass
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
