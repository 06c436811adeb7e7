"""The settings gate of Open Folder: a folder whose settings cannot be read does not open.

Before the trust question and before any session, ``settings_gate`` asks the client (off the Qt thread) whether the
settings the folder's session would load — managed, user, project and local — can be read. When one cannot (not
strict JSON, a key given twice, not UTF-8, unreadable), the folder does not open: a blocking error banner names the
file, the line and the column, with "Try again" (the person fixes the file, then retries); nothing runs with fewer
rules, whichever executor the window uses (Claude Code itself would run on without the broken file). Invalid entries
of readable files (skipped, the others in force) are shown once the folder is open, as a notice banner
(``show_problems``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication

from desktop_agent.ui.window.presenters import home

if TYPE_CHECKING:
    from desktop_agent.ui.conversation.view import ConversationView
    from desktop_agent.ui.window.controller import AgentController

log = logging.getLogger(__name__)
translate = QCoreApplication.translate
BLOCKED_KEY = "setup"  # the window's set-up banner: a prompt typed meanwhile shows it again (``MainWindow.send``)
PROBLEMS_KEY = "settings-entries"
RETRY_ACTION = "reopen-folder"
SHOWN_PROBLEMS = 6


async def settings_gate(controller: AgentController, conversation: ConversationView, folder: str) -> list[str] | None:
    """None when ``folder`` must not open (the blocking banner is shown); else the invalid entries to report."""
    client = controller.client
    try:
        error, problems = await client.settings_check(folder)  # reads the files on a worker thread
    except Exception as exc:  # the check itself failed: the folder does not open either
        log.exception("could not check the settings of %s", folder)
        error, problems = f"{type(exc).__name__}: {exc}", []
    if error:
        conversation.add_banner(
            "error", translate("MainWindow", "{0} did not open: {1}. Nothing was started, so no rule is lost: fix the "
                                             "file, then try again.").format(home(folder), error),
            [(RETRY_ACTION, translate("MainWindow", "Try again"))], key=BLOCKED_KEY)
        return None
    conversation.remove_banner(BLOCKED_KEY)
    return list(problems)


def show_problems(conversation: ConversationView, problems: list[str]) -> None:
    """The invalid entries of the folder's settings, skipped while the other entries stay in force."""
    if not problems:
        conversation.remove_banner(PROBLEMS_KEY)
        return
    for problem in problems:
        log.warning("settings: %s", problem)
    shown = problems[:SHOWN_PROBLEMS]
    more = len(problems) - len(shown)
    lines = "\n".join(f"• {p}" for p in shown)
    if more:
        lines += "\n" + translate("MainWindow", "…and {0} more (see stderr).").format(more)
    conversation.add_banner(
        "notice", translate("MainWindow", "Some settings entries are not valid; each was skipped and every other "
                                          "entry is in force:") + "\n" + lines, key=PROBLEMS_KEY)
