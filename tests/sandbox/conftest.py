from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent_core.sandbox import CodeSandbox, Isolation, SandboxLimits
from tests.fakes.openai_server import FakeOpenAIServer


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def isolation() -> Isolation:
    """What this host allows (probed once for the whole run)."""
    import asyncio

    return asyncio.run(CodeSandbox(SandboxLimits()).probe())
