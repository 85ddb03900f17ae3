"""`PostgresStore`: the storage ports on PostgreSQL (`storage.backend: postgres`).

The repository operations are the SQLite backend's own (`storage.sessions`, `…messages`,
`…leases`, `…compaction`, …), written against `storage.sqlconn.Conn`; this class gives them
a PostgreSQL writer and read pool, and replaces what differs: search (`storage.postgres.
search`) and maintenance. The fence holds between processes: a fenced commit locks the lease
row (`SELECT … FOR UPDATE`), and a lease is taken by one atomic upsert.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import asyncpg

from hermes_common.backoff import Backoff
from storage.approvals import ApprovalsMixin
from storage.base import Clock, StoreBase
from storage.compaction import CompactionMixin
from storage.errors import StoreUnavailableError
from storage.inbox import InboxMixin
from storage.leases import LeasesMixin
from storage.ledgers import LedgersMixin
from storage.lineage import LineageMixin
from storage.live import LiveMixin
from storage.messages import APPEND_KEY, MessagesMixin, append_merged
from storage.ops import OpsMixin
from storage.pairing import PairingMixin
from storage.postgres.db import PgReaders, PgWriter, connect, connection_lost
from storage.postgres.schema import migrate
from storage.postgres.search import PgSearchMixin
from storage.reports import ReportsMixin
from storage.reviews import ReviewsMixin
from storage.sessions import SessionsMixin
from storage.sqlconn import Conn

if TYPE_CHECKING:
    from storage import ports

__all__ = ["PostgresStore", "prepare_postgres"]

T = TypeVar("T")
READ_ATTEMPTS = 4
_READ_PACING = Backoff(base_s=0.05, cap_s=0.5, jitter=0.5)


async def prepare_postgres(dsn: str) -> int:
    """Migrate the database at `dsn`; returns the schema version found before."""
    conn = await connect(dsn)
    try:
        return await migrate(conn)
    finally:
        await conn.close()


class _PgBase(StoreBase):
    _writer: PgWriter
    _readers: PgReaders

    async def _write(self, op: Callable[[Conn], Coroutine[Any, Any, T]]) -> T:
        result: T = await self._writer.submit(op)
        return result

    async def _write_merged(self, key: str, payload: Any) -> Any:
        return await self._writer.submit_merged(key, payload)

    async def _read(self, fn: Callable[[Conn], Coroutine[Any, Any, T]]) -> T:
        """Run `fn` on a pooled connection; a connection the server dropped (a restart, a
        terminated backend) is replaced and `fn` run again, a few times at most."""
        for attempt in range(READ_ATTEMPTS):
            try:
                async with self._readers.conn() as conn:
                    return await fn(conn)
            except Exception as exc:
                if not connection_lost(exc) or attempt == READ_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(_READ_PACING.delay(attempt + 1))
        raise AssertionError("unreachable")


class PostgresStore(
    SessionsMixin,
    MessagesMixin,
    LineageMixin,
    LiveMixin,
    PgSearchMixin,
    LeasesMixin,
    CompactionMixin,
    LedgersMixin,
    InboxMixin,
    PairingMixin,
    ApprovalsMixin,
    ReviewsMixin,
    ReportsMixin,
    OpsMixin,
    _PgBase,
):
    """Async repository over one PostgreSQL database. Open with
    `await PostgresStore.open(dsn)`: migrates the database, starts the writer (group commit)
    and a small read pool. `clock` drives every stored time and lease decision. Methods raise
    `StorageError` subclasses; `search` never raises."""

    def __init__(self, dsn: str, writer: PgWriter, readers: PgReaders, clock: Clock) -> None:
        self.dsn = dsn
        self._writer = writer
        self._readers = readers
        self._clock = clock
        self._closed = False

    @classmethod
    async def open(cls, dsn: str, *, clock: Clock = time.time,
                   readers: int = 2) -> PostgresStore:
        """Migrate and connect. Raises `StoreUnavailableError` when the server cannot be
        reached or refuses the connection."""
        try:
            await prepare_postgres(dsn)
        except (OSError, asyncpg.PostgresConnectionError,
                asyncpg.InvalidAuthorizationSpecificationError,
                asyncpg.InvalidCatalogNameError) as exc:
            from storage.opening import describe_target

            where = describe_target("postgres", path=None, dsn=dsn)
            raise StoreUnavailableError(
                f"cannot reach PostgreSQL at {where}: {type(exc).__name__}") from None
        writer = await PgWriter.start(dsn)
        writer.register_merger(APPEND_KEY, append_merged)
        try:
            pool = await PgReaders.open(dsn, readers)
        except BaseException:
            await writer.close()
            raise
        return cls(dsn, writer, pool, clock)

    async def close(self) -> None:
        """Finish queued writes and close every connection. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._writer.close()
        finally:
            await self._readers.close()

    async def __aenter__(self) -> PostgresStore:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    def on_writer_failure(self, callback: Callable[[BaseException], None]) -> None:
        """`callback(error)` runs if the writer task stops on an unexpected error."""
        self._writer.on_failure(callback)

    @property
    def write_stats(self) -> tuple[int, int]:
        """(transactions committed, operations committed) by this process's writer."""
        return self._writer.batches, self._writer.ops

    async def optimize(self) -> None:
        """Refresh the planner's statistics of the busy tables (autovacuum does the rest)."""

        async def op(conn: Conn) -> None:
            await conn.execute("ANALYZE sessions")
            await conn.execute("ANALYZE messages")

        await self._write(op)


if TYPE_CHECKING:  # the type checker proves `PostgresStore` implements every storage port

    def _implements_every_port(store: PostgresStore) -> None:
        checks: tuple[
            ports.SessionReader, ports.SessionWriter, ports.UsageLedger, ports.GuardStore,
            ports.MessageLog, ports.LiveTranscript, ports.LineageStore, ports.SearchIndex,
            ports.LeaseStore, ports.CompactionCommitter, ports.DedupLedger, ports.HeldEvents,
            ports.OutboxLedger, ports.Reachability, ports.CursorLedger, ports.PairingStore,
            ports.Maintenance, ports.StoreLifecycle, ports.HistoryReader,
            ports.ApprovalLedger, ports.Reports, ports.ReviewLedger,
        ] = (store,) * 22
        del checks
