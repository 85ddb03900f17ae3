"""What the turn layer needs from storage and from the compression scheduler."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agent_core.tools.toolsets import ToolSelection
from gateway.events import Principal
from storage.ports import (
    HeldEvents,
    LiveTranscript,
    MessageLog,
    SearchIndex,
    SessionReader,
    SessionWriter,
    UsageLedger,
)
from storage.types import GuardState, Session

__all__ = ["CompressionHook", "FinishedTurn", "ReviewHook", "SessionStore", "TurnLayerStore",
           "TurnStore"]

Message = dict[str, Any]


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



@dataclass(frozen=True, slots=True)
class FinishedTurn:
    """A turn that ended with its reply delivered, as the background review sees it:
    `earlier` is the history before the turn's user message, `turn` that message and what
    the turn added; `tools` what the session is offered."""

    key: str
    session: Session
    principal: Principal
    earlier: list[Message]
    turn: list[Message]
    tools: ToolSelection

    def _calls(self) -> list[str]:
        return [str((c.get("function") or {}).get("name", "")) for m in self.turn
                if m.get("role") == "assistant" for c in m.get("tool_calls") or []]

    @property
    def tool_calls(self) -> int:
        return len(self._calls())

    @property
    def model_calls(self) -> int:
        """One assistant message per model call of the turn loop."""
        return sum(1 for m in self.turn if m.get("role") == "assistant")

    @property
    def managed_skills(self) -> bool:
        """The turn itself called `skill_manage`."""
        return "skill_manage" in self._calls()


class ReviewHook(Protocol):
    """What turns need from the background self-review (gateway.review). Neither method
    waits for a review or raises."""

    def turn_began(self, key: str) -> None:
        """A turn of session `key` starts: a review of its earlier turns not yet running is
        skipped (the session is busy)."""
        ...

    def after_turn(self, turn: FinishedTurn) -> None:
        """The turn's reply is delivered: count it, and queue a review when it is due."""
        ...
