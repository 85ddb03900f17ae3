"""A tiny stand-in for the gateway: records events and answers through the adapter API."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog

from adapters.api import SPEC
from adapters.api.adapter import ApiAdapter
from gateway.events import MessageEvent, OutboundMessage
from gateway.ports import AdapterContext, CursorStore

KEY = "sk-test-key-1234567890"
OTHER_KEY = "sk-other-key-0987654321"

Script = Callable[[ApiAdapter, MessageEvent], Awaitable[None]]


async def echo_script(adapter: ApiAdapter, event: MessageEvent) -> None:
    """Reply 'echo: <text>' in one message and complete the turn."""
    await adapter.send(
        OutboundMessage(
            chat_id=event.chat_id, text=f"echo: {event.text}", reply_to=event.message_id
        )
    )
    await adapter.turn_complete(event.chat_id, reply_to=event.message_id, ok=True)


@dataclass
class Harness:
    adapter: ApiAdapter
    base_url: str
    events: list[MessageEvent] = field(default_factory=list)
    script: Script = echo_script
    accept: bool = True
    progress_calls: int = 0
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    task: asyncio.Task[None] | None = None

    async def emit(self, event: MessageEvent) -> bool:
        self.events.append(event)
        if not self.accept:
            return False
        task = asyncio.create_task(self.script(self.adapter, event))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return True

    def headers(self, key: str = KEY, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}", **extra}


def chat_body(text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"model": "whatever", "messages": [{"role": "user", "content": text}], **extra}


async def read_sse(response: aiohttp.ClientResponse) -> list[Any]:
    """Data payloads of an SSE response, in order ('[DONE]' kept as a string)."""
    payloads: list[Any] = []
    async for raw in response.content:
        line = raw.decode().strip()
        if not line.startswith("data: "):
            continue
        data = line[len("data: ") :]
        payloads.append(data if data == "[DONE]" else json.loads(data))
    return payloads


def joined_content(payloads: list[Any]) -> str:
    return "".join(
        p["choices"][0]["delta"].get("content") or ""
        for p in payloads
        if isinstance(p, dict) and "choices" in p
    )


@contextlib.asynccontextmanager
async def running(
    settings: dict[str, Any], tmp_path: Path, *, adapter: ApiAdapter | None = None
) -> AsyncIterator[Harness]:
    """Start `adapter` (default: one built from `settings` on an ephemeral port)."""
    adapter = adapter or SPEC.create("api", {"host": "127.0.0.1", "port": 0, **settings})
    connected = asyncio.Event()
    stop_event = asyncio.Event()
    harness = Harness(adapter=adapter, base_url="")

    def progress() -> None:
        harness.progress_calls += 1

    ctx = AdapterContext(
        name="api",
        emit=harness.emit,
        progress=progress,
        stop_event=stop_event,
        cursors=CursorStore(),
        cache_dir=tmp_path,
        logger=structlog.get_logger("test.api_adapter"),
        connected=connected.set,
    )
    harness.task = asyncio.create_task(adapter.start(ctx))
    waiter = asyncio.create_task(connected.wait())
    await asyncio.wait({waiter, harness.task}, return_when=asyncio.FIRST_COMPLETED)
    if harness.task.done():
        waiter.cancel()
        harness.task.result()
    harness.base_url = f"http://127.0.0.1:{adapter.port}"
    try:
        yield harness
    finally:
        stop_event.set()
        await asyncio.wait_for(harness.task, 10)
        for task in list(harness.tasks):
            task.cancel()


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Harness]:
    async with running({"api_keys": [KEY, OTHER_KEY]}, tmp_path) as harness:
        yield harness


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session
