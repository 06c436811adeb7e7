"""The MCP Servers view (View ▸ MCP Servers…, Ctrl+Shift+E): each MCP server of the current session.

One row per server, from ``AgentSession.mcp_status()``: its state (connected / failed / pending, with a
coloured dot), transport and where it was configured, its tools, the last error (the tail of a stdio
server's stderr), how often it was restarted, and a **Restart** button. The view only shows and asks:
``restart_requested(name)`` goes to the window, which awaits ``session.mcp.restart(name)`` as a task on
the qasync loop (the Qt thread never blocks) and calls ``set_servers`` again when it is done, and after
every turn. Non-modal, opened with ``show()``; ``set_servers`` may be called while it is hidden.

``failed_banner_text(status)`` is the one-line sentence of the conversation's keyed banner for a failed
server ("MCP server X failed: …").
"""

from __future__ import annotations

import html
from typing import Any, Iterable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog, QDialogButtonBox, QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QVBoxLayout, QWidget,
)

from desktop_agent.ui.conversation.tool_fields import SEPARATOR
from desktop_agent.ui.highlight import colors, is_dark

BANNER_ERROR_CHARS = 300


def state_label(state: str) -> str:
    """The state as the view shows it (``connecting`` reads as pending: the server is on its way)."""
    return {"connected": "connected", "failed": "failed"}.get(state, "pending")


def failed_banner_text(status: dict[str, Any]) -> str:
    """'MCP server X failed: <first line of its error>' (clipped), for the conversation's banner."""
    error = str(status.get("error") or "it stopped").strip()
    first = error.splitlines()[0] if error else "it stopped"
    if len(first) > BANNER_ERROR_CHARS:
        first = first[:BANNER_ERROR_CHARS] + "…"
    return f"MCP server {status.get('name', '?')} failed: {first}"


class ServerRow(QFrame):
    """One server: name and state, transport and source, tools, last error, restarts, Restart."""

    restart_clicked = Signal(str)

    def __init__(self, name: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.name = name
        self.setObjectName("serverRow")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        outer = QHBoxLayout(self)
        outer.setContentsMargins(12, 10, 12, 10)
        outer.setSpacing(12)
        text = QVBoxLayout()
        text.setSpacing(4)
        self.title = QLabel()
        self.title.setObjectName("serverTitle")
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.details = QLabel()
        self.details.setObjectName("muted")
        self.details.setWordWrap(True)
        self.tools_label = QLabel()
        self.tools_label.setObjectName("serverTools")
        self.tools_label.setWordWrap(True)
        self.tools_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label = QLabel()
        self.error_label.setObjectName("serverError")
        self.error_label.setWordWrap(True)
        self.error_label.setTextFormat(Qt.TextFormat.RichText)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        for w in (self.title, self.details, self.tools_label, self.error_label):
            text.addWidget(w)
        outer.addLayout(text, 1)
        self.restart_button = QPushButton(self.tr("&Restart"))
        self.restart_button.setObjectName("restartButton")
        self.restart_button.setAccessibleName(self.tr("Restart the MCP server {0}").format(name))
        self.restart_button.clicked.connect(lambda: self.restart_clicked.emit(self.name))
        outer.addWidget(self.restart_button, 0, Qt.AlignmentFlag.AlignTop)
        self.state = "pending"

    def show_status(self, status: dict[str, Any], restarting: bool = False) -> None:
        c = colors(is_dark(self))
        self.state = "pending" if restarting else state_label(str(status.get("status") or ""))
        dot = {"connected": c.added_fg, "failed": c.error}.get(self.state, c.muted)
        shown = self.tr("restarting…") if restarting else {
            "connected": self.tr("connected"), "failed": self.tr("failed")}.get(self.state, self.tr("pending"))
        self.title.setText(f"<span style='color:{dot}'>●</span>&nbsp; <b>{html.escape(self.name)}</b>"
                           f"&nbsp;&nbsp;<span style='color:{dot}'>{html.escape(shown)}</span>")
        transport = {"http": self.tr("streamable HTTP"), "stdio": self.tr("stdio")}.get(
            str(status.get("transport") or ""), str(status.get("transport") or ""))
        parts = [transport]
        if self.state == "pending" and not restarting:
            parts.insert(0, self.tr("starts with the first message"))  # servers start with the first turn
        if status.get("source"):
            parts.append(self.tr("from {0}").format(status["source"]))
        restarts = int(status.get("restarts") or 0)
        parts.append(self.tr("restarted {0}×").format(restarts) if restarts else self.tr("not restarted"))
        self.details.setText(" · ".join(parts))
        tools = [str(t) for t in status.get("tools") or []]
        shown_tools = [f"{self.name}{SEPARATOR}{t}" for t in tools]  # as the tool cards name them: demo · echo
        self.tools_label.setText(self.tr("Tools ({0}): {1}").format(len(tools), ", ".join(shown_tools)) if tools
                                 else self.tr("Its tools are listed once it starts") if self.state == "pending"
                                 else self.tr("No tools listed yet"))
        error = str(status.get("error") or "").strip()
        self.error_label.setVisible(bool(error))
        if error:
            self.error_label.setText(
                f"<span style='color:{c.error}'>{html.escape(self.tr('Last error:'))}</span> "
                f"<span style='font-family:monospace'>{html.escape(error).replace(chr(10), '<br/>')}</span>")
        self.restart_button.setEnabled(not restarting)
        self.restart_button.setText(self.tr("Restarting…") if restarting else self.tr("&Restart"))


class ServersView(QDialog):
    """The list of MCP servers of the current session, with a Restart button per server."""

    restart_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("serversView")
        self.setWindowTitle(self.tr("MCP Servers"))
        self.setModal(False)
        self.rows: dict[str, ServerRow] = {}
        root = QVBoxLayout(self)
        root.setContentsMargins(16, 16, 16, 16)
        root.setSpacing(8)
        self.summary = QLabel()
        self.summary.setObjectName("serversSummary")
        self.summary.setWordWrap(True)
        root.addWidget(self.summary)
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        self.column = QWidget()
        self.column_layout = QVBoxLayout(self.column)
        self.column_layout.setContentsMargins(0, 0, 0, 0)
        self.column_layout.setSpacing(8)
        self.column_layout.addStretch(1)
        self.scroll_area.setWidget(self.column)
        root.addWidget(self.scroll_area, 1)
        self.hint = QLabel(self.tr(
            "Servers come from the folder's .mcp.json (only in a trusted folder), the mcpServers of your "
            "settings (~/.claude/settings.json, ~/.claude.json) and --mcp-config. Their tools ask before "
            "they run, like any tool that is not read-only."))
        self.hint.setObjectName("muted")
        self.hint.setWordWrap(True)
        root.addWidget(self.hint)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        root.addWidget(buttons)
        self.resize(640, 580)
        self.set_servers([])

    def set_servers(self, servers: Iterable[dict[str, Any]], restarting: Iterable[str] = ()) -> None:
        """Show ``servers`` (``mcp_status()`` dicts); rows of servers no longer listed go away."""
        servers = list(servers)
        busy = set(restarting)
        names = [str(s.get("name", "")) for s in servers]
        for name in list(self.rows):
            if name not in names:
                gone = self.rows.pop(name)
                self.column_layout.removeWidget(gone)
                gone.deleteLater()
        for i, status in enumerate(servers):
            name = names[i]
            row = self.rows.get(name)
            if row is None:
                row = self.rows[name] = ServerRow(name)
                row.restart_clicked.connect(self.restart_requested.emit)
                self.column_layout.insertWidget(self.column_layout.count() - 1, row)
            row.show_status(status, restarting=name in busy)
        if not servers:
            self.summary.setText(self.tr("No MCP servers are configured for this session."))
        else:
            counts = {k: sum(1 for r in self.rows.values() if r.state == k) for k in ("connected", "failed", "pending")}
            text = self.tr("{0} servers: {1} connected, {2} failed, {3} pending").format(
                len(servers), counts["connected"], counts["failed"], counts["pending"])
            if counts["pending"]:
                text += " " + self.tr("(MCP servers start with the first message)")
            self.summary.setText(text)
