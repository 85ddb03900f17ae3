"""Numbered, forward-only schema migrations.

`MIGRATIONS[i]` is the SQL that takes the schema from version i to i + 1. The applied version
lives in `schema_version`; `migrate()` runs inside one `BEGIN IMMEDIATE` transaction, so two
processes opening a fresh file at once apply each migration exactly once, and running it again
is a no-op.
"""

from __future__ import annotations

import sqlite3
import time

from storage.migrations import (
    m0001_initial,
    m0002_outbox_delivery,
    m0003_guard_columns,
    m0004_held_events,
    m0005_session_scope,
    m0006_held_claims,
)

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate_sync", "split_statements"]

MIGRATIONS: tuple[str, ...] = (
    m0001_initial.SQL,
    m0002_outbox_delivery.SQL,
    m0003_guard_columns.SQL,
    m0004_held_events.SQL,
    m0005_session_scope.SQL,
    m0006_held_claims.SQL,
)
SCHEMA_VERSION = len(MIGRATIONS)


def split_statements(script: str) -> list[str]:
    """Split a script into complete statements (trigger bodies kept whole)."""
    out: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--") and not buf.strip():
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


def migrate_sync(conn: sqlite3.Connection) -> int:
    """Bring `conn`'s database to `SCHEMA_VERSION` and return the version found before.

    The caller holds no transaction; this takes the write lock with `BEGIN IMMEDIATE`.
    Raises `RuntimeError` when the file's schema is newer than this code knows.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
        )
        row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()
        found = int(row[0])
        if found > SCHEMA_VERSION:
            raise RuntimeError(
                f"state.db schema version {found} is newer than this program ({SCHEMA_VERSION})"
            )
        for version in range(found + 1, SCHEMA_VERSION + 1):
            for stmt in split_statements(MIGRATIONS[version - 1]):
                conn.execute(stmt)
            conn.execute(
                "INSERT INTO schema_version(version, applied_at) VALUES (?, ?)",
                (version, time.time()),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found
