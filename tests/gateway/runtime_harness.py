"""Shared helpers of the runtime tests: the real `GatewayRunner` in-process with FakeAdapter
(or any adapters) and the fake OpenAI server, a controllable clock, and DB readers."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from adapters.fake import FakeAdapter
from gateway.paths import ProfilePaths, ensure_profile_dirs
from gateway.ports import BasePlatformAdapter
from gateway.runner import GatewayRunner
from tests.fakes.openai_server import FakeOpenAIServer
from tests.integration.harness import make_config

__all__ = ["Clock", "KEY", "make_config", "runner_for", "user_texts"]

KEY = "fake:dm:c1"


class Clock:
    """Wall clock that a test can move forward (`advance`)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


@asynccontextmanager
async def runner_for(
    home: Path,
    model: FakeOpenAIServer,
    *,
    adapters: Mapping[str, BasePlatformAdapter] | None = None,
    clock: Clock | None = None,
    health_port: int | None = 0,
    **overrides: Any,
) -> AsyncIterator[tuple[GatewayRunner, FakeAdapter]]:
    """Start a runner (shut down on exit); yields it and the `fake` adapter."""
    paths = ensure_profile_dirs(ProfilePaths(home))
    given = dict(adapters) if adapters is not None else {"fake": FakeAdapter("fake")}
    kw: dict[str, Any] = {"clock": clock} if clock is not None else {}
    runner = GatewayRunner(make_config(model, **overrides), paths, adapters=given,
                           health_port=health_port, take_locks=False, **kw)
    await runner.start()
    try:
        yield runner, given.get("fake")  # type: ignore[misc]
    finally:
        await runner.shutdown()


async def user_texts(runner: GatewayRunner, session_id: str) -> list[str]:
    return [m["content"] for m in await runner.store.load_history(session_id)
            if m["role"] == "user"]
