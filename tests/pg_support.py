"""PostgreSQL for the storage contract suite: one throw-away database per test module.

The server is `HERMES_TEST_PG` (default: the local server with trust authentication). A
module that asks for it gets a database of its own with a random name, migrated once and
dropped at the end; each test starts from empty tables (`reset_data`). When the server is
unreachable the PostgreSQL half of the suite is skipped with the reason (CI has one).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ADMIN_DSN = os.environ.get("HERMES_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
BACKENDS = ("sqlite", "postgres")


def dsn_for(name: str) -> str:
    base, _, _ = ADMIN_DSN.rpartition("/")
    return f"{base}/{name}"


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(ADMIN_DSN, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def unreachable_reason() -> str | None:
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        return "asyncpg is not installed (the postgres extra)"
    try:
        asyncio.run(_admin("SELECT 1"))
    except Exception as exc:  # noqa: BLE001 - any failure means: no server to test against
        return f"PostgreSQL at {ADMIN_DSN} is unreachable: {type(exc).__name__}"
    return None


def create_database() -> str:
    """A new empty database; returns its DSN."""
    name = f"hermes_test_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    return dsn_for(name)


def drop_database(dsn: str) -> None:
    name = dsn.rpartition("/")[2]
    asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="module")
def pg_dsn() -> Iterator[str]:
    """A migrated database for this test module (skips when there is no server)."""
    reason = unreachable_reason()
    if reason is not None:
        pytest.skip(reason)
    dsn = create_database()
    try:
        from storage.postgres import prepare_postgres

        asyncio.run(prepare_postgres(dsn))
        yield dsn
    finally:
        drop_database(dsn)


async def reset(dsn: str) -> None:
    """Empty every table of the database at `dsn` (its schema stays)."""
    import asyncpg

    from storage.postgres.schema import reset_data

    conn = await asyncpg.connect(dsn)
    try:
        await reset_data(conn)
    finally:
        await conn.close()


Target = tuple[str, str]  # (backend, state.db path or DSN)


@pytest.fixture(params=BACKENDS)
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    """Where the test's store lives: a fresh `state.db`, or the module's PostgreSQL database
    emptied. A test marked `sqlite_only` is skipped on PostgreSQL."""
    if request.param == "sqlite":
        return ("sqlite", str(tmp_path / "state.db"))
    if request.node.get_closest_marker("sqlite_only") is not None:
        pytest.skip("checks the SQLite backend only")
    dsn: str = request.getfixturevalue("pg_dsn")
    asyncio.run(reset(dsn))
    return ("postgres", dsn)


async def open_store(target: Target, clock: Any = None) -> Any:
    """Open the backend's store on `target` (another handle on the same data each call)."""
    from storage.opening import open_store as open_backend

    kwargs: dict[str, Any] = {} if clock is None else {"clock": clock}
    if target[0] == "sqlite":
        return await open_backend("sqlite", path=Path(target[1]), **kwargs)
    return await open_backend("postgres", dsn=target[1], **kwargs)


def storage_config(target: Target) -> dict[str, Any]:
    """The `storage:` block of a config.yaml for `target` (a profile's CLI or gateway)."""
    if target[0] == "sqlite":
        return {"backend": "sqlite"}
    return {"backend": "postgres", "dsn": target[1]}
