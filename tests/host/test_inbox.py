"""The one pending map: bound answers, first wins, refusals change nothing, withdraw cancels the waiter."""

from __future__ import annotations

import asyncio

import pytest

from desktop_agent.core.permission import PermissionReply, PermissionRequest
from desktop_agent.host.inbox import Inbox, input_sha256


def _request(command: str = "ls", request_id: str | None = None) -> PermissionRequest:
    extra = {"request_id": request_id} if request_id else {}
    return PermissionRequest(tool_name="Bash", tool_use_id="toolu_1", input={"command": command}, cwd="/tmp", **extra)


def test_canonical_sha256_sorts_keys_and_drops_spaces() -> None:
    assert input_sha256({"b": 1, "a": "é"}) == input_sha256({"a": "é", "b": 1})
    import hashlib

    assert input_sha256({"b": 1, "a": "é"}) == hashlib.sha256('{"a":"é","b":1}'.encode()).hexdigest()


def test_first_answer_wins_and_everyone_hears_it() -> None:
    async def main() -> None:
        inbox = Inbox()
        heard: list[tuple[str, str]] = []
        inbox.subscribe(lambda e: heard.append((e.kind, e.source)))
        q = inbox.ask("s1", _request())
        allow, deny = PermissionReply(behavior="allow"), PermissionReply(behavior="deny", message="no")
        assert inbox.answer("s1", q.request_id, deny, source="phone") == "ok"
        assert inbox.answer("s1", q.request_id, allow, source="window") == "answered"
        assert (await inbox.wait(q)).behavior == "deny"
        assert heard == [("asked", ""), ("resolved", "phone")]
        assert inbox.pending() == []

    asyncio.run(main())


def test_an_answer_never_lands_in_another_session_or_for_another_input() -> None:
    async def main() -> None:
        inbox = Inbox()
        q1 = inbox.ask("s1", _request("ls", request_id="r1"))
        q2 = inbox.ask("s2", _request("rm -rf /", request_id="r1"))  # same request id, other session
        allow = PermissionReply(behavior="allow")
        assert inbox.answer("s3", "r1", allow) == "unknown"
        assert inbox.answer("s2", "r1", allow, input_sha256=q1.input_sha256) == "mismatch"
        assert not q2.future.done() and len(inbox.pending()) == 2
        assert inbox.answer("s1", "r1", allow, input_sha256=q1.input_sha256) == "ok"
        assert not q2.future.done()

    asyncio.run(main())


def test_withdraw_cancels_and_a_late_answer_is_refused() -> None:
    async def main() -> None:
        inbox = Inbox()
        q = inbox.ask("s1", _request())
        waiter = asyncio.ensure_future(inbox.wait(q))
        await asyncio.sleep(0)
        inbox.withdraw("s1", q.request_id)
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert inbox.answer("s1", q.request_id, PermissionReply(behavior="allow")) == "withdrawn"
        with pytest.raises(ValueError):
            inbox.ask("s1", q.request)  # a request id is never reused within a session

    asyncio.run(main())


def test_cancelling_the_waiter_withdraws_the_question() -> None:
    async def main() -> None:
        inbox = Inbox()
        q = inbox.ask("s1", _request())
        waiter = asyncio.ensure_future(inbox.wait(q))
        await asyncio.sleep(0)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert inbox.get("s1", q.request_id) is None

    asyncio.run(main())
