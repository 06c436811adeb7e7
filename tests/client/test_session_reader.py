"""``client.session.ProtocolSession``'s reader: when reading a line fails (a bug, a loop error), the session ends
visibly — every request waiting for a response fails at once with the transport's death, and later ones too —
instead of each waiting out its own timeout for a reader that is gone."""

from __future__ import annotations

import asyncio
import time

import pytest

from desktop_agent.client import SessionOptions
from desktop_agent.client.base import ExecutorDied
from desktop_agent.client.hosts import HostClient
from desktop_agent.protocol.control import HistoryRequest


@pytest.mark.asyncio
async def test_a_reader_that_fails_ends_the_session_instead_of_leaving_requests_waiting(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # no request reaches a model here
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    session = await HostClient().open(tmp_path, SessionOptions(trusted=True))
    try:
        assert "entries" in await asyncio.wait_for(session.request(HistoryRequest()), 10)
        original = session._on_message

        def broken(line):
            session._on_message = original
            raise RuntimeError("<Queue> is bound to a different event loop")

        session._on_message = broken
        t0 = time.monotonic()
        with pytest.raises(ExecutorDied):
            await asyncio.wait_for(session.request(HistoryRequest()), 10)
        assert time.monotonic() - t0 < 2, "the request waited for a reader that had died"
        assert not session.state.alive
        with pytest.raises(ExecutorDied):  # the next one is refused at once, not sent into the void
            await asyncio.wait_for(session.request(HistoryRequest()), 10)
    finally:
        await asyncio.wait_for(session.end(None), 20)
