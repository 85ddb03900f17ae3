"""Run a whole storage operation in the connection's thread with one hand-off.

Repository operations are written as coroutines against a small connection API
(`execute`, `executemany`, `execute_fetchall`, cursor `rowcount` / `lastrowid` /
`fetchone`). Awaiting aiosqlite for every statement costs a thread hand-off each (the
statement is queued to the connection's thread, the result is posted back to the event
loop): a turn's writes were ~30 hand-offs. Here the same coroutines run against `SqliteConn`, whose
methods are coroutines that call `sqlite3` directly and never suspend, so `drive()` runs an
operation to completion synchronously, inside the aiosqlite connection thread, and a whole
write batch (BEGIN, every operation in its savepoint, COMMIT) costs one hand-off.

An operation must await only its connection's methods: awaiting anything that really suspends (a
sleep, a future, another store call) raises `SuspendedOperationError`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, Literal, TypeVar

import aiosqlite

__all__ = ["SqliteConn", "SqliteCursor", "SuspendedOperationError", "drive", "run_in_thread"]

T = TypeVar("T")


class SuspendedOperationError(RuntimeError):
    """A storage operation awaited something other than its connection."""


class SqliteCursor:
    """The result of `SqliteConn.execute`: rowcount, lastrowid and the rows."""

    __slots__ = ("_cur",)

    def __init__(self, cur: sqlite3.Cursor) -> None:
        self._cur = cur

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cur.lastrowid

    async def fetchone(self) -> sqlite3.Row | None:
        """The first row; the statement is run to its end (a `RETURNING` write is complete)."""
        rows: list[sqlite3.Row] = self._cur.fetchall()
        return rows[0] if rows else None


class SqliteConn:
    """`storage.sqlconn.Conn` over sqlite3; every method completes without suspending."""

    __slots__ = ("raw",)
    dialect: Literal["sqlite"] = "sqlite"

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw

    async def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> SqliteCursor:
        return SqliteCursor(self.raw.execute(sql, params))

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> SqliteCursor:
        return SqliteCursor(self.raw.executemany(sql, rows))

    async def execute_fetchall(
        self, sql: str, params: Sequence[Any] | dict[str, Any] = ()
    ) -> list[sqlite3.Row]:
        return self.raw.execute(sql, params).fetchall()


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion now; raises what it raised, or `SuspendedOperationError`."""
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coro.close()
    raise SuspendedOperationError("a storage operation awaited something that suspends")


async def run_in_thread(conn: aiosqlite.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Call `fn(raw sqlite3 connection)` in `conn`'s own thread: one hand-off.

    Uses aiosqlite's internal `_execute` / `_conn` (stable across 0.17–0.22; the version is
    pinned in constraints.txt): its public API offers only one statement per hand-off.
    """
    # aiosqlite leaves `_execute` unannotated: its result is `fn`'s, typed T here.
    result: T = await conn._execute(lambda: fn(conn._conn))  # type: ignore[no-untyped-call]  # see above
    return result
