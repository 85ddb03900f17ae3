"""A per-process cache of decoded session transcripts, checked against the database each read.

A turn reads its session's whole active transcript; decoding it (a dict and a few `json.loads`
per row) costs more than anything else the store does for a long chat: about 3 ms for 600
rows on a small host, every turn. The cache keeps the decoded rows of recently read sessions
and, on the next read, asks the database only `count(*)`, `max(id)` and the summed length of
the content of the active rows (on SQLite from the entries of `idx_messages_active_len`,
migration 11, without reading the rows):
- the same three: nothing changed, the cached rows are the transcript;
- a larger `max(id)`: the rows after the cached `max(id)` are read and, when the count and
  the length grow by exactly theirs, appended (a turn's own new messages);
- anything else (a rewind, an in-place compaction, a hidden row, a revised text such as an
  image's description): the whole transcript is read again.
Rows are appended, hidden (`active = 0`) or have their text revised (`revise_message`, which
also drops the entry in this process); the length catches a revision made by another process.
The check reads the database, not a notification, so it holds for writers elsewhere (the
`hermes sessions compress` CLI, another replica). Bounded by sessions and by rows; least
recently read first out: 4,096 sessions (a bot with a thousand chats in flight keeps them
all: at 256, every turn of the 1,000-chat benchmark decoded its history again), 50,000 rows
and 32 million characters of text in all (a short row takes ~0.5 KB decoded, so the cache
stays under ~60 MB however long the messages).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

__all__ = ["CachedHistory", "HistoryCache"]

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CachedHistory:
    count: int
    max_id: int
    size: int  # sum(length(content)) as the database counts it
    rows: tuple[Message, ...]


class HistoryCache:
    """Thread-safe (readers run in threads); entries are immutable tuples of rows that callers
    get shallow copies of."""

    def __init__(self, *, max_sessions: int = 4096, max_rows: int = 50_000,
                 max_chars: int = 32_000_000) -> None:
        self._max_sessions = max_sessions
        self._max_rows = max_rows
        self._max_chars = max_chars
        self._entries: OrderedDict[str, CachedHistory] = OrderedDict()
        self._rows = 0
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = self.extended = self.misses = 0

    def get(self, session_id: str) -> CachedHistory | None:
        with self._lock:
            entry = self._entries.get(session_id)
            if entry is not None:
                self._entries.move_to_end(session_id)
            return entry

    def put(self, session_id: str, entry: CachedHistory) -> None:
        with self._lock:
            self._drop(self._entries.pop(session_id, None))
            if len(entry.rows) > self._max_rows or entry.size > self._max_chars:
                return
            self._entries[session_id] = entry
            self._rows += len(entry.rows)
            self._chars += entry.size
            while self._entries and (len(self._entries) > self._max_sessions
                                     or self._rows > self._max_rows
                                     or self._chars > self._max_chars):
                self._drop(self._entries.popitem(last=False)[1])

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._drop(self._entries.pop(session_id, None))

    def _drop(self, entry: CachedHistory | None) -> None:
        if entry is not None:
            self._rows -= len(entry.rows)
            self._chars -= entry.size

    def __len__(self) -> int:
        return len(self._entries)
