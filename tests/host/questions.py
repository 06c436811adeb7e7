"""Questions for the inbox clients' tests, made the real way: an Edit run through the engine (``run_tool_use``)
in default mode asks through ``InboxPrompter`` — the host's prompter shape, ``Inbox.ask`` then ``Inbox.wait`` — so
the question carries the structured patch the Edit tool computed before asking (``permission_extras``), and the
reply it gets is applied by the Edit tool's own ``call``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from desktop_agent.core.permission import PermissionReply, PermissionRequest
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.host.inbox import Inbox, PendingQuestion
from desktop_agent.permissions.context import PermissionContext
from tests.engine.helpers import ctx_with, tool_use
from tests.tools.util import tools

FIVE_HUNKS_OLD = "".join(f"line {i}\n" for i in range(1, 61))


def five_hunk_edit() -> tuple[str, str]:
    """old_string / new_string of one Edit that changes five places 12 lines apart (five hunks)."""
    old = FIVE_HUNKS_OLD.split("line 5\n", 1)[1].rsplit("line 56\n", 1)[0]
    new = old
    for n in (6, 18, 30, 42, 54):
        new = new.replace(f"line {n}\n", f"LINE {n} changed\n")
    return old, new


class InboxPrompter:
    """Asks through the inbox and waits for the first answer from any client."""

    waits = True

    def __init__(self, inbox: Inbox, session_id: str = "sess-1", title: str = "fix the parser") -> None:
        self.inbox, self.session_id, self.title = inbox, session_id, title
        self.asked: list[PendingQuestion] = []

    async def ask(self, request: PermissionRequest) -> PermissionReply:
        question = self.inbox.ask(self.session_id, request, title=self.title)
        self.asked.append(question)
        return await self.inbox.wait(question)


async def read_file(ctx: Any, path: Path) -> None:
    out = await run_tool_use(tool_use("Read", {"file_path": str(path)}, "toolu_read_1"), ctx)
    assert not out.is_error, out.block


def edit_context(workdir: Path, prompter: InboxPrompter) -> Any:
    return ctx_with(tools(), workdir, permission_context=PermissionContext(str(workdir), mode="default"),
                    prompter=prompter)


async def start_edit(workdir: Path, inbox: Inbox, path: Path, old: str, new: str,
                     session_id: str = "sess-1") -> tuple[asyncio.Task[Any], PendingQuestion]:
    """Read ``path`` and start an Edit of it; the running tool call and its question (pending in ``inbox``)."""
    return await start_tool(workdir, inbox, path, "Edit", {"file_path": str(path), "old_string": old,
                                                            "new_string": new}, session_id)


async def start_tool(workdir: Path, inbox: Inbox, path: Path, tool: str, tool_input: dict[str, Any],
                     session_id: str = "sess-1") -> tuple[asyncio.Task[Any], PendingQuestion]:
    """Read ``path`` and start ``tool`` (Edit or Write) on it; the running tool call and its pending question."""
    prompter = InboxPrompter(inbox, session_id)
    ctx = edit_context(workdir, prompter)
    await read_file(ctx, path)
    task = asyncio.ensure_future(run_tool_use(tool_use(tool, tool_input, "toolu_edit_1"), ctx))
    for _ in range(500):
        if prompter.asked:
            return task, prompter.asked[0]
        await asyncio.sleep(0.01)
    raise AssertionError("the Edit never asked")


def bash_request(command: str, **extra: Any) -> PermissionRequest:
    return PermissionRequest(tool_name="Bash", tool_use_id="toolu_bash_1", input={"command": command, **extra},
                             cwd="/tmp", message="Claude requested permissions to use Bash, but you haven't granted "
                                                 "it yet.", subcommands=[command])


def read_request(path: str) -> PermissionRequest:
    return PermissionRequest(tool_name="Read", tool_use_id="toolu_read_9", input={"file_path": path}, cwd="/tmp",
                             message=f"Claude requested permissions to read from {path}, but you haven't granted "
                                     "it yet.")
