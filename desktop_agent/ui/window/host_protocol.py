"""What the window's parts use of the window. ``MainWindow`` is composed of part objects — ``folders.WindowFolders``
(opening folders and sessions), ``toolbar.WindowToolbar``, ``banners.WindowBanners`` (status bar, title, banners, MCP
Servers view), ``rewind.WindowRewind`` and ``worktree_actions.WorktreeActions`` — each holding its own state and
reaching the window only through its ``window``, typed as ``WindowHost``: the members of ``MainWindow`` the parts
read, set or call (the session in view and its parts, the window's widgets and state, its methods), declared once.
A part that another part calls is declared here by what it is called for (``FoldersPart``, ``ToolbarPart``,
``BannersPart``, ``RewindPart``), so that no part imports another, nor the window.

For the type checker ``WindowHost`` is a ``QMainWindow`` with those members (a part uses the window as a widget
too: a dialog's parent, its title), and ``MainWindow`` names it as its first base, so that its own definitions are
checked against the same declarations; at run time it is an empty class. A plain class, not a ``typing.Protocol``: a
protocol cannot be a ``QMainWindow`` as well.

Nothing here runs: the module holds types only, and imports no part (the parts import it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtCore import QSettings, SignalInstance
    from PySide6.QtGui import QActionGroup
    from PySide6.QtWidgets import QLabel, QMainWindow, QStatusBar

    from desktop_agent.ui.changes.panel import DiffPanel
    from desktop_agent.ui.conversation.view import ConversationView
    from desktop_agent.ui.dialogs.stop_turn import StopTurnDialog
    from desktop_agent.ui.dialogs.trust import TrustDialog
    from desktop_agent.ui.window.controller import AgentController
    from desktop_agent.ui.window.live import LiveSession
    from desktop_agent.ui.window.message_queue import MessageQueue
    from desktop_agent.ui.window.prompt import PromptEdit
    from desktop_agent.ui.window.sidebar import SessionsPane


if TYPE_CHECKING:
    from typing import Protocol

    class RewindPart(Protocol):
        """What the other parts call of the window's rewind (``rewind.WindowRewind``)."""

        def undo_restore_soon(self, restore_id: str) -> asyncio.Task[Any] | None: ...

    class BannersPart(Protocol):
        """What the other parts call of the window's status, title and banners (``banners.WindowBanners``)."""

        def session_failed(self, folder: str, exc: Exception) -> None: ...
        def show_empty(self) -> None: ...
        def update_title(self, waiting: bool | None = None) -> None: ...
        def notify(self, title: str, message: str) -> None: ...

    class ToolbarPart(Protocol):
        """What the other parts call of the window's toolbar (``toolbar.WindowToolbar``)."""

        def request_mode(self, mode: str) -> None: ...
        def select_mode(self, mode: str) -> None: ...
        def show_model(self, name: str, enabled: bool = True) -> None: ...

    class FoldersPart(Protocol):
        """What the other parts call of the window's folders and sessions (``folders.WindowFolders``)."""

        def open_folder_soon(self, folder: str, **kwargs: Any) -> asyncio.Task[bool]: ...
        async def open_folder(self, folder: str, *, resume: str | None = None) -> bool: ...
        def restart_session(self) -> asyncio.Task[None] | None: ...
        def refresh_sessions(self, current: str | None = None) -> asyncio.Task[None] | None: ...

    class WindowHost(QMainWindow):
        """The members of ``MainWindow`` its parts use."""

        # the session in view (``ui.window.live``) and its parts, properties of the window
        live: LiveSession
        @property
        def controller(self) -> AgentController: ...
        @property
        def conversation(self) -> ConversationView: ...
        @property
        def diff_panel(self) -> DiffPanel: ...
        @property
        def message_queue(self) -> MessageQueue: ...
        @property
        def folder(self) -> str | None: ...
        @folder.setter
        def folder(self, value: str | None) -> None: ...

        lives: list[LiveSession]  # the sessions open in this window, in the order they were opened
        folders: FoldersPart  # the window's part objects another part calls
        toolbar: ToolbarPart
        banners: BannersPart
        rewind: RewindPart

        # signals
        folder_opened: SignalInstance
        history_shown: SignalInstance

        # widgets
        sessions_pane: SessionsPane
        prompt: PromptEdit
        status: QStatusBar
        status_label: QLabel
        mode_group: QActionGroup

        # state
        qsettings: QSettings
        demo: bool
        client_factory: Any
        session_kwargs: dict[str, Any]
        executor_override: str | None
        executor_path_override: str | None
        permission_mode: str
        wanted_folder: str | None
        _model_name: str
        _had_session: bool
        _history_stats: tuple[int, float, int] | None

        # dialogs and tasks in flight
        trust_box: TrustDialog | None
        stop_question: StopTurnDialog | None  # "Stop the running turn?" while it is open
        open_task: asyncio.Task[bool] | None
        drop_task: asyncio.Task[None] | None
        restart_task: asyncio.Task[None] | None
        attach_task: asyncio.Task[Any] | None

        # ``MainWindow``'s methods
        @staticmethod
        def app_windows() -> Sequence[WindowHost]: ...  # this app's windows that are still there
        def _new_live(self, controller: AgentController | None = None) -> LiveSession: ...
        def show_live(self, live: LiveSession) -> None: ...
        def save_state(self) -> None: ...
        def last_folder(self) -> str | None: ...
        def _add_recent(self, folder: str) -> None: ...
        def send(self, text: str) -> None: ...
        def stop(self) -> None: ...
        def stop_turn(self) -> None: ...
        def doing_text(self) -> str: ...
        def _record_entry(self, entry: dict[str, Any], live: LiveSession | None = None) -> None: ...
        async def close_live(self, live: LiveSession) -> bool: ...
        def _session_id(self) -> str | None: ...
        def show_settings(self, first_run: bool = False) -> Any: ...
        def start_tour(self) -> None: ...

else:
    class WindowHost:
        """At run time an empty base of ``MainWindow`` (``object`` itself cannot come before ``QMainWindow``)."""


__all__ = ["WindowHost"]
