"""Settings → "Answer from my phone": the pairing QR, the paired devices with Revoke, and the desktop's confirmation
of each new device (issue 26).

``RemoteAccess`` is what these widgets need of the host's phone page (``host.remote.server.RemoteServer`` has it
structurally; the window never imports the host): a new single-use pairing URL, its QR as PNG, the devices, and
revoke. ``PhoneSection`` is the Settings section: the switch (off by default; ``enabled_changed`` tells the window,
which starts or stops the page), "Show pairing code" (the QR, valid 5 minutes, and the URL), the devices with when
each was last used and a Revoke button.

``PairingConfirmDialog``: "Pair <device>?" with the verification code the phone shows too (KDE Connect's pairing):
a ``GuardedConfirm`` (``ui.dialogs.confirm``: the permission dialog's focus-safe rules: no default button,
Enter and Space never pair, keys typed before it is ready go nowhere, only a click on Pair after the delay answers
True; Escape, Refuse and closing it answer False). ``confirm_pairing`` is the ``confirm`` callback the window gives
the server.
"""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable, Protocol

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QCheckBox, QGridLayout, QLabel, QPushButton, QStyle, QVBoxLayout, QWidget,
)

from desktop_agent.ui.dialogs.confirm import GuardedConfirm

translate = QCoreApplication.translate  # literal strings in the "Phone" context, for lupdate


class RemoteAccess(Protocol):
    def pairing_url(self) -> str: ...

    def pairing_qr_png(self, url: str) -> bytes: ...

    def list_devices(self) -> list[dict[str, object]]: ...

    def revoke(self, device_id: str) -> Awaitable[bool]: ...


class PairingPromptLike(Protocol):
    device_name: str
    verification: str
    address: str


def _ago(then: float, now: float | None = None) -> str:
    seconds = max(0, int((now or time.time()) - then))
    if seconds < 60:
        return translate("Phone", "just now")
    if seconds < 3600:
        return translate("Phone", "{0} min ago").format(seconds // 60)
    if seconds < 86400:
        return translate("Phone", "{0} h ago").format(seconds // 3600)
    return translate("Phone", "{0} days ago").format(seconds // 86400)


class PairingConfirmDialog(GuardedConfirm):
    def __init__(self, device_name: str, verification: str, address: str, parent: QWidget | None = None):
        code = QLabel(verification)
        code.setObjectName("pairingCode")
        code.setAlignment(Qt.AlignmentFlag.AlignCenter)
        font = code.font()
        font.setPointSizeF(font.pointSizeF() * 2.4)
        font.setBold(True)
        code.setFont(font)
        code.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        super().__init__(
            name="pairing", title=translate("Phone", "Pair a new device?"),
            message=translate("Phone", "“{0}” ({1}) wants to answer this computer's questions. Pair it only if it "
                                       "shows the same code:").format(device_name, address),
            no_text=translate("Phone", "Refuse  Esc"), yes_text=translate("Phone", "Pair"),
            icon=QStyle.StandardPixmap.SP_MessageBoxQuestion, width=440, below=code, parent=parent)
        self.code = code


def phone_switch_saved() -> bool:
    """Settings' "Answer from my phone", as last switched (off when the settings cannot be read). Disk: call it on a
    worker thread."""
    try:
        from desktop_agent.config import AppSettings

        return bool(AppSettings.load().answer_from_phone)
    except Exception:
        return False


def save_phone_switch(on: bool) -> None:
    """Remember the switch at once (it acts at once, not on Save): the page starts again at the next launch.
    Disk: call it on a worker thread."""
    from desktop_agent.config import AppSettings

    settings = AppSettings.load()
    if settings.answer_from_phone != on:
        settings.answer_from_phone = on
        settings.save()


def confirm_pairing(parent: QWidget | None) -> Callable[[PairingPromptLike], Awaitable[bool]]:
    """The server's ``confirm`` callback: the dialog, opened without taking the focus, awaited."""
    async def confirm(prompt: PairingPromptLike) -> bool:
        dialog = PairingConfirmDialog(prompt.device_name, prompt.verification, prompt.address, parent)
        return bool(await dialog.ask())

    return confirm


class PhoneSection(QWidget):
    """The Settings section. ``access`` may be None while the page is off."""

    enabled_changed = Signal(bool)

    def __init__(self, access: RemoteAccess | None = None, *, enabled: bool = False,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("phoneSection")
        self.access = access
        root = QVBoxLayout(self)
        root.setContentsMargins(0, 0, 0, 0)
        self.switch = QCheckBox(translate("Phone", "Answer from my phone"))
        self.switch.setChecked(enabled)
        self.switch.toggled.connect(self._on_switch)
        root.addWidget(self.switch)
        hint = QLabel(translate("Phone", "A page on this computer's network address, HTTPS only; each phone is "
                                         "paired once and can be revoked here."))
        hint.setWordWrap(True)
        root.addWidget(hint)
        self.pair_button = QPushButton(translate("Phone", "Show pairing code"))
        self.pair_button.clicked.connect(self.show_pairing)
        root.addWidget(self.pair_button, 0, Qt.AlignmentFlag.AlignLeft)
        self.qr = QLabel()
        self.qr.setObjectName("pairingQr")
        self.qr.setVisible(False)
        root.addWidget(self.qr, 0, Qt.AlignmentFlag.AlignLeft)
        self.qr_hint = QLabel()
        self.qr_hint.setWordWrap(True)
        self.qr_hint.setVisible(False)
        root.addWidget(self.qr_hint)
        root.addWidget(QLabel(translate("Phone", "Paired devices")))
        self.devices_box = QWidget()
        self.devices_grid = QGridLayout(self.devices_box)
        self.devices_grid.setContentsMargins(0, 0, 0, 0)
        root.addWidget(self.devices_box)
        self.revoke_buttons: dict[str, QPushButton] = {}
        self.refresh()

    def set_access(self, access: RemoteAccess | None) -> None:
        self.access = access
        if access is not None and hasattr(access, "on_devices_changed"):
            import shiboken6

            def changed() -> None:  # a device paired or revoked elsewhere (another process's page): the list follows
                if shiboken6.isValid(self) and self.access is access:
                    self.refresh()

            access.on_devices_changed = changed
        self.refresh()

    def _on_switch(self, on: bool) -> None:
        self.enabled_changed.emit(on)
        self.refresh()

    def show_pairing(self) -> None:
        if self.access is None:
            return
        url = self.access.pairing_url()
        pixmap = QPixmap()
        pixmap.loadFromData(self.access.pairing_qr_png(url), "PNG")
        self.qr.setPixmap(pixmap)
        self.qr.setVisible(True)
        self.qr_hint.setText(translate("Phone", "Scan it with the phone's camera. The code works once, for 5 "
                                                "minutes."))
        self.qr_hint.setVisible(True)

    def refresh(self) -> None:
        on = self.switch.isChecked() and self.access is not None
        self.pair_button.setEnabled(on)
        if not on:
            self.qr.setVisible(False)
            self.qr_hint.setVisible(False)
        while self.devices_grid.count():
            item = self.devices_grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.setParent(None)
                widget.deleteLater()
        self.revoke_buttons.clear()
        devices = self.access.list_devices() if self.access is not None else []
        if not devices:
            self.devices_grid.addWidget(QLabel(translate("Phone", "None yet")), 0, 0)
        for row, device in enumerate(devices):
            device_id = str(device["id"])
            name = QLabel(str(device["name"]))
            name.setObjectName("deviceName")
            used = QLabel(translate("Phone", "last used {0}").format(_ago(float(str(device["last_used"])))))
            revoke = QPushButton(translate("Phone", "Revoke"))
            revoke.clicked.connect(lambda _=False, d=device_id: self._revoke(d))
            self.revoke_buttons[device_id] = revoke
            self.devices_grid.addWidget(name, row, 0)
            self.devices_grid.addWidget(used, row, 1)
            self.devices_grid.addWidget(revoke, row, 2)

    def _revoke(self, device_id: str) -> None:
        import asyncio

        if self.access is None:
            return
        task = asyncio.ensure_future(self.access.revoke(device_id))
        task.add_done_callback(lambda _t: self.refresh())


__all__ = ["PairingConfirmDialog", "PhoneSection", "RemoteAccess", "confirm_pairing"]
