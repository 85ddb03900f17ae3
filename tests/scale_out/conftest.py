from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests import pg_support
from tests.fakes.openai_server import FakeOpenAIServer

pg_dsn = pg_support.pg_dsn


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def replica_db() -> Iterator[str]:
    """A database of this test's own (dropped at the end); the replicas migrate it."""
    reason = pg_support.unreachable_reason()
    if reason is not None:
        pytest.skip(reason)
    dsn = pg_support.create_database()
    try:
        yield dsn
    finally:
        pg_support.drop_database(dsn)
