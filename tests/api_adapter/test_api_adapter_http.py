"""The HTTP surface of the api adapter, over real HTTP against a stand-in gateway."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import aiohttp

from adapters.api.adapter import ApiAdapter
from adapters.api.settings import key_principal
from gateway.events import ChatType, MessageEvent, OutboundMessage

from .conftest import KEY, OTHER_KEY, Harness, chat_body, running

CHAT = "/v1/chat/completions"


async def test_missing_or_wrong_key_is_refused_with_openai_error(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {KEY}"}):
        async with client.post(api.base_url + CHAT, json=chat_body(), headers=headers) as resp:
            assert resp.status == 401
            body = await resp.json()
            assert body["error"]["code"] == "invalid_api_key"
            assert KEY not in await resp.text()
    async with client.get(api.base_url + "/v1/models") as resp:
        assert resp.status == 401
    assert api.events == []


async def test_no_configured_keys_refuses_everyone(
    tmp_path: Path, client: aiohttp.ClientSession
) -> None:
    async with running({"api_keys": []}, tmp_path) as api:
        async with client.post(api.base_url + CHAT, json=chat_body(), headers=api.headers("")) as r:
            assert r.status == 401
        async with client.post(api.base_url + CHAT, json=chat_body(), headers=api.headers()) as r:
            assert r.status == 401
        assert api.events == []


async def test_bad_json_and_missing_user_message_are_400(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    async with client.post(api.base_url + CHAT, data=b"{not json", headers=api.headers()) as r:
        assert r.status == 400
        assert "not valid JSON" in (await r.json())["error"]["message"]
    no_user = {"messages": [{"role": "system", "content": "be nice"}]}
    async with client.post(api.base_url + CHAT, json=no_user, headers=api.headers()) as r:
        assert r.status == 400
        assert "no user message" in (await r.json())["error"]["message"]
    async with client.post(api.base_url + CHAT, json=[1, 2], headers=api.headers()) as r:
        assert r.status == 400
    assert api.events == []


_PNG_URL = "data:image/png;base64," + base64.b64encode(
    b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()


async def test_only_the_newest_user_message_becomes_the_event(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    body = {
        "model": "gpt-whatever",
        "temperature": 0.1,
        "messages": [
            {"role": "system", "content": "ignored system"},
            {"role": "user", "content": "old question"},
            {"role": "assistant", "content": "old answer"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "new part one"},
                    {"type": "image_url", "image_url": {"url": _PNG_URL}},
                    {"type": "text", "text": "new part two"},
                ],
            },
            {"role": "assistant", "content": "trailing assistant prefill"},
        ],
    }
    async with client.post(api.base_url + CHAT, json=body, headers=api.headers()) as r:
        assert r.status == 200
        reply = await r.json()
    [event] = api.events
    assert event.text == "new part one\nnew part two"
    [image] = event.attachments  # an image part becomes a cached attachment
    assert image.kind == "image" and open(image.path, "rb").read().startswith(b"\x89PNG")
    assert reply["choices"][0]["message"]["content"] == "echo: new part one\nnew part two"
    assert event.platform == "api"
    assert event.chat_type is ChatType.DM
    assert event.message_id == event.event_id
    assert event.user.id.startswith("key:")
    assert KEY not in event.user.id and KEY not in event.model_dump_json()


async def test_session_is_user_field_then_header_then_per_key_default(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    header = {"X-Hermes-Session": "from-header"}
    async with client.post(
        api.base_url + CHAT, json=chat_body(user="from-user"), headers=api.headers(**header)
    ) as r:
        assert r.headers["X-Hermes-Session"] == "from-user"
    async with client.post(api.base_url + CHAT, json=chat_body(), headers=api.headers(**header)):
        pass
    async with client.post(api.base_url + CHAT, json=chat_body(), headers=api.headers()):
        pass
    async with client.post(api.base_url + CHAT, json=chat_body(), headers=api.headers(OTHER_KEY)):
        pass
    chats = [e.chat_id for e in api.events]
    mine, other = key_principal(KEY), key_principal(OTHER_KEY)
    # The chat is the key's principal and the session name: a key never reaches another's.
    assert chats == [f"{mine}:from-user", f"{mine}:from-header", f"{mine}:default",
                     f"{other}:default"]
    assert [e.user.id for e in api.events] == [mine, mine, mine, other]


async def test_non_streaming_completion_shape(api: Harness, client: aiohttp.ClientSession) -> None:
    async with client.post(api.base_url + CHAT, json=chat_body("hi"), headers=api.headers()) as r:
        assert r.status == 200
        body = await r.json()
    assert body["id"].startswith("chatcmpl-")
    assert body["object"] == "chat.completion"
    assert isinstance(body["created"], int)
    assert body["model"] == "hermes-agent"
    [choice] = body["choices"]
    assert choice["message"] == {"role": "assistant", "content": "echo: hi"}
    assert choice["finish_reason"] == "stop"
    assert set(body["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


async def test_several_bot_messages_are_joined_with_a_blank_line(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    async def two_messages(adapter: ApiAdapter, event: MessageEvent) -> None:
        first = await adapter.send(
            OutboundMessage(chat_id=event.chat_id, text="part 1▌", reply_to=event.message_id)
        )
        await adapter.send(
            OutboundMessage(chat_id=event.chat_id, text="part 2", reply_to=event.message_id)
        )
        await adapter.edit(event.chat_id, first.message_ids[0], "part 1")
        await adapter.turn_complete(event.chat_id, reply_to=event.message_id, ok=True)

    api.script = two_messages
    async with client.post(api.base_url + CHAT, json=chat_body(), headers=api.headers()) as r:
        assert (await r.json())["choices"][0]["message"]["content"] == "part 1\n\npart 2"


async def test_models_lists_the_configured_model(
    tmp_path: Path, client: aiohttp.ClientSession
) -> None:
    async with running({"api_keys": KEY, "model_name": "my-hermes"}, tmp_path) as api:
        async with client.get(api.base_url + "/v1/models", headers=api.headers()) as r:
            assert r.status == 200
            body = await r.json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == ["my-hermes"]


async def test_failed_turn_is_502_with_redacted_error(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    async def fail(adapter: ApiAdapter, event: MessageEvent) -> None:
        await adapter.turn_complete(
            event.chat_id, reply_to=event.message_id, ok=False, error=f"model down ({KEY})"
        )

    api.script = fail
    async with client.post(api.base_url + CHAT, json=chat_body(), headers=api.headers()) as r:
        assert r.status == 502
        text = await r.text()
    assert "model down" in text
    assert KEY not in text


async def test_turn_that_never_completes_is_504(
    tmp_path: Path, client: aiohttp.ClientSession
) -> None:
    async def hang(adapter: ApiAdapter, event: MessageEvent) -> None:
        await asyncio.Event().wait()

    async with running({"api_keys": [KEY], "turn_timeout_s": 0.2}, tmp_path) as api:
        api.script = hang
        async with client.post(api.base_url + CHAT, json=chat_body(), headers=api.headers()) as r:
            assert r.status == 504
            assert (await r.json())["error"]["code"] == "turn_timeout"


async def test_duplicate_event_refused_by_gateway_is_409(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    api.accept = False
    headers = api.headers(**{"Idempotency-Key": "abc"})
    async with client.post(api.base_url + CHAT, json=chat_body(), headers=headers) as r:
        assert r.status == 409
        assert (await r.json())["error"]["code"] == "duplicate_event"
    assert api.events[0].event_id.endswith(":abc")


async def test_retry_with_same_event_id_gets_the_same_turn_without_a_second_event(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    headers = api.headers(**{"X-Hermes-Event-Id": "evt-1"})
    replies = []
    for _ in range(2):
        async with client.post(api.base_url + CHAT, json=chat_body("once"), headers=headers) as r:
            assert r.status == 200
            replies.append((await r.json())["choices"][0]["message"]["content"])
    assert replies == ["echo: once", "echo: once"]
    assert len(api.events) == 1
    other = api.headers(OTHER_KEY, **{"X-Hermes-Event-Id": "evt-1"})
    async with client.post(api.base_url + CHAT, json=chat_body("mine"), headers=other) as r:
        assert (await r.json())["choices"][0]["message"]["content"] == "echo: mine"
    assert len(api.events) == 2


async def test_unknown_route_answers_openai_style_json(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    async with client.get(api.base_url + "/v1/nothing", headers=api.headers()) as r:
        assert r.status == 404
        assert "error" in await r.json()


async def test_unicode_session_works_and_control_characters_are_refused(
    api: Harness, client: aiohttp.ClientSession
) -> None:
    async with client.post(
        api.base_url + CHAT, json=chat_body("hi", user="用户"), headers=api.headers()
    ) as r:
        assert r.status == 200
        assert r.headers["X-Hermes-Session"] == "%E7%94%A8%E6%88%B7"
        assert (await r.json())["choices"][0]["message"]["content"] == "echo: hi"
    async with client.post(
        api.base_url + CHAT, json=chat_body("hi", user="a\nb"), headers=api.headers()
    ) as r:
        assert r.status == 400
    assert [e.chat_id for e in api.events] == [f"{key_principal(KEY)}:用户"]


async def test_oversized_body_is_413_json(tmp_path: Path, client: aiohttp.ClientSession) -> None:
    async with running({"api_keys": [KEY], "max_body_bytes": 1024}, tmp_path) as api:
        body = chat_body("x" * 4096)
        async with client.post(api.base_url + CHAT, json=body, headers=api.headers()) as r:
            assert r.status == 413
            assert "error" in await r.json()
        assert api.events == []
