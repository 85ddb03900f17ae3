"""Numbered, forward-only schema migrations, one list of versions for both backends.

Each version is a module `mNNNN_name` with `SQL` (SQLite) and `POSTGRES` (the same change
on PostgreSQL; `storage.postgres.schema` applies it). `STEPS` lists them in version order and
`MIGRATIONS[i]` is the SQLite SQL of version i + 1. Every applied version is a row of
`schema_version`. On SQLite `migrate_sync()` applies each step whose row is missing, in
version order, so a file written by a build that had a higher version but not a lower one
(branches took numbers and merged late) still gets the lower one. It runs inside one
`BEGIN IMMEDIATE` transaction, so two processes opening a fresh file at once apply each
migration exactly once, and running it again is a no-op.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from types import ModuleType

from storage.migrations import (
    m0001_initial,
    m0002_outbox_delivery,
    m0003_guard_columns,
    m0004_held_events,
    m0005_session_scope,
    m0006_held_claims,
    m0007_approvals,
    m0008_self_reviews,
    m0009_replicas,
    m0010_outbox_replies,
    m0011_history_check,
    m0012_search_index_behind,
)

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "STEPS", "Step", "migrate_sync", "split_statements"]


@dataclass(frozen=True, slots=True)
class Step:
    """One schema version: its SQLite script and its PostgreSQL script."""

    version: int
    name: str
    sqlite: str
    postgres: str | None  # None: not written yet; PostgreSQL refuses to migrate past it


def _steps(*modules: ModuleType) -> tuple[Step, ...]:
    return tuple(
        Step(n, m.__name__.rsplit(".", 1)[-1], m.SQL, getattr(m, "POSTGRES", None))
        for n, m in enumerate(modules, start=1)
    )


#: Every version, in order; each module holds `SQL` (SQLite) and `POSTGRES`.
STEPS: tuple[Step, ...] = _steps(
    m0001_initial,
    m0002_outbox_delivery,
    m0003_guard_columns,
    m0004_held_events,
    m0005_session_scope,
    m0006_held_claims,
    m0007_approvals,
    m0008_self_reviews,
    m0009_replicas,
    m0010_outbox_replies,
    m0011_history_check,
    m0012_search_index_behind,
)
MIGRATIONS: tuple[str, ...] = tuple(step.sqlite for step in STEPS)
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
        if found > SCHEMA_VERSION:
            raise RuntimeError(
                f"state.db schema version {found} is newer than this program ({SCHEMA_VERSION})"
            )
        for step in STEPS:
            if step.version in applied:
                continue
            for stmt in split_statements(step.sqlite):
                conn.execute(stmt)
            conn.execute(
                "INSERT INTO schema_version(version, applied_at) VALUES (?, ?)",
                (step.version, time.time()),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found
