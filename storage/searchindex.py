"""The SQLite search index, kept a moment behind the messages (migration 12).

A message is not indexed by its own insert: FTS5 writes a new segment at the end of every
transaction that touched it, which made a message stored alone (one chat's turn) cost ~100 us
and a dozen page writes of indexing on the way to the model and again before the reply. Here
the messages stored since the last run are indexed in one statement per FTS table
(`index_pending`), by the writer (`storage.db.Writer`):
- `INDEX_DELAY_S` after a write batch (coalesced: at most one pending run), so a busy profile
  indexes a few hundred messages at a time;
- before any search of the process (`SearchMixin.search`), so a search finds what the same
  process stored, however recently;
- when the store closes, and at open, in the transaction after the migrations
  (`storage.db.prepare_database`, through `index_all_sync`): what a crash left unindexed.
Another process's search (the CLI) runs the same step through its own writer first; a tool
that fills the file without the store (`hermes storage migrate --to sqlite`) indexes at the
end (`index_all_sync`).

`search_index.upto` is the highest message id indexed; ids only grow (`insert_rows` takes
the next after every id ever used), so the rows above it are exactly the ones waiting. The
update and delete triggers touch the index for rows at or below it only; a row above it is
indexed as it is when its turn comes. A run indexes at most `INDEX_BATCH` messages (the
writer runs the next at once), so no batch of writes waits long behind it.
"""

from __future__ import annotations

import sqlite3

from storage.sqlconn import Conn
from storage.syncconn import SqliteConn, drive

__all__ = ["INDEX_BATCH", "INDEX_DELAY_S", "index_all_sync", "index_pending"]

INDEX_DELAY_S = 0.25
INDEX_BATCH = 1000


async def index_pending(conn: Conn) -> int:
    """Index up to `INDEX_BATCH` messages stored since the last run (in id order); how many
    were indexed. Inside a write transaction; on SQLite only."""
    rows = await conn.execute_fetchall("SELECT upto FROM search_index WHERE id = 1")
    upto = int(rows[0][0]) if rows else 0
    rows = await conn.execute_fetchall(
        "SELECT count(*), max(id) FROM (SELECT id FROM messages WHERE id > ? ORDER BY id"
        " LIMIT ?)", (upto, INDEX_BATCH))
    count, top = int(rows[0][0]), rows[0][1]
    if not count:
        return 0
    span = (upto, int(top))
    await conn.execute(
        "INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)"
        " SELECT id, content, tool_name, tool_calls FROM messages WHERE id > ? AND id <= ?"
        " ORDER BY id", span)
    await conn.execute(
        "INSERT INTO messages_trigram(rowid, content)"
        " SELECT id, content FROM messages WHERE id > ? AND id <= ? AND role <> 'tool'"
        " ORDER BY id", span)
    await conn.execute("INSERT INTO search_index (id, upto) VALUES (1, ?)"
                       " ON CONFLICT (id) DO UPDATE SET upto = excluded.upto", (int(top),))
    return count


def index_all_sync(raw: sqlite3.Connection) -> int:
    """Index everything waiting, through a plain `sqlite3` connection in autocommit mode
    (`isolation_level=None`), one transaction per `INDEX_BATCH`: for tools that write the
    file without the store's writer (`hermes storage migrate --to sqlite`). Blocking."""
    total = 0
    while True:
        raw.execute("BEGIN IMMEDIATE")
        try:
            n = drive(index_pending(SqliteConn(raw)))
            raw.execute("COMMIT")
        except BaseException:
            raw.execute("ROLLBACK")
            raise
        total += n
        if n < INDEX_BATCH:
            return total
