"""What a command handler receives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.events import MessageEvent

__all__ = ["CommandContext"]


@dataclass(slots=True)
class CommandContext:
    """One command invocation. `services` is the gateway's `CommandServices`."""

    event: MessageEvent
    key: str
    args: str
    services: Any

    async def session(self) -> Any | None:
        """The chat's live session, or None when it has none yet."""
        return await self.services.store.find_by_session_key(self.key)
