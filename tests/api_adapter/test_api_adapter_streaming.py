"""Server-sent events: chunk order, the cursor rule, disconnects and concurrency."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp

from adapters.api.adapter import ApiAdapter
from adapters.api.settings import key_principal
from gateway.events import MessageEvent, OutboundMessage

from .conftest import KEY, Harness, chat_body, joined_content, read_sse, running

CHAT = "/v1/chat/completions"


def _edits_script(*frames: str, ok: bool = True, error: str | None = None):  # noqa: ANN202
    """Send the first frame, edit the same message through the rest, then complete."""

    async def script(adapter: ApiAdapter, event: MessageEvent) -> None:
        sent = await adapter.send(
            OutboundMessage(chat_id=event.chat_id, text=frames[0], reply_to=event.message_id)
        )
        for frame in frames[1:]:
            await asyncio.sleep(0)
            await adapter.edit(event.chat_id, sent.message_ids[0], frame)
        await adapter.turn_complete(event.chat_id, reply_to=event.message_id, ok=ok, error=error)

    return script


async def _stream(api: Harness, client: aiohttp.ClientSession, text: str = "hi") -> list:
    async with client.post(
        api.base_url + CHAT, json=chat_body(text, stream=True), headers=api.headers()
    ) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        return await read_sse(resp)


async def test_stream_chunks_join_to_final_text_and_end_with_done(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    api.script = _edits_script("Hel▌", "Hello wor▌", "Hello world, ▌", "Hello world, again")
    payloads = await _stream(api, client)
    assert payloads[-1] == "[DONE]"
    chunks = payloads[:-1]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    assert joined_content(chunks) == "Hello world, again"
    assert not any("▌" in (c["choices"][0]["delta"].get("content") or "") for c in chunks)


async def test_stream_rewriting_edit_still_ends_with_the_final_text(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    api.script = _edits_script("Thinking…▌", "Answer: 4▌", "Answer: 42")
    content = joined_content(await _stream(api, client))
    assert content.endswith("Answer: 42")
    assert content == "Thinking…\n\nAnswer: 42"


async def test_stream_several_messages_joined_with_blank_line(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    async def two(adapter: ApiAdapter, event: MessageEvent) -> None:
        for text in ("/status: ok", "second message"):
            await adapter.send(
                OutboundMessage(chat_id=event.chat_id, text=text, reply_to=event.message_id)
            )
        await adapter.turn_complete(event.chat_id, reply_to=event.message_id, ok=True)

    api.script = two
    assert joined_content(await _stream(api, client)) == "/status: ok\n\nsecond message"


async def test_stream_failed_turn_sends_error_event_then_done(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    api.script = _edits_script("partial▌", ok=False, error=f"provider refused {KEY}")
    payloads = await _stream(api, client)
    assert payloads[-1] == "[DONE]"
    error = payloads[-2]["error"]
    assert "provider refused" in error["message"] and KEY not in error["message"]
    assert joined_content(payloads) == "partial"


async def test_client_disconnect_mid_stream_keeps_serving(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    release = asyncio.Event()

    async def slow(adapter: ApiAdapter, event: MessageEvent) -> None:
        sent = await adapter.send(
            OutboundMessage(chat_id=event.chat_id, text="first▌", reply_to=event.message_id)
        )
        await release.wait()
        await adapter.edit(event.chat_id, sent.message_ids[0], "first and more")
        await adapter.turn_complete(event.chat_id, reply_to=event.message_id, ok=True)

    api.script = slow
    resp = await client.post(
        api.base_url + CHAT, json=chat_body("a", stream=True), headers=api.headers()
    )
    async for raw in resp.content:
        if b"first" in raw:
            break
    resp.close()
    release.set()
    await asyncio.gather(*api.tasks)

    api.script = _edits_script("next reply")
    assert joined_content(await _stream(api, client, "b")) == "next reply"
    assert api.task is not None and not api.task.done()


async def test_concurrent_requests_in_different_sessions_get_their_own_replies(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    arrived: list[MessageEvent] = []
    both = asyncio.Event()

    async def after_both(adapter: ApiAdapter, event: MessageEvent) -> None:
        arrived.append(event)
        if len(arrived) == 2:
            both.set()
        await both.wait()
        sent = await adapter.send(
            OutboundMessage(chat_id=event.chat_id, text="for ▌", reply_to=event.message_id)
        )
        await asyncio.sleep(0)
        await adapter.edit(event.chat_id, sent.message_ids[0], f"for {event.chat_id}")
        await adapter.turn_complete(event.chat_id, reply_to=event.message_id, ok=True)

    api.script = after_both

    async def ask(session: str, stream: bool) -> str:
        body = chat_body(f"from {session}", user=session, stream=stream)
        async with client.post(api.base_url + CHAT, json=body, headers=api.headers()) as r:
            if stream:
                return joined_content(await read_sse(r))
            return (await r.json())["choices"][0]["message"]["content"]

    results = await asyncio.gather(ask("alice", True), ask("bob", False))
    owner = key_principal(KEY)
    assert results == [f"for {owner}:alice", f"for {owner}:bob"]


async def test_quiet_stream_sends_keepalive_comments(
    tmp_path: Path, client: aiohttp.ClientSession
) -> None:
    release = asyncio.Event()

    async def waits(adapter: ApiAdapter, event: MessageEvent) -> None:
        await release.wait()
        await _edits_script("finally")(adapter, event)

    async with running({"api_keys": [KEY], "keepalive_s": 0.05}, tmp_path) as api:
        api.script = waits
        body = chat_body(stream=True)
        async with client.post(api.base_url + CHAT, json=body, headers=api.headers()) as resp:
            async for raw in resp.content:
                if raw.startswith(b": keep-alive"):
                    break
            release.set()
            assert joined_content(await read_sse(resp)) == "finally"
