"""File ▸ New Session in Worktree…, File ▸ Review Worktree Changes…, the sidebar's Archive Worktree and File ▸
Restore Worktree… (issue 24). A new worktree session is the
window's folder set to a fresh git worktree of it (``client.review.new_worktree``: branch ``agent/<slug>``), so the
session's working folder, permissions and sandbox are the worktree's. Review opens ``ui.review.ReviewView`` on the
window's worktree (or, from the main checkout, its most recent one) in its own window; the review record goes to
the session running in that worktree, which tells the model with its next message. Git work runs on worker
threads (``client.review``).

``WorktreeActions`` is a part of ``MainWindow`` (``window.worktree_actions``): it holds the Review windows it opened
and the restore question, and reaches the window only through ``window``, typed as ``host_protocol.WindowHost``.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QDialog, QInputDialog, QVBoxLayout

from desktop_agent.client import review as client_review
from desktop_agent.ui.review.view import ReviewView

if TYPE_CHECKING:
    from desktop_agent.ui.window.host_protocol import WindowHost
    from desktop_agent.ui.window.live import LiveSession

translate = QCoreApplication.translate  # the window's context, as its other parts use


class WorktreeActions:
    """The worktree actions of one window: new, review, archive, restore."""

    def __init__(self, window: WindowHost) -> None:
        self.window = window
        self.review_windows: list[QDialog] = []  # the Review changes windows open
        self.restore_dialog: Any = None  # File ▸ Restore Worktree…'s question, once asked

    def new_worktree_session(self) -> None:
        if not self.window.folder:
            self.window.conversation.add_banner("error", translate("MainWindow",
                                                            "Open a folder first (File ▸ Open Folder…, Ctrl+O)."))
            return
        asyncio.ensure_future(self._new_worktree(self.window.folder))

    async def _new_worktree(self, folder: str) -> None:
        try:
            wt = await client_review.new_worktree(folder)
        except client_review.WorktreeError as exc:
            self.window.conversation.add_banner(
                "error", translate("MainWindow", "Cannot start a worktree session: {0}").format(exc))
            return
        self.window.folders.open_folder_soon(wt.path)

    def review_worktree(self) -> None:
        if not self.window.folder:
            self.window.conversation.add_banner("error", translate("MainWindow",
                                                            "Open a folder first (File ▸ Open Folder…, Ctrl+O)."))
            return
        asyncio.ensure_future(self.review(self.window.folder))

    async def review(self, folder: str) -> ReviewView | None:
        """Review the worktree ``folder`` is (or, from the main checkout, its most recent one) in a window of its
        own; None when there is none to review."""
        trees = [w for w in await client_review.list_worktrees(folder) if w.state == "active"]
        here = [w for w in trees if os.path.realpath(w.path) == os.path.realpath(folder)]
        pick = here[0] if here else (trees[-1] if trees else None)
        if pick is None:
            self.window.conversation.add_banner("notice", translate(
                "MainWindow", "This folder has no worktree session to review (File ▸ New Session in Worktree…)."))
            return None
        recorder = self.window._record_entry if here else None  # the session in this window runs in that worktree
        dlg = QDialog(self.window)
        dlg.setWindowTitle(translate("MainWindow", "Review changes \u2014 {0}").format(pick.branch))
        dlg.resize(1100, 700)
        view = ReviewView(pick.repo, pick.slug, recorder=recorder, parent=dlg)
        QVBoxLayout(dlg).addWidget(view)
        view.closed.connect(dlg.close)
        self.review_windows.append(dlg)
        dlg.finished.connect(lambda _r: self.review_windows.remove(dlg) if dlg in self.review_windows else None)
        dlg.show()
        await view.load()
        return view

    async def archive_worktree(self, live: LiveSession) -> bool:
        """Archive Worktree: the session closes (a running turn asks first), then the worktree is removed with its
        branch and a snapshot kept — refused, and said, when it is dirty in a way the snapshot cannot keep, locked
        or in use (``session.worktrees``)."""
        tree = live.worktree
        if tree is None or not await self.window.close_live(live):
            return False
        try:
            done = await client_review.archive_worktree(tree.repo, tree.slug)
        except Exception as exc:
            self.window.conversation.add_banner(
                "error", translate("MainWindow", "The worktree was not archived: {0}").format(exc))
            return False
        for other in self.window.lives:  # an empty view left on the worktree's folder, which is gone: on the repo
            if other.controller.session is None and other.folder == live.folder:
                other.folder = tree.repo
        self.window.folders.refresh_sessions(self.window._session_id())
        self.window.status.showMessage(translate("MainWindow", "Worktree {0} archived: its branch and a snapshot are "
                                                 "kept (File ▸ Restore Worktree…).").format(done.branch), 8000)
        return True

    def restore_worktree(self) -> asyncio.Task | None:
        """File ▸ Restore Worktree…: an archived worktree of this folder's repository back, and a session in it."""
        if not self.window.folder:
            return None
        return asyncio.ensure_future(self._restore_worktree(self.window.folder))

    async def _restore_worktree(self, folder: str) -> str | None:
        archived = [w for w in await client_review.list_worktrees(folder) if w.state == "archived"]
        if not archived:
            self.window.conversation.add_banner(
                "notice", translate("MainWindow", "This repository has no archived worktree."))
            return None
        dlg = QInputDialog(self.window)
        dlg.setObjectName("restoreWorktreeDialog")
        dlg.setWindowTitle(translate("MainWindow", "Restore Worktree"))
        dlg.setLabelText(translate("MainWindow", "Worktree:"))
        dlg.setComboBoxItems([w.branch for w in archived])
        picked: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

        def settle(value: str | None) -> None:
            if not picked.done():
                picked.set_result(value)

        dlg.textValueSelected.connect(settle)
        dlg.rejected.connect(lambda: settle(None))
        self.restore_dialog = dlg
        dlg.open()
        branch = await picked
        tree = next((w for w in archived if w.branch == branch), None)
        if tree is None:
            return None
        try:
            back = await client_review.restore_worktree(tree.repo, tree.slug)
        except Exception as exc:
            self.window.conversation.add_banner(
                "error", translate("MainWindow", "The worktree was not restored: {0}").format(exc))
            return None
        await self.window.folders.open_folder(back.path)
        return back.path


__all__ = ["WorktreeActions"]
