"""`StateStore`: the one façade over the profile's `state.db`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from storage.approvals import ApprovalsMixin
from storage.base import Clock, SqliteBase
from storage.compaction import CompactionMixin
from storage.db import ReaderPool, Writer, prepare_database
from storage.inbox import InboxMixin
from storage.leases import LeasesMixin
from storage.ledgers import LedgersMixin
from storage.lineage import LineageMixin
from storage.live import LiveMixin
from storage.messages import APPEND_KEY, MessagesMixin, append_merged
from storage.ops import OpsMixin
from storage.pairing import PairingMixin
from storage.reports import ReportsMixin
from storage.reviews import ReviewsMixin
from storage.search import SearchMixin
from storage.sessions import SessionsMixin

if TYPE_CHECKING:
    from storage import ports

__all__ = ["StateStore"]


class StateStore(
    SessionsMixin,
    MessagesMixin,
    LineageMixin,
    LiveMixin,
    SearchMixin,
    LeasesMixin,
    CompactionMixin,
    LedgersMixin,
    InboxMixin,
    PairingMixin,
    ApprovalsMixin,
    ReviewsMixin,
    ReportsMixin,
    OpsMixin,
    SqliteBase,
):
    """Async repository over one SQLite file.

    Open with `await StateStore.open(path)` (or `async with await StateStore.open(path)`);
    this creates the file (mode 0600) and migrates it. All writes of the process go through
    one writer task (group commit); reads use a small pool of read-only connections. `clock`
    (epoch seconds) drives every stored time and lease decision; tests may inject one.
    Methods raise `StorageError` subclasses; `search` never raises.
    """

    def __init__(self, path: Path, writer: Writer, readers: ReaderPool, clock: Clock) -> None:
        self.path = path
        self._writer = writer
        self._readers = readers
        self._clock = clock
        self._closed = False

    @classmethod
    async def open(
        cls, path: str | Path, *, clock: Clock = time.time, readers: int = 2
    ) -> StateStore:
        """Create/migrate the file and start the writer. Raises `StorageBusyError` when
        another process keeps the file locked beyond the retry budget."""
        p = Path(path)
        await asyncio.to_thread(prepare_database, p)
        writer = await Writer.start(p)
        writer.register_merger(APPEND_KEY, append_merged)
        try:
            pool = await ReaderPool.open(p, readers)
        except BaseException:
            await writer.close()
            raise
        return cls(p, writer, pool, clock)

    async def close(self) -> None:
        """Finish queued writes and close every connection. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._writer.close()
        finally:
            await self._readers.close()

    async def __aenter__(self) -> StateStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def on_writer_failure(self, callback: Callable[[BaseException], None]) -> None:
        """`callback(error)` runs if the single writer stops on an error: every later write
        raises `StoreClosedError`, so the owner should restart (reopen) the store."""
        self._writer.on_failure(callback)

    @property
    def write_stats(self) -> tuple[int, int]:
        """(transactions committed, operations committed) by this process's writer."""
        return self._writer.batches, self._writer.ops


if TYPE_CHECKING:  # the type checker proves `StateStore` implements every storage port

    def _implements_every_port(store: StateStore) -> None:
        checks: tuple[
            ports.SessionReader, ports.SessionWriter, ports.UsageLedger, ports.GuardStore,
            ports.MessageLog, ports.LiveTranscript, ports.LineageStore, ports.SearchIndex,
            ports.LeaseStore, ports.CompactionCommitter, ports.DedupLedger, ports.HeldEvents,
            ports.OutboxLedger, ports.Reachability, ports.CursorLedger, ports.PairingStore,
            ports.Maintenance, ports.StoreLifecycle, ports.ApprovalLedger, ports.Reports,
            ports.ReviewLedger,
        ] = (store,) * 21
        del checks
