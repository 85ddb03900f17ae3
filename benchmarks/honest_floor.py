"""The honest floor's storage: the three durable writes every event needs, done with bare
`sqlite3` and none of our storage code (issue 21, deliverable 1).

A floor that runs through our own store would hide the store's cost: a slow store lowers the
floor and flatters the gateway's ratio to it. This one writes what any gateway of this design
must write, the way a careful hand-written one would:

- the same durability settings as `state.db` (WAL, `synchronous=NORMAL`, autocommit mode
  with explicit transactions);
- the same indexing work on messages (a table with the session index, the word FTS5 index and
  the trigram index, maintained by triggers), so search costs the floor what it costs us;
- one writer thread; writes queue up while it commits, and it commits everything queued in
  one transaction (group commit), then resolves each caller's future on the loop.

Only the message and dedup tables exist; no sessions table, no outbox, no leases.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["BareWriter"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS dedup (
    platform TEXT NOT NULL, event_id TEXT NOT NULL, recorded_at REAL NOT NULL,
    PRIMARY KEY (platform, event_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
    timestamp REAL NOT NULL, content TEXT);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, id);
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    content, content='messages', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS messages_trigram USING fts5(
    content, content='messages', content_rowid='id', tokenize='trigram');
CREATE TRIGGER IF NOT EXISTS messages_fts_ai AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    INSERT INTO messages_trigram(rowid, content) VALUES (new.id, new.content);
END;
"""

_Write = tuple[str, tuple[Any, ...], "asyncio.Future[bool]"]


class BareWriter:
    """One writer thread over one `sqlite3` connection, group-committing queued writes."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._q: queue.SimpleQueue[_Write | None] = queue.SimpleQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    async def __aenter__(self) -> BareWriter:
        self._loop = asyncio.get_running_loop()
        ready = self._loop.create_future()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="bare-writer",
                                        daemon=True)
        self._thread.start()
        await ready
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._q.put(None)
        assert self._thread is not None
        await asyncio.to_thread(self._thread.join)

    async def record_if_new(self, platform: str, event_id: str) -> bool:
        return await self._submit("INSERT OR IGNORE INTO dedup VALUES (?, ?, ?)",
                                  (platform, event_id, time.time()))

    async def append(self, session_id: str, role: str, content: str) -> None:
        await self._submit("INSERT INTO messages (session_id, role, timestamp, content) "
                           "VALUES (?, ?, ?, ?)", (session_id, role, time.time(), content))

    async def _submit(self, sql: str, params: tuple[Any, ...]) -> bool:
        assert self._loop is not None
        fut: asyncio.Future[bool] = self._loop.create_future()
        self._q.put((sql, params, fut))
        return await fut

    def _run(self, ready: asyncio.Future[None]) -> None:
        assert self._loop is not None
        loop = self._loop
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(SCHEMA)
        loop.call_soon_threadsafe(ready.set_result, None)
        try:
            while True:
                first = self._q.get()
                if first is None:
                    return
                batch = [first]
                while True:  # everything queued while the last commit ran goes in this one
                    try:
                        item = self._q.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        self._q.put(None)
                        break
                    batch.append(item)
                conn.execute("BEGIN IMMEDIATE")
                results = [conn.execute(sql, params).rowcount > 0 for sql, params, _ in batch]
                conn.execute("COMMIT")
                loop.call_soon_threadsafe(_resolve, [(f, r) for (_, _, f), r
                                                     in zip(batch, results, strict=True)])
        finally:
            conn.close()


def _resolve(done: list[tuple[asyncio.Future[bool], bool]]) -> None:
    for fut, result in done:
        if not fut.done():
            fut.set_result(result)
