"""Errors raised by the state store.

Every error the store raises derives from `StorageError`; SQLite's own "database is locked"
never reaches a caller (busy writes are retried, then reported as `StorageBusyError`).
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "StoreUnavailableError",
    "is_missing_parent",
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
]

FenceOutcome = Literal["lease_lost", "superseded", "timeout"]


class StorageError(Exception):
    """Base class of every state-store error."""


class StorageBusyError(StorageError):
    """Another process held the database's write lock for longer than the retry budget."""


class StoreUnavailableError(StorageError):
    """The database server cannot be reached (PostgreSQL down, refused, wrong address).
    Its message names the target without a password."""


class EventPendingError(StorageError):
    """A redelivered inbound event is still being taken in by another live replica (its
    dedup record is claimed, not yet held or settled): not a repeat yet. The adapter must not
    acknowledge it; the platform delivers it again, and by then its fate is known."""


class StoreClosedError(StorageError):
    """The store was closed; no further operations are accepted."""


class SessionNotFoundError(StorageError, LookupError):
    """No session has the given id."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session not found: {session_id}")
        self.session_id = session_id


class SessionMovedError(StorageError):
    """A write meant for a routing key's live session found another session live for that
    key, or one its caller no longer accepts (`LiveCheck`); nothing was written. The
    caller resolves the key again and retries."""

    def __init__(self, session_key: str) -> None:
        super().__init__(f"the live session of {session_key!r} is not the one expected")
        self.session_key = session_key


class InvalidTitleError(StorageError, ValueError):
    """The title is longer than allowed after sanitizing."""


class TitleInUseError(StorageError, ValueError):
    """Another session (not a compression ancestor) already has this title."""

    def __init__(self, title: str, other_session_id: str) -> None:
        super().__init__(f"Title {title!r} is already in use by session {other_session_id}")
        self.title = title
        self.other_session_id = other_session_id


class FenceRejected(StorageError):
    """A fenced commit was refused; nothing was written.

    `outcome` is `lease_lost` (the lease row no longer holds this holder and token unexpired),
    `superseded` (the session is no longer the live head of its lineage) or `timeout` (the
    caller's deadline passed before the transaction ran).
    """

    def __init__(self, outcome: FenceOutcome, detail: str = "") -> None:
        super().__init__(f"{outcome}: {detail}" if detail else outcome)
        self.outcome: FenceOutcome = outcome


def is_missing_parent(exc: BaseException) -> bool:
    """True for a foreign-key violation from either backend (a row whose session is gone):
    SQLite's `IntegrityError` says "FOREIGN KEY", PostgreSQL's carries SQLSTATE 23503."""
    return "FOREIGN KEY" in str(exc) or getattr(exc, "sqlstate", None) == "23503"
