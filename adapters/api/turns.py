"""One HTTP request's turn: the bot messages the gateway sends for it, and how they stream.

Streaming rule. The gateway streams a reply by editing one message; while a turn runs, each
send/edit is reduced to text with a trailing cursor (one of `CURSORS`, plus the whitespace just
before it) removed, and all bot messages of the turn are joined with a blank line. When that
joined text extends what the client already received, the new suffix is streamed; otherwise
(an edit that rewrites rather than appends) nothing is streamed until the turn completes. At
completion the final joined text is sent: the missing suffix when it extends what was streamed,
else, since streamed text cannot be retracted, a blank line and the final text again from the
start of the first changed line. Non-streaming responses always carry the exact final text.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from itertools import count

__all__ = ["CURSORS", "Turn", "TurnRegistry", "strip_cursor"]

CURSORS: tuple[str, ...] = ("▌", "▍", "█", "▉")
_SEPARATOR = "\n\n"


def strip_cursor(text: str) -> str:
    """`text` without a trailing streaming cursor and the whitespace right before it."""
    stripped = text.rstrip()
    if stripped.endswith(CURSORS):
        return stripped[:-1].rstrip()
    return text


def _common_prefix_len(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class Turn:
    """State of one request. Mutated only from the event loop; never raises."""

    def __init__(self, event_id: str, chat_id: str) -> None:
        self.event_id = event_id
        self.chat_id = chat_id
        self.created = time.monotonic()
        self.streamed = ""
        self.done = False
        self.ok = True
        self.error: str | None = None
        self.listeners = 0
        self.message_ids: list[str] = []
        self._texts: dict[str, str] = {}
        self._ids = count(1)
        self._changed = asyncio.Event()

    @property
    def text(self) -> str:
        """All bot messages of the turn, joined with a blank line."""
        return _SEPARATOR.join(t for t in self._texts.values() if t.strip())

    def new_message_id(self) -> str:
        message_id = f"{self.event_id}#{next(self._ids)}"
        self.message_ids.append(message_id)
        return message_id

    def update(self, message_id: str, text: str) -> None:
        """Record a send/edit of one bot message; ignored once the turn is done."""
        if self.done:
            return
        self._texts[message_id] = strip_cursor(text)
        current = self.text
        if len(current) > len(self.streamed) and current.startswith(self.streamed):
            self.streamed = current
            self._notify()

    def finish(self, *, ok: bool, error: str | None) -> None:
        """Close the turn (first call wins) and settle `streamed` against the final text."""
        if self.done:
            return
        final = self.text
        if final.startswith(self.streamed):
            self.streamed = final
        else:
            common = _common_prefix_len(final, self.streamed)
            line_start = final.rfind("\n", 0, common) + 1
            self.streamed += _SEPARATOR + final[line_start:]
        self.done, self.ok, self.error = True, ok, error
        self._notify()

    async def wait_change(self, seen: int) -> None:
        """Return once more than `seen` characters were streamed or the turn is done.

        Callers bound it with `asyncio.timeout`; cancellation propagates.
        """
        while not self.done and len(self.streamed) <= seen:
            await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()


class TurnRegistry:
    """Open turns by event id, plus a bounded memory of finished ones (for client retries)."""

    def __init__(self, keep_done: int = 256) -> None:
        self._open: dict[str, Turn] = {}
        self._done: OrderedDict[str, Turn] = OrderedDict()
        self._by_message: dict[str, Turn] = {}
        self._keep_done = keep_done

    def __len__(self) -> int:
        return len(self._open)

    def open(self, event_id: str, chat_id: str) -> Turn:
        turn = Turn(event_id, chat_id)
        self._open[event_id] = turn
        return turn

    def get(self, event_id: str) -> Turn | None:
        return self._open.get(event_id) or self._done.get(event_id)

    def discard(self, turn: Turn) -> None:
        """Forget a turn whose event the gateway refused."""
        self._open.pop(turn.event_id, None)
        self._drop_messages(turn)

    def for_reply(self, chat_id: str, reply_to: str | None) -> Turn | None:
        """The open turn a message belongs to: the one it replies to, else (no `reply_to`)
        the newest open turn of the chat. None when nobody is waiting."""
        if reply_to is not None:
            return self._open.get(reply_to)
        candidates = [t for t in self._open.values() if t.chat_id == chat_id]
        return candidates[-1] if candidates else None

    def by_message(self, message_id: str) -> Turn | None:
        return self._by_message.get(message_id)

    def bind_message(self, turn: Turn) -> str:
        message_id = turn.new_message_id()
        self._by_message[message_id] = turn
        return message_id

    def complete(self, turn: Turn, *, ok: bool, error: str | None) -> None:
        turn.finish(ok=ok, error=error)
        self._open.pop(turn.event_id, None)
        self._done[turn.event_id] = turn
        self._done.move_to_end(turn.event_id)
        while len(self._done) > self._keep_done:
            _, old = self._done.popitem(last=False)
            self._drop_messages(old)

    def prune(self, max_age_s: float) -> None:
        """Drop open turns nobody waits for that are older than `max_age_s`."""
        limit = time.monotonic() - max_age_s
        for turn in [t for t in self._open.values() if t.listeners == 0 and t.created < limit]:
            self.discard(turn)

    def close_all(self, error: str) -> None:
        """Finish every open turn with `error` (shutdown)."""
        for turn in list(self._open.values()):
            self.complete(turn, ok=False, error=error)

    def _drop_messages(self, turn: Turn) -> None:
        for message_id in turn.message_ids:
            self._by_message.pop(message_id, None)
