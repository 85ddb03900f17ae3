"""Opening the configured backend: `open_store("sqlite", path=…)` or
`open_store("postgres", dsn=…)`. The composition roots (the gateway runner, the CLI) call
this; nothing else names a backend class."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal, Protocol

from storage.base import Clock
from storage.ports import (
    ApprovalLedger,
    CompactionCommitter,
    CursorLedger,
    DedupLedger,
    GuardStore,
    HeldEvents,
    LeaseStore,
    LineageStore,
    LiveTranscript,
    Maintenance,
    MessageLog,
    OutboxLedger,
    PairingStore,
    Reachability,
    Reports,
    ReviewLedger,
    SearchIndex,
    SessionReader,
    SessionWriter,
    StoreLifecycle,
    UsageLedger,
)

__all__ = ["Backend", "AnyStore", "open_store", "describe_target"]

Backend = Literal["sqlite", "postgres"]


class AnyStore(SessionReader, SessionWriter, MessageLog, LiveTranscript, LineageStore,
               SearchIndex, UsageLedger, GuardStore, LeaseStore, CompactionCommitter,
               DedupLedger, HeldEvents, PairingStore, Reachability, OutboxLedger,
               CursorLedger, Maintenance, StoreLifecycle, ApprovalLedger, Reports,
               ReviewLedger, Protocol):
    """Every port: what either backend's store is."""


async def open_store(backend: Backend, *, path: Path | None = None, dsn: str | None = None,
                     clock: Clock = time.time) -> AnyStore:
    """Open (creating and migrating) the store. SQLite needs `path`, PostgreSQL `dsn`.
    Raises `ValueError` for a missing target, `StorageError` subclasses, and for PostgreSQL
    the driver's connection errors (`OSError`, `asyncpg.PostgresError`)."""
    if backend == "postgres":
        if not dsn:
            raise ValueError("storage.dsn is required with storage.backend: postgres")
        from storage.postgres import PostgresStore

        return await PostgresStore.open(dsn, clock=clock)
    if path is None:
        raise ValueError("a state.db path is required with storage.backend: sqlite")
    from storage.store import StateStore

    return await StateStore.open(path, clock=clock)


def describe_target(backend: Backend, *, path: Path | None, dsn: str | None) -> str:
    """Where the store lives, safe to print: a DSN loses its password."""
    if backend == "sqlite":
        return str(path)
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(dsn or "")
    if parts.password:
        host = parts.hostname or ""
        user = f"{parts.username}:***@" if parts.username else ""
        port = f":{parts.port}" if parts.port else ""
        parts = parts._replace(netloc=f"{user}{host}{port}")
    return urlunsplit(parts)
