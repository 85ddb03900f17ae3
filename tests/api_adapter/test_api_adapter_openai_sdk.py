"""The real `openai` SDK talks to the adapter (what API users will actually run)."""

from __future__ import annotations

import openai
import pytest

from adapters.api.adapter import ApiAdapter
from adapters.api.settings import key_principal
from gateway.events import MessageEvent, OutboundMessage

from .conftest import KEY, Harness


def _sdk(api: Harness, key: str = KEY) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=api.base_url + "/v1", api_key=key, max_retries=0)


async def _streamed_reply(adapter: ApiAdapter, event: MessageEvent) -> None:
    sent = await adapter.send(
        OutboundMessage(chat_id=event.chat_id, text="Hi ▌", reply_to=event.message_id)
    )
    session = event.chat_id.removeprefix(f"{event.user.id}:")
    await adapter.edit(event.chat_id, sent.message_ids[0], f"Hi {session}!")
    await adapter.turn_complete(event.chat_id, reply_to=event.message_id, ok=True)


async def test_sdk_streaming_and_non_streaming(api: Harness) -> None:
    api.script = _streamed_reply
    async with _sdk(api) as sdk:
        models = await sdk.models.list()
        assert [m.id for m in models.data] == ["hermes-agent"]
        done = await sdk.chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": "x"}], user="ann"
        )
        assert done.choices[0].message.content == "Hi ann!"
        stream = await sdk.chat.completions.create(
            model="hermes-agent",
            messages=[{"role": "user", "content": "y"}],
            user="bea",
            stream=True,
        )
        pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
        assert "".join(pieces) == "Hi bea!"
    owner = key_principal(KEY)
    assert [e.chat_id for e in api.events] == [f"{owner}:ann", f"{owner}:bea"]


async def test_sdk_sees_auth_and_turn_errors(api: Harness) -> None:
    async with _sdk(api, "wrong") as sdk:
        with pytest.raises(openai.AuthenticationError):
            await sdk.models.list()

    async def fail(adapter: ApiAdapter, event: MessageEvent) -> None:
        await adapter.turn_complete(
            event.chat_id, reply_to=event.message_id, ok=False, error="model unavailable"
        )

    api.script = fail
    async with _sdk(api) as sdk:
        with pytest.raises(openai.APIError, match="model unavailable"):
            stream = await sdk.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "z"}], stream=True
            )
            async for _ in stream:
                pass
