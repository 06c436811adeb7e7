"""Settings: API key (stored through ``desktop_agent.config``: keyring or a 0600 file), base URL, model.

Shown on first run when no API key is found, and later from Edit ▸ Settings… (Ctrl+,). It never
displays a stored key — only where it comes from — and offers the offline tour to someone without
a key. Opened with ``open()``; the result arrives through ``finished``/``tour_requested``.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox, QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout,
    QWidget,
)

from desktop_agent import config
from desktop_agent.model.client import SUGGESTED_MODELS as MODELS


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
        key, source = config.find_api_key()
        self._key_source = source

        root = QVBoxLayout(self)
        root.setContentsMargins(16, 16, 16, 16)
        root.setSpacing(8)
        if first_run:
            intro = QLabel(self.tr(
                "<b>Connect a model to get started.</b><br/>Desktop Agent talks to Anthropic's Messages API "
                "(or any compatible endpoint). Your key stays on this computer."))
            intro.setWordWrap(True)
            intro.setTextFormat(Qt.TextFormat.RichText)
            root.addWidget(intro)

        form = QFormLayout()
        form.setSpacing(8)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setAccessibleName(self.tr("API key"))
        self.key_edit.setPlaceholderText(
            {"ANTHROPIC_API_KEY": self.tr("set by ANTHROPIC_API_KEY in the environment"),
             "keyring": self.tr("stored in the system keyring — type to replace"),
             "credentials": self.tr("stored in a private file — type to replace")}.get(source, "sk-ant-…"))
        form.addRow(self.tr("&API key"), self.key_edit)
        where = QLabel(config.api_key_location())  # keyring, or the 0600 file: says which, with its path
        where.setObjectName("muted")
        where.setWordWrap(True)
        form.addRow("", where)
        self.base_url_edit = QLineEdit(self.settings.base_url or "")
        self.base_url_edit.setPlaceholderText("https://api.anthropic.com")
        self.base_url_edit.setAccessibleName(self.tr("Base URL"))
        form.addRow(self.tr("&Base URL"), self.base_url_edit)
        self.model_combo = QComboBox()
        self.model_combo.setEditable(True)
        self.model_combo.addItems(MODELS)
        self.model_combo.setCurrentText(self.settings.model or MODELS[0])
        self.model_combo.setAccessibleName(self.tr("Model"))
        form.addRow(self.tr("&Model"), self.model_combo)
        self.mode_combo = QComboBox()
        from desktop_agent.ui.main_window import MODES, mode_label

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
        self.resize(560, self.sizeHint().height())

    def _tour(self) -> None:
        self.tour_requested.emit()
        self.reject()

    def _save(self) -> None:
        key = self.key_edit.text().strip()
        if not key and self._key_source == "none":
            self.error_label.setText(self.tr("Enter an API key, or try the offline tour."))
            self.error_label.setVisible(True)
            self.key_edit.setFocus()
            return
        try:
            if key:
                config.store_api_key(key)
            self.settings.base_url = self.base_url_edit.text().strip() or None
            self.settings.model = self.model_combo.currentText().strip() or None
            self.settings.default_permission_mode = self.model_mode()
            self.settings.ui_language = str(self.language_combo.currentData() or "system")
            theme_changed = self.settings.theme != self.theme_combo.currentData()
            self.settings.theme = str(self.theme_combo.currentData() or "system")
            self.settings.save()
        except OSError as exc:
            self.error_label.setText(self.tr("Could not save the settings: {0}").format(exc))
            self.error_label.setVisible(True)
            return
        if theme_changed:
            from PySide6.QtWidgets import QApplication

            from desktop_agent.ui.main import apply_theme

            app = QApplication.instance()
            if app is not None:
                apply_theme(app, self.settings.theme)  # at once
        self.saved.emit()
        self.accept()

    def _on_mode_picked(self, _index: int) -> None:
        """Bypass as the default asks first (the same question as the window's); Cancel restores the
        previous choice."""
        from desktop_agent.ui.main_window import BYPASS, confirm_bypass

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
