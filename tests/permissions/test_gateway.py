"""``permissions.gateway``: the pending asks (request_id → Future, first answer wins, a duplicate is ignored) and
the round trip they carry (``can_use_tool`` answered by the prompter, by ``pending.answer``, or by the abort)."""

from __future__ import annotations

import asyncio

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.errors import USER_DENIED_MESSAGE
from desktop_agent.core.events import PermissionRequested, PermissionResolved
from desktop_agent.core.permission import PermissionReply, PermissionRequest
from desktop_agent.permissions import gateway
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.gateway import PendingRequests, can_use_tool
from tests.permissions.util import TOOLS


def test_first_answer_wins_and_a_duplicate_is_ignored() -> None:
    async def main() -> None:
        pending = PendingRequests()
        future = pending.open("r1")
        assert "r1" in pending and len(pending) == 1
        assert pending.answer("r1", PermissionReply(behavior="allow"), "user") is True
        assert pending.answer("r1", PermissionReply(behavior="deny"), "hook") is False  # too late: ignored
        assert pending.answer("unknown", PermissionReply(behavior="allow")) is False
        reply, by = await future
        assert (reply.behavior, by) == ("allow", "user")
        pending.close("r1")
        assert "r1" not in pending and len(pending) == 0

    asyncio.run(main())


def test_close_cancels_an_unanswered_request() -> None:
    async def main() -> None:
        pending = PendingRequests()
        future = pending.open("r2")
        pending.close("r2")
        assert future.cancelled()
        assert pending.answer("r2", PermissionReply(behavior="allow")) is False

    asyncio.run(main())


class SilentPrompter:
    """Never answers by itself: the test answers through ``gateway.pending``."""

    waits = True

    def __init__(self) -> None:
        self.requests: list[PermissionRequest] = []
        self.cancelled = 0

    async def ask(self, request: PermissionRequest) -> PermissionReply:
        self.requests.append(request)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")


def _ctx(tmp_path, prompter, events) -> ToolUseContext:
    return ToolUseContext(cwd=str(tmp_path), permission_context=PermissionContext(str(tmp_path)),
                          prompter=prompter, emit=events.append)


def test_an_answer_through_pending_decides_and_the_prompter_is_cancelled(tmp_path) -> None:
    prompter = SilentPrompter()
    events: list = []
    ctx = _ctx(tmp_path, prompter, events)
    tool = TOOLS["Edit"]
    inp = tool.input_model.model_validate({"file_path": str(tmp_path / "a.txt")})

    async def main():
        task = asyncio.ensure_future(can_use_tool(tool, inp, ctx, "toolu_1"))
        while not prompter.requests:
            await asyncio.sleep(0)
        rid = prompter.requests[0].request_id
        assert rid in gateway.pending
        assert gateway.pending.answer(rid, PermissionReply(behavior="deny", message="not now"), "user")
        assert not gateway.pending.answer(rid, PermissionReply(behavior="allow"), "user")  # the duplicate
        decision = await task
        await asyncio.sleep(0)
        return rid, decision

    rid, decision = asyncio.run(main())
    assert decision.behavior == "deny" and decision.message == "not now"
    assert rid not in gateway.pending and prompter.cancelled == 1
    kinds = [type(e) for e in events]
    assert kinds == [PermissionRequested, PermissionResolved]
    assert events[1].request_id == rid and events[1].reply.message == "not now"


def test_an_abort_while_waiting_answers_deny(tmp_path) -> None:
    prompter = SilentPrompter()
    events: list = []
    ctx = _ctx(tmp_path, prompter, events)
    tool = TOOLS["Edit"]
    inp = tool.input_model.model_validate({"file_path": str(tmp_path / "a.txt")})

    async def main():
        task = asyncio.ensure_future(can_use_tool(tool, inp, ctx, "toolu_2"))
        while not prompter.requests:
            await asyncio.sleep(0)
        ctx.abort.abort()
        return await task

    decision = asyncio.run(main())
    assert decision.behavior == "deny" and decision.message == USER_DENIED_MESSAGE
    assert len(gateway.pending) == 0
