"""core/abort.py: ``until_aborted`` (the one "await X unless the user stops") and ``cancel_and_wait``."""

from __future__ import annotations

import asyncio

import pytest

from desktop_agent.core.abort import cancel_and_wait, until_aborted
from desktop_agent.core.context import AbortSignal
from tests.model.aio import aio


@aio
async def test_the_task_finishing_first_is_true_and_leaves_no_waiter():
    signal = AbortSignal()
    task = asyncio.ensure_future(asyncio.sleep(0.01, result="done"))
    assert await until_aborted(task, signal) is True and task.result() == "done"
    assert not signal.aborted


@aio
async def test_the_abort_first_is_false_and_the_task_keeps_running():
    signal = AbortSignal()
    task = asyncio.ensure_future(asyncio.sleep(5))
    asyncio.get_running_loop().call_later(0.01, signal.abort)
    assert await until_aborted(task, signal) is False
    assert not task.done()  # the caller decides: cancel it, or grant a grace period
    await cancel_and_wait(task)
    assert task.cancelled()


@aio
async def test_already_done_wins_over_already_aborted():
    signal = AbortSignal()
    signal.abort()
    done = asyncio.get_running_loop().create_future()
    done.set_result(1)
    assert await until_aborted(done, signal) is True
    assert await until_aborted(asyncio.ensure_future(asyncio.sleep(5)), signal) is False


@aio
async def test_cancelling_the_waiter_cancels_the_task():
    signal = AbortSignal()
    task = asyncio.ensure_future(asyncio.sleep(5))
    waiter = asyncio.ensure_future(until_aborted(task, signal))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.sleep(0)
    assert task.cancelled()


@aio
async def test_cancel_and_wait_swallows_the_task_end_but_not_its_own_cancellation():
    async def failing():
        await asyncio.sleep(0)
        raise RuntimeError("boom")

    await cancel_and_wait(asyncio.ensure_future(failing()))  # no error: the task's end is not ours

    async def stubborn():
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            await asyncio.sleep(5)  # takes its time to stop

    inner = asyncio.ensure_future(stubborn())
    outer = asyncio.ensure_future(cancel_and_wait(inner))
    await asyncio.sleep(0.01)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    inner.cancel()
