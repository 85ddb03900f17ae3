"""What the agent may ask of the world outside it.

The agent knows no chats, threads, platforms or databases. Whoever runs it (the gateway, a
CLI, a test) injects these ports. Every port is optional: a tool whose port is missing
answers with a clear error result instead of failing the turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["AgentPorts", "ApprovalDecision", "ApprovalPort", "ApprovalRequest", "AskUserPort",
           "SearchPort", "SendMessagePort"]


class SearchPort(Protocol):
    """Full-text search over past sessions (backs the `session_search` tool).

    Must not raise for any query text; returns hits as plain dicts (session id, role,
    snippet, timestamp, and surrounding context where available).
    """

    async def search(self, query: str, *, limit: int = 5) -> list[dict[str, Any]]: ...


class AskUserPort(Protocol):
    """Ask the user a question and wait for the answer (backs the `clarify` tool)."""

    async def ask(self, question: str, choices: list[str] | None = None) -> str: ...


class SendMessagePort(Protocol):
    """Send an out-of-band message to the user of the current session."""

    async def send(self, text: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A tool call that needs the user's approval: the tool, what it would run, and why
    it needs approval (the dangerous pattern it matched)."""

    tool: str
    command: str
    reason: str


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """`approved`, and a short text saying who decided or why not (shown to the model)."""

    approved: bool
    detail: str = ""


class ApprovalPort(Protocol):
    """Ask the user of the turn to approve a dangerous tool call (backs `terminal`).

    Waits for the decision, bounded by the caller's own timeout; silence denies. Must not
    raise for a refusal or a timeout (those are decisions); cancellation propagates.
    """

    async def request(self, request: ApprovalRequest) -> ApprovalDecision: ...


@dataclass(slots=True)
class AgentPorts:
    search: SearchPort | None = None
    ask_user: AskUserPort | None = None
    send_message: SendMessagePort | None = None
    approval: ApprovalPort | None = None
