"""The one abort race: ``until_aborted`` — wait for a piece of work unless the user's Stop comes first.

"Await X unless aborted" is written once, here, for the engine, the permission gateway and the tools:
``done = await until_aborted(task, signal)`` is True when ``task`` finished (also when both happened), False
when ``signal`` fired first; the task is left running then, for the caller to cancel or to grant a grace
period. If the waiter itself is cancelled, the task is cancelled too (no orphan keeps running).
"""

from __future__ import annotations

import asyncio
from typing import Any

from desktop_agent.core.context import AbortSignal


async def until_aborted(task: asyncio.Future[Any], signal: AbortSignal) -> bool:
    """Wait until ``task`` is done (True) or ``signal`` is aborted (False), whichever comes first."""
    if task.done():
        return True
    if signal.aborted:
        return False
    abort_wait = asyncio.ensure_future(signal.wait())
    try:
        done, _ = await asyncio.wait({task, abort_wait}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        abort_wait.cancel()
    return task in done


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait until it has stopped, swallowing whatever it ends with (but not a cancellation
    of the caller itself)."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # we ourselves are being cancelled: that is not the task's end to swallow
    except BaseException:  # noqa: BLE001 - the task's own end (it failed) is not ours to raise
        pass
