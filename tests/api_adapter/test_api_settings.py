"""`platforms.api` knobs set in config.yaml reach the running adapter through the real config
load → registry → adapter path (they used to be dropped on the way)."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from adapters.api.adapter import ApiAdapter
from gateway.config.load import load_config
from gateway.registry import create_adapter

from .conftest import KEY, chat_body, running

CHAT = "/v1/chat/completions"


def _adapter_from_config(tmp_path: Path, block: str) -> ApiAdapter:
    home = tmp_path / "profile"
    home.mkdir()
    (home / "config.yaml").write_text(
        "platforms:\n  api:\n    enabled: true\n    host: 127.0.0.1\n    port: 0\n"
        f"    api_keys: ['{KEY}']\n{block}", encoding="utf-8")
    config = load_config(home, environ={}, register=False).config
    adapter = create_adapter("api", config.platforms["api"])
    assert isinstance(adapter, ApiAdapter)
    return adapter


async def test_max_body_bytes_refuses_a_larger_body_with_413(
    tmp_path: Path, client: aiohttp.ClientSession
) -> None:
    adapter = _adapter_from_config(tmp_path, "    max_body_bytes: 1024\n")
    async with running({}, tmp_path, adapter=adapter) as api:
        small = chat_body("hi")
        async with client.post(api.base_url + CHAT, json=small, headers=api.headers()) as r:
            assert r.status == 200
            assert (await r.json())["choices"][0]["message"]["content"] == "echo: hi"
        big = chat_body("x" * 4096)
        async with client.post(api.base_url + CHAT, json=big, headers=api.headers()) as r:
            assert r.status == 413
    assert [e.text for e in api.events] == ["hi"]


async def test_model_name_turn_timeout_and_keepalive_are_used(
    tmp_path: Path, client: aiohttp.ClientSession
) -> None:
    adapter = _adapter_from_config(
        tmp_path, "    model_name: house-model\n    turn_timeout_s: 0.3\n    keepalive_s: 0.05\n")

    async def never_answer(_adapter: ApiAdapter, _event: object) -> None:
        return None

    async with running({}, tmp_path, adapter=adapter) as api:
        async with client.get(api.base_url + "/v1/models", headers=api.headers()) as r:
            assert [m["id"] for m in (await r.json())["data"]] == ["house-model"]
        api.script = never_answer
        async with client.post(api.base_url + CHAT, json=chat_body("wait"),
                               headers=api.headers()) as r:
            assert r.status == 504  # turn_timeout_s passed without an answer
        async with client.post(api.base_url + CHAT, json=chat_body("wait", stream=True),
                               headers=api.headers()) as r:
            body = (await r.read()).decode()
        assert body.count(": keep-alive") >= 3, body  # every keepalive_s (default 15 s)
