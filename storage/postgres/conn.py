"""`storage.sqlconn.Conn` over one asyncpg connection.

Operations are written once with `?` placeholders; here they become `$1, $2, …` (outside
string literals; the rewrite is cached per statement text). A statement that returns rows
(`SELECT`, `… RETURNING`) is fetched and its row count is the number of rows; any other
statement's row count is read from the server's command tag (`UPDATE 3`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from storage.sqlconn import Row

__all__ = ["PgConn", "PgCursor", "to_postgres"]


@functools.lru_cache(maxsize=4096)
def to_postgres(sql: str) -> str:
    """`?` placeholders → `$n`, leaving string literals alone."""
    out: list[str] = []
    n = 0
    quoted = False
    for ch in sql:
        if ch == "'":
            quoted = not quoted
        elif ch == "?" and not quoted:
            n += 1
            out.append(f"${n}")
            continue
        out.append(ch)
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def _returns_rows(sql: str) -> bool:
    head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
    return head in ("SELECT", "WITH", "VALUES") or " RETURNING " in f" {sql.upper()} "


def _count(status: str) -> int:
    """The row count of a command tag: `UPDATE 3` → 3, `INSERT 0 1` → 1, `BEGIN` → -1."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else -1


class PgCursor:
    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[Row], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    async def fetchone(self) -> Row | None:
        return self._rows[0] if self._rows else None


class PgConn:
    """The operation's view of a connection inside its transaction."""

    __slots__ = ("raw",)
    dialect: Literal["postgres"] = "postgres"

    def __init__(self, raw: asyncpg.Connection | PoolConnectionProxy) -> None:
        self.raw = raw

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> PgCursor:
        query = to_postgres(sql)
        if _returns_rows(sql):
            rows = list(await self.raw.fetch(query, *params))
            return PgCursor(rows, len(rows))
        status = await self.raw.execute(query, *params)
        return PgCursor([], _count(status))

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> PgCursor:
        batch = [tuple(r) for r in rows]
        if batch:
            await self.raw.executemany(to_postgres(sql), batch)
        return PgCursor([], -1)

    async def execute_fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return list(await self.raw.fetch(to_postgres(sql), *params))
