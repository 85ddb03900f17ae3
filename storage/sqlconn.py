"""The connection API every repository operation is written against, for both backends.

An operation is a coroutine that takes a `Conn` and runs statements inside the transaction
its backend opened for it. SQL is written once with `?` placeholders in the dialect both
backends accept (upserts with `ON CONFLICT`, `RETURNING`, `CAST(? AS …)` where a parameter's
type could not be inferred); the PostgreSQL connection rewrites the placeholders. Where the
dialects really differ an operation asks `conn.dialect` (`"sqlite"` or `"postgres"`).

Rows support `row[index]`, `row["column"]` and `row.keys()` (`sqlite3.Row`, `asyncpg.Record`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol

__all__ = ["Conn", "Cursor", "Dialect", "Row"]

Dialect = Literal["sqlite", "postgres"]
#: A result row: `sqlite3.Row` or `asyncpg.Record` (both index by position and by name).
Row = Any


class Cursor(Protocol):
    """What `Conn.execute` returns: rows changed and, for `RETURNING`, the first row."""

    @property
    def rowcount(self) -> int: ...

    async def fetchone(self) -> Row | None: ...


class Conn(Protocol):
    """One connection inside the operation's transaction."""

    @property
    def dialect(self) -> Dialect: ...

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor: ...

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor: ...

    async def execute_fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...
