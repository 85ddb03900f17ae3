"""Delivery through the HTTP API adapter, full stack: what an OpenAI-compatible client reads
is exactly the model's reply, streamed or not (no cursor, no duplicate final)."""

from __future__ import annotations

import json

import aiohttp

from adapters.api import SPEC
from gateway.paths import ProfilePaths, ensure_profile_dirs
from gateway.runner import GatewayRunner
from tests.fakes.openai_server import text
from tests.integration.harness import make_config

KEY = "sk-delivery-e2e-key-123456"


async def _sse_content(resp: aiohttp.ClientResponse) -> tuple[str, list[str]]:
    chunks: list[str] = []
    done = False
    async for raw in resp.content:
        line = raw.decode().strip()
        if not line.startswith("data: "):
            continue
        data = line[len("data: "):]
        if data == "[DONE]":
            done = True
            continue
        delta = json.loads(data)["choices"][0]["delta"].get("content")
        if delta:
            chunks.append(delta)
    assert done
    return "".join(chunks), chunks


async def test_delivery_api_adapter_stream_and_plain_reply_are_exact(tmp_path, model):
    streamed = " ".join(f"token{i}" for i in range(80)) + "."
    plain = "**Bold** answer with `code`."
    model.enqueue(text(streamed, chunk_chars=7, delay_s=0.01), text(plain))
    adapter = SPEC.create("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
    paths = ensure_profile_dirs(ProfilePaths(tmp_path))
    runner = GatewayRunner(make_config(model, gateway__streaming__edit_interval_s=0.05), paths,
                           adapters={"api": adapter}, health_port=0)
    await runner.start()
    try:
        url = f"http://127.0.0.1:{adapter.port}/v1/chat/completions"
        headers = {"Authorization": f"Bearer {KEY}"}
        async with aiohttp.ClientSession() as client:
            body = {"model": "x", "stream": True,
                    "messages": [{"role": "user", "content": "stream it"}]}
            async with client.post(url, json=body, headers=headers) as resp:
                assert resp.status == 200
                content, chunks = await _sse_content(resp)
            assert content == streamed
            assert len(chunks) > 1, "the reply should arrive in several chunks"
            assert not any("▌" in c for c in chunks)
            body = {"model": "x", "messages": [{"role": "user", "content": "once more"}]}
            async with client.post(url, json=body, headers=headers) as resp:
                assert resp.status == 200
                answer = await resp.json()
            assert answer["choices"][0]["message"]["content"] == plain
        assert len(model.requests) == 2
        assert await runner.store.outbox_undelivered() == []
    finally:
        await runner.shutdown()
