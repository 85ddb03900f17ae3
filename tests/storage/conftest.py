"""The storage contract suite runs every store test against both backends.

`store` is parametrised over `sqlite` (a file in tmp_path) and `postgres` (one database per
test module, emptied before each test; skipped with the reason when no server is reachable).
A test marked `sqlite_only` checks something only the SQLite backend has (its file, its lock).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from _storage_testlib import FakeClock

from storage import StateStore
from tests.pg_support import BACKENDS, pg_dsn, reset  # noqa: F401 - pg_dsn is a fixture

Target = tuple[str, str]  # (backend, path or DSN)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=BACKENDS)
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "sqlite":
        return ("sqlite", str(tmp_path / "state.db"))
    if request.node.get_closest_marker("sqlite_only") is not None:
        pytest.skip("checks the SQLite backend only")
    dsn: str = request.getfixturevalue("pg_dsn")
    asyncio.run(reset(dsn))
    return ("postgres", dsn)


async def open_store(target: Target, clock: FakeClock | None = None) -> Any:
    kwargs: dict[str, Any] = {} if clock is None else {"clock": clock}
    if target[0] == "sqlite":
        return await StateStore.open(target[1], **kwargs)
    from storage.postgres import PostgresStore

    return await PostgresStore.open(target[1], **kwargs)


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
