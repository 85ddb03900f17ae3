from __future__ import annotations

import pytest

from tests.fakes.openai_server import FakeOpenAIServer


@pytest.fixture
async def model():
    async with FakeOpenAIServer() as server:
        yield server
