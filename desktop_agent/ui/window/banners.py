"""What the window says about its state: the status bar (and the title's "Waiting for approval"), the empty
conversation's welcome, the window's own banners — a session that could not open, one per failed MCP server (an
error event's banner, with its actions, is the conversation presenter's) — what each banner button does, and the
MCP Servers view. The decisions (which servers, which colour) are ``presenters``.

``WindowBanners`` is a part of ``MainWindow`` (``window.banners``): it holds its own state (the tray icon, the Servers
view, the servers restarting) and reaches the window only through ``window``, typed as ``host_protocol.WindowHost``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QSystemTrayIcon

from desktop_agent.ui.highlight import colors, is_dark
from desktop_agent.ui.mode_labels import bypass_badge_text, dont_ask_badge_text
from desktop_agent.ui.modes import BYPASS, DONT_ASK
from desktop_agent.ui.window.presenters import (
    ERROR, IDLE, RETRYING, STOPPING, STREAMING, THINKING, TOOL, WAITING, failed_servers, home, is_setup_error,
    status_dot,
)
from desktop_agent.ui.window.settings_gate import RETRY_ACTION

if TYPE_CHECKING:
    from desktop_agent.client import SessionHandle
    from desktop_agent.ui.window.host_protocol import WindowHost
    from desktop_agent.ui.window.servers_view import ServersView

log = logging.getLogger(__name__)
translate = QCoreApplication.translate
APP = "Desktop Agent"


class WindowBanners:
    """Status bar, title, welcome, banners and the MCP Servers view of one window."""

    def __init__(self, window: WindowHost) -> None:
        self.window = window
        self.tray: QSystemTrayIcon | None = None  # made for the first notification
        self.servers_view: ServersView | None = None  # the MCP Servers view, built when first shown
        self.restarting: set[str] = set()  # MCP servers whose restart is under way

    def session_failed(self, folder: str, exc: Exception) -> None:
        name = type(exc).__name__
        text = str(exc) or name
        log.warning("could not open a session in %s: %s: %s", folder, name, text)
        self.window.conversation.cwd = folder
        if is_setup_error(name, text):
            self.window.conversation.add_banner(
                "error", translate("MainWindow", "No API key is set up, so the agent cannot talk to a model. {0} opens "
                                                 "as soon as a key is saved.").format(home(folder)),
                [("settings", translate("MainWindow", "Open settings")),
                 ("tour", translate("MainWindow", "Take the offline tour"))], key="setup")
        else:
            self.window.conversation.add_banner(
                "error", translate("MainWindow", "Could not open the session: {0}").format(text),
                [("settings", translate("MainWindow", "Open settings"))], key="setup")

    def on_banner_action(self, action: str) -> None:
        from desktop_agent.ui.window.rewind import UNDO_PREFIX

        if action.startswith(UNDO_PREFIX):  # the restore banner's "Undo restore"
            self.window.rewind.undo_restore_soon(action[len(UNDO_PREFIX):])
        elif action == "retry-now":
            self.window.controller.retry_now()
        elif action == "retry-cancel":
            self.window.stop()
        elif action == "settings":
            self.window.show_settings(False)
        elif action == "tour":
            self.window.start_tour()
        elif action == "servers":
            self.show_servers()
        elif action == "network" or action.startswith("egress-allow:"):  # ui/window/network_view.py
            from desktop_agent.ui.window import network_view

            if action == "network":
                network_view.show_network(self.window)
            else:
                network_view.allow_host(self.window, action.split(":", 1)[1])
        elif action == "restart":
            self.window.folders.restart_session()
        elif action == RETRY_ACTION and self.window.wanted_folder:  # the settings are fixed: open the folder again
            self.window.folders.open_folder_soon(self.window.wanted_folder)
        elif action == "retry" and self.window.prompt.history:
            self.window.send(self.window.prompt.history[-1])

    def set_status_view(self, status: str, detail: str) -> None:
        c = colors(is_dark(self.window))
        text = {
            IDLE: translate("MainWindow", "Idle"), THINKING: translate("MainWindow", "Thinking…"),
            STREAMING: translate("MainWindow", "Responding…"),
            TOOL: translate("MainWindow", "Running {0}…").format(detail) if detail
            else translate("MainWindow", "Running a tool…"),
            WAITING: translate("MainWindow", "Waiting for approval: {0}").format(detail) if detail
            else translate("MainWindow", "Waiting for approval"),
            RETRYING: translate("MainWindow", "Retrying: {0}").format(detail),
            ERROR: translate("MainWindow", "Error: {0}").format(detail),
            STOPPING: translate("MainWindow", "Stopping…"),
        }.get(status, status)
        dot = {"muted": c.muted, "error": c.error, "accent": c.accent, "added_fg": c.added_fg}[status_dot(status)]
        self.window.status_label.setText(f"<span style='color:{dot}'>●</span>&nbsp; {text}")
        self.window.status.setProperty("attention", "true" if status == WAITING else "false")
        self.window.status.style().unpolish(self.window.status)
        self.window.status.style().polish(self.window.status)
        if status == WAITING:
            self.window.status.setStyleSheet(f"QStatusBar#statusBar {{ background: {c.accent}; }} "
                                      f"QStatusBar#statusBar QLabel {{ color: #1f2328; font-weight: 600; }}")
        else:
            self.window.status.setStyleSheet("")
        self.update_title(waiting=status == WAITING)

    def update_title(self, waiting: bool | None = None) -> None:
        if waiting is None:
            waiting = self.window.controller.status == WAITING
        parts = []
        if waiting:
            parts.append(translate("MainWindow", "Waiting for approval"))
        if self.window.permission_mode == BYPASS:
            parts.append(bypass_badge_text())
        elif self.window.permission_mode == DONT_ASK:
            parts.append(dont_ask_badge_text())
        if self.window.folder:
            parts.append(home(self.window.folder))
        if self.window.demo:
            parts.append(translate("MainWindow", "Tour"))
        # The app name last, once: Qt appends the application display name to a title that does not
        # already end with it (the window manager showed "Desktop Agent — … — Desktop Agent").
        parts.append(APP)
        self.window.setWindowTitle(" — ".join(parts))

    def notify(self, title: str, message: str) -> None:
        if not QSystemTrayIcon.isSystemTrayAvailable():
            return
        if self.tray is None:
            self.tray = QSystemTrayIcon(self.window.windowIcon(), self.window)
            self.tray.show()
        self.tray.showMessage(title, message, QSystemTrayIcon.MessageIcon.Information, 8000)

    # ----- misc actions ------------------------------------------------------------------------
    def show_empty(self) -> None:
        c = colors(is_dark(self.window))
        # tr() outside f-strings: pyside6-lupdate does not look inside them.
        if self.window.folder is None:
            title = translate("MainWindow", "Open a folder to start")
            lines = [translate("MainWindow", "File ▸ Open Folder… (Ctrl+O), then ask for a change."),
                     translate("MainWindow", "Every edit is shown as a diff and waits for your Allow.")]
        elif self.window.demo:
            title = translate("MainWindow", "Welcome to the tour")
            lines = [translate("MainWindow", "A scripted model works on a copy of a sample project."),
                     translate("MainWindow",
                               "Press Enter to send the prepared prompt, then review and allow each edit.")]
        else:
            title = translate("MainWindow", "What should we change?")
            lines = [translate("MainWindow", "Describe the change below and press Enter."),
                     translate("MainWindow", "The agent reads freely; writes wait for your approval.")]
        html = (f"<p style='font-size:large'><b>{title}</b></p>"
                f"<p style='color:{c.muted}'>{'<br/>'.join(lines)}</p>")
        self.window.conversation.show_empty(html)

    def show_servers(self) -> Any:
        """View ▸ MCP Servers… (Ctrl+Shift+E): the current session's servers, non-modal."""
        from desktop_agent.ui.window.servers_view import ServersView

        if self.servers_view is None:
            self.servers_view = ServersView(self.window)
            self.servers_view.restart_requested.connect(self.restart_server)
        self.refresh_servers()
        self.servers_view.show()
        self.servers_view.raise_()
        return self.servers_view

    def _mcp_status(self) -> list[dict[str, Any]]:
        session = self.window.controller.session
        try:
            return list(session.state.mcp_servers) if session is not None else []
        except Exception:
            log.exception("could not read the MCP servers' states")
            return []

    def refresh_servers(self) -> None:
        """The Servers view and one keyed banner per failed server ("MCP server X failed: …")."""
        from desktop_agent.ui.window.servers_view import failed_banner_text

        servers = self._mcp_status()
        if self.servers_view is not None:
            self.servers_view.set_servers(servers, self.restarting)
        failed = failed_servers(servers, self.restarting)
        for key in [k for k in self.window.conversation.banners if k.startswith("mcp:") and k[4:] not in failed]:
            self.window.conversation.remove_banner(key)
        for name, status in failed.items():
            text = failed_banner_text(status)
            old = self.window.conversation.banners.get(f"mcp:{name}")
            if old is None or old.text_plain != text:
                self.window.conversation.add_banner(
                    "error", text, [("servers", translate("MainWindow", "Show MCP servers"))], key=f"mcp:{name}")

    def restart_server(self, name: str) -> asyncio.Task | None:
        """Restart one MCP server as a task on the loop (the Qt thread never waits for it)."""
        session = self.window.controller.session
        if session is None or not session.state.manages_mcp or name in self.restarting:
            return None
        self.restarting.add(name)
        self.refresh_servers()
        return asyncio.ensure_future(self._restart(session, name))

    async def _restart(self, session: SessionHandle, name: str) -> None:
        from desktop_agent.protocol.control import McpRestartRequest  # the protocol models load after the first paint

        try:
            await session.request(McpRestartRequest(serverName=name))
        except Exception as exc:
            log.warning("could not restart the MCP server %s: %s", name, exc)
            self.window.status.showMessage(
                translate("MainWindow", "Could not restart {0}: {1}").format(name, exc), 5000)
        finally:
            self.restarting.discard(name)
            self.refresh_servers()
