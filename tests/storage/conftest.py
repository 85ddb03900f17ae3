"""The storage contract suite runs every store test against both backends.

`store` is parametrised over `sqlite` (a file in tmp_path) and `postgres` (one database per
test module, emptied before each test; skipped with the reason when no server is reachable).
A test marked `sqlite_only` checks something only the SQLite backend has (its file, its lock).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from _storage_testlib import FakeClock

from storage import StateStore
from tests import pg_support
from tests.pg_support import Target, open_store

# the shared fixtures: the module's PostgreSQL database and the parametrised target
pg_dsn = pg_support.pg_dsn
store_target = pg_support.store_target


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(store_target: Target, clock: FakeClock) -> AsyncIterator[StateStore]:
    st = await open_store(store_target, clock)
    try:
        yield st
    finally:
        await st.close()


@pytest.fixture
def reopen(store_target: Target, clock: FakeClock) -> Callable[[], Awaitable[StateStore]]:
    """Open another store on the same file or database."""

    async def again() -> StateStore:
        st: StateStore = await open_store(store_target, clock)
        return st

    return again


@pytest.fixture
def sql_rows(store_target: Target) -> Callable[..., Awaitable[list[tuple[Any, ...]]]]:
    """Run a query (`?` placeholders) straight on the backend's database: what is stored."""

    async def run(sql: str, *params: Any) -> list[tuple[Any, ...]]:
        if store_target[0] == "sqlite":
            with sqlite3.connect(store_target[1]) as conn:
                return [tuple(r) for r in conn.execute(sql, params).fetchall()]
        import asyncpg

        from storage.postgres.conn import to_postgres

        conn2 = await asyncpg.connect(store_target[1])
        try:
            return [tuple(r) for r in await conn2.fetch(to_postgres(sql), *params)]
        finally:
            await conn2.close()

    return run
