"""The Network view (View ▸ Network…, Ctrl+Shift+N): the requests the current session's sandboxed shells made
through the egress proxy (``permissions.egress``), newest first — allowed and refused, host and port, the rule
that decided, bytes up and down.

The view only shows and asks. It reads nothing itself: ``show_network(window)`` reads the session's log
(``client.network.read_session_log``: ``<data dir>/egress/<session>.jsonl``, the same file for a session in this
window, in the background host or in
an executor) on a worker thread (``util.threads.in_thread``) and calls ``set_records``; a timer does it again
every 2 s while the view is shown. A host refused for want of an entry (not by ``deniedDomains``, which would win
anyway) has **Allow for this session** (``allow_requested``)
and **Add to settings** (``add_requested``); the window answers them (``allow_host``/``add_host_to_settings``):
the first asks through the focus-safe confirmation ``ui.dialogs.allow_host`` (Bypass's rules), then tells an
in-process session's sandbox (``BubblewrapSandbox.allow_host_for_session``: from the next command on); the second
adds the host to ``sandbox.network.allowedDomains`` of the folder's ``.claude/settings.local.json``
(``client.network.add_host_to_settings``: atomically, on a worker thread), which counts from the next session.
"""

from __future__ import annotations

import html
import time
from typing import Any, Iterable

from PySide6.QtCore import QCoreApplication, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox, QDialog, QDialogButtonBox, QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QVBoxLayout,
    QWidget,
)

from desktop_agent.client.network import add_host_to_settings, read_session_log
from desktop_agent.ui.highlight import colors, is_dark

MAX_ROWS = 300
translate = QCoreApplication.translate


def _size(n: int) -> str:
    size: float = n
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"


class RequestRow(QFrame):
    """One request: decision dot, host:port and protocol, the rule, bytes; a refused one has two buttons."""

    allow_clicked = Signal(str)
    add_clicked = Signal(str)

    def __init__(self, rec: dict[str, Any], parent: QWidget | None = None):
        super().__init__(parent)
        self.rec = rec
        self.host = str(rec.get("host", ""))
        self.setObjectName("requestRow")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        outer = QHBoxLayout(self)
        outer.setContentsMargins(10, 6, 10, 6)
        text = QVBoxLayout()
        text.setSpacing(2)
        c = colors(is_dark(self))
        refused = rec.get("decision") == "deny"
        dot = c.error if refused else c.added_fg
        word = self.tr("refused") if refused else self.tr("allowed")
        when = time.strftime("%H:%M:%S", time.localtime(float(rec.get("ts") or 0)))
        self.title = QLabel(f"<span style='color:{dot}'>●</span>&nbsp; <b>{html.escape(self.host)}:"
                            f"{int(rec.get('port') or 0)}</b>&nbsp;&nbsp;<span style='color:{dot}'>{word}</span>"
                            f"&nbsp;&nbsp;<span style='color:{c.muted}'>{html.escape(str(rec.get('proto', '')))}"
                            f" · {when}</span>")
        self.title.setTextFormat(Qt.TextFormat.RichText)
        detail = str(rec.get("rule") or "")
        if rec.get("error"):
            detail += " · " + str(rec["error"])
        if not refused:
            detail += " · " + self.tr("{0} up, {1} down").format(_size(int(rec.get("up") or 0)),
                                                                 _size(int(rec.get("down") or 0)))
        self.detail = QLabel(detail)
        self.detail.setObjectName("muted")
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        text.addWidget(self.title)
        text.addWidget(self.detail)
        outer.addLayout(text, 1)
        self.allow_button = self.add_button = None
        if refused and self.host and str(rec.get("rule") or "").startswith("no entry"):  # a deny rule wins anyway
            self.allow_button = QPushButton(self.tr("Allow for this session"))
            self.allow_button.setAccessibleName(self.tr("Allow {0} for this session").format(self.host))
            self.allow_button.clicked.connect(lambda: self.allow_clicked.emit(self.host))
            self.add_button = QPushButton(self.tr("Add to settings"))
            self.add_button.setAccessibleName(self.tr("Add {0} to the folder's settings").format(self.host))
            self.add_button.clicked.connect(lambda: self.add_clicked.emit(self.host))
            outer.addWidget(self.allow_button, 0, Qt.AlignmentFlag.AlignTop)
            outer.addWidget(self.add_button, 0, Qt.AlignmentFlag.AlignTop)


class NetworkView(QDialog):
    """The requests of the current session, newest first; "Refused only" narrows the list."""

    allow_requested = Signal(str)
    add_requested = Signal(str)
    refresh_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("networkView")
        self.setWindowTitle(self.tr("Network"))
        self.setModal(False)
        self.records: list[dict[str, Any]] = []
        self.rows: list[RequestRow] = []
        root = QVBoxLayout(self)
        root.setContentsMargins(16, 16, 16, 16)
        root.setSpacing(8)
        top = QHBoxLayout()
        self.summary = QLabel()
        self.summary.setObjectName("networkSummary")
        self.summary.setWordWrap(True)
        top.addWidget(self.summary, 1)
        self.refused_only = QCheckBox(self.tr("Refused only"))
        self.refused_only.toggled.connect(lambda _on: self._rebuild())
        top.addWidget(self.refused_only)
        root.addLayout(top)
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        self.column = QWidget()
        self.column_layout = QVBoxLayout(self.column)
        self.column_layout.setContentsMargins(0, 0, 0, 0)
        self.column_layout.setSpacing(6)
        self.column_layout.addStretch(1)
        self.scroll_area.setWidget(self.column)
        root.addWidget(self.scroll_area, 1)
        self.hint = QLabel(self.tr(
            "Sandboxed commands reach only the hosts in sandbox.network.allowedDomains, through a proxy that "
            "records every request here. With no list they have no network at all."))
        self.hint.setObjectName("muted")
        self.hint.setWordWrap(True)
        root.addWidget(self.hint)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        root.addWidget(buttons)
        self.timer = QTimer(self)
        self.timer.setInterval(2000)
        self.timer.timeout.connect(self.refresh_requested.emit)
        self.resize(680, 560)
        self.set_records([])

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt
        super().showEvent(event)
        self.timer.start()

    def hideEvent(self, event: Any) -> None:  # noqa: N802 - Qt
        self.timer.stop()
        super().hideEvent(event)

    def set_records(self, records: Iterable[dict[str, Any]]) -> None:
        records = list(records)
        if records == self.records and self.rows:
            return
        self.records = records
        self._rebuild()

    def _rebuild(self) -> None:
        for row in self.rows:
            self.column_layout.removeWidget(row)
            row.deleteLater()
        self.rows = []
        shown = [r for r in reversed(self.records) if not self.refused_only.isChecked() or r.get("decision") == "deny"]
        for rec in shown[:MAX_ROWS]:
            row = RequestRow(rec)
            row.allow_clicked.connect(self.allow_requested.emit)
            row.add_clicked.connect(self.add_requested.emit)
            self.column_layout.insertWidget(self.column_layout.count() - 1, row)
            self.rows.append(row)
        refused = sum(1 for r in self.records if r.get("decision") == "deny")
        if not self.records:
            self.summary.setText(self.tr("No network requests in this session."))
        else:
            self.summary.setText(self.tr("{0} requests: {1} allowed, {2} refused").format(
                len(self.records), len(self.records) - refused, refused))


# ------------------------------------------------------------------------------------------------ window side


def show_network(window: Any) -> NetworkView:
    """View ▸ Network…: the current session's requests, non-modal, refreshed while shown."""
    from desktop_agent.util import dirs
    from desktop_agent.util.threads import in_thread

    view = getattr(window, "network_view", None)
    if view is None:
        view = window.network_view = NetworkView(window)

        def refresh() -> None:
            session = getattr(window.controller, "session", None)
            sid = str(getattr(session, "session_id", "") or "")
            if not sid:
                view.set_records([])
                return
            data = str(dirs.data_dir())

            async def load() -> None:
                view.set_records(await in_thread(lambda: read_session_log(data, sid)))
            _soon(load())

        def allow(host: str) -> None:
            allow_host(window, host)

        def add(host: str) -> None:
            folder = getattr(window, "folder", None)
            if not folder:
                return

            async def write() -> None:
                try:
                    path = await in_thread(lambda: add_host_to_settings(folder, host))
                except (OSError, ValueError) as exc:
                    window.status.showMessage(str(exc), 8000)
                    return
                window.status.showMessage(translate("NetworkView", "{0} added to {1} (counts from the next session)")
                                          .format(host, path), 8000)
            _soon(write())

        view.refresh_requested.connect(refresh)
        view.allow_requested.connect(allow)
        view.add_requested.connect(add)
    view.refresh_requested.emit()
    view.show()
    view.raise_()
    return view


def new_refusals(records: list[dict[str, Any]], seen: int) -> tuple[list[tuple[str, int]], int]:
    """(host, port) of the requests refused for want of an entry among ``records[seen:]`` (first of each host), and
    the new ``seen``. A ``deniedDomains`` refusal is left out: allowing the host would change nothing."""
    out: list[tuple[str, int]] = []
    for rec in records[seen:]:
        host = str(rec.get("host") or "")
        if rec.get("decision") == "deny" and str(rec.get("rule") or "").startswith("no entry") and host \
                and host not in [h for h, _ in out]:
            out.append((host, int(rec.get("port") or 0)))
    return out, len(records)


REFUSED_ACTION = "egress-allow:"


def check_refusals(window: Any) -> None:
    """After a Bash call: a notice banner per host the session's proxy refused since the last check, with
    "Allow for this session" (confirmed, ``allow_host``) and "Show network". The log is read on a worker thread."""
    from desktop_agent.util import dirs
    from desktop_agent.util.threads import in_thread

    session = getattr(window.controller, "session", None)
    sid = str(getattr(session, "session_id", "") or "")
    if not sid:
        return
    data = str(dirs.data_dir())

    async def run() -> None:
        records = await in_thread(lambda: read_session_log(data, sid))
        seen = getattr(window, "_egress_seen", {}).get(sid, 0)
        hosts, seen = new_refusals(records, seen)
        window._egress_seen = {**getattr(window, "_egress_seen", {}), sid: seen}
        for host, port in hosts[:3]:
            window.conversation.add_banner(
                "notice", translate("NetworkView", "A sandboxed command was refused network access to {0}:{1}: it is "
                                    "not in sandbox.network.allowedDomains.").format(host, port),
                [(REFUSED_ACTION + host, translate("NetworkView", "Allow {0} for this session").format(host)),
                 ("network", translate("NetworkView", "Show network"))], key=f"egress:{host}")
    _soon(run())


def allow_host(window: Any, host: str) -> None:
    """"Allow for this session": the focus-safe confirmation, then the session's proxy through its host
    (``desktop_agent_allow_host``, over any transport)."""
    session = getattr(window.controller, "session", None)
    if session is None:
        return
    from desktop_agent.ui.dialogs.allow_host import confirm_allow_host

    async def grant() -> None:
        from desktop_agent.protocol.control import AllowHostRequest

        try:
            await session.request(AllowHostRequest(host=host))
        except Exception as exc:
            window.status.showMessage(translate("NetworkView", "Could not allow {0} for this session ({1}): add it "
                                                "to the settings instead").format(host, exc), 8000)
            return
        window.conversation.remove_banner(f"egress:{host}")
        window.status.showMessage(translate("NetworkView", "{0} is allowed for this session from the next "
                                            "command on").format(host), 6000)

    def done(yes: bool) -> None:
        if yes:
            _soon(grant())
    window._allow_host_box = confirm_allow_host(window, host, done)


def _soon(coro: Any) -> None:
    import asyncio

    try:
        asyncio.get_event_loop().create_task(coro)
    except RuntimeError:  # no loop (a test without qasync): drop it
        coro.close()
