"""Typed events yielded by `Agent.run_turn`.

Every turn yields any number of progress events and then exactly one terminal event, last:
`Final`, `Interrupted`, `Error` or `CompressionNeeded`. Each terminal event carries `messages`:
the messages this turn added after the user message (assistant replies, tool results, synthetic
results for calls that never ran), already valid for the next request. The caller persists
them; the agent stores nothing. A running tool may report events of its own
(`ToolContext.emit`: `SubtaskProgress`, `SubagentUsage`); they are yielded while its batch runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_core.errors import ClassifiedError, FailoverReason

__all__ = [
    "AgentEvent",
    "CompressionNeeded",
    "Error",
    "Final",
    "Interrupted",
    "ReasoningDelta",
    "Status",
    "SubagentUsage",
    "SubtaskProgress",
    "TERMINAL_EVENTS",
    "TextDelta",
    "ToolFinished",
    "ToolStarted",
    "Usage",
]

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolStarted:
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolFinished:
    call_id: str
    name: str
    ok: bool
    preview: str
    duration_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Status:
    """Progress notes. `kind`: retrying, rotating_key, fallback, non_streaming, stream_reset
    (drop the text streamed by the current model call: it will be sent again),
    budget_exhausted, interrupting."""

    kind: str
    message: str
    provider: str | None = None
    attempt: int = 0
    delay_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Usage:
    """Provider-reported usage of one model call (the truth for token accounting)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0
    provider: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class SubagentUsage:
    """Usage of one model call made by a subagent of this turn (`delegate_task`): it counts
    toward the session's tokens, but says nothing about the size of this turn's context."""

    usage: Usage
    task_index: int = 0


@dataclass(frozen=True, slots=True)
class SubtaskProgress:
    """The subtasks of a running `delegate_task` call changed state: how many run, wait for
    a slot, and are done, out of `total`."""

    running: int
    waiting: int
    done: int
    total: int


@dataclass(frozen=True, slots=True)
class Final:
    text: str
    messages: list[Message] = field(default_factory=list)
    iterations: int = 0
    budget_exhausted: bool = False


@dataclass(frozen=True, slots=True)
class Interrupted:
    reason: str
    messages: list[Message] = field(default_factory=list)
    partial_text: str = ""


@dataclass(frozen=True, slots=True)
class Error:
    """The turn failed; `error.message` is redacted and safe to show."""

    error: ClassifiedError
    messages: list[Message] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CompressionNeeded:
    """The request no longer fits the model.

    Contract: the turn stops here. The caller compresses `history + [user message] + messages`
    (optionally rebuilding the system prompt with `Agent.set_system_prompt`), then calls
    `run_turn(compressed_history, None)` to continue the same turn from where it stopped.
    """

    reason: FailoverReason
    message: str
    messages: list[Message] = field(default_factory=list)
    approx_tokens: int = 0


AgentEvent = (
    TextDelta | ReasoningDelta | ToolStarted | ToolFinished | Status | Usage | SubagentUsage
    | SubtaskProgress | Final | Interrupted | Error | CompressionNeeded
)
TERMINAL_EVENTS = (Final, Interrupted, Error, CompressionNeeded)
