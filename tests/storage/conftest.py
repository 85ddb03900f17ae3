from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from _storage_testlib import FakeClock

from storage import StateStore


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(tmp_path: Path, clock: FakeClock) -> AsyncIterator[StateStore]:
    st = await StateStore.open(tmp_path / "state.db", clock=clock)
    try:
        yield st
    finally:
        await st.close()
