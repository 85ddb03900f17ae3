"""A real gateway run over the `api` adapter with the fake model, on either backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI

from adapters.api.adapter import ApiAdapter
from gateway.runner import GatewayRunner
from tests.fakes.openai_server import FakeOpenAIServer
from tests.gateway.runtime_harness import runner_for

KEY = "sk-scale-out-0123456789abcdef"


@dataclass
class ApiGateway:
    runner: GatewayRunner
    client: AsyncOpenAI

    async def ask(self, text_: str, *, user: str = "talk") -> str:
        resp = await self.client.chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": text_}], user=user)
        return resp.choices[0].message.content or ""


@asynccontextmanager
async def api_gateway(home: Path, model: FakeOpenAIServer, **overrides: Any
                      ) -> AsyncIterator[ApiGateway]:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [KEY]})
    async with runner_for(home, model, adapters={"api": adapter}, **overrides) as (runner, _):
        client = AsyncOpenAI(base_url=f"http://127.0.0.1:{adapter.port}/v1", api_key=KEY,
                             max_retries=0, timeout=30)
        try:
            yield ApiGateway(runner, client)
        finally:
            await client.close()
