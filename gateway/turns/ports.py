"""What the turn layer needs from storage and from the compression scheduler."""

from __future__ import annotations

from typing import Protocol

from storage.ports import (
    HeldEvents,
    LiveTranscript,
    MessageLog,
    SearchIndex,
    SessionReader,
    SessionWriter,
    UsageLedger,
)
from storage.types import GuardState

__all__ = ["CompressionHook", "SessionStore", "TurnLayerStore", "TurnStore"]


class SessionStore(SessionReader, SessionWriter, MessageLog, Protocol):
    """The session resolver: find, create and end sessions; read a history."""


class TurnStore(SessionReader, MessageLog, LiveTranscript, HeldEvents, Protocol):
    """The turn loop: store the turn's messages on the live tip, let held events go."""


class TurnLayerStore(TurnStore, SessionStore, SearchIndex, UsageLedger, Protocol):
    """Everything the turn layer's parts use together (what `build_turns` is given)."""


class CompressionHook(Protocol):
    """What turns need from the compression scheduler (gateway.compression)."""

    async def wait_idle(self, session_id: str, within_s: float) -> bool:
        """True when no compression of the session runs (waits up to `within_s`)."""
        ...

    async def after_turn(self, session_id: str, prompt_tokens: int | None,
                         stored: GuardState | None = None) -> None:
        """`stored`: the session's guard state from before the turn's usage was recorded."""
        ...

    async def compress_for_overflow(self, session_id: str) -> str | None:
        """Compress now (forced); returns the session id to continue in, or None."""
        ...

