"""Builders shared by the compression-pool tests: configs, sessions, slow fake summaries."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import yaml

from gateway.config.models import HermesConfig
from storage import StateStore
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, Script, text

API_KEY = "sk-test-secret-key-0123456789"
SUMMARY = (
    "## Historical Task Snapshot\nThe user asked about zebras.\n## Goal\nFinish the zebra report\n"
    "## Completed Actions\n1. collected zebra facts\n## Pruned Skills\nNone."
)
THRESHOLD_PROMPT = 7_000  # above the 6,000-token trigger of an 8,000-token window


def config_data(server: FakeOpenAIServer, **compression: Any) -> dict[str, Any]:
    comp = {"workers": 2, "lease_seconds": 5, "timeout_seconds": 20, **compression}
    return {
        "providers": {
            "main": {
                "base_url": server.base_url,
                "api_keys": [API_KEY],
                "model": "main-model",
                "context_length": 8_000,
                "timeout_s": 30,
            },
            "aux": {
                "base_url": server.base_url,
                "api_keys": [API_KEY],
                "model": "main-model",
                "context_length": 32_000,
                "timeout_s": 30,
            },
        },
        "model": {"provider": "main"},
        "auxiliary": {"provider": "aux", "model": "summary-model"},
        "compression": comp,
    }


def make_config(server: FakeOpenAIServer, **compression: Any) -> HermesConfig:
    return HermesConfig.model_validate(config_data(server, **compression))


def write_profile(home: Path, server: FakeOpenAIServer, *,
                  storage: dict[str, Any] | None = None, **compression: Any) -> None:
    home.mkdir(parents=True, exist_ok=True)
    data = config_data(server, **compression)
    if storage is not None:
        data["storage"] = storage
    (home / "config.yaml").write_text(yaml.safe_dump(data))


def conversation(n: int, tag: str = "") -> list[dict[str, Any]]:
    """`n` alternating user/assistant messages of about 100 tokens each."""
    out = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        filler = " ".join(f"word{j}" for j in range(60))
        out.append({"role": role, "content": f"{tag}message {i} about zebra{i}: {filler}"})
    return out


async def make_session(
    store: StateStore, n: int = 60, *, title: str | None = "Title"
) -> str:
    s = await store.create_session(source="cli", title=title, system_prompt="You are helpful.",
                                   model="main-model")
    await store.append_messages(s.id, conversation(n))
    return s.id


Before = Callable[[RecordedRequest], Awaitable[None]]


def summary_responder(
    delay: float = 0.0, *, before: Before | None = None, gate: asyncio.Event | None = None
) -> Callable[[RecordedRequest], Awaitable[Script]]:
    """Answer every request with SUMMARY, after `before(request)`, `gate` and `delay`."""

    async def respond(req: RecordedRequest) -> Script:
        if before is not None:
            await before(req)
        if gate is not None:
            await gate.wait()
        if delay:
            await asyncio.sleep(delay)
        return text(SUMMARY)

    return respond


class Events:
    """Collects `on_status` calls."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []

    def __call__(self, session_id: str, kind: str, text_: str) -> None:
        self.items.append((session_id, kind, text_))

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [k for s, k, _ in self.items if session_id is None or s == session_id]


async def wait_for(predicate: Callable[[], Any], within: float = 20.0) -> None:
    """Poll `predicate` (sync or async) until truthy."""
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while True:
        res = predicate()
        if asyncio.iscoroutine(res):
            res = await res
        if res:
            return
        if loop.time() > end:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)
