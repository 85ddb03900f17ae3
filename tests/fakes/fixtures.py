"""Pytest fixtures for the fakes. Import them into a conftest.py:

    from tests.fakes.fixtures import fake_openai  # noqa: F401
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from tests.fakes.openai_server import FakeOpenAIServer

__all__ = ["fake_openai"]


@pytest_asyncio.fixture
async def fake_openai() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server
