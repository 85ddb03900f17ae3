"""The core every repository mixin shares: the writer, the read pool and the clock."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from storage.db import ReaderPool, Writer, with_busy_retry
from storage.errors import SessionNotFoundError
from storage.syncconn import Conn, drive, run_in_thread
from storage.types import Session

__all__ = ["StoreBase", "Clock", "session_from_row", "UNSET"]

Clock = Callable[[], float]
T = TypeVar("T")


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def session_from_row(row: sqlite3.Row) -> Session:
    data = {k: row[k] for k in row.keys() if k in Session.__dataclass_fields__}
    data["archived"] = bool(data.get("archived"))
    data["pinned"] = bool(data.get("pinned"))
    data["verify_pending"] = bool(data.get("verify_pending"))
    return Session(**data)


class StoreBase:
    """Shared plumbing. Subclasses (the repository mixins) use `_write` and `_read`."""

    _writer: Writer
    _readers: ReaderPool
    _clock: Clock
    path: Path

    async def _write(self, op: Callable[[Conn], Coroutine[Any, Any, T]]) -> T:
        result: T = await self._writer.submit(op)  # the writer hands back what `op` returned
        return result

    async def _read(self, fn: Callable[[Conn], Coroutine[Any, Any, T]]) -> T:
        """Run `fn` in a reader's thread, all its statements in one hand-off."""
        async def run() -> T:
            async with self._readers.conn() as conn:
                return await run_in_thread(conn, lambda raw: drive(fn(Conn(raw))))

        result: T = await with_busy_retry(run)
        return result

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        async def fn(conn: Conn) -> list[sqlite3.Row]:
            return await conn.execute_fetchall(sql, params)

        return await self._read(fn)

    async def _fetchone(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        rows = await self._fetchall(sql, params)
        return rows[0] if rows else None


async def fetch_session(conn: Conn, session_id: str) -> Session:
    """The session row via `conn`; raises `SessionNotFoundError`."""
    rows = list(await conn.execute_fetchall("SELECT * FROM sessions WHERE id = ?", (session_id,)))
    if not rows:
        raise SessionNotFoundError(session_id)
    return session_from_row(rows[0])
