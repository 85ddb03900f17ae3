"""Connections, the single writer (group commit) and the read pool.

All writes of a process go through one `Writer`: callers submit an operation (a coroutine
function that receives a `storage.syncconn.Conn`) and await its result. The writer task takes
every queued operation, runs them in ONE `BEGIN IMMEDIATE` transaction (each inside its own
savepoint, so one failing operation does not undo the others) and commits once; the whole
batch runs in the connection's thread in a single hand-off. Consecutive operations that share
a merge key (message appends) are run as one merged call.

Another process writing the same file shows up as SQLITE_BUSY; the writer waits through
`busy_timeout`, then retries the whole batch with jittered back-off. Callers never see
"database is locked": after the retry budget they get `StorageBusyError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import aiosqlite

from hermes_common.backoff import Backoff
from storage.errors import StorageBusyError
from storage.migrations import migrate_sync
from storage.searchindex import INDEX_BATCH, INDEX_DELAY_S, index_all_sync, index_pending
from storage.syncconn import SqliteConn, drive, run_in_thread
from storage.writequeue import GroupCommitWriter, MergedOp, Op, WriteItem

__all__ = [
    "BUSY_TIMEOUT_MS",
    "Op",
    "MergedOp",
    "Writer",
    "ReaderPool",
    "is_busy",
    "prepare_database",
    "connect",
    "with_busy_retry",
]

BUSY_TIMEOUT_MS = 5_000
RETRY_BUDGET_S = 60.0
READ_MMAP_BYTES = 256 * 1024 * 1024
READ_CACHE_KIB = 16 * 1024
#: The writer's page cache. It reads too, in its transactions (a turn's history with its new
#: message, the session rows, the index entries of every insert), and SQLite's default of
#: 2 MB held a fraction of a busy profile's working set: at 1,000 chats (a 15 MB database
#: after 10,000 events) its thread spent ~10% more CPU re-reading pages. Only pages that
#: were read take memory.
WRITE_CACHE_KIB = 16 * 1024



def is_busy(exc: BaseException) -> bool:
    """True for SQLITE_BUSY / SQLITE_LOCKED (any extended code)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(exc).lower()
    return "locked" in text or "busy" in text


#: Pause between busy retries (after SQLite's own busy_timeout): 50 ms doubling to 400 ms,
#: up to 80 % off at random so that competing processes spread out.
_BUSY_PACING = Backoff(base_s=0.05, cap_s=0.4, jitter=0.8)


def _backoff(attempt: int) -> float:
    return _BUSY_PACING.delay(attempt + 1)


def _tighten(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        p = Path(f"{path}{suffix}")
        with contextlib.suppress(FileNotFoundError, PermissionError):
            if p.stat().st_mode & 0o077:
                os.chmod(p, 0o600)


def _apply_pragmas(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=NORMAL")


def prepare_database(path: Path) -> int:
    """Create `path` (mode 0600, parent 0700), switch it to WAL, migrate it and index for
    search what a crash left unindexed.

    Blocking: run it in a thread. Returns the schema version found before migrating.
    Safe to run concurrently from several processes. Raises `StorageBusyError` when another
    process holds the write lock beyond the retry budget.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)
    _tighten(path)
    deadline = time.monotonic() + RETRY_BUDGET_S
    attempt = 0
    while True:
        conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            _apply_pragmas(conn)
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            found = migrate_sync(conn)
            index_all_sync(conn)  # what a crash left unindexed (storage.searchindex)
            _tighten(path)
            return found
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() > deadline:
                if is_busy(exc):
                    raise StorageBusyError("state.db stayed busy while migrating") from None
                raise
            time.sleep(_backoff(attempt))
            attempt += 1
        finally:
            conn.close()


async def connect(path: Path, *, readonly: bool = False) -> aiosqlite.Connection:
    """Open one aiosqlite connection with the store's pragmas (autocommit mode)."""
    conn = await aiosqlite.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.row_factory = sqlite3.Row
    await conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    await conn.execute("PRAGMA foreign_keys=ON")
    await conn.execute("PRAGMA synchronous=NORMAL")
    if readonly:
        await conn.execute("PRAGMA query_only=1")
        await conn.execute(f"PRAGMA mmap_size={READ_MMAP_BYTES}")
        await conn.execute(f"PRAGMA cache_size=-{READ_CACHE_KIB}")
    else:
        await conn.execute(f"PRAGMA cache_size=-{WRITE_CACHE_KIB}")
    return conn


async def with_busy_retry(fn: Callable[[], Awaitable[Any]]) -> Any:
    """Run a read, retrying SQLITE_BUSY with jitter within the retry budget."""
    deadline = time.monotonic() + RETRY_BUDGET_S
    attempt = 0
    while True:
        try:
            return await fn()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            if time.monotonic() > deadline:
                raise StorageBusyError("state.db stayed busy") from None
            await asyncio.sleep(_backoff(attempt))
            attempt += 1


class _BusyAbort(Exception):
    """Internal: an operation hit SQLITE_BUSY; the whole batch is retried."""


class Writer(GroupCommitWriter):
    """The process's single writer connection and its queue (group commit).

    Use `await Writer.start(path)` and `await writer.close()`. `submit()` and `submit_merged()`
    raise whatever the operation raised (the operation's writes are rolled back, other
    operations of the batch still commit), `StorageBusyError` when the lock could not be
    taken within the retry budget, and `StoreClosedError` after `close()`.

    The writer also keeps the search index a moment behind the messages
    (`storage.searchindex`): `INDEX_DELAY_S` after a batch, before a search
    (`index_search()`) and at close; what a crash left is indexed by `prepare_database`.
    """

    def __init__(self, conn: aiosqlite.Connection) -> None:
        super().__init__()
        self._conn = conn
        self._index_timer: asyncio.TimerHandle | None = None
        self._index_tasks: set[asyncio.Task[None]] = set()
        self._index_stopped = False

    @classmethod
    async def start(cls, path: Path) -> Writer:
        writer = cls(await connect(path))
        writer._launch()
        return writer

    async def index_search(self) -> int:
        """Index every message stored so far (`storage.searchindex`); how many were waiting.
        Raises what the write raises."""
        total = 0
        while True:
            n: int = await self.submit(index_pending)
            total += n
            if n < INDEX_BATCH:
                return total

    def _index_soon(self) -> None:
        if self._index_timer is None and not self._index_stopped:
            self._index_timer = asyncio.get_running_loop().call_later(INDEX_DELAY_S,
                                                                      self._index_fire)

    def _index_fire(self) -> None:
        self._index_timer = None
        task = asyncio.get_running_loop().create_task(self._index_quietly(),
                                                      name="storage-search-index")
        self._index_tasks.add(task)
        task.add_done_callback(self._index_tasks.discard)

    async def _index_quietly(self) -> None:
        # A failure is tried again after the next write; a search meanwhile indexes first
        # itself, or finds what was indexed.
        with contextlib.suppress(Exception):
            await self.index_search()

    async def close(self) -> None:
        """Index what is waiting, finish every queued operation, then close the connection.
        Idempotent; also closes the connection of a writer that already stopped on an error
        (its callers got it)."""
        self._index_stopped = True
        if self._index_timer is not None:
            self._index_timer.cancel()
            self._index_timer = None
        if not self._closing and not self._closed:
            with contextlib.suppress(Exception):
                await self.index_search()
        if self._index_tasks:
            await asyncio.wait(set(self._index_tasks))
        if not await self._drain_for_close():
            return
        with contextlib.suppress(sqlite3.Error, ValueError):
            await self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        with contextlib.suppress(sqlite3.Error, ValueError):
            await self._conn.close()

    async def _run_batch(self, batch: list[WriteItem]) -> None:
        deadline = time.monotonic() + RETRY_BUDGET_S
        attempt = 0
        while True:
            try:
                results = await self._attempt(batch)
            except _BusyAbort:
                await self._rollback()
                if time.monotonic() > deadline:
                    self._fail(batch, StorageBusyError("state.db stayed busy; write abandoned"))
                    return
                await asyncio.sleep(_backoff(attempt))
                attempt += 1
                continue
            except BaseException as exc:  # noqa: BLE001 - delivered to every caller
                await self._rollback()
                self._fail(batch, exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                return
            break
        self._resolve(batch, results)
        if any(item.op is not index_pending for item in batch):
            self._index_soon()  # (a batch that only indexed leaves nothing new)

    async def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self._conn.in_transaction:
                await self._conn.execute("ROLLBACK")

    async def _attempt(self, batch: list[WriteItem]) -> list[tuple[bool, Any]]:
        """The whole batch in the connection's thread: one hand-off (see storage.syncconn)."""
        return await run_in_thread(self._conn, lambda raw: _attempt_sync(raw, batch,
                                                                        self._mergers))


def _exec(raw: sqlite3.Connection, sql: str) -> None:
    try:
        raw.execute(sql)
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise _BusyAbort from exc
        raise


def _attempt_sync(raw: sqlite3.Connection, batch: list[WriteItem],
                  mergers: dict[str, MergedOp]) -> list[tuple[bool, Any]]:
    conn = SqliteConn(raw)
    _exec(raw, "BEGIN IMMEDIATE")
    results: list[tuple[bool, Any]] = []
    i = 0
    while i < len(batch):
        item = batch[i]
        if item.op is not None:
            results.append(_guarded(raw, item.op(conn)))
            i += 1
            continue
        j = i
        while j < len(batch) and batch[j].merge_key == item.merge_key:
            j += 1
        group = batch[i:j]
        merged = mergers[str(item.merge_key)]
        ok, value = _guarded(raw, merged(conn, [g.payload for g in group]))
        if ok:
            results.extend((True, v) for v in value)
        elif len(group) == 1:
            results.append((False, value))
        else:
            for g in group:
                ok1, v1 = _guarded(raw, merged(conn, [g.payload]))
                results.append((True, v1[0]) if ok1 else (False, v1))
        i = j
    _exec(raw, "COMMIT")
    return results


def _guarded(raw: sqlite3.Connection, coro: Coroutine[Any, Any, Any]) -> tuple[bool, Any]:
    """Run one operation inside its own savepoint; a failure undoes only its writes."""
    try:
        _exec(raw, "SAVEPOINT op")
    except BaseException:
        coro.close()
        raise
    try:
        value = drive(coro)
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise _BusyAbort from exc
        raw.execute("ROLLBACK TO op")
        raw.execute("RELEASE op")
        return False, exc
    except Exception as exc:  # noqa: BLE001 - handed to the caller's future
        raw.execute("ROLLBACK TO op")
        raw.execute("RELEASE op")
        return False, exc
    raw.execute("RELEASE op")
    return True, value


class ReaderPool:
    """A few read-only connections handed out one at a time (`async with pool.conn()`)."""

    def __init__(self, conns: list[aiosqlite.Connection]) -> None:
        self._all = conns
        self._free: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        for c in conns:
            self._free.put_nowait(c)

    @classmethod
    async def open(cls, path: Path, size: int = 2) -> ReaderPool:
        return cls([await connect(path, readonly=True) for _ in range(max(1, size))])

    @contextlib.asynccontextmanager
    async def conn(self) -> AsyncIterator[aiosqlite.Connection]:
        c = await self._free.get()
        try:
            yield c
        finally:
            if c.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    await c.execute("ROLLBACK")
            self._free.put_nowait(c)

    async def close(self) -> None:
        for c in self._all:
            with contextlib.suppress(sqlite3.Error, ValueError):
                await c.close()
