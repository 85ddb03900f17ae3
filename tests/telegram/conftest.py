from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.telegram.fake_bot_api import FakeBotApi
from tests.telegram.helpers import Recorder


@pytest_asyncio.fixture
async def api() -> AsyncIterator[FakeBotApi]:
    async with FakeBotApi() as server:
        yield server


@pytest.fixture
def rec(tmp_path: Path) -> Recorder:
    return Recorder(tmp_path / "cache")
