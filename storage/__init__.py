"""SQLite state store (DESIGN.md §3): sessions, messages, search, leases, ledgers.

Everything above `storage/` uses `StateStore`; nothing else touches SQL. This package
imports nothing from `gateway`, `adapters` or `agent_core`.
"""

from storage.codec import scrub
from storage.errors import (
    EventPendingError,
    FenceOutcome,
    FenceRejected,
    InvalidTitleError,
    SessionMovedError,
    SessionNotFoundError,
    StorageBusyError,
    StorageError,
    StoreClosedError,
    TitleInUseError,
)
from storage.fts_query import parse_query
from storage.migrations import SCHEMA_VERSION
from storage.store import StateStore
from storage.titles import sanitize_title
from storage.types import (
    ApprovedUser,
    GuardState,
    HeldEvent,
    Lease,
    LiveCheck,
    MessagePreview,
    OutboxDraft,
    OutboxItem,
    PairingCode,
    SearchHit,
    Session,
    SessionScope,
    StoredFinal,
    UsageDelta,
)

__all__ = [
    "StateStore",
    "SCHEMA_VERSION",
    "Session",
    "SessionScope",
    "GuardState",
    "Lease",
    "SearchHit",
    "MessagePreview",
    "OutboxDraft",
    "LiveCheck",
    "StoredFinal",
    "UsageDelta",
    "OutboxItem",
    "HeldEvent",
    "PairingCode",
    "ApprovedUser",
    "StorageError",
    "StorageBusyError",
    "EventPendingError",
    "StoreClosedError",
    "SessionNotFoundError",
    "SessionMovedError",
    "TitleInUseError",
    "InvalidTitleError",
    "FenceRejected",
    "FenceOutcome",
    "parse_query",
    "scrub",
    "sanitize_title",
]
