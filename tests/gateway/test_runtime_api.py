"""The `api` adapter full stack: the openai SDK as the client, over real HTTP, through the
runner, to the agent and the fake model."""

from __future__ import annotations

import aiohttp
import openai
import pytest
from openai import AsyncOpenAI

from adapters.api.adapter import ApiAdapter
from adapters.api.settings import key_principal
from gateway.events import MessageEvent, UserRef
from gateway.sessions import session_key
from tests.fakes.openai_server import text
from tests.gateway.runtime_harness import runner_for

KEY = "sk-api-runtime-key"


@pytest.fixture
async def api(tmp_path, model):
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
    async with runner_for(tmp_path, model, adapters={"api": adapter}) as (runner, _):
        client = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key=KEY,
                             max_retries=0, timeout=20)
        yield runner, adapter, client
        await client.close()


def _key(user: str) -> str:
    """The session key of the key's session named `user` (chat `<principal>:<user>`)."""
    principal = key_principal(KEY)
    return session_key(MessageEvent(platform="api", event_id="-", chat_id=f"{principal}:{user}",
                                    user=UserRef(id=principal)))


async def _history(runner, user: str) -> list[dict]:
    session = await runner.store.find_by_session_key(_key(user))
    return await runner.store.load_history(session.id)


async def test_non_streaming_completion_is_answered_by_the_agent(api, model):
    runner, _adapter, client = api
    model.enqueue(text("Paris is the capital of France."))
    resp = await client.chat.completions.create(
        model="hermes-agent", user="alice",
        messages=[{"role": "system", "content": "ignored"},
                  {"role": "user", "content": "capital of France?"}])
    assert resp.choices[0].message.content == "Paris is the capital of France."
    # The model saw the gateway's system prompt and only the newest user message.
    sent = model.requests[0].body["messages"]
    assert sent[0]["role"] == "system" and sent[0]["content"] != "ignored"
    assert sent[-1] == {"role": "user", "content": "capital of France?"}
    assert [m["role"] for m in await _history(runner, "alice")] == ["user", "assistant"]


async def test_streaming_completion_and_session_chosen_by_user(api, model):
    runner, _adapter, client = api
    model.enqueue(text("Nice to meet you, Ann.", chunk_chars=3, delay_s=0.01),
                  text("Hello, stranger."),
                  text("Your name is Ann."))
    chunks = []
    stream = await client.chat.completions.create(
        model="hermes-agent", user="ann", stream=True,
        messages=[{"role": "user", "content": "I am Ann"}])
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            chunks.append(chunk.choices[0].delta.content)
    assert "".join(chunks) == "Nice to meet you, Ann."
    await client.chat.completions.create(
        model="hermes-agent", user="bert", messages=[{"role": "user", "content": "hi"}])
    again = await client.chat.completions.create(
        model="hermes-agent", user="ann", messages=[{"role": "user", "content": "my name?"}])
    assert again.choices[0].message.content == "Your name is Ann."
    # Ann's second request carried her stored history, not Bert's.
    contents = [m.get("content") for m in model.requests[2].body["messages"]]
    assert "I am Ann" in contents and "Nice to meet you, Ann." in contents
    assert "hi" not in contents
    assert [m["content"] for m in await _history(runner, "bert") if m["role"] == "user"] == ["hi"]


async def test_slash_command_over_http(api, model):
    runner, _adapter, client = api
    await client.chat.completions.create(
        model="hermes-agent", user="carl", messages=[{"role": "user", "content": "hello"}])
    resp = await client.chat.completions.create(
        model="hermes-agent", user="carl", messages=[{"role": "user", "content": "/status"}])
    session = await runner.store.find_by_session_key(_key("carl"))
    assert f"Session: {session.id}" in resp.choices[0].message.content
    title = await client.chat.completions.create(
        model="hermes-agent", user="carl", messages=[{"role": "user", "content": "/title Web"}])
    assert "Title set: Web" in title.choices[0].message.content
    assert (await runner.store.get_session(session.id)).title == "Web"
    assert len(model.requests) == 1


async def test_requests_without_a_valid_key_get_401(api, model):
    _runner, adapter, _client = api
    bad = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key="sk-wrong",
                      max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        await bad.chat.completions.create(model="hermes-agent",
                                          messages=[{"role": "user", "content": "hi"}])
    await bad.close()
    async with aiohttp.ClientSession() as http, http.post(
            f"http://127.0.0.1:{adapter.port}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "hi"}]}) as resp:
        assert resp.status == 401
    assert model.requests == []
