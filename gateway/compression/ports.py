"""What compression scheduling needs from storage."""

from __future__ import annotations

from typing import Protocol

from storage.ports import (
    CompactionCommitter,
    GuardStore,
    LeaseStore,
    LineageStore,
    MessageLog,
    SessionReader,
    SessionWriter,
)

__all__ = ["CompressionStore"]


class CompressionStore(SessionReader, SessionWriter, MessageLog, GuardStore, LeaseStore,
                       CompactionCommitter, LineageStore, Protocol):
    """Jobs read a session and its guards, hold its lease, publish through the fence and
    follow a rotation to its tip."""
