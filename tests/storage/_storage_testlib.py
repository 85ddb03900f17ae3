"""Helpers shared by the storage tests (unique module name: the tests dir has no packages)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


class FakeClock:
    """A settable epoch clock injected into the store."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def turn(user: str, reply: str) -> list[dict]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]


def old_schema_db(path: Path, version: int) -> sqlite3.Connection:
    """A database file as schema `version` wrote it (migrations 1..version applied); returns
    an open autocommit connection to fill it (use it as a context manager)."""
    from storage.migrations import MIGRATIONS, split_statements

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY,"
                 " applied_at REAL NOT NULL)")
    for n, script in enumerate(MIGRATIONS[:version], start=1):
        for stmt in split_statements(script):
            conn.execute(stmt)
        conn.execute("INSERT INTO schema_version VALUES (?, 0)", (n,))
    return conn
