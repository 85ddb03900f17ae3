from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.config.conftest import home_dir
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.supermemory_server import FakeSupermemory

__all__ = ["home_dir", "model", "sm"]


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
async def sm() -> AsyncIterator[FakeSupermemory]:
    async with FakeSupermemory() as server:
        yield server
