"""`ChatOrder`: the finals of each chat and thread still on their way (a send, or a retry
waiting out a rate limit), so that a reply never overtakes an earlier one."""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["EARLIER_FINALS_WAIT_S", "ChatKey", "ChatOrder"]

#: How long a reply waits, at most, for the finals of its chat before it.
EARLIER_FINALS_WAIT_S = 120.0

ChatKey = tuple[str, str, str | None]  # adapter, chat id, thread id


class ChatOrder:
    """Tasks tracked per chat until they end; `all` holds every one (for `close()`)."""

    def __init__(self) -> None:
        self._per_chat: dict[ChatKey, set[asyncio.Task[Any]]] = {}
        self.all: set[asyncio.Task[Any]] = set()

    def track(self, chat: ChatKey, task: asyncio.Task[Any]) -> None:
        self.all.add(task)
        task.add_done_callback(self.all.discard)
        self._per_chat.setdefault(chat, set()).add(task)
        task.add_done_callback(lambda t: self._per_chat.get(chat, set()).discard(t))

    def earlier(self, chat: ChatKey) -> set[asyncio.Task[Any]]:
        """The chat's tasks now (those a new one must wait behind)."""
        return set(self._per_chat.get(chat, ()))

    async def wait(self, chat: ChatKey, timeout_s: float = EARLIER_FINALS_WAIT_S) -> bool:
        """Until none of the chat's tasks is left (also those added meanwhile), at most
        `timeout_s`; False when some still are."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while pending := self._per_chat.get(chat):
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return False
            await asyncio.wait(set(pending), timeout=left)
        return True
