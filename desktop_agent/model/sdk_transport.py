"""The ``anthropic`` SDK as a transport: ``AsyncAnthropic.messages.stream`` / ``messages.create``.

The same interface as ``model.wire.MessagesAPI`` (``stream(params)`` → raw event dicts,
``create(params)`` → the message dict, ``aclose()``) and the same exceptions: the SDK's errors are
translated at this boundary into ``wire.APIStatusError`` / ``APIConnectionError`` /
``APITimeoutError``, so ``AnthropicClient``'s classification, retries and watchdog do not know which
transport ran. Chosen with ``DESKTOP_AGENT_API_TRANSPORT=sdk`` (or ``transport="sdk"``); the default
is the wire client, because ``import anthropic`` costs ~2 s of CPU and ~45 MB at every start (see
``model/wire.py``). The SDK's own retries are switched off: ours are the only ones.
"""

from __future__ import annotations

from typing import Any, AsyncGenerator, Mapping

import anthropic
import httpx2

from desktop_agent.model.wire import (
    RAW_EVENT_TYPES, APIConnectionError, APIStatusError, APITimeoutError, connection_error,
)


def translate(exc: BaseException) -> BaseException:
    """An SDK exception → the wire exception of the same meaning (others unchanged)."""
    if isinstance(exc, anthropic.APIStatusError):
        return APIStatusError(exc.status_code, exc.body, exc.response.headers)
    if isinstance(exc, anthropic.APITimeoutError):
        return APITimeoutError(str(exc))
    if isinstance(exc, anthropic.APIConnectionError):
        return APIConnectionError(str(exc.__cause__ or exc))
    return exc


class SDKMessagesAPI:
    def __init__(
        self,
        api_key: str,
        base_url: str | None = None,
        *,
        timeout_s: float = 600.0,
        default_headers: Mapping[str, str] | None = None,
        auth_token: str | None = None,
    ):
        self.sdk = anthropic.AsyncAnthropic(
            api_key=api_key or None, auth_token=auth_token, base_url=base_url, max_retries=0,
            timeout=timeout_s, default_headers=dict(default_headers or {}) or None,
        )

    async def stream(self, params: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        started = False
        try:
            async with self.sdk.messages.stream(**params) as stream:
                started = True
                async for event in stream:
                    etype = event.type
                    if etype not in RAW_EVENT_TYPES:
                        continue  # the SDK's derived text / input_json / thinking events
                    if event.type == "content_block_stop":  # on the attribute: narrows the event's type
                        yield {"type": "content_block_stop", "index": event.index}
                    elif etype == "message_stop":
                        yield {"type": "message_stop"}
                    else:
                        yield event.model_dump(mode="json", exclude_none=True)
        except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
            raise translate(exc) from exc
        except httpx2.HTTPError as exc:  # while reading the body: the SDK does not wrap these
            raise connection_error(exc, started) from exc

    async def create(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            message = await self.sdk.messages.create(**params)
        except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
            raise translate(exc) from exc
        return message.model_dump(mode="json", exclude_none=True)

    async def aclose(self) -> None:
        await self.sdk.close()
