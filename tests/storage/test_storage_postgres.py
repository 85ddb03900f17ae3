"""What only the PostgreSQL backend has: dropped connections, its migrations, its DSN."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from _storage_testlib import turn

from storage import SCHEMA_VERSION
from storage.migrations import STEPS
from storage.opening import describe_target
from storage.postgres import PostgresStore, prepare_postgres
from tests import pg_support
from tests.pg_support import reset

pg_dsn = pg_support.pg_dsn


async def _terminate_store_connections(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return int(await conn.fetchval(
            "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name = 'hermes'"
            " AND pid <> pg_backend_pid()"))
    finally:
        await conn.close()


async def test_the_store_outlives_its_connections_being_dropped(pg_dsn: str) -> None:
    await reset(pg_dsn)
    async with await PostgresStore.open(pg_dsn) as store:
        s = await store.create_session(source="cli")
        await store.append_messages(s.id, turn("before", "drop"))
        assert await _terminate_store_connections(pg_dsn) >= 2  # the writer and a reader
        await asyncio.sleep(0.1)
        ids = await store.append_messages(s.id, turn("after", "drop"))
        assert len(ids) == 2
        history = [m["content"] for m in await store.load_history(s.id)]
        assert history == ["before", "drop", "after", "drop"]
        assert await store.writable() is True


async def test_migrating_again_is_a_no_op_and_every_version_has_a_postgres_step(
        pg_dsn: str) -> None:
    assert all(step.postgres and step.postgres.strip() for step in STEPS)
    assert [step.version for step in STEPS] == list(range(1, SCHEMA_VERSION + 1))
    found = await asyncio.gather(prepare_postgres(pg_dsn), prepare_postgres(pg_dsn))
    assert found == [SCHEMA_VERSION, SCHEMA_VERSION]
    conn = await asyncpg.connect(pg_dsn)
    try:
        versions = [r[0] for r in await conn.fetch(
            "SELECT version FROM schema_version ORDER BY version")]
    finally:
        await conn.close()
    assert versions == list(range(1, SCHEMA_VERSION + 1))


def test_a_dsn_is_printed_without_its_password() -> None:
    shown = describe_target("postgres", path=None,
                            dsn="postgresql://hermes:s3cret-pw@db.internal:5433/hermes")
    assert "s3cret-pw" not in shown
    assert shown == "postgresql://hermes:***@db.internal:5433/hermes"


@pytest.mark.parametrize("query", ["'", "\\", "a:*", "!!", "<->", "& |", "(", "')--"])
async def test_tsquery_syntax_in_user_text_is_only_text(pg_dsn: str, query: str) -> None:
    await reset(pg_dsn)
    async with await PostgresStore.open(pg_dsn) as store:
        s = await store.create_session(source="cli")
        await store.append_messages(s.id, turn(f"text with {query} inside", "ok"))
        assert isinstance(await store.search(query), list)
        assert isinstance(await store.search(f"text {query}*"), list)
