"""Numbered, forward-only schema migrations.

`MIGRATIONS[n]` is the SQL of migration n. Every applied number is a row of
`schema_version`; `migrate()` applies each known migration whose row is missing, in number
order, so numbers may have gaps (branches reserve numbers and merge in any order; two
migrations never depend on each other unless numbered so). It runs inside one
`BEGIN IMMEDIATE` transaction, so two processes opening a fresh file at once apply each
migration exactly once, and running it again is a no-op.
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
    m0007_approvals,
)

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate_sync", "split_statements"]

MIGRATIONS: dict[int, str] = {
    1: m0001_initial.SQL,
    2: m0002_outbox_delivery.SQL,
    3: m0003_guard_columns.SQL,
    4: m0004_held_events.SQL,
    5: m0005_session_scope.SQL,
    6: m0006_held_claims.SQL,
    7: m0007_approvals.SQL,
}
SCHEMA_VERSION = max(MIGRATIONS)


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
    """Apply every migration `conn`'s database lacks; return the highest number found before.

    The caller holds no transaction; this takes the write lock with `BEGIN IMMEDIATE`.
    Raises `RuntimeError` when the file's schema is newer than this code knows.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
        )
        applied = {int(r[0]) for r in conn.execute("SELECT version FROM schema_version")}
        found = max(applied, default=0)
        if found > SCHEMA_VERSION or applied - MIGRATIONS.keys():
            raise RuntimeError(
                f"state.db schema version {found} is newer than this program ({SCHEMA_VERSION})"
            )
        for version in sorted(MIGRATIONS.keys() - applied):
            for stmt in split_statements(MIGRATIONS[version]):
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
