"""What the user sees of a turn: streamed text segments, tool progress, the final text."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_core.events import Usage
from storage.types import GuardState

__all__ = ["TurnTranscript"]


@dataclass(slots=True)
class TurnTranscript:
    """Collects the visible text of one turn.

    Each model call streams one segment; a tool batch closes it. A `stream_reset` status drops
    the segment being streamed (the provider retries and streams it again). The final reply is
    the interim segments followed by the final answer, so it extends what was shown.
    """

    segments: list[str] = field(default_factory=list)
    current: list[str] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    #: Usage of the model calls of this turn's subagents (`delegate_task`).
    delegated_usage: list[Usage] = field(default_factory=list)
    #: Set once the usage so far was stored with the turn's reply (`append_with_final`):
    #: the guard state from before it (what the compression check reads).
    usage_stored: bool = False
    guard: GuardState | None = None

    def delta(self, text: str) -> None:
        self.current.append(text)

    def close_segment(self) -> None:
        text = "".join(self.current).strip()
        if text:
            self.segments.append(text)
        self.current.clear()

    def reset_segment(self) -> None:
        self.current.clear()

    def shown(self) -> str:
        parts = [*self.segments, "".join(self.current).strip()]
        return "\n\n".join(p for p in parts if p)

    def final(self, answer: str) -> str:
        answer = answer.strip()
        streamed = "".join(self.current).strip()
        parts = list(self.segments)
        if answer:
            parts.append(answer)
        elif streamed:
            parts.append(streamed)
        return "\n\n".join(parts)
