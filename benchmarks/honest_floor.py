"""The honest floor (issue 21, deliverable 1): what any one-process gateway on the openai SDK
must at least spend per event, with no gateway code at all (`sdk_floor`), and its storage: the
three durable writes every event needs, done with bare `sqlite3` and none of our storage code
(`BareWriter`). (`sdk_floor` can also make those writes through our store, for the old,
labelled "store floor".)

A floor that runs through our own store would hide the store's cost: a slow store lowers the
floor and flatters the gateway's ratio to it. This one writes what any gateway of this design
must write, the way a careful hand-written one would:

- the same durability settings as `state.db` (WAL, `synchronous=NORMAL`, autocommit mode
  with explicit transactions);
- the same indexing work on messages (a table with the session index, the word FTS5 index and
  the trigram index), so search costs the floor what it costs us, done as we do it: not in
  each message's insert but a moment later for everything stored since (`INDEX_DELAY_S`
  after a commit, in the writer's thread, as `storage.searchindex`);
- one writer thread; writes queue up while it commits, and it commits everything queued in
  one transaction (group commit), then resolves each caller's future on the loop.

Only the message and dedup tables exist; no sessions table, no outbox, no leases.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["TOKEN", "BareWriter", "request_template", "sdk_floor"]

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
"""
#: The search index follows the messages this long after a commit (as `storage.searchindex`).
INDEX_DELAY_S = 0.25
INDEX = (
    "INSERT INTO messages_fts(rowid, content) SELECT id, content FROM messages WHERE id > ?",
    "INSERT INTO messages_trigram(rowid, content) SELECT id, content FROM messages WHERE id > ?",
)

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
        indexed, last_index = 0, time.monotonic()
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
                if time.monotonic() - last_index >= INDEX_DELAY_S:
                    conn.execute("BEGIN IMMEDIATE")
                    top = conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0]
                    for sql in INDEX:
                        conn.execute(sql, (indexed,))
                    conn.execute("COMMIT")
                    indexed, last_index = top, time.monotonic()
        finally:
            conn.close()


def _resolve(done: list[tuple[asyncio.Future[bool], bool]]) -> None:
    for fut, result in done:
        if not fut.done():
            fut.set_result(result)


# -- the floor itself: the SDK, and the writes (bare or through our store) -------------------

TOKEN = "@@TOKEN@@"


def request_template(body: dict[str, Any]) -> bytes:
    """A request the gateway sent (system prompt, tool schemas, history), encoded once with a
    placeholder for the newest user message."""
    import json

    body = {**body, "messages": [dict(m) for m in body["messages"]]}
    last_user = max(i for i, m in enumerate(body["messages"]) if m.get("role") == "user")
    body["messages"][last_user]["content"] = f"message {TOKEN}"
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


async def sdk_floor(model_url: str, template: bytes, n: int, concurrency: int, *,
                    db_path: Path | None = None, bare: bool = False) -> tuple[float, float]:
    """What any one-process gateway on the openai SDK must at least spend per event, with no
    gateway code at all: `concurrency` chats at a time, each event one streamed call through
    the SDK the way the provider makes it (pre-encoded body of the gateway's own size,
    aiohttp transport, chunks as dicts). With `db_path`, also the three durable writes the
    issue requires (the dedup record, the user message before the call, the reply after it),
    made through our storage layer (one writer, group commit, FTS5-indexed messages) or, with
    `bare=True`, with bare `sqlite3` and none of our code (`honest_floor.BareWriter`: same
    durability settings and indexes, one writer thread, group commit): the honest floor.
    Returns (events/s, CPU ms per event in this process, all threads)."""
    import openai

    from storage import StateStore

    client = openai.AsyncOpenAI(base_url=model_url, api_key="sk-bench", max_retries=0,
                                http_client=openai.DefaultAioHttpClient())
    store: Any = None
    bare_writer: BareWriter | None = None
    sessions: list[str] = []
    if db_path is not None and bare:
        bare_writer = await BareWriter(db_path).__aenter__()
        sessions = [f"f{k}" for k in range(concurrency)]
    elif db_path is not None:
        store = await StateStore.open(db_path)
        for k in range(concurrency):
            sessions.append((await store.create_session(source="bench", session_key=f"f{k}")).id)
    sem = asyncio.Semaphore(concurrency)
    serial = itertools.count()

    async def one(i: int) -> None:
        token = f"floor{next(serial)}"
        async with sem:
            if bare_writer is not None:
                sid = sessions[i % concurrency]
                await bare_writer.record_if_new("bench", token)
                await bare_writer.append(sid, "user", f"message {token}")
            elif store is not None:
                sid = sessions[i % concurrency]
                await store.record_if_new("bench", token)
                await store.append_live(sid, [{"role": "user", "content": f"message {token}"}])
            stream = await client.post(
                "/chat/completions", cast_to=object, body=None, stream=True,
                content=template.replace(TOKEN.encode(), token.encode()),
                stream_cls=openai.AsyncStream[object],
                options={"headers": {"Content-Type": "application/json"}})
            async for _ in stream:
                pass
            if bare_writer is not None:
                await bare_writer.append(sid, "assistant", f"ok {token}")
            elif store is not None:
                await store.append_live(sid, [{"role": "assistant", "content": f"ok {token}"}])

    try:
        await asyncio.gather(*(one(i) for i in range(min(n, 200))))
        t0, c0 = time.monotonic(), time.process_time()
        await asyncio.gather(*(one(i) for i in range(n)))
        wall, cpu = time.monotonic() - t0, time.process_time() - c0
    finally:
        await client.close()
        if store is not None:
            await store.close()
        if bare_writer is not None:
            await bare_writer.__aexit__(None, None, None)
    return n / wall, cpu / n * 1000
