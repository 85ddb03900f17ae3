"""Migration 11: the history cache's check answered from an index.

Every turn checks its session's cached transcript with `count(*)`, `max(id)` and
`sum(length(content))` over the session's active messages (`storage.live`). With only the
(session_id, id) index, SQLite read every row, and the content of each (overflow pages for
a long reply) to count its length: about 1 ms per turn for 600 messages of 1.5 KB. This
partial index holds the length itself, so the check reads index entries only (about 57 us
for the same 600). It costs an index entry per message.

PostgreSQL cannot answer an expression from an index alone (an index-only scan needs the
column, not its length), so the index would only cost writes there: its step is empty.
"""

SQL = """
CREATE INDEX IF NOT EXISTS idx_messages_active_len
    ON messages(session_id, id, length(content)) WHERE active = 1;
"""

POSTGRES = """
SELECT 1;
"""
