"""Folders and sessions in the window: Open Folder (settings that cannot be read keep it closed: ``settings_gate``;
the one-time trust question, then a new or resumed session through ``controller.open_session``), where sessions
run (``--executor``, else Settings), Restart session, New Session, the sessions list (``EngineClient.list_sessions``),
SessionEnd before another session replaces this one, and replaying a resumed transcript into the conversation and
the changes panel.

``WindowFolders`` is a part of ``MainWindow`` (``window.folders``): it holds the Open Folder dialog and the sessions
list being read; the sessions open in the window, the one in view and the tasks in flight stay the window's. It
reaches the window only through ``window``, typed as ``host_protocol.WindowHost``.

Nothing stops a session but the person (issue 24): New Session, another folder, another session from the sidebar or
a recent folder open a new live session beside the others (``ui.window.live``) — only a session that has not started
(no prompt yet, nothing running) is replaced. A session already open in the window is brought into view instead of
opened twice. Closing a session whose turn runs asks "Stop the running turn?" first (``stop_running_turn``; Cancel
changes nothing, Stop stops it as the Stop button does and waits for it).
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QFileDialog

from desktop_agent.client import EXECUTOR_KINDS, ExecutorKind, SessionHandle
from desktop_agent.client.local import transcript_usage
from desktop_agent.ui.changes.log import ChangeLog
from desktop_agent.ui.conversation.presenter import HistoryOp, history_ops
from desktop_agent.ui.dialogs.stop_turn import StopTurnDialog
from desktop_agent.ui.highlight import lexer_for_filename
from desktop_agent.ui.modes import BYPASS, default_mode_setting, settled_mode
from desktop_agent.ui.window.background import in_background, keep_sessions_running, left_running_text, running_session
from desktop_agent.ui.window.presenters import STOPPING, home, session_rows
from desktop_agent.ui.window.settings_gate import settings_gate, show_problems
from desktop_agent.util.threads import in_thread

if TYPE_CHECKING:
    from desktop_agent.ui.window.host_protocol import WindowHost
    from desktop_agent.ui.window.live import LiveSession

log = logging.getLogger(__name__)
translate = QCoreApplication.translate


class WindowFolders:
    """Opening folders and sessions in one window."""

    def __init__(self, window: WindowHost) -> None:
        self.window = window
        self.folder_dialog: QFileDialog | None = None  # the last Open Folder dialog
        self._sessions_listing = 0  # the sessions list asked for last (an older answer is dropped)
        self.sessions_task: asyncio.Task[None] | None = None
        self.session_names: Any = None  # the names given to sessions and which are archived, as last read

    async def end_then_close(self) -> None:
        try:
            await asyncio.gather(*(self.end_live(live) for live in list(self.window.lives)), return_exceptions=True)
        finally:
            self.window.close()

    async def end_live(self, live: LiveSession) -> None:
        """The window closes: ``live`` is left running in the background host, or ended (SessionEnd)."""
        if in_background(live.controller.session):
            await self.leave_running(live)
        elif live.controller.session is not None:
            await live.controller.end_session("prompt_input_exit", discard_if_empty=not self.window.demo)

    async def leave_running(self, live: LiveSession | None = None) -> None:
        """The window closes, the session stays in the background host (its turn and questions go on there); a
        notification says so."""
        live = live or self.window.live
        session = live.controller.session
        if session is None:
            return
        title = home(live.folder or session.state.cwd)
        await live.controller.detach_session()
        log.info("session %s left running in the background host", session.session_id)
        self.window.banners.notify("Desktop Agent", left_running_text(title))

    async def end_session(self, reason: str) -> None:
        """SessionEnd for the current session (its hooks, then closing it); an empty session's file goes."""
        session = self.window.controller.session
        if session is None:
            return
        await self.window.controller.end_session(reason, discard_if_empty=not self.window.demo)


    def folder_dialog_start(self) -> str:
        """Where Open Folder starts: this window's folder, the one asked for, the last one, else the cwd."""
        for candidate in (self.window.folder, self.window.wanted_folder, self.window.last_folder(), os.getcwd()):
            if candidate and os.path.isdir(candidate):
                return candidate
        return os.path.expanduser("~")

    def choose_folder(self) -> None:
        dlg = QFileDialog(self.window, translate("MainWindow", "Open Folder"), self.folder_dialog_start())
        dlg.setObjectName("folderDialog")
        self.folder_dialog = dlg
        dlg.setFileMode(QFileDialog.FileMode.Directory)
        dlg.setOption(QFileDialog.Option.ShowDirsOnly, True)
        dlg.fileSelected.connect(self.open_folder_soon)
        dlg.open()

    def open_folder_soon(self, folder: str, **kwargs: Any) -> asyncio.Task:
        win = self.window
        if win.stop_question is not None and win.open_task is not None and not win.open_task.done():
            return win.open_task  # "Stop the running turn?" is open: that answer decides first
        win.open_task = asyncio.ensure_future(self.open_folder(folder, **kwargs))
        return win.open_task

    def live_of(self, session_id: str | None) -> LiveSession | None:
        return next((live for live in self.window.lives if session_id and live.session_id == session_id), None)

    def _target_live(self) -> LiveSession:
        """Where a session opens: the session in view when it has not started (no prompt, nothing running, none
        opening), else a new live session beside the others."""
        live = self.window.live
        c = live.controller
        if not c.busy and not live.first_prompt and c.turn_index == 0 and not live.opening:
            return live
        return self.window._new_live()

    async def open_folder(self, folder: str, *, resume: str | None = None) -> bool:
        """Open ``folder``: the one-time trust question if its settings grant rules or run hooks, then
        a new (or resumed) session beside the others. Returns False when the user cancelled or the session
        failed."""
        folder = os.path.abspath(folder)
        already = self.live_of(resume)
        if already is not None:  # open in this window: bring it into view
            self.window.show_live(already)
            if self.window.drop_task is not None:
                await asyncio.wait({self.window.drop_task}, timeout=10)
            return True
        self.window.wanted_folder = folder
        win = self.window
        problems = [] if win.demo else await settings_gate(win.controller, win.conversation, folder)
        if problems is None:  # a settings file cannot be read: the folder does not open (a blocking banner says so)
            return False
        trusted = await self._ask_trust(folder)
        if trusted is None:
            return False
        live = self._target_live()
        if live is not self.window.live:
            self.window.show_live(live)
        live.opening = True
        try:
            return await self._open_in(live, folder, resume, problems, trusted)
        finally:
            live.opening = False

    async def _open_in(self, live: LiveSession, folder: str, resume: str | None, problems: list[str],
                       trusted: bool) -> bool:
        await self.end_session("clear")  # a session that had not started is replaced
        win = self.window
        if not resume and win._had_session and not win.demo and "permission_mode" not in win.session_kwargs:
            fresh = default_mode_setting()  # a new session starts in Settings' default mode
            if fresh == BYPASS:
                self.window.toolbar.request_mode(BYPASS)  # asks (unless bypass is on already)
            elif fresh != self.window.permission_mode:
                self.window.permission_mode = fresh
                self.window.toolbar.select_mode(fresh)
        kwargs = dict(self.window.session_kwargs)
        if self.window.client_factory is not None:  # a model client (tests, tour): its TLS context loads certificates
            kwargs["client"] = await in_thread(self.window.client_factory)
        if resume:
            kwargs["resume"] = resume
        if trusted is False:
            kwargs["trusted"] = False
        kwargs.setdefault("permission_mode", self.window.permission_mode)  # session_kwargs (tests, tour) may set it
        chosen_before = self.window.permission_mode
        self.window.conversation.clear()
        self.window.diff_panel.clear()
        self.window._history_stats = None
        self.window.conversation.cwd = folder
        self.window.diff_panel.cwd = folder
        replayed = False
        if resume:  # show the transcript first (fast), while the session is built
            entries = await self.window.controller.client.history(folder, resume)
            prepared = await in_thread(lambda: prepare_history(entries, folder))
            if prepared is not None:
                await self.show_history(prepared)
                replayed = True
                self.window.history_shown.emit(folder)
                if self.window.isVisible():
                    await asyncio.sleep(0.03)  # let it paint before the session build competes for the GIL
        self.window.status.showMessage(translate("MainWindow", "Opening {0}…").format(home(folder)))
        kind, path = self.executor_choice()
        if kind != "inprocess":
            kwargs.update(executor=kind, executable=path)
        attached = await running_session(folder, resume) if kind == "host" else None
        if attached:  # the background host runs it: attach (its pending questions are asked again)
            kwargs["attach"] = attached
            kwargs.pop("resume", None)
        try:
            session = await self.window.controller.open_session(folder, **kwargs)
        except Exception as exc:
            self.window.status.clearMessage()
            self.window.banners.session_failed(folder, exc)
            return False
        self.window.status.clearMessage()
        self.window.folder = folder
        live.folder = folder
        self.window._had_session = True
        self.window.toolbar.show_model(session.model or "", enabled=True)
        # the mode asked for, unless the user picked another while the session was built; an attached session keeps
        # its own
        current = self.window.permission_mode
        want = current if current != chosen_before else str(kwargs["permission_mode"])
        if attached and self.window.permission_mode == chosen_before:
            want = session.permission_mode or want
        if session.permission_mode != want:
            try:
                self.window.controller.set_permission_mode(want)
            except Exception:
                log.exception("could not set the permission mode %s", want)
        mode = settled_mode(session.permission_mode, want)
        if mode != (session.permission_mode or "default"):  # bypass is never entered without its question
            self.window.controller.set_permission_mode(mode)
        self.window.permission_mode = mode
        self.window.toolbar.select_mode(mode)
        # the transcript only this session's executor knows (Claude Code's own), or the host's session attached to
        if (resume or attached) and not replayed:
            await self.replay_history(session)
        elif not resume:
            self.window.banners.show_empty()
        show_problems(self.window.conversation, problems)
        if resume and self.window._history_stats is not None:  # totals and turn numbers continue from the transcript
            tokens, cost, turns = self.window._history_stats
            self.window.controller.set_usage_base(tokens, cost, turns)
        if resume or attached:
            live.resumed(None)  # its title comes with the sessions list
        live.changed.emit()
        listing = self.refresh_sessions(current=session.session_id)
        if listing is not None:
            await listing
        live.worktree = await self._worktree_of(folder)
        if kind == "host":  # the host's other sessions (another folder, a worktree) come back beside this one
            self.window.attach_task = asyncio.ensure_future(self.attach_running())
        self.window._add_recent(folder)
        self.window.banners.update_title()
        self.window.save_state()
        self.window.prompt.setFocus()
        self.window.folder_opened.emit(folder)
        return True

    async def stop_running_turn(self, folder: str, resume: str | None = None, *, closing: bool = False) -> bool:
        """Before anything replaces the session while a turn runs: "Stop the running turn?" (``StopTurnDialog``,
        queued with the permission questions). True when nothing runs (any more) or the person chose Stop —
        the turn is then stopped as Stop does and awaited; False (Cancel) leaves everything as it was."""
        controller = self.window.controller
        turn = controller.turn
        if turn is None:
            return True
        if self.window.stop_question is not None:
            return False  # already asking (a second Ctrl+N while the question is open)
        if controller.status == STOPPING:  # the person pressed Stop already: only wait for the turn to end
            await asyncio.wait({turn}, timeout=6.0)
            return True
        session = controller.session
        if closing:
            then = translate("MainWindow", "the session closes")
        elif resume:
            then = translate("MainWindow", "the other session opens")
        elif folder != self.window.folder:
            then = translate("MainWindow", "{0} opens").format(home(folder))
        else:
            then = translate("MainWindow", "a new session starts")
        dialog = StopTurnDialog(self.window.sessions_pane.current_title() or controller.last_prompt,
                                home(self.window.folder or folder), self.window.doing_text(), then, self.window)
        key = (str(getattr(session, "session_id", "") or ""), "stop-turn")
        question = asyncio.ensure_future(controller.questions.ask(key, lambda: dialog))
        self.window.stop_question = dialog
        try:
            await asyncio.wait({question, turn}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.window.stop_question = None
            if not question.done():
                question.cancel()  # the turn ended by itself: the question is moot, its dialog closes
                await asyncio.wait({question})
        if question.cancelled():
            return True  # nothing runs any more
        if question.exception() is not None:  # the question could not be asked: nothing is stopped
            log.error("the stop question failed", exc_info=question.exception())
            return False
        if not question.result():
            return False
        if controller.turn is turn:
            self.window.stop_turn()
            await asyncio.wait({turn}, timeout=6.0)  # the controller cancels it after 3 s at the latest
        return True

    def executor_choice(self) -> tuple[ExecutorKind, str | None]:
        """Where this window's sessions run: the tour in this process; else ``--executor``, else Settings."""
        if self.window.demo:
            return "inprocess", None
        kind, path = self.window.executor_override, self.window.executor_path_override
        if kind is None or (kind == "claude" and not path):
            try:
                from desktop_agent.config import AppSettings

                prefs = AppSettings.load()
                kind = kind or str(prefs.executor or "inprocess")
                path = path or (prefs.claude_path if kind == "claude" else None)
            except Exception:
                log.exception("could not read the executor setting")
                kind = kind or "inprocess"
        if kind not in EXECUTOR_KINDS:
            kind = "inprocess"
        if self.window.executor_override is None and keep_sessions_running():
            return "host", None  # Settings: keep sessions running when the window closes
        return kind, path or None  # type: ignore[return-value]  # checked against EXECUTOR_KINDS

    def restart_session(self) -> asyncio.Task | None:
        """The banner's "Restart session": a new executor process resuming the session."""
        if not self.window.controller.can_restart:
            return None
        self.window.conversation.remove_banner("error:executor")

        async def go() -> None:
            try:
                await self.window.controller.restart_session()
            except Exception:
                log.exception("restarting the session failed")

        self.window.restart_task = asyncio.ensure_future(go())
        return self.window.restart_task

    async def _ask_trust(self, folder: str) -> bool | None:
        """True/False for trusted, None when the user cancelled. Asked once per folder."""
        if self.window.demo:
            return True
        client = self.window.controller.client
        try:
            if not await client.needs_trust(folder):
                return True
        except Exception:
            return True
        from desktop_agent.ui.dialogs.trust import TrustDialog

        try:
            details = await client.trust_details(folder)  # the files and commands it names (off the Qt thread)
        except Exception:
            log.exception("could not read what the folder would run")
            details = None
        box = TrustDialog(home(folder), self.window, details)
        self.window.trust_box = box
        choice = await box.ask()
        self.window.trust_box = None
        if choice == "cancel":
            return None
        if choice == "trust":
            await client.trust(folder)
            return True
        return False

    def new_session(self) -> asyncio.Task | None:
        """File ▸ New Session (Ctrl+N): a new session in this folder beside the others (none of them stops)."""
        if self.window.folder:
            return self.open_folder_soon(self.window.folder)
        self.choose_folder()
        return None

    def refresh_sessions(self, current: str | None = None) -> asyncio.Task | None:
        """List the folder's sessions again: read on a worker thread (never on the Qt thread; Claude Code's are
        its own files), and only the latest listing is shown."""
        folder, client = self.window.folder, self.window.controller.client
        self._sessions_listing += 1
        if not folder:
            self.window.sessions_pane.clear()
            return None
        listing = self._sessions_listing
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # Qt events handled with the loop stopped (a window closing): nothing to list for
            return None

        async def go() -> None:
            try:
                infos = await client.list_sessions(folder)
            except Exception:
                log.exception("could not list the sessions of %s", folder)
                infos = []
            try:
                said = await client.session_names()
            except Exception:
                log.exception("could not read the session names")
                said = None
            if said is None:
                return
            self.session_names = said
            for live in self.window.lives:
                if live.session_id in said.names and not live.name:
                    live.name = said.names[live.session_id]
                    live.changed.emit()
            for info in infos:  # a resumed session's title: its first prompt
                resumed = self.live_of(info.session_id)
                if resumed is not None and not resumed.first_prompt and info.first_prompt:
                    resumed.resumed(info.first_prompt)
            if listing == self._sessions_listing and self.window.folder == folder:
                self.window.sessions_pane.show_rows(session_rows(infos, current, said.names, said.archived,
                                                          self.window.sessions_pane.show_archived.isChecked()))

        self.sessions_task = asyncio.ensure_future(go())
        return self.sessions_task

    async def _worktree_of(self, folder: str) -> Any:
        """Our worktree (``session.worktrees.Worktree``) whose directory ``folder`` is, else None."""
        from desktop_agent.client import review as client_review

        try:
            trees = await client_review.list_worktrees(folder)
        except Exception:
            return None
        real = os.path.realpath(folder)
        return next((w for w in trees if w.state == "active" and os.path.realpath(w.path) == real), None)

    def on_session_activated(self, sid: str) -> None:
        live = self.live_of(sid)
        if live is not None:
            self.window.show_live(live)
        elif self.window.folder:
            self.open_folder_soon(self.window.folder, resume=sid)

    async def replay_history(self, session: SessionHandle, live: LiveSession | None = None) -> None:
        """Read ``session``'s transcript and show it (``prepare_history`` on a worker thread, then ``show_history``)."""
        live = live or self.window.live
        folder = live.conversation.cwd or session.state.cwd
        from desktop_agent.protocol.control import HistoryRequest  # the protocol models load after the first paint

        try:
            entries = list((await session.request(HistoryRequest())).get("entries") or [])
        except Exception:
            log.exception("could not read the session's transcript")
            entries = []

        def read() -> PreparedHistory:
            return prepare_history(entries, folder)  # type: ignore[return-value]  # a list gives a result

        await self.show_history(await in_thread(read), live)

    async def show_history(self, prepared: PreparedHistory, live: LiveSession | None = None) -> None:
        """Render a resumed transcript: prompts, text, tool cards with their results and +/− summaries
        (the newest part: the view makes widgets for the last items only), and the changes panel's log built from
        the structured patches of every Edit and Write (``toolUseResult``) and the reverts and redos recorded
        since; remembers its tokens, cost and turns for the status bar."""
        live = live or self.window.live
        await live.conversation.replay_async(prepared.ops)
        live.diff_panel.log = prepared.changes
        if self.window.isVisible():
            await asyncio.sleep(0.005)  # the conversation paints before the panel lays its document out
        live.diff_panel.render_log(slices=RESUME_SLICE)
        if live is self.window.live:
            self.window._history_stats = (prepared.tokens, prepared.cost, prepared.turns)
        live.controller.set_usage_base(prepared.tokens, prepared.cost, prepared.turns)
        first = next((op[1] for op in prepared.ops if op[0] == "user" and len(op) > 1 and isinstance(op[1], str)),
                     None)
        live.resumed(first)

    async def attach_running(self) -> list[LiveSession]:
        """The background host runs sessions no window of this app shows (the window was closed, or lost): each
        comes back in a live session of its own, out of view — its transcript replayed, its pending questions
        asked again (they wait in the inbox)."""
        from desktop_agent.client.host_link import host_status

        try:
            status = await host_status()
        except Exception:
            log.exception("could not ask the background host for its sessions")
            return []
        shown = {live.session_id for win in self.window.app_windows() for live in win.lives}
        attached = []
        for info in (status or {}).get("sessions") or []:
            sid, cwd = str(info.get("session_id") or ""), str(info.get("cwd") or "")
            if not sid or sid in shown or not cwd:
                continue
            live = self.window._new_live()
            live.folder = cwd
            live.conversation.cwd = live.diff_panel.cwd = cwd
            live.opening = True
            try:
                kwargs = {k: v for k, v in self.window.session_kwargs.items() if k != "permission_mode"}
                session = await live.controller.open_session(cwd, executor="host", attach=sid, **kwargs)
                await self.replay_history(session, live)
            except Exception:
                log.exception("could not attach to %s in the background host", sid)
                continue
            finally:
                live.opening = False
            shown.add(sid)
            attached.append(live)
            live.changed.emit()
        return attached


RESUME_EXPANDED = 8  # a resumed session's newest changes shown with their diffs; the older ones folded (a click opens)
RESUME_SLICE = 4  # the changes panel filled this many turns (a change or two each, mostly) per turn of the loop


@dataclass
class PreparedHistory:
    """A resumed transcript made ready off the Qt thread: its display operations, its change log, its totals."""

    ops: list[HistoryOp]
    changes: ChangeLog
    turns: int
    tokens: int
    cost: float


def prepare_history(entries: list[dict[str, Any]] | None, cwd: str) -> PreparedHistory | None:
    """What ``show_history`` needs of ``entries`` (None for None), computed on any thread — no widget is touched:
    the display operations, the changes (as the live turn fed them, then the transcript's reverts and redos), the
    number of turns (user prompts), tokens and cost. Only the newest ``RESUME_EXPANDED`` changes keep their diffs
    open (as the conversation shows only its newest part), and their syntax lexers are compiled here too."""
    if entries is None:
        return None
    ops = history_ops(entries)
    changes = ChangeLog()
    names: dict[str, str] = {}
    turn = 0
    for op in ops:
        if op[0] == "user":
            turn += 1
        elif op[0] == "tool":
            names[op[1]] = op[2]
        elif op[0] == "result" and len(op) > 4 and op[4] is not None:
            changes.on_tool_finished(op[1], names.get(op[1], ""), op[3], op[4], max(1, turn), op[2])
    changes.apply_records(entries, cwd)
    for change in changes.changes[:-RESUME_EXPANDED]:  # older changes folded: the panel highlights the newest only
        change.collapsed = True
    for path in {c.file_path for c in changes.changes[-RESUME_EXPANDED:]}:
        lexer_for_filename(path)  # cached: the panel's first render does not compile it
    try:
        tokens, cost = transcript_usage(entries)
    except Exception:
        log.exception("could not sum the transcript's usage")
        tokens, cost = 0, 0.0
    return PreparedHistory(ops, changes, turn, tokens, cost)
