"""``cli.stdio``: the control channel writes typed ``protocol`` lines and routes typed responses back."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from desktop_agent.cli.stdio import ControlChannel, Output
from desktop_agent.protocol import decode
from desktop_agent.protocol.control import HookCallbackRequest


def _lines(buf: io.StringIO) -> list[str]:
    return buf.getvalue().splitlines()


def test_request_response_error_and_cancel_on_the_wire():
    async def scenario() -> None:
        buf = io.StringIO()
        channel = ControlChannel(Output(buf))
        ask = asyncio.ensure_future(channel.request(HookCallbackRequest(callback_id="c1", input={"a": "é"}),
                                                    request_id="r1"))
        await asyncio.sleep(0)
        assert _lines(buf) == ['{"type": "control_request", "request_id": "r1", "request": {"subtype": '
                               '"hook_callback", "callback_id": "c1", "input": {"a": "é"}}}']
        channel.on_response(decode({"type": "control_response", "response": {
            "subtype": "success", "request_id": "r1", "response": {"continue": True}}}))
        assert await ask == {"continue": True}

        failing = asyncio.ensure_future(channel.request(HookCallbackRequest(callback_id="c2"), request_id="r2"))
        await asyncio.sleep(0)
        channel.on_response(decode({"type": "control_response", "response": {
            "subtype": "error", "request_id": "r2", "error": ""}}))
        with pytest.raises(RuntimeError, match="control request failed"):
            await failing

        waiting = asyncio.ensure_future(channel.request(HookCallbackRequest(callback_id="c3"), request_id="r3"))
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert json.loads(_lines(buf)[-1]) == {"type": "control_cancel_request", "request_id": "r3"}
        # a late or unknown answer is ignored
        channel.on_response(decode({"type": "control_response", "response": {
            "subtype": "success", "request_id": "r3", "response": {}}}))
        channel.close()
        with pytest.raises(ConnectionError):
            await channel.request(HookCallbackRequest(callback_id="c4"))

    asyncio.run(scenario())
