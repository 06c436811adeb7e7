"""``aio``: run an ``async def`` test on a fresh asyncio loop, with a timeout.

The shared conftest's loop-factory hook serves only the Qt tests (for other tests it returns None,
which pytest-asyncio rejects), so engine tests drive their coroutines with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable


def aio(fn: Callable[..., Any] | None = None, *, timeout: float = 20.0) -> Any:
    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def runner(*args: Any, **kwargs: Any) -> Any:
            return asyncio.run(asyncio.wait_for(f(*args, **kwargs), timeout))

        return runner

    return wrap(fn) if fn is not None else wrap
