from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests import pg_support
from tests.fakes.openai_server import FakeOpenAIServer

pg_dsn = pg_support.pg_dsn


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server
