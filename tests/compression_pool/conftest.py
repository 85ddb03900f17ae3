from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from storage import StateStore
from tests.fakes.fixtures import fake_openai  # noqa: F401


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[StateStore]:
    s = await StateStore.open(tmp_path / "state.db")
    try:
        yield s
    finally:
        await s.close()
