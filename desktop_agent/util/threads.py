"""``in_thread``: await a blocking function run on a plain daemon thread.

Not an executor pool: a window's loop is qasync's, and a result delivered through its QThread executor
crashed the Qt loop now and then. The result (or exception) comes back with ``call_soon_threadsafe``; a
closed loop just drops it. Imports nothing heavy, so the window can use it before the engine loads.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable


async def in_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` on a plain daemon thread and await its result (no executor pool: a window's loop may be Qt's)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            value, ok = fn(), True
        except BaseException as exc:  # delivered to the awaiting coroutine
            value, ok = exc, False
        try:
            loop.call_soon_threadsafe(deliver, ok, value)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            pass

    threading.Thread(target=work, name="session-build", daemon=True).start()
    return await future
