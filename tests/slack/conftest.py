"""Fixtures: the fake Slack and a started SlackAdapter with a recording context."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.slack.adapter import SlackAdapter
from tests.slack.fake_slack import FakeSlack
from tests.slack.recorder import Recorder

__all__ = ["Recorder", "Running", "adapter_settings"]


def adapter_settings(fake: FakeSlack, **kw: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"bot_token": fake.bot_token, "app_token": fake.app_token,
                            "signing_secret": fake.signing_secret, "api_base_url": fake.api_url,
                            "ping_interval_s": 0.3, "timeout_s": 5}
    data.update(kw)
    return data


class Running:
    def __init__(self, fake: FakeSlack, adapter: SlackAdapter, rec: Recorder) -> None:
        self.fake, self.adapter, self.rec = fake, adapter, rec
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self.adapter.start(self.rec.context()))
        for _ in range(200):
            if self.rec.connects or self.task.done():
                break
            await asyncio.sleep(0.02)
        if self.task.done():
            self.task.result()
        assert self.rec.connects, "adapter did not connect"
        if self.adapter.settings.mode == "http":
            self.fake.mode, self.fake.events_url = "http", self.adapter.http_url

    async def close(self) -> None:
        await self.adapter.stop()
        if self.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.task, 5)


@pytest.fixture(autouse=True)
def _quiet_sdk_logs() -> None:
    for name in ("adapters.slack.sdk", "adapters.slack.bolt"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as server:
        yield server


@pytest.fixture
async def running(fake: FakeSlack, tmp_path: Path) -> AsyncIterator[Running]:
    run = Running(fake, SlackAdapter("slack", adapter_settings(fake)), Recorder(tmp_path))
    await run.start()
    try:
        yield run
    finally:
        await run.close()


@pytest.fixture
async def running_http(fake: FakeSlack, tmp_path: Path) -> AsyncIterator[Running]:
    settings = adapter_settings(fake, mode="http", http={"host": "127.0.0.1", "port": 0})
    run = Running(fake, SlackAdapter("slack", settings), Recorder(tmp_path))
    await run.start()
    try:
        yield run
    finally:
        await run.close()
