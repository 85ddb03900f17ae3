"""Applying the schema versions (`storage.migrations.STEPS`) to a PostgreSQL database.

All pending versions run in ONE transaction under a transaction-level advisory lock, so
several processes starting on a fresh database at once apply each version exactly once; a
failed version leaves the database at the version before it. `reset_data` empties every
table (tests, one database per module).
"""

from __future__ import annotations

import time

import asyncpg

from storage.migrations import SCHEMA_VERSION, STEPS

__all__ = ["MIGRATE_LOCK", "migrate", "reset_data", "TABLES"]

#: Advisory lock key held while migrating ("hermes" in ASCII).
MIGRATE_LOCK = 0x6865726D6573

#: Every data table, parents first (the order `hermes storage migrate` copies them in).
TABLES = (
    "sessions",
    "messages",
    "compression_leases",
    "inbound_events",
    "outbox",
    "cursors",
    "pairing_codes",
    "approved_users",
    "unreachable_chats",
    "approvals",
    "self_reviews",
)


async def migrate(conn: asyncpg.Connection) -> int:
    """Bring the database to `SCHEMA_VERSION`; returns the version found before. Raises
    `RuntimeError` when the database is newer than this program."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATE_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
        )
        found = int(await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_version"))
        if found > SCHEMA_VERSION:
            raise RuntimeError(
                f"database schema version {found} is newer than this program ({SCHEMA_VERSION})"
            )
        for step in STEPS[found:]:
            if step.postgres is None:
                raise RuntimeError(f"schema version {step.version} ({step.name}) has no "
                                   "PostgreSQL step yet")
            await conn.execute(step.postgres)
            await conn.execute(
                "INSERT INTO schema_version(version, applied_at) VALUES ($1, $2)",
                step.version, time.time(),
            )
    return found


async def reset_data(conn: asyncpg.Connection) -> None:
    """Delete every row of every data table and restart the id sequences (the schema and
    its version stay). For tests."""
    await conn.execute(f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")
