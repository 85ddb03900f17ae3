"""The core every repository mixin shares: the writer, the read pool and the clock."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from storage.db import ReaderPool, Writer, with_busy_retry
from storage.errors import SessionNotFoundError, StorageError
from storage.histcache import HistoryCache
from storage.sqlconn import Conn, Row
from storage.syncconn import SqliteConn, drive, run_in_thread
from storage.types import Session

__all__ = ["StoreBase", "SqliteBase", "Clock", "session_from_row", "fetch_session", "UNSET"]

Clock = Callable[[], float]
T = TypeVar("T")


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def session_from_row(row: Row) -> Session:
    data = {k: row[k] for k in row.keys() if k in Session.__dataclass_fields__}
    data["archived"] = bool(data.get("archived"))
    data["pinned"] = bool(data.get("pinned"))
    data["verify_pending"] = bool(data.get("verify_pending"))
    return Session(**data)


class StoreBase:
    """Shared plumbing. The repository mixins use `_write`, `_write_merged` and `_read`;
    each backend's store class provides them (its writer, its readers)."""

    _clock: Clock
    _history_cache: HistoryCache | None = None

    @property
    def _histories(self) -> HistoryCache:
        """The decoded transcripts of recently read sessions (see `storage.histcache`)."""
        if self._history_cache is None:
            self._history_cache = HistoryCache()
        return self._history_cache

    async def _write(self, op: Callable[[Conn], Coroutine[Any, Any, T]]) -> T:
        """Run `op` in a write transaction (committed when this returns)."""
        raise NotImplementedError

    async def _write_merged(self, key: str, payload: Any) -> Any:
        """Queue `payload` for the merger registered under `key` (see `Writer`)."""
        raise NotImplementedError

    async def _read(self, fn: Callable[[Conn], Coroutine[Any, Any, T]]) -> T:
        """Run `fn` on a read connection."""
        raise NotImplementedError

    async def _index_for_search(self) -> None:
        """Bring the search index up to the messages before a search (a backend whose index
        follows every write, PostgreSQL's, has nothing to do)."""

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        async def fn(conn: Conn) -> list[Row]:
            return await conn.execute_fetchall(sql, params)

        return await self._read(fn)

    async def _fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        rows = await self._fetchall(sql, params)
        return rows[0] if rows else None


class SqliteBase(StoreBase):
    """`StoreBase` over the SQLite writer (group commit) and read pool."""

    _writer: Writer
    _readers: ReaderPool
    path: Path

    async def _write(self, op: Callable[[Conn], Coroutine[Any, Any, T]]) -> T:
        result: T = await self._writer.submit(op)  # the writer hands back what `op` returned
        return result

    async def _write_merged(self, key: str, payload: Any) -> Any:
        return await self._writer.submit_merged(key, payload)

    async def _index_for_search(self) -> None:
        """Index every message stored so far before a search reads the index
        (`storage.searchindex`); a failure leaves the search what was indexed."""
        with contextlib.suppress(StorageError, sqlite3.Error):
            await self._writer.index_search()

    async def _read(self, fn: Callable[[Conn], Coroutine[Any, Any, T]]) -> T:
        """Run `fn` in a reader's thread, all its statements in one hand-off."""
        async def run() -> T:
            async with self._readers.conn() as conn:
                return await run_in_thread(conn, lambda raw: drive(fn(SqliteConn(raw))))

        result: T = await with_busy_retry(run)
        return result


async def fetch_session(conn: Conn, session_id: str) -> Session:
    """The session row via `conn`; raises `SessionNotFoundError`."""
    rows = list(await conn.execute_fetchall("SELECT * FROM sessions WHERE id = ?", (session_id,)))
    if not rows:
        raise SessionNotFoundError(session_id)
    return session_from_row(rows[0])
