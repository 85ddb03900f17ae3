"""The gateway with the `supermemory` provider (the real client) against the fake Supermemory
API, the api adapter with two named keys (two principals), and the fake model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI

from adapters.api.adapter import ApiAdapter
from agent_core.memory.providers.supermemory import namespace_for
from gateway.runner import GatewayRunner
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest
from tests.fakes.supermemory_server import FakeSupermemory
from tests.gateway.runtime_harness import runner_for

__all__ = ["KEYS", "Gateway", "gateway", "last_user", "namespace", "system_bytes"]

KEYS = {"alice": "sk-alice-0123456789abcdef", "bob": "sk-bob-fedcba9876543210"}


def namespace(user: str) -> str:
    """The Supermemory namespace of the api principal `user`."""
    return namespace_for("hermes", f"api:{user}")


@dataclass
class Gateway:
    runner: GatewayRunner
    clients: dict[str, AsyncOpenAI]

    async def ask(self, user: str, text: str, session: str = "s1") -> str:
        resp = await self.clients[user].chat.completions.create(
            model="hermes-agent", user=session, messages=[{"role": "user", "content": text}])
        return resp.choices[0].message.content or ""

    async def synced(self) -> None:
        """Wait until the provider's background queue has run every job."""
        memory = self.runner.parts.agents.memory
        assert memory is not None
        await memory.manager.idle()


@asynccontextmanager
async def gateway(home: Path, model: FakeOpenAIServer, sm: FakeSupermemory, *,
                  memory: dict[str, Any] | None = None, provider: dict[str, Any] | None = None,
                  **overrides: Any) -> AsyncIterator[Gateway]:
    adapter = ApiAdapter("api", {"host": "127.0.0.1", "port": 0, "api_keys": [
        {"name": n, "key": k} for n, k in KEYS.items()]})
    block = {"api_key": sm.api_key, "base_url": sm.base_url, **(provider or {})}
    overrides.setdefault("compression__enabled", False)
    async with runner_for(home, model, adapters={"api": adapter},
                          memory__provider="supermemory",
                          memory__providers={"supermemory": block},
                          **{f"memory__{k}": v for k, v in (memory or {}).items()},
                          **overrides) as (runner, _):
        base = f"http://127.0.0.1:{adapter.port}/v1"
        clients = {n: AsyncOpenAI(base_url=base, api_key=k, max_retries=0, timeout=30)
                   for n, k in KEYS.items()}
        try:
            yield Gateway(runner, clients)
        finally:
            for c in clients.values():
                await c.close()


def last_user(req: RecordedRequest) -> str:
    """The content of the last user message of a model request, as sent."""
    users = [m for m in req.body["messages"] if m.get("role") == "user"]
    content = users[-1]["content"]
    return content if isinstance(content, str) else str(content)


def system_bytes(req: RecordedRequest) -> bytes:
    """The system message exactly as it sits in the raw request body."""
    import json

    first = req.body["messages"][0]
    assert first["role"] == "system"
    for encoded in (json.dumps(first["content"]).encode(),
                    json.dumps(first["content"], ensure_ascii=False).encode()):
        if encoded in req.raw:
            return encoded
    raise AssertionError("the system prompt is not in the raw body as sent")
