"""What the agent may ask of the world outside it.

The agent knows no chats, threads, platforms or databases. Whoever runs it (the gateway, a
CLI, a test) injects these ports. Every port is optional: a tool whose port is missing
answers with a clear error result instead of failing the turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["AgentPorts", "AskUserPort", "SearchPort", "SendMessagePort"]


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


@dataclass(slots=True)
class AgentPorts:
    search: SearchPort | None = None
    ask_user: AskUserPort | None = None
    send_message: SendMessagePort | None = None
