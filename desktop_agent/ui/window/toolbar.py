"""The toolbar — permission mode (with the Bypass and Don't ask badges), model, the tour's label, Stop — and what
its mode and model boxes do: every mode change goes through ``request_mode`` (bypassPermissions only after its
focus-safe question; until the answer the old mode stays in force and on screen). The cycle is ``modes.next_mode``
(never bypass nor dontAsk).

``WindowToolbar`` is a part of ``MainWindow`` (``window.toolbar``): it owns the bar (``bar``) and its widgets, the
provider's model list being read and the Bypass question while it is open; the mode in force
(``window.permission_mode``) and the model shown stay the window's. It reaches the window only through ``window``,
typed as ``host_protocol.WindowHost``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QSize, Qt
from PySide6.QtWidgets import QComboBox, QLabel, QSizePolicy, QToolBar, QToolButton, QWidget

from desktop_agent.client.local import suggested_models  # the model names, without the engine
from desktop_agent.ui.dialogs.bypass import confirm_bypass
from desktop_agent.ui.mode_labels import MODES, bypass_badge_text, dont_ask_badge_text, mode_label
from desktop_agent.ui.modes import BYPASS, DONT_ASK, next_mode

if TYPE_CHECKING:
    from desktop_agent.ui.dialogs.bypass import BypassDialog
    from desktop_agent.ui.highlight import DiffColors
    from desktop_agent.ui.window.host_protocol import WindowHost

translate = QCoreApplication.translate
log = logging.getLogger(__name__)


class WindowToolbar:
    """The toolbar's widgets and the mode/model actions of one window."""

    def __init__(self, window: WindowHost) -> None:
        self.window = window
        self.bypass_box: BypassDialog | None = None  # the Bypass question while it is open
        self.bar = QToolBar(translate("MainWindow", "Main toolbar"))
        self.bar.setObjectName("mainToolbar")
        self.bar.setMovable(False)
        self.bar.setIconSize(QSize(16, 16))
        self.window.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.bar)
        self.mode_combo = QComboBox()
        self.mode_combo.setObjectName("modeCombo")
        self.mode_combo.setAccessibleName(translate("MainWindow", "Permission mode"))
        self.mode_combo.setToolTip(translate("MainWindow", "Permission mode (Ctrl+Shift+M cycles)"))
        for mode, label in MODES:
            self.mode_combo.addItem(mode_label(label), mode)
        self._add_captioned(translate("MainWindow", "Mode"), self.mode_combo, left=8)
        self.bypass_badge = QLabel(bypass_badge_text())
        self.bypass_badge.setObjectName("bypassBadge")
        self.bypass_badge.setAccessibleName(bypass_badge_text())
        self.bypass_badge.setToolTip(translate("MainWindow", "Bypass permissions is on: tools run without asking. "
                                             "Pick another mode to turn it off."))
        self.bypass_action = self.bar.addWidget(self.bypass_badge)
        self.bypass_action.setVisible(False)
        self.dont_ask_badge = QLabel(dont_ask_badge_text())
        self.dont_ask_badge.setObjectName("dontAskBadge")
        self.dont_ask_badge.setAccessibleName(dont_ask_badge_text())
        self.dont_ask_badge.setToolTip(translate(
            "MainWindow", "Don't ask is on: every tool that no rule allows is denied without asking — edits too. "
            "Pick another mode to turn it off."))
        self.dont_ask_action = self.bar.addWidget(self.dont_ask_badge)
        self.dont_ask_action.setVisible(False)
        self.model_combo = QComboBox()
        self.model_combo.setObjectName("modelCombo")
        self.model_combo.setEditable(True)
        self.model_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.model_combo.setMinimumContentsLength(18)
        self.model_combo.setAccessibleName(translate("MainWindow", "Model"))
        self.model_combo.setToolTip(
            translate("MainWindow", "The model of this session's next requests (the default is in Settings)"))
        self.model_combo.addItems(suggested_models())
        self.model_combo.setEnabled(False)  # until a session is open
        self.model_combo.activated.connect(lambda _i: self._on_model_chosen())
        model_edit = self.model_combo.lineEdit()  # the box is editable: it has a line edit
        if model_edit is not None:
            model_edit.editingFinished.connect(self._on_model_chosen)
        self._add_captioned(translate("MainWindow", "M&odel"), self.model_combo, left=16)
        self.models_task: asyncio.Task | None = None  # the provider's model list being read
        self.models_provider = "anthropic"  # whose names the box lists
        # e.g. after Settings changed it
        self.window.controller.session_changed.connect(lambda _s: self.refresh_models())
        self.tour_label = QLabel(translate("MainWindow", "Tour · scripted model, sample project"))
        self.tour_label.setObjectName("tourLabel")
        self.tour_label.setVisible(False)
        self.tour_action = self.bar.addWidget(self.tour_label)
        self.tour_action.setVisible(self.window.demo)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.bar.addWidget(spacer)
        self.stop_button = QToolButton()
        self.stop_button.setObjectName("stopButton")
        self.stop_button.setText(translate("MainWindow", "Stop  Esc"))
        self.stop_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.stop_button.setAccessibleName(translate("MainWindow", "Stop the agent"))
        self.stop_button.setEnabled(False)
        self.bar.addWidget(self.stop_button)

    def cycle_mode(self) -> None:
        """Ctrl+Shift+M: the next mode, never bypassPermissions (only through its question) nor dontAsk (menu and mode
        box only)."""
        self.request_mode(next_mode(self.window.permission_mode))

    def request_mode(self, mode: str) -> None:
        """Switch the permission mode from any control. bypassPermissions asks first; until the
        answer (and after a Cancel) the old mode stays in force and on screen."""
        if mode == self.window.permission_mode:
            self.select_mode(mode)
            return
        if mode != BYPASS:
            self.apply_mode(mode)
            return
        self.select_mode(self.window.permission_mode)  # the box shows the old mode while the question is open
        if self.bypass_box is not None and self.bypass_box.isVisible():
            return

        def done(yes: bool) -> None:
            self.bypass_box = None
            if yes:
                self.apply_mode(BYPASS)
            else:
                self.window.status.showMessage(translate("MainWindow", "Bypass permissions stays off."), 3000)

        self.bypass_box = confirm_bypass(self.window, done)

    def apply_mode(self, mode: str) -> None:
        try:
            self.window.controller.set_permission_mode(mode)
        except Exception as exc:
            self.window.status.showMessage(str(exc), 4000)
            self.select_mode(self.window.permission_mode)
            return
        session = self.window.controller.session
        actual = (session.permission_mode or mode) if session is not None else mode
        if actual != mode:  # e.g. bypass disabled by the settings (disableBypassPermissionsMode)
            self.window.status.showMessage(
                translate("MainWindow", "Permission mode {0} is not available here.").format(mode), 5000)
        self.window.permission_mode = actual
        self.select_mode(actual)
        self.window.status.showMessage(
            translate("MainWindow", "Permission mode: {0}").format(self.mode_combo.currentText()), 3000)

    def select_mode(self, mode: str) -> None:
        idx = self.mode_combo.findData(mode)
        if idx >= 0 and idx != self.mode_combo.currentIndex():
            self.mode_combo.blockSignals(True)
            self.mode_combo.setCurrentIndex(idx)
            self.mode_combo.blockSignals(False)
        for act in self.window.mode_group.actions():
            act.setChecked(act.data() == mode)
        bypass = mode == BYPASS and self.window.permission_mode == BYPASS
        dont_ask = mode == DONT_ASK and self.window.permission_mode == DONT_ASK
        if self.bypass_action.isVisible() != bypass or self.dont_ask_action.isVisible() != dont_ask:
            self.bypass_action.setVisible(bypass)
            self.dont_ask_action.setVisible(dont_ask)
            self.window.banners.update_title()

    def style_badges(self, c: DiffColors) -> None:
        """The badges in the theme's colours: Bypass on the error red, Don't ask outlined in it."""
        self.bypass_badge.setStyleSheet(
            f"QLabel#bypassBadge {{ color: #ffffff; background: {c.error}; border-radius: 4px; "
            f"padding: 2px 8px; margin-left: 8px; font-weight: 600; }}")
        self.dont_ask_badge.setStyleSheet(
            f"QLabel#dontAskBadge {{ color: {c.error}; border: 1px solid {c.error}; border-radius: 4px; "
            f"padding: 2px 8px; margin-left: 8px; font-weight: 600; }}")

    def _add_captioned(self, caption: str, combo: QComboBox, left: int) -> None:
        """A muted caption (the combo's buddy, for its mnemonic) and the combo, on the toolbar."""
        label = QLabel(caption)
        label.setObjectName("muted")
        label.setContentsMargins(left, 0, 4, 0)
        label.setBuddy(combo)
        self.bar.addWidget(label)
        self.bar.addWidget(combo)

    def fit(self, narrow: bool) -> None:
        """A narrow window (900 px) shortens the tour's label, so Stop stays on the toolbar (not in its overflow)."""
        self.tour_label.setText(translate("MainWindow", "Tour") if narrow
                                else translate("MainWindow", "Tour · scripted model, sample project"))
        self.tour_label.setToolTip(translate("MainWindow", "Tour · scripted model, sample project"))

    def refresh_models(self) -> asyncio.Task | None:
        """List the configured provider's models in the box: Claude's names for Anthropic, what an OpenAI-compatible
        server's ``GET /v1/models`` answers (on a worker thread, via ``client``) — the box stays editable."""
        try:
            if not asyncio.get_event_loop().is_running():
                return None
        except RuntimeError:
            return None
        if self.models_task is not None and not self.models_task.done():
            self.models_task.cancel()
        self.models_task = asyncio.ensure_future(self._fill_models())
        return self.models_task

    async def _fill_models(self) -> None:
        try:
            listing = await self.window.controller.client.provider_models()
        except Exception:
            log.exception("could not list the provider's models")
            return
        self.models_provider = listing.provider
        shown = self.model_combo.currentText()
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        self.model_combo.addItems(listing.models)
        self.model_combo.setCurrentText(shown)
        self.model_combo.blockSignals(False)
        if listing.error:
            self.model_combo.setToolTip(translate(
                "MainWindow", "The server did not list its models ({0}); type a model name").format(listing.error))
        elif listing.provider == "openai":
            self.model_combo.setToolTip(translate(
                "MainWindow", "{0} models from the server; or type any model name").format(len(listing.models)))
        else:
            self.model_combo.setToolTip(
                translate("MainWindow", "The model of this session's next requests (the default is in Settings)"))
        model_edit = self.model_combo.lineEdit()
        if model_edit is not None:
            model_edit.setPlaceholderText(translate("MainWindow", "model name"))

    def show_model(self, name: str, enabled: bool = True) -> None:
        """Put ``name`` in the model box without switching anything."""
        self.window._model_name = name
        self.model_combo.blockSignals(True)
        self.model_combo.setCurrentText(name)
        self.model_combo.blockSignals(False)
        self.model_combo.setEnabled(enabled)

    def _on_model_chosen(self) -> None:
        name = self.model_combo.currentText().strip()
        if not name:
            self.show_model(self.window._model_name, self.model_combo.isEnabled())
            return
        if name == self.window._model_name or self.window.controller.session is None:
            return
        self.window._model_name = name
        self.window.controller.set_model(name)
        self.window.status.showMessage(translate("MainWindow", "Model for this session: {0}").format(name), 4000)

    def on_mode_changed(self, index: int) -> None:
        mode = self.mode_combo.itemData(index)
        if mode:
            self.request_mode(str(mode))

