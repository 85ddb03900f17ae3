"""The PostgreSQL writer (group commit, like `storage.db.Writer`) and the read pool.

Writes of the process queue to one writer task with its own connection. It takes every
queued operation, runs them in ONE transaction (each in its own savepoint when there are
several, so one failing operation does not undo the others; merged appends as one call) and
commits once. Between processes, PostgreSQL's row locks serialize what must be serialized
(the lease row, the session row); a serialization failure or deadlock retries the whole
batch, and so does a lost connection before the commit was sent (the transaction died with
it). A connection lost during the commit leaves the outcome unknown: the batch's callers get
`StorageBusyError` and the next batch reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg

from hermes_common.backoff import Backoff
from storage.errors import StorageBusyError
from storage.postgres.conn import PgConn
from storage.writequeue import GroupCommitWriter, WriteItem

__all__ = ["PgWriter", "PgReaders", "connect", "connection_lost", "RETRY_BUDGET_S"]

RETRY_BUDGET_S = 30.0
_RETRY_STATES = frozenset({"40001", "40P01"})  # serialization failure, deadlock
_PACING = Backoff(base_s=0.05, cap_s=1.0, jitter=0.8)
_SERVER_SETTINGS = {"application_name": "hermes", "jit": "off"}


def _transient(exc: BaseException) -> bool:
    return getattr(exc, "sqlstate", None) in _RETRY_STATES


def connection_lost(exc: BaseException) -> bool:
    """The connection broke (server restart, terminated backend, network)."""
    return isinstance(
        exc, asyncpg.PostgresConnectionError | asyncpg.InterfaceError | OSError
    ) or str(getattr(exc, "sqlstate", "") or "").startswith("08")


async def connect(dsn: str) -> asyncpg.Connection:
    return await asyncpg.connect(dsn, server_settings=_SERVER_SETTINGS)


class _Retry(Exception):
    """Internal: the batch is retried (transient error or connection lost before commit)."""


class PgWriter(GroupCommitWriter):
    """One writer connection and its queue. `submit()` raises what the operation raised
    (its writes undone, the rest of the batch still commits), `StorageBusyError` when the
    database stayed unreachable or busy beyond the retry budget, `StoreClosedError` after
    `close()`."""

    task_name = "storage-pg-writer"

    def __init__(self, dsn: str, conn: asyncpg.Connection) -> None:
        super().__init__()
        self._dsn = dsn
        self._conn: asyncpg.Connection | None = conn

    @classmethod
    async def start(cls, dsn: str) -> PgWriter:
        writer = cls(dsn, await connect(dsn))
        writer._launch()
        return writer

    async def close(self) -> None:
        if not await self._drain_for_close():
            return
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close(timeout=5)

    async def _run_batch(self, batch: list[WriteItem]) -> None:
        deadline = time.monotonic() + RETRY_BUDGET_S
        attempt = 0
        while True:
            try:
                conn = await self._connection()
                results = await self._attempt(conn, batch)
            except _Retry:
                if time.monotonic() > deadline:
                    self._fail(batch, StorageBusyError("database stayed unavailable; "
                                                       "write abandoned"))
                    return
                attempt += 1
                await asyncio.sleep(_PACING.delay(attempt))
                continue
            except BaseException as exc:  # noqa: BLE001 - delivered to every caller
                self._fail(batch, exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                return
            break
        self._resolve(batch, results)

    async def _connection(self) -> asyncpg.Connection:
        if self._conn is None or self._conn.is_closed():
            self._conn = None
            try:
                self._conn = await connect(self._dsn)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                raise _Retry from exc
        return self._conn

    async def _attempt(self, raw: asyncpg.Connection, batch: list[WriteItem]
                       ) -> list[tuple[bool, Any]]:
        conn = PgConn(raw)
        single = len(batch) == 1 and batch[0].op is not None
        try:
            await raw.execute("BEGIN")
            results: list[tuple[bool, Any]] = []
            i = 0
            while i < len(batch):
                item = batch[i]
                if item.op is not None:
                    if single:
                        try:
                            results.append((True, await item.op(conn)))
                        except Exception as exc:  # noqa: BLE001 - the caller's error
                            if _transient(exc) or connection_lost(exc):
                                raise
                            await raw.execute("ROLLBACK")
                            return [(False, exc)]
                    else:
                        results.append(await _guarded(raw, item.op(conn)))
                    i += 1
                    continue
                j = i
                while j < len(batch) and batch[j].merge_key == item.merge_key:
                    j += 1
                group = batch[i:j]
                merged = self._mergers[str(item.merge_key)]
                ok, value = await _guarded(raw, merged(conn, [g.payload for g in group]))
                if ok:
                    results.extend((True, v) for v in value)
                elif len(group) == 1:
                    results.append((False, value))
                else:
                    for g in group:
                        ok1, v1 = await _guarded(raw, merged(conn, [g.payload]))
                        results.append((True, v1[0]) if ok1 else (False, v1))
                i = j
        except BaseException as exc:
            await self._abandon(raw)
            if _transient(exc) or connection_lost(exc):
                raise _Retry from exc
            raise
        try:
            await raw.execute("COMMIT")
        except BaseException as exc:
            await self._abandon(raw)
            if _transient(exc):
                raise _Retry from exc
            if connection_lost(exc):
                raise StorageBusyError("database connection lost while committing; "
                                       "the write may not have been stored") from exc
            raise
        return results

    async def _abandon(self, raw: asyncpg.Connection) -> None:
        if raw.is_closed():
            self._conn = None
            return
        try:
            await raw.execute("ROLLBACK")
        except Exception:  # noqa: BLE001 - the connection is unusable: start afresh
            raw.terminate()
            self._conn = None


async def _guarded(raw: asyncpg.Connection, coro: Any) -> tuple[bool, Any]:
    """Run one operation inside its own savepoint; a failure undoes only its writes."""
    try:
        await raw.execute("SAVEPOINT op")
    except BaseException:
        coro.close()
        raise
    try:
        value = await coro
    except Exception as exc:  # noqa: BLE001 - handed to the caller's future
        if _transient(exc) or connection_lost(exc):
            raise
        await raw.execute("ROLLBACK TO SAVEPOINT op")
        await raw.execute("RELEASE SAVEPOINT op")
        return False, exc
    await raw.execute("RELEASE SAVEPOINT op")
    return True, value


class PgReaders:
    """A small asyncpg pool for reads (autocommit; an operation that needs one snapshot
    opens its own transaction)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool

    @classmethod
    async def open(cls, dsn: str, size: int = 2) -> PgReaders:
        pool = await asyncpg.create_pool(dsn, min_size=1, max_size=max(1, size),
                                         server_settings=_SERVER_SETTINGS)
        return cls(pool)

    @contextlib.asynccontextmanager
    async def conn(self) -> AsyncIterator[PgConn]:
        async with self._pool.acquire() as raw:
            yield PgConn(raw)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._pool.close(), 10)
