"""What compression scheduling needs from storage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from storage.ports import (
    CompactionCommitter,
    GuardStore,
    LeaseStore,
    LineageStore,
    MessageLog,
    SessionReader,
    SessionWriter,
)
from storage.types import Session

__all__ = ["CompressionMemory", "CompressionStore"]


class CompressionStore(SessionReader, SessionWriter, MessageLog, GuardStore, LeaseStore,
                       CompactionCommitter, LineageStore, Protocol):
    """Jobs read a session and its guards, hold its lease, publish through the fence and
    follow a rotation to its tip."""


class CompressionMemory(Protocol):
    """The external memory provider's part in a compaction (`gateway.memory.GatewayMemory`)."""

    async def pre_compress(self, session: Session, messages: Sequence[dict[str, Any]]) -> str:
        """Text for the summary prompt ("" for none). Bounded; must not raise."""
        ...

    def rotated(self, session: Session, child_id: str) -> None:
        """The committed rotation of `session` into `child_id` (queued; never waits)."""
        ...
