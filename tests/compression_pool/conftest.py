"""The compression pool's storage-facing tests run on both backends (see tests/pg_support)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from tests import pg_support
from tests.fakes.fixtures import fake_openai  # noqa: F401
from tests.pg_support import Target, open_store

pg_dsn = pg_support.pg_dsn
store_target = pg_support.store_target


@pytest_asyncio.fixture
async def store(store_target: Target) -> AsyncIterator[Any]:
    s = await open_store(store_target)
    try:
        yield s
    finally:
        await s.close()
